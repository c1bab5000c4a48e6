// Wall time of a LocoTrack forward on the parity inputs (16 frames, 12 queries at 256x256), per stage, as JSON.
//   test_gpu_locotrack_bench [small|base] [threads (0 = leave LibTorch's default)] [repeats] [cpu|cuda]
// TRACKSCOPE_BENCH_DEFAULT_MALLOC=1 leaves glibc's allocator settings alone (see gpu/cpu_runtime.h).
// Registered as the ctest entry gpu/locotrack_bench (label bench); the lead's bench tool will supersede it.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/cuda.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>

#include "gpu/cpu_runtime.h"
#include "gpu/model/locotrack.h"
#include "gpu/torch_compat.h"
#include "gpu/weights/weights.h"

namespace {

using namespace trackscope::gpu;
namespace fs = std::filesystem;

double cpu_ms() { return 1000.0 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string size_name = argc > 1 ? argv[1] : "small";
  const int threads = argc > 2 ? std::atoi(argv[2]) : 0;
  const int repeats = argc > 3 ? std::max(1, std::atoi(argv[3])) : 2;
  const std::string device_name = argc > 4 ? argv[4] : "cpu";
  if (device_name == "cuda" && !torch::cuda::is_available()) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  const int default_threads = at::get_num_threads();
  if (threads > 0) set_cpu_threads(threads);
  const bool kept = std::getenv("TRACKSCOPE_BENCH_DEFAULT_MALLOC") == nullptr && keep_freed_host_memory();
  compat::set_tf32_allowed(false);
  const fs::path fixtures = fs::path(TRACKSCOPE_SHARED_DIR) / "fixtures" / "locotrack";
  const at::Device device(device_name);
  auto loaded = weights::load_locotrack(fixtures / ("locotrack_" + size_name + "_random_bf16.safetensors"), device);
  auto inputs = weights::read_state_dict(fixtures / "parity_inputs.safetensors");
  if (!loaded || !inputs) {
    std::fprintf(stderr, "%s\n", (!loaded ? loaded.status() : inputs.status()).message().c_str());
    return 1;
  }
  const model::LocoTrack& net = *loaded->model;
  c10::InferenceMode inference;
  const at::Tensor video = model::normalize_video_u8(inputs->find("video_u8")->to(device));
  const at::Tensor queries = inputs->find("query_points_tyx")->to(device);
  auto sync = [&] {
    if (device.is_cuda()) torch::cuda::synchronize();
  };
  nlohmann::json runs = nlohmann::json::array();
  for (int r = 0; r < repeats; ++r) {
    nlohmann::json run;
    const double start = now_ms(), start_cpu = cpu_ms();
    const model::FeatureGrids grids = model::compute_feature_grids(net, video);
    sync();
    run["backbone_ms"] = now_ms() - start;
    double t = now_ms();
    const model::QueryFeatures query = model::compute_query_features(grids, queries);
    model::TrackState state = model::initialise_tracks(net, grids, query, queries);
    sync();
    run["query_features_and_init_ms"] = now_ms() - t;
    double correlation = 0, encoder = 0, mixer = 0;
    for (int i = 0; i < net.config().refinement_iterations; ++i) {
      t = now_ms();
      const auto correlations = model::local_correlations(grids, query, state.tracks);
      sync();
      correlation += now_ms() - t;
      t = now_ms();
      const at::Tensor encoded = model::encode_correlations(net, correlations, 1, queries.size(1));
      sync();
      encoder += now_ms() - t;
      t = now_ms();
      state = model::apply_mixer(net, encoded, state);
      sync();
      mixer += now_ms() - t;
    }
    run["refine_correlation_ms"] = correlation;
    run["refine_encoder_ms"] = encoder;
    run["refine_mixer_ms"] = mixer;
    run["forward_ms"] = now_ms() - start;
    run["forward_process_cpu_ms"] = cpu_ms() - start_cpu;
    runs.push_back(run);
  }
  nlohmann::json out = {{"model", loaded->info.model_name},
                        {"device", device_name},
                        {"threads", at::get_num_threads()},
                        {"default_threads", default_threads},
                        {"hardware_concurrency", std::thread::hardware_concurrency()},
                        {"keep_freed_host_memory", kept},
                        {"frames", video.size(1)},
                        {"queries", queries.size(1)},
                        {"runs", runs},
                        {"parallel_info", at::get_parallel_info()}};
  std::cout << out.dump(2) << "\n";
  return 0;
}
