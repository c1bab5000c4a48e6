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

// The engine choices a bench can force: torch-free mirrors of engine::EnginePath, ops::CorrKernel,
// ops::CmdTopFast::Convolution and the engine's switches (automatic = the engine's own choice). Each value's name
// (the CLI's and the profile notes') is in the table below it; to_string prints it.
template <class Value>
struct BenchName {
  const char* name;
  Value value;
};
enum class BenchPath { automatic, fused, eager };
inline constexpr BenchName<BenchPath> kBenchPathNames[] = {
    {"auto", BenchPath::automatic}, {"fused", BenchPath::fused}, {"eager", BenchPath::eager}};
enum class BenchCorrKernel { automatic, classic, tensor_cores, wmma, pipelined };
inline constexpr BenchName<BenchCorrKernel> kBenchCorrKernelNames[] = {{"auto", BenchCorrKernel::automatic},
                                                                       {"classic", BenchCorrKernel::classic},
                                                                       {"tensor", BenchCorrKernel::tensor_cores},
                                                                       {"wmma", BenchCorrKernel::wmma},
                                                                       {"pipelined", BenchCorrKernel::pipelined}};
enum class BenchCmdTop { automatic, im2col, dense, fused };
inline constexpr BenchName<BenchCmdTop> kBenchCmdTopNames[] = {{"auto", BenchCmdTop::automatic},
                                                               {"im2col", BenchCmdTop::im2col},
                                                               {"dense", BenchCmdTop::dense},
                                                               {"fused", BenchCmdTop::fused}};
enum class BenchNorm { automatic, fused, reference };
inline constexpr BenchName<BenchNorm> kBenchNormNames[] = {
    {"auto", BenchNorm::automatic}, {"fused", BenchNorm::fused}, {"reference", BenchNorm::reference}};
enum class BenchMixer { automatic, fused, plain, reference };
inline constexpr BenchName<BenchMixer> kBenchMixerNames[] = {{"auto", BenchMixer::automatic},
                                                             {"fused", BenchMixer::fused},
                                                             {"plain", BenchMixer::plain},
                                                             {"reference", BenchMixer::reference}};
enum class BenchGlue { automatic, composite };
inline constexpr BenchName<BenchGlue> kBenchGlueNames[] = {{"auto", BenchGlue::automatic},
                                                           {"composite", BenchGlue::composite}};
enum class BenchGelu { automatic, exact, fused_tanh };
inline constexpr BenchName<BenchGelu> kBenchGeluNames[] = {
    {"auto", BenchGelu::automatic}, {"exact", BenchGelu::exact}, {"fused-tanh", BenchGelu::fused_tanh}};
enum class BenchSwitch { automatic, on, off };
inline constexpr BenchName<BenchSwitch> kBenchSwitchNames[] = {
    {"auto", BenchSwitch::automatic}, {"on", BenchSwitch::on}, {"off", BenchSwitch::off}};

const char* to_string(BenchPath value);
const char* to_string(BenchCorrKernel value);
const char* to_string(BenchCmdTop value);
const char* to_string(BenchNorm value);
const char* to_string(BenchMixer value);
const char* to_string(BenchGlue value);
const char* to_string(BenchGelu value);
/// The engine's default for BenchOptions::attention_from_frames (EngineOptions::tensor_core_attention_frames).
int64_t default_attention_from_frames();
const char* to_string(BenchSwitch value);

struct BenchOptions {
  std::string device = "auto";
  std::vector<std::string> models = {"small"};  // sizes to sweep, with random weights (seed below)...
  std::string weights;                          // ...or one weights file ("default" = the bundled model)
  std::vector<int> points = {1024};
  std::vector<int> frames = {47};
  std::vector<core::Precision> precisions = {core::Precision::fp32};
  std::vector<int> chunks = {0};                             // queries per chunk; 0 = all points in one chunk
  BenchPath path = BenchPath::automatic;                     // gpu/engine/engine.h
  BenchCorrKernel corr_kernel = BenchCorrKernel::automatic;  // gpu/ops/ops.h CorrKernel
  BenchCmdTop cmdtop = BenchCmdTop::automatic;               // CmdTopFast::Convolution
  BenchSwitch cudnn_benchmark = BenchSwitch::automatic;
  int cudnn_benchmark_limit = -1;             // algorithms cuDNN's autotuning times (0 = all; -1 = LibTorch's default)
  BenchNorm norm = BenchNorm::automatic;      // the backbone's InstanceNorm+ReLU
  bool cuda_graphs = false;                   // track_chunk replayed as CUDA graphs (EngineOptions)
  BenchMixer mixer = BenchMixer::automatic;   // the temporal mixer (ops::MixerFast; plain = fused without 3xTF32;
                                              // reference = the module path)
  BenchGlue glue = BenchGlue::automatic;      // the glue ops (ops::GluePath)
  BenchGelu mlp_gelu = BenchGelu::automatic;  // the mixer MLP's GELU in bf16/fp16 on CUDA (ops::MlpGelu)
  int64_t attention_from_frames = -1;         // EngineOptions::tensor_core_attention_frames (-1 = the engine's default)
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
