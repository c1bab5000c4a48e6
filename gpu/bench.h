#pragma once
// The tracker benchmark behind `trackscope-cli bench` (torch-free header). It sweeps model size, points N,
// frames T, precision and query chunk; each case runs warm-up passes and timed repeats of the forward pass on a
// video already resident on the device (as the official measurements in ../shared/reference do: decoding is
// not part of the forward), with per-stage timings from the engine's StageRecorder (CUDA events, no added
// synchronisation: one host wait per pass, at the download), peak device memory, points/s and the telemetry of
// the device during the case. The result is a core::Profile (docs/bench-json-schema.md).
//
//   BenchOptions options;
//   options.device = "cuda:0";
//   options.points = {256, 1024};
//   Expected<core::Profile> profile = run_bench(options, [](const std::string& line) { std::puts(line.c_str()); });
//
// Threads: run on one thread; the telemetry sampler runs its own thread during the bench.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/perf/profile.h"
#include "core/status.h"
#include "core/tracking/point_tracker.h"

namespace trackscope::gpu {

struct BenchOptions {
  std::string device = "auto";
  std::vector<std::string> models = {"small"};  // sizes to sweep, with random weights (seed below)...
  std::string weights;                          // ...or one weights file ("default" = the bundled model)
  std::vector<int> points = {1024};
  std::vector<int> frames = {47};
  std::vector<core::Precision> precisions = {core::Precision::fp32};
  std::vector<int> chunks = {0};         // queries per chunk; 0 = all points in one chunk
  std::string path = "auto";             // auto | fused | eager (gpu/engine/engine.h)
  std::string corr_kernel = "auto";      // auto | classic | tensor | wmma | pipelined (gpu/ops/ops.h CorrKernel)
  std::string cmdtop = "auto";           // auto | im2col | dense | fused (CmdTopFast::Convolution)
  std::string cudnn_benchmark = "auto";  // auto | on | off
  std::string norm = "auto";             // auto | fused | reference: the backbone's InstanceNorm+ReLU
  std::string cuda_graphs = "off";       // on | off: track_chunk replayed as CUDA graphs (EngineOptions)
  std::string mixer = "auto";            // auto | fused | plain | reference: the temporal mixer (ops::MixerFast;
                                         // plain = fused without 3xTF32; reference = the module path)
  int repeats = 5;
  int warmup = 2;
  std::string video;                    // frames (looped back and forth if short); empty = the
                                        // procedural sample scene at 256x256
  uint64_t seed = 1234;                 // weights (random) and query positions
  bool measure_peaks = true;            // GEMM and copy rates on the device, for the roofline
  int cpu_threads = 0;                  // LibTorch threads on the CPU (0 = leave as is)
  std::string command;                  // recorded in the profile
  std::vector<std::string> model_dirs;  // where "default" and official weights are looked up

  core::Status check() const;
};

/// Runs every case. A case that fails (e.g. out of memory) is logged and skipped; the others still run.
/// Errors: invalid_argument for bad options, not_found for a missing device, video or weights file.
core::Expected<core::Profile> run_bench(const BenchOptions& options,
                                        const std::function<void(const std::string&)>& log);

}  // namespace trackscope::gpu
