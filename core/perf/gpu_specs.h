#pragma once
// A table of NVIDIA GPU specifications (datasheet values) for the roofline and the cross-device predictions of
// the performance view, and the precision-specific peak rates derived from them.
//
//   const GpuSpec* spec = find_gpu_spec("NVIDIA A100-SXM4-80GB");   // the name CUDA reports, or a key ("a100-80gb")
//   if (spec) double tflops = spec->nominal_peak_tflops(Precision::bf16);
//
// Units: TFLOP/s are dense (no structured sparsity) FLOP rates, 2 FLOP per multiply-add; memory bandwidth in
// GB/s (10^9 bytes/s); memory in GB (10^9 bytes, as datasheets print it); L2 in MB (2^20 bytes); clocks in MHz.
// Tensor-core rates are those with FP32 accumulation where a card has two (GeForce halves FP32-accumulate rates).
// A rate of 0 means the card has no unit for it (T4: no TF32 or BF16 tensor cores).
// Threads: the table is immutable; every function is safe from any thread.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tracking/device.h"

namespace trackscope::core {

/// bf16 on a card without bf16 tensor cores (compute capability < 8.0) runs through emulated, non-tensor-core
/// paths. docs/locotrack-spec.md §6.1 (third-party measurements, openxla/xla#12429, jax-ml/jax#21212): below 50% of the
/// card's FP32 rate. The what-if and the effective peaks use this fraction.
inline constexpr double kEmulatedBf16FractionOfFp32 = 0.5;

struct GpuSpec {
  std::string key;                      // short lower-case id: "t4", "a100-80gb", "h100-sxm"
  std::string display_name;             // "NVIDIA A100 80GB SXM4"
  std::vector<std::string> cuda_names;  // names cudaGetDeviceProperties reports ("NVIDIA A100-SXM4-80GB")
  std::string architecture;             // "Ampere"
  int multiprocessors = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  double memory_gb = 0.0;
  double bandwidth_gbps = 0.0;
  double l2_mb = 0.0;
  double boost_clock_mhz = 0.0;
  double fp32_tflops = 0.0;         // CUDA cores, non-tensor
  double tf32_tensor_tflops = 0.0;  // 0: no TF32 tensor cores
  double bf16_tensor_tflops = 0.0;  // 0: no BF16 tensor cores
  double fp16_tensor_tflops = 0.0;  // 0: no tensor cores
  std::string source;               // the datasheet/whitepaper the row comes from

  int compute_capability() const { return compute_capability_major * 10 + compute_capability_minor; }
  /// BF16 tensor cores exist from compute capability 8.0 (Ampere).
  bool native_bf16() const { return compute_capability() >= 80; }
  /// TF32 tensor cores exist from compute capability 8.0; below, the TF32 flags are ignored (plain FP32).
  bool has_tf32() const { return compute_capability() >= 80 && tf32_tensor_tflops > 0.0; }
  /// The rate a datasheet reader expects for `precision` (the "predicted" side of a comparison): fp32 -> CUDA
  /// cores; tf32 -> TF32 tensor cores (FP32 cores without them); bf16 -> BF16 tensor cores, or the card's 16-bit
  /// tensor rate without them ("bf16 is supported", which it is, through emulation); fp16 -> FP16 tensor cores.
  double nominal_peak_tflops(Precision precision) const;
  /// The rate the precision really gets: as nominal, but bf16 without bf16 tensor cores is emulated at
  /// kEmulatedBf16FractionOfFp32 of the FP32 rate.
  double effective_peak_tflops(Precision precision) const;
};

/// The whole table, in a stable order (oldest architecture first).
std::span<const GpuSpec> gpu_spec_table();

/// Finds a row by the name CUDA reports (exact, case-insensitive), by key, or by display name; falls back to a
/// match of the model token ("Tesla T4" -> t4, "NVIDIA H100 PCIe" -> h100-pcie). nullptr when unknown.
const GpuSpec* find_gpu_spec(std::string_view name_or_key);

/// As find_gpu_spec, with a not_found Status that lists the known keys.
Expected<const GpuSpec*> lookup_gpu_spec(std::string_view name_or_key);

/// The peak rates used for one device in one roofline: the datasheet row (if any) with measured overrides.
struct DevicePeaks {
  std::string source;          // "datasheet: ...", "measured", "datasheet + measured"
  int compute_capability = 0;  // 75 for 7.5; 0 for the CPU
  double fp32_tflops = 0.0;
  double tf32_tflops = 0.0;  // effective: 0 on cards without TF32 (use fp32)
  double bf16_tflops = 0.0;  // effective: emulated rate on cc < 8.0
  double fp16_tflops = 0.0;
  double nominal_bf16_tflops = 0.0;  // what a datasheet reader expects for bf16 (see GpuSpec)
  double nominal_tf32_tflops = 0.0;
  double bandwidth_gbps = 0.0;
  double l2_mb = 0.0;
  double boost_clock_mhz = 0.0;
  bool known() const { return fp32_tflops > 0.0 && bandwidth_gbps > 0.0; }
  /// Effective peak for a compute precision (0 when unknown).
  double effective_tflops(Precision precision) const;
  /// Nominal (datasheet-reader) peak for a precision (0 when unknown).
  double nominal_tflops(Precision precision) const;
};

/// Peaks of a table row, then overridden by what was measured. `spec` may be null (e.g. the CPU): the result is
/// then known only if the measured peaks give at least the FP32 rate and the bandwidth.
DevicePeaks device_peaks(const GpuSpec* spec, const MeasuredPeaks& measured);

/// FP32 rate assumed for one CPU hardware thread in estimated_fp32_tflops: AVX2, two FMA units of 8 lanes at
/// ~2 GHz per core (64 GFLOP/s), shared by its two hardware threads.
inline constexpr double kCpuThreadFp32Gflops = 32.0;

/// A rough FP32 rate of a device, for comparing devices before anything has been measured on them (the batch
/// scheduler's first clip): a known GPU's datasheet FP32 rate; an unknown GPU's multiprocessors x 128 lanes x
/// 2 FLOP x 1.5 GHz; the CPU's `cpu_threads` (or, when 0, device.multiprocessors) x kCpuThreadFp32Gflops.
/// 0 when nothing is known. A guess within a factor of a few: callers must leave room for that.
double estimated_fp32_tflops(const DeviceInfo& device, int cpu_threads);

}  // namespace trackscope::core
