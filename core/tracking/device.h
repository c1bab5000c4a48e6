#pragma once
// Devices and precisions, torch-free: what a device is called (DeviceId: parsed once, printed once), what it is
// (DeviceInfo), what runs it (RuntimeInfo), and which precisions it supports (precision_support: the one table that
// the precision selector, the tracker factory, the engine, the bench and the diagnosis read).
//
//   Expected<DeviceId> id = DeviceId::parse("cuda:1");            // "auto", "cpu", "cuda" (= cuda:0), "cuda:N"
//   Expected<DeviceInfo> device = resolve_device(*id, factory.devices());
//   for (const PrecisionSupport& s : precision_support(*device, factory.runtime()))
//     if (!s.usable()) ...;                                        // s.reason says why
//
// Threads: plain values and pure functions.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace trackscope::core {

enum class Precision {
  fp32,  // exact: float32, TF32 off (parity with the official implementation)
  tf32,  // float32 storage, TF32 tensor cores for convolutions and matrix products (compute capability >= 8.0)
  bf16,  // bfloat16 compute (fast on compute capability >= 8.0, emulated and slow below)
  fp16,  // float16 compute (tensor cores from compute capability 7.0)
};
const char* to_string(Precision precision);
Expected<Precision> parse_precision(std::string_view text);
inline constexpr Precision kAllPrecisions[] = {Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16};

enum class DeviceKind {
  automatic,  // a request: the first CUDA device, else the CPU (resolve_device)
  cpu,
  cuda,
};

/// A device's name. The only parser and printer of "cpu" / "cuda:N" in the code base.
class DeviceId {
 public:
  DeviceId() = default;  // automatic
  static DeviceId automatic() { return {}; }
  static DeviceId cpu() { return DeviceId(DeviceKind::cpu, -1); }
  static DeviceId cuda(int index) { return DeviceId(DeviceKind::cuda, index); }
  /// "auto", "cpu", "cuda" (= "cuda:0") or "cuda:N"; invalid_argument otherwise.
  static Expected<DeviceId> parse(std::string_view text);

  DeviceKind kind() const { return kind_; }
  bool is_automatic() const { return kind_ == DeviceKind::automatic; }
  bool is_cpu() const { return kind_ == DeviceKind::cpu; }
  bool is_cuda() const { return kind_ == DeviceKind::cuda; }
  /// N of "cuda:N"; -1 for the CPU and for automatic.
  int cuda_index() const { return index_; }
  /// "auto", "cpu", "cuda:N".
  std::string to_string() const;
  bool operator==(const DeviceId&) const = default;

 private:
  DeviceId(DeviceKind kind, int index) : kind_(kind), index_(index) {}
  DeviceKind kind_ = DeviceKind::automatic;
  int index_ = -1;
};

/// Peaks measured on the card (a bench may run a GEMM and a copy kernel); each one given replaces the datasheet
/// value in the roofline (core/perf/gpu_specs.h). Unset = use the datasheet.
struct MeasuredPeaks {
  std::optional<double> fp32_tflops;
  std::optional<double> tf32_tflops;
  std::optional<double> bf16_tflops;
  std::optional<double> fp16_tflops;
  std::optional<double> bandwidth_gbps;
  bool empty() const { return !fp32_tflops && !tf32_tflops && !bf16_tflops && !fp16_tflops && !bandwidth_gbps; }
  bool operator==(const MeasuredPeaks&) const = default;
};

