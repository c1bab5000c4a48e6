#pragma once
// Roofline view of a profiled run: per stage the achieved TFLOP/s and GB/s, their share of the device's peak at
// the precision the stage really ran, and the floor time max(FLOPs / peak, bytes / bandwidth); stages far above
// their floor are flagged. Also the per-stage floors used to predict ratios between devices, and the "what-if"
// that predicts a profile on another GPU of the specification table.
//
//   Roofline roofline = compute_roofline(profile, profile.cases[0]);
//   for (const StageRoofline& s : roofline.stages) if (s.flagged) log::info("{}: {:.0f}x its floor", s.stage,
//   s.above_floor); WhatIfOptions bf16;  bf16.precision = Precision::bf16; Expected<Profile> t4 =
//   predict_profile(profile, 0, *find_gpu_spec("t4"), bf16);
//
// Precision per stage: a stage runs at the precision of the case, except that with precision fp32 the TF32 flags
// decide (cuDNN flag for convolution stages, matmul flag for matrix stages), and TF32 needs compute capability 8.0:
// below it the flags are ignored (plain FP32). bf16 below 8.0 is emulated (kEmulatedBf16FractionOfFp32).
// Threads: pure functions.

#include <optional>
#include <string>
#include <vector>

#include "core/perf/cost_model.h"
#include "core/perf/gpu_specs.h"
#include "core/perf/profile.h"

namespace trackscope::core {

/// The table row of a profiled device: by spec_key, else by name. nullptr for the CPU and unknown cards.
const GpuSpec* spec_for_device(const DeviceInfo& device);
/// The peaks used for a device: its table row overridden by the profile's measured peaks.
DevicePeaks peaks_for_device(const DeviceInfo& device);

/// The precision a stage of kind `work` really computes in (see above). compute_capability 0 = CPU.
Precision effective_precision(StageWork work, const RunConfig& config, int compute_capability);
/// True when the stage used TF32 tensor cores.
bool uses_tf32(StageWork work, const RunConfig& config, int compute_capability);
/// Bytes per element of a precision (4 for fp32/tf32, 2 for bf16/fp16).
int precision_bytes(Precision precision);

enum class Bound { compute, memory, none };
const char* to_string(Bound bound);

/// The floor of some work on a device at a given compute rate.
struct Floor {
  double compute_ms = 0.0;  // flops / peak
  double memory_ms = 0.0;   // bytes / bandwidth
  double ms() const { return compute_ms > memory_ms ? compute_ms : memory_ms; }
  Bound bound() const;  // none when both are 0
};
/// Floor at `tflops` and `gbps` (either may be 0 = unknown: that term is then left out).
Floor floor_of(double flops, double bytes, double tflops, double gbps);

/// Which rate a stage is judged against.
enum class PeakBasis {
  effective,  // the precision really used, with TF32 flags and bf16 emulation (the roofline, the what-if)
  nominal,    // the precision the run asked for, at the datasheet's rate (the "predicted" comparison ratio)
};
/// The floor of one stage of a run on a device; nullopt when the stage runs on the host, moves data over PCIe,
/// has neither FLOPs nor bytes, or the device's peaks are unknown.
std::optional<Floor> stage_floor(const StageStats& stage, const RunConfig& config, const DeviceInfo& device,
                                 PeakBasis basis);

struct StageRoofline {
  std::string stage;
  StageWork work = StageWork::host;
  double ms = 0.0;              // median per forward pass
  double share_of_total = 0.0;  // of the sum of the stages' medians
  double flops = 0.0;
  double bytes = 0.0;
  Precision precision = Precision::fp32;  // effective
  double peak_tflops = 0.0;               // effective peak used (0 = unknown)
  double peak_gbps = 0.0;
  double achieved_tflops = 0.0;
  double achieved_gbps = 0.0;
  double compute_share = 0.0;  // achieved / peak, 0..1 (0 when unknown)
  double bandwidth_share = 0.0;
  std::optional<Floor> floor;
  double above_floor = 0.0;  // ms / floor ms (0 without a floor)
  bool flagged = false;      // above_floor > RooflineOptions::flag_factor
};

struct RooflineOptions {
  double flag_factor = 4.0;  // "within 4x of its floor" is the engine's target (issue 8)
};

struct Roofline {
  std::string device_name;
  DevicePeaks peaks;
  std::vector<StageRoofline> stages;
  double total_ms = 0.0;        // sum of the stages' medians
  double total_floor_ms = 0.0;  // sum of the floors (stages with one)
};
Roofline compute_roofline(const Profile& profile, const ProfileCase& run, const RooflineOptions& options = {});

/// What-if: the case `case_index` of `profile` predicted on `target`, optionally at another precision or TF32
/// setting. First-order two-term model per device stage: a measured time t is a throughput part that runs at an
/// attainable fraction f of the effective floor, plus an overhead part (launches, syncs, latency-bound kernels):
///   e = floor / t.   e >= f: t' = floor' / e             (the stage keeps its efficiency)
///                    e <  f: t' = floor' / f + (t - floor / f) x clock / clock'   (overhead scales with the clock)
/// Bytes are rescaled to the new element size. Host stages and PCIe transfers keep their time, and so does the
/// unattributed rest of the end-to-end time. unsupported when the source device has no known peaks (e.g. a CPU
/// profile without measured peaks).
struct WhatIfOptions {
  std::optional<Precision> precision;
  std::optional<bool> tf32_matmul;
  std::optional<bool> tf32_cudnn;
  double attainable_fraction =
      0.5;  // f: a well-tuned kernel's share of its floor (docs/locotrack-spec.md §5.3 uses ~50%)
};
/// The predicted time of one stage (the model above); `source_clock_mhz`/`target_clock_mhz` 0 = unknown (no scaling).
double predict_stage_ms(double measured_ms, double floor_ms, double target_floor_ms, double attainable_fraction,
                        double source_clock_mhz, double target_clock_mhz);
Expected<Profile> predict_profile(const Profile& profile, size_t case_index, const GpuSpec& target,
                                  const WhatIfOptions& options = {});

}  // namespace trackscope::core
