// The tracker benchmark (gpu/bench.h): cases of forward passes on a device-resident video, per-stage timings,
// peak memory, telemetry, measured device peaks; the result as a core::Profile.
#include "gpu/bench.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <random>

#include "core/perf/process_memory.h"
#include "core/perf/telemetry.h"
#include "core/video/sample_clip.h"
#include "core/video/video_source.h"
#include "gpu/cpu_runtime.h"
#include "gpu/devices.h"
#include "gpu/engine/cuda_support.h"
#include "gpu/engine/engine.h"
#include "gpu/ops/cpu/cpu_support.h"
#include "gpu/telemetry_nvml.h"
#include "gpu/torch_compat.h"
#include "gpu/tracker_factory.h"
#include "gpu/weights/weights.h"

namespace trackscope::gpu {
namespace {

constexpr int kUniqueFrames = 64;  // frames decoded or rendered; longer runs play them back and forth

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void synchronize(const engine::Engine& engine) {
  if (engine.cuda_index() >= 0) cuda_support::synchronize_device(engine.cuda_index());
}

// uint8 frames [count, H, W, 3] from the video (or the procedural scene), at most kUniqueFrames of them.
core::Expected<at::Tensor> load_frames(const std::string& video_path, int count) {
  count = std::min(count, kUniqueFrames);
  if (video_path.empty()) {
    core::SampleClipOptions scene;
    scene.width = 256;
    scene.height = 256;
    scene.frame_count = count;
    at::Tensor frames = at::empty({count, 256, 256, 3}, at::kByte);
    for (int i = 0; i < count; ++i) {
      const core::Frame f = core::render_sample_frame(scene, i);
      std::memcpy(frames[i].data_ptr<uint8_t>(), f.rgb.data(), f.rgb.size());
    }
    return frames;
  }
  core::Expected<std::unique_ptr<core::VideoSource>> source = core::VideoSource::open(video_path);
  if (!source) return source.status();
  const core::VideoInfo& info = (*source)->info();
  count = static_cast<int>(std::min<int64_t>(count, info.frame_count));
  at::Tensor frames = at::empty({count, info.height, info.width, 3}, at::kByte);
  for (int i = 0; i < count; ++i) {
    core::Expected<core::FramePtr> f = (*source)->read_frame(i);
    if (!f) return f.status();
    std::memcpy(frames[i].data_ptr<uint8_t>(), (*f)->rgb.data(), (*f)->rgb.size());
  }
  return frames;
}

// T frames from the unique ones, played forwards, then backwards, ... (0 1 2 .. n-1 n-2 .. 1 0 1 ..).
at::Tensor ping_pong(const at::Tensor& unique, int frames) {
  const int64_t n = unique.size(0);
  std::vector<int64_t> index(static_cast<size_t>(frames));
  const int64_t period = std::max<int64_t>(1, 2 * (n - 1));
  for (int t = 0; t < frames; ++t) {
    const int64_t phase = n == 1 ? 0 : t % period;
    index[static_cast<size_t>(t)] = phase < n ? phase : period - phase;
  }
  return unique.index_select(0, at::tensor(index, at::kLong).to(unique.device()));
}

at::Tensor random_queries(int points, int frames, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> frame(0, frames - 1);
  std::uniform_real_distribution<float> position(0.5f, 255.5f);
  at::Tensor q = at::empty({1, points, 3}, at::kFloat);
  float* p = q.data_ptr<float>();
  for (int i = 0; i < points; ++i) {
    p[3 * i] = static_cast<float>(frame(rng));
    p[3 * i + 1] = position(rng);
    p[3 * i + 2] = position(rng);
  }
  return q;
}

// Rates the device reaches on large GEMMs (each precision) and on a device-to-device copy (read + write).
core::MeasuredPeaks measure_peaks(const at::Device& device, const std::function<void(const std::string&)>& log) {
  core::MeasuredPeaks peaks;
  const bool cuda = device.is_cuda();
  const int index = cuda ? device.index() : -1;
  auto time_ms = [&](const std::function<void()>& work, int repeats) {
    work();
    if (cuda) cuda_support::synchronize_device(index);
    const double start = now_ms();
    for (int r = 0; r < repeats; ++r) work();
    if (cuda) cuda_support::synchronize_device(index);
    return (now_ms() - start) / repeats;
  };
  const int64_t n = cuda ? 8192 : 1024;
  // C = A B of n x n operands in `dtype`, multiplied by `multiply` (ATen's mm unless given).
  using Multiply = std::function<void(const at::Tensor& a, const at::Tensor& b, at::Tensor& c)>;
  auto gemm_tflops = [&](at::ScalarType dtype, bool tf32, const Multiply& multiply = {}) {
    compat::set_tf32_allowed(tf32);
    const at::Tensor a = at::randn({n, n}, at::TensorOptions().device(device).dtype(dtype));
    const at::Tensor b = at::randn({n, n}, at::TensorOptions().device(device).dtype(dtype));
    at::Tensor c = at::empty({n, n}, a.options());
    const double ms = time_ms(
        [&] {
          if (multiply) {
            multiply(a, b, c);
          } else {
            at::mm_out(c, a, b);
          }
        },
        cuda ? 20 : 3);
    return 2.0 * static_cast<double>(n) * n * n / (ms * 1e9);
  };
  peaks.fp32_tflops = gemm_tflops(at::kFloat, false);
  std::string cpu_detail;
  if (!cuda) {
    // The CPU kernels' GEMM (ops::detail::sgemm: oneDNN's AVX-512 sgemm where built with it) beats ATen's BLAS on
    // the development VM (Debian's OpenBLAS runs its AVX2 kernels on Zen 5): the machine's rate is the faster one.
    const double kernels_tflops =
        gemm_tflops(at::kFloat, false, [n](const at::Tensor& a, const at::Tensor& b, at::Tensor& c) {
          ops::detail::sgemm(false, false, n, n, n, 1.0f, a.data_ptr<float>(), n, b.data_ptr<float>(), n, 0.0f,
                             c.data_ptr<float>(), n);
        });
    cpu_detail = fmt::format(" (the faster of ATen's {:.0f} and the kernels' sgemm {:.0f} GFLOP/s)",
                             *peaks.fp32_tflops * 1e3, kernels_tflops * 1e3);
    peaks.fp32_tflops = std::max(*peaks.fp32_tflops, kernels_tflops);
    if (ops::detail::cpu_has_bf16_arithmetic()) {
      peaks.bf16_tflops = gemm_tflops(at::kBFloat16, false);
      cpu_detail += fmt::format(", bf16 {:.0f} GFLOP/s", *peaks.bf16_tflops * 1e3);
    }
  }
  if (cuda) {
    peaks.tf32_tflops = gemm_tflops(at::kFloat, true);
    peaks.bf16_tflops = gemm_tflops(at::kBFloat16, false);
    peaks.fp16_tflops = gemm_tflops(at::kHalf, false);
  }
  compat::set_tf32_allowed(false);
  const int64_t bytes = cuda ? (int64_t{2} << 30) : (int64_t{256} << 20);
  const at::Tensor source = at::ones({bytes / 4}, at::TensorOptions().device(device).dtype(at::kFloat));
  at::Tensor target = at::empty_like(source);
  const double copy_ms = time_ms([&] { target.copy_(source); }, cuda ? 20 : 5);
  peaks.bandwidth_gbps = 2.0 * static_cast<double>(bytes) / (copy_ms * 1e6);
  log(fmt::format("measured peaks on {}: fp32 {:.2f} TFLOP/s{}, copy {:.0f} GB/s", device.str(), *peaks.fp32_tflops,
                  cuda ? fmt::format(", tf32 {:.1f}, bf16 {:.1f}, fp16 {:.1f}", *peaks.tf32_tflops, *peaks.bf16_tflops,
                                     *peaks.fp16_tflops)
                       : cpu_detail,
                  *peaks.bandwidth_gbps));
  if (cuda) cuda_support::empty_cache();
  return peaks;
}

struct Pass {
  std::vector<core::StageSample> samples;
  double wall_ms = 0.0;
};

// One forward pass: backbone of all frames in one call (the official feature_extractor_chunk_size is 256),
// query features, the chunks, assembly on the device, download; one host wait, at the end.
Pass forward_pass(const engine::Engine& engine, const at::Tensor& frames, const at::Tensor& queries, int chunk) {
  Pass pass;
  engine::StageRecorder recorder(engine.cuda_index());
  synchronize(engine);
  const double start = now_ms();
  const int64_t count = queries.size(1), frame_count = frames.size(0);
  model::FeatureGrids grids = engine.allocate_grids(frame_count);
  for (int64_t begin = 0; begin < frame_count; begin += 256) {
    engine.compute_features(frames.narrow(0, begin, std::min<int64_t>(256, frame_count - begin)), grids, begin,
                            recorder);
  }
  const model::QueryFeatures features = engine.query_features(grids, queries, recorder);
  std::vector<at::Tensor> tracks, occlusion, expected;
  int index = 0;
  for (int64_t begin = 0; begin < count; begin += chunk, ++index) {
    const int64_t n = std::min<int64_t>(chunk, count - begin);
    const model::TrackState state =
        engine.track_chunk(grids, features.slice(begin, begin + n), queries.narrow(1, begin, n), index, recorder);
    tracks.push_back(state.tracks);
    occlusion.push_back(state.occlusion);
    expected.push_back(state.expected_dist);
  }
  at::Tensor all_tracks, all_occlusion, all_expected;
  {
    const auto scope =
        recorder.time(core::Stage::assembly, 0, 0, {0.0, static_cast<double>(count * frame_count * 16 * 2)});
    all_tracks = at::cat(tracks, 1);
    all_occlusion = at::cat(occlusion, 1);
    all_expected = at::cat(expected, 1);
  }
  {
    const auto scope = recorder.time(core::Stage::download, 0, 0, {0.0, static_cast<double>(count * frame_count * 16)});
    all_tracks = all_tracks.to(at::kCPU);
    all_occlusion = all_occlusion.to(at::kCPU);
    all_expected = all_expected.to(at::kCPU);
  }
  pass.samples = recorder.collect();
  pass.wall_ms = now_ms() - start;
  return pass;
}

template <class Value, size_t N>
const char* name_in(const BenchName<Value> (&names)[N], Value value) {
  for (const BenchName<Value>& n : names) {
    if (n.value == value) return n.name;
  }
  return "?";
}

engine::EnginePath engine_path(BenchPath path) {
  switch (path) {
    case BenchPath::fused: return engine::EnginePath::fused;
    case BenchPath::eager: return engine::EnginePath::eager;
    case BenchPath::automatic: break;
  }
  return engine::EnginePath::automatic;
}

ops::CorrKernel corr_kernel(BenchCorrKernel kernel) {
  switch (kernel) {
    case BenchCorrKernel::classic: return ops::CorrKernel::classic;
    case BenchCorrKernel::tensor_cores: return ops::CorrKernel::tensor_cores;
    case BenchCorrKernel::wmma: return ops::CorrKernel::wmma;
    case BenchCorrKernel::pipelined: return ops::CorrKernel::pipelined;
    case BenchCorrKernel::automatic: break;
  }
  return ops::CorrKernel::automatic;
}

ops::CmdTopFast::Convolution cmdtop_convolution(BenchCmdTop cmdtop) {
  switch (cmdtop) {
    case BenchCmdTop::im2col: return ops::CmdTopFast::Convolution::im2col;
    case BenchCmdTop::dense: return ops::CmdTopFast::Convolution::dense;
    case BenchCmdTop::fused: return ops::CmdTopFast::Convolution::fused;
    case BenchCmdTop::automatic: break;
  }
  return ops::CmdTopFast::Convolution::automatic;
}

}  // namespace

const char* to_string(BenchPath value) { return name_in(kBenchPathNames, value); }
const char* to_string(BenchCorrKernel value) { return name_in(kBenchCorrKernelNames, value); }
const char* to_string(BenchCmdTop value) { return name_in(kBenchCmdTopNames, value); }
const char* to_string(BenchNorm value) { return name_in(kBenchNormNames, value); }
const char* to_string(BenchMixer value) { return name_in(kBenchMixerNames, value); }
const char* to_string(BenchGlue value) { return name_in(kBenchGlueNames, value); }
const char* to_string(BenchGelu value) { return name_in(kBenchGeluNames, value); }
int64_t default_attention_from_frames() { return engine::kDefaultTensorCoreAttentionFrames; }
const char* to_string(BenchSwitch value) { return name_in(kBenchSwitchNames, value); }

core::Status BenchOptions::check() const {
  if (models.empty() && weights.empty()) return core::invalid_argument("bench: no model to run");
  for (const std::string& m : models) {
    if (m != "small" && m != "base") return core::invalid_argument(fmt::format("bench: unknown model size '{}'", m));
  }
  if (points.empty() || frames.empty() || precisions.empty() || chunks.empty()) {
    return core::invalid_argument("bench: every sweep list needs at least one value");
  }
  for (int n : points) {
    if (n < 1 || n > 1'000'000) return core::invalid_argument(fmt::format("bench: {} points is out of range", n));
  }
  for (int t : frames) {
    if (t < 2 || t > 100'000)
      return core::invalid_argument(fmt::format("bench: {} frames is out of range (2..100000)", t));
  }
  for (int c : chunks) {
    if (c < 0) return core::invalid_argument(fmt::format("bench: chunk {} is negative", c));
  }
  if (repeats < 1 || repeats > 1000 || warmup < 0 || warmup > 100) {
    return core::invalid_argument("bench: repeats must be 1..1000 and warm-up 0..100");
  }
  if (cpu_threads < 0) return core::invalid_argument("bench: negative thread count");
  return {};
}

core::Expected<core::Profile> run_bench(const BenchOptions& options,
                                        const std::function<void(const std::string&)>& log) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  core::Expected<core::DeviceInfo> device = resolve_device(options.device);
  if (!device) return device.status();
  const core::RuntimeInfo runtime = runtime_versions();
  for (core::Precision p : options.precisions) {
    TRACKSCOPE_RETURN_IF_ERROR(core::check_precision(p, *device, runtime));
    if (const core::PrecisionSupport support = core::precision_support(p, *device, runtime);
        support.level != core::SupportLevel::supported) {
      log(fmt::format("{} on {} is {}: {}", core::to_string(p), device->id, core::to_string(support.level),
                      support.reason));
    }
  }
  if (!device->is_cuda()) {
    keep_freed_host_memory();
    if (options.cpu_threads > 0) set_cpu_threads(options.cpu_threads);
    device->multiprocessors = at::get_num_threads();
    device->name = fmt::format("CPU ({} threads)", device->multiprocessors);
  }
  const at::Device torch_device(device->id);
  try {
    c10::InferenceMode inference;
    core::Profile profile;
    profile.tool.name = "trackscope-cli";
    profile.tool.version = "0.1.0";
    profile.tool.command = options.command;
    profile.created_utc = core::utc_timestamp_now();
    profile.host = core::probe_host_info();
    profile.device = *device;
    profile.runtime = runtime;
    profile.runtime.trackscope_kernels = runtime.trackscope_kernels && device->is_cuda();  // they ran
    if (options.measure_peaks) profile.device.measured_peaks = measure_peaks(torch_device, log);

    core::Expected<std::unique_ptr<core::TelemetrySampler>> sampler =
        core::TelemetrySampler::create({}, open_device_telemetry(*device));
    if (!sampler) return sampler.status();
    (*sampler)->start();

    const int max_frames = *std::max_element(options.frames.begin(), options.frames.end());
    core::Expected<at::Tensor> unique = load_frames(options.video, max_frames);
    if (!unique) return unique.status();
    const std::string video_description = options.video.empty() ? "procedural sample scene (256x256)" : options.video;

    // Models: one weights file, or random weights of each size (seeded; the official baseline used random weights too).
    std::vector<std::pair<std::string, std::shared_ptr<const model::LocoTrack>>> models;
    if (!options.weights.empty()) {
      TrackerFactoryOptions factory_options;
      for (const auto& d : options.model_dirs) factory_options.model_dirs.emplace_back(d);
      core::Expected<std::filesystem::path> path = resolve_model_path(options.weights, factory_options);
      if (!path) return path.status();
      core::Expected<weights::LoadedModel> loaded = weights::load_locotrack(*path, torch_device);
      if (!loaded) return loaded.status();
      models.emplace_back(loaded->info.model_size, loaded->model);
    } else {
      for (const std::string& size : options.models) {
        at::manual_seed(options.seed);
        c10::InferenceMode no_inference(false);
        auto m = std::make_shared<model::LocoTrack>(
            model::LocoTrackConfig{size == "small" ? model::ModelSize::small : model::ModelSize::base});
        m->to(torch_device);
        models.emplace_back(size, m);
      }
    }

    for (const auto& [size, model] : models) {
      for (core::Precision precision : options.precisions) {
        engine::EngineOptions engine_options;
        engine_options.precision = precision;
        engine_options.path = engine_path(options.path);
        engine_options.corr_kernel = corr_kernel(options.corr_kernel);
        engine_options.cmdtop_convolution = cmdtop_convolution(options.cmdtop);
        if (options.cudnn_benchmark != BenchSwitch::automatic)
          engine_options.cudnn_benchmark = options.cudnn_benchmark == BenchSwitch::on;
        if (options.cudnn_benchmark_limit >= 0) engine_options.cudnn_benchmark_limit = options.cudnn_benchmark_limit;
        engine_options.fused_instance_norm = options.norm != BenchNorm::reference;
        engine_options.cuda_graphs = options.cuda_graphs;
        if (options.mixer != BenchMixer::automatic) engine_options.fused_mixer = options.mixer != BenchMixer::reference;
        engine_options.mixer_arithmetic = options.mixer == BenchMixer::plain ? ops::MixerFast::Arithmetic::plain
                                                                             : ops::MixerFast::Arithmetic::automatic;
        engine_options.glue_path =
            options.glue == BenchGlue::composite ? ops::GluePath::composite : ops::GluePath::automatic;
        if (options.mlp_gelu != BenchGelu::automatic) {
          engine_options.mlp_gelu =
              options.mlp_gelu == BenchGelu::fused_tanh ? ops::MlpGelu::fused_tanh : ops::MlpGelu::exact;
        }
        if (options.attention_from_frames >= 0)
          engine_options.tensor_core_attention_frames = options.attention_from_frames;
        std::optional<engine::Engine> engine;
        {
          c10::InferenceMode no_inference(false);  // the engine converts weights outside inference mode
          engine.emplace(model, torch_device, engine_options);
        }
        engine->apply_precision_flags();
        for (int frames : options.frames) {
          const at::Tensor video = engine->prepare_frames(ping_pong(*unique, frames));
          for (int points : options.points) {
            const at::Tensor queries =
                random_queries(points, frames, options.seed + static_cast<uint64_t>(points)).to(torch_device);
            for (int chunk_option : options.chunks) {
              const int chunk = chunk_option <= 0 || chunk_option > points ? points : chunk_option;
              core::RunConfig config;
              config.model_size = size;
              config.points = points;
              config.frames = frames;
              config.precision = precision;
              config.chunk = chunk_option <= 0 ? 0 : chunk;
              config.tf32_matmul = at::globalContext().allowTF32CuBLAS();
              config.tf32_cudnn = at::globalContext().allowTF32CuDNN();
              config.repeats = options.repeats;
              config.warmup = options.warmup;
              config.video = fmt::format("{}, {} frames", video_description, frames);
              core::CostModelConfig cost;
              cost.frames = frames;
              cost.points = points;
              cost.chunk = chunk;
              engine->set_cost_config(cost);
              core::ProfileCaseBuilder builder(config);
              const double case_start_s = (*sampler)->now_s();
              try {
                for (int w = 0; w < options.warmup; ++w) {
                  const Pass pass = forward_pass(*engine, video, queries, chunk);
                  builder.add_warmup(pass.samples, pass.wall_ms);
                }
                if (device->is_cuda()) cuda_support::reset_peak_memory(torch_device.index());
                for (int r = 0; r < options.repeats; ++r) {
                  const Pass pass = forward_pass(*engine, video, queries, chunk);
                  builder.add_repeat(pass.samples, pass.wall_ms);
                }
              } catch (const std::exception& e) {
                if (device->is_cuda()) cuda_support::empty_cache();
                log(fmt::format("{}: skipped: {}", core::default_case_name(config), e.what()));
                continue;
              }
              const int64_t peak = device->is_cuda()
                                       ? cuda_support::peak_allocated_bytes(torch_device.index())
                                       : static_cast<int64_t>(core::peak_resident_mib() * 1024.0 * 1024.0);
              core::ProfileCase result =
                  builder.build(peak, core::summarize_telemetry((*sampler)->samples_since(case_start_s)));
              result.notes = fmt::format(
                  "{} path, corr kernel {}, CMDTop {}, backbone norm {}, mixer {}, glue kernels {}, MLP GELU {}, "
                  "mixer attention {}, CUDA graphs {}, cuDNN benchmark {}{}",
                  engine->fused() ? "fused" : "eager", to_string(options.corr_kernel),
                  engine->uses_fused_cmdtop() ? "fused" : to_string(options.cmdtop),
                  engine->uses_fused_instance_norm() ? "fused" : "reference",
                  engine->uses_tf32x3_mixer()  ? "fused 3xTF32"
                  : engine->uses_fused_mixer() ? "fused"
                                               : "reference",
                  to_string(options.glue),
                  to_string(engine->mlp_gelu() == ops::MlpGelu::exact ? BenchGelu::exact : BenchGelu::fused_tanh),
                  engine->uses_tensor_core_attention(frames) ? "tensor cores" : "module",
                  engine->uses_cuda_graphs() ? "on" : "off",
                  at::globalContext().benchmarkCuDNN()
                      ? fmt::format("on (limit {})", at::globalContext().benchmarkLimitCuDNN())
                      : std::string("off"),
                  device->is_cuda() ? "" : "; peak memory = process peak RSS");
              result.host_syncs_per_run = 1;  // the download at the end of the pass
              log(fmt::format("{}: median {:.2f} ms (p90 {:.2f}), peak {:.0f} MiB, {:.0f} points/s", result.name,
                              result.end_to_end.median_ms, result.end_to_end.p90_ms,
                              static_cast<double>(peak) / (1 << 20), result.points_per_second));
              profile.cases.push_back(std::move(result));
            }
          }
        }
      }
    }
    (*sampler)->stop();
    compat::set_tf32_allowed(false);
    return profile;
  } catch (const std::exception& e) {
    return core::internal_error(fmt::format("bench failed on {}: {}", device->id, e.what()));
  }
}

}  // namespace trackscope::gpu