/// A device the tracker can run on, as the tracker factory lists it and as a profile records it. Every member has
/// an initialiser, so that {id, name, ...} may leave the trailing ones out without -Wmissing-field-initializers.
struct DeviceInfo {
  std::string id{};          // DeviceId::to_string() ("cpu", "cuda:0"); a profile may hold another label ("what-if")
  std::string name{};        // as CUDA reports it: "NVIDIA H200"; "CPU (16 threads)"
  int multiprocessors = 0;   // SMs (CPU: threads)
  int64_t memory_bytes = 0;  // device memory (0 for the CPU: host memory)
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  double sm_clock_max_mhz = 0.0;  // 0 = unknown
  double memory_clock_max_mhz = 0.0;
  int64_t l2_cache_bytes = 0;
  std::string pci_bus_id{};
  std::string spec_key{};  // the GPU specification row used ("h200"); empty = look up by name
  /// The CPU: it has bf16 arithmetic (AVX-512 BF16 or AMX-BF16), which makes bf16 faster than fp32 there.
  /// Unused for CUDA devices (the compute capability says).
  bool cpu_bf16 = false;
  MeasuredPeaks measured_peaks{};
  /// The parsed id; nullopt for a label that names no device ("what-if").
  std::optional<DeviceId> device_id() const;
  bool is_cuda() const;
  /// 75 for 7.5; 0 for the CPU.
  int compute_capability() const { return compute_capability_major * 10 + compute_capability_minor; }
  bool operator==(const DeviceInfo&) const = default;
};

/// The device `requested` names among `devices` (the CPU first, as TrackerFactory::devices lists them): automatic
/// -> the first CUDA device, else the CPU. not_found (naming those that exist) when it is not among them.
Expected<DeviceInfo> resolve_device(const DeviceId& requested, const std::vector<DeviceInfo>& devices);

/// Versions of the runtime pieces (LibTorch, CUDA, cuDNN, driver) and what this build contains.
struct RuntimeInfo {
  std::string libtorch;      // "1.13.1", "2.11.0"; empty = unknown
  std::string cuda_runtime;  // empty without CUDA
  std::string cudnn;
  std::string driver;               // the highest CUDA version the driver supports
  bool torch_cuda = false;          // LibTorch was built with CUDA
  bool trackscope_kernels = false;  // Trackscope's own CUDA kernels are in this build (a profile: and ran)
  /// The major version of `libtorch` ("2.11.0" -> 2); 0 when unknown.
  int libtorch_major() const;
  bool operator==(const RuntimeInfo&) const = default;
};

/// How well a device runs a precision.
enum class SupportLevel {
  supported,    // runs at the precision's speed
  slow,         // runs, but without the hardware that makes it fast (no speed-up over fp32, or slower)
  emulated,     // runs through conversions or emulation: slower than fp32
  unsupported,  // refused (the factory and the engine fail with the reason; the selector does not offer it)
};
const char* to_string(SupportLevel level);

struct PrecisionSupport {
  Precision precision = Precision::fp32;
  SupportLevel level = SupportLevel::supported;
  std::string reason;  // slow / emulated / unsupported: why, and what to use instead; empty when supported
  std::string note;    // a caveat that holds even where it is supported (not bit-exact, measured fidelity)
  bool usable() const { return level != SupportLevel::unsupported; }
};

/// The support table. CPU: fp32; tf32 unsupported (a CUDA tensor-core mode); bf16 supported where the CPU has
/// bf16 arithmetic (DeviceInfo::cpu_bf16; an opt-in with its measured fidelity as the note), slow elsewhere; fp16
/// unsupported with LibTorch 1.x (no half-precision GEMM) or an unknown version, emulated from LibTorch 2. CUDA: fp32;
/// tf32 from compute capability 8.0 (unsupported below: the flags would be ignored); bf16 native from 8.0, emulated
/// below; fp16 on tensor cores from 7.0, slow below.
PrecisionSupport precision_support(Precision precision, const DeviceInfo& device, const RuntimeInfo& runtime);
/// Every precision (fp32, tf32, bf16, fp16) on `device`.
std::vector<PrecisionSupport> precision_support(const DeviceInfo& device, const RuntimeInfo& runtime);
/// OK when usable; unsupported with the table's reason otherwise.
Status check_precision(Precision precision, const DeviceInfo& device, const RuntimeInfo& runtime);

}  // namespace trackscope::core
