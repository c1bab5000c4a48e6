#include "core/tracking/device.h"

#include <fmt/format.h>

#include <charconv>

namespace trackscope::core {

const char* to_string(Precision precision) {
  switch (precision) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
  }
  return "?";
}

Expected<Precision> parse_precision(std::string_view text) {
  for (Precision p : kAllPrecisions) {
    if (text == to_string(p)) return p;
  }
  return invalid_argument(fmt::format("unknown precision '{}': use fp32, tf32, bf16 or fp16", text));
}

Expected<DeviceId> DeviceId::parse(std::string_view text) {
  if (text == "auto") return automatic();
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  constexpr std::string_view kCudaPrefix = "cuda:";
  if (text.substr(0, kCudaPrefix.size()) == kCudaPrefix) {
    const std::string_view digits = text.substr(kCudaPrefix.size());
    int index = -1;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (!digits.empty() && error == std::errc() && end == digits.data() + digits.size() && index >= 0) {
      return cuda(index);
    }
  }
  return invalid_argument(fmt::format("unknown device '{}': use auto, cpu, cuda or cuda:N", text));
}

std::string DeviceId::to_string() const {
  switch (kind_) {
    case DeviceKind::automatic: return "auto";
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::cuda: return fmt::format("cuda:{}", index_);
  }
  return "?";
}

std::optional<DeviceId> DeviceInfo::device_id() const {
  Expected<DeviceId> parsed = DeviceId::parse(id);
  if (!parsed || parsed->is_automatic()) return std::nullopt;
  return *parsed;
}

bool DeviceInfo::is_cuda() const {
  const std::optional<DeviceId> parsed = device_id();
  return parsed && parsed->is_cuda();
}

Expected<DeviceInfo> resolve_device(const DeviceId& requested, const std::vector<DeviceInfo>& devices) {
  for (const DeviceInfo& device : devices) {
    const std::optional<DeviceId> id = device.device_id();
    if (!id) continue;
    if (requested.is_automatic() ? id->is_cuda() : *id == requested) return device;
  }
  if (requested.is_automatic()) {
    for (const DeviceInfo& device : devices) {
      if (const std::optional<DeviceId> id = device.device_id(); id && id->is_cpu()) return device;
    }
  }
  std::string known;
  for (const DeviceInfo& device : devices) known += (known.empty() ? "" : ", ") + device.id;
  return not_found(fmt::format("device '{}' does not exist here (available: {})", requested.to_string(),
                               known.empty() ? "none" : known));
}

int RuntimeInfo::libtorch_major() const {
  int major = 0;
  const auto [end, error] = std::from_chars(libtorch.data(), libtorch.data() + libtorch.size(), major);
  return error == std::errc() && major > 0 ? major : 0;
}

const char* to_string(SupportLevel level) {
  switch (level) {
    case SupportLevel::supported: return "supported";
    case SupportLevel::slow: return "slow";
    case SupportLevel::emulated: return "emulated";
    case SupportLevel::unsupported: return "unsupported";
  }
  return "?";
}

namespace {

std::string capability_text(const DeviceInfo& device) {
  return fmt::format("{}.{}", device.compute_capability_major, device.compute_capability_minor);
}

// The measured fidelity of the reduced precisions against fp32 (docs/performance-results.md, "Fast mode against
// exact mode"): the mean distance over the (track, frame) pairs that fp32 calls visible.
constexpr const char* kTf32Note =
    "TF32 rounds the inputs of convolutions and matrix products to a 10-bit mantissa: fast, but not bit-exact to the "
    "reference (fp32 is); measured 0.07 px mean from fp32 where points are visible (docs/performance-results.md)";
// The opt-in bf16 CPU mode (docs/performance-results.md, "bf16 on the CPU"): bundled model, 2-core Zen 5 VM.
constexpr const char* kCpuBf16Note =
    "bf16 is not bit-exact to the reference: 1.6x faster than fp32 with AVX-512 BF16, measured 0.45-0.89 px mean "
    "from fp32 where points are visible, but tracks jump by tens of px on a few frames (93-99% visibility "
    "agreement): for a quick look, not for annotation (docs/performance-results.md)";
constexpr const char* kFp16Note =
    "fp16 is not bit-exact to the reference: measured 0.13 px mean from fp32 where points are visible and 99.5% "
    "visibility agreement (docs/performance-results.md)";

PrecisionSupport on_cpu(Precision precision, const DeviceInfo& device, const RuntimeInfo& runtime) {
  switch (precision) {
    case Precision::fp32: return {precision, SupportLevel::supported, {}, {}};
    case Precision::tf32:
      return {precision,
              SupportLevel::unsupported,
              "TF32 is a tensor-core mode of NVIDIA GPUs (compute capability 8.0 or newer): on the CPU use fp32",
              {}};
    case Precision::bf16:
      if (device.cpu_bf16) return {precision, SupportLevel::supported, {}, kCpuBf16Note};
      return {precision,
              SupportLevel::slow,
              "this CPU has no bf16 arithmetic (AVX-512 BF16 or AMX): bf16 runs through conversions, no faster than "
              "fp32; use fp32",
              {}};
    case Precision::fp16:
      if (runtime.libtorch_major() < 2) {
        const std::string version = runtime.libtorch.empty() ? "of unknown version" : runtime.libtorch;
        return {precision,
                SupportLevel::unsupported,
                fmt::format("fp16 is not available on the CPU with LibTorch {} (no half-precision matrix products): "
                            "use fp32 or bf16",
                            version),
                {}};
      }
      return {precision, SupportLevel::emulated,
              fmt::format("most CPUs have no fp16 arithmetic: LibTorch {} converts to float32 and back, slower than "
                          "fp32; use fp32",
                          runtime.libtorch),
              kFp16Note};
  }
  return {precision, SupportLevel::unsupported, "unknown precision", {}};
}

PrecisionSupport on_cuda(Precision precision, const DeviceInfo& device) {
  const int capability = device.compute_capability();
  switch (precision) {
    case Precision::fp32: return {precision, SupportLevel::supported, {}, {}};
    case Precision::tf32:
      if (capability < 80) {
        return {precision,
                SupportLevel::unsupported,
                fmt::format("TF32 needs compute capability 8.0 or newer; {} is {} (the flags would be ignored: plain "
                            "fp32): use fp32",
                            device.name, capability_text(device)),
                {}};
      }
      return {precision, SupportLevel::supported, {}, kTf32Note};
    case Precision::bf16:
      if (capability < 80) {
        return {precision,
                SupportLevel::emulated,
                fmt::format("{} (compute capability {}) has no bf16 tensor cores; bf16 is emulated and slow, 2x or "
                            "more slower than fp32 (docs/locotrack-spec.md §6.1); use fp16 or fp32",
                            device.name, capability_text(device)),
                {}};
      }
      return {precision, SupportLevel::supported, {}, {}};
    case Precision::fp16:
      if (capability < 70) {
        return {
            precision, SupportLevel::slow,
            fmt::format("compute capability {} has no tensor cores: no speed-up from fp16", capability_text(device)),
            kFp16Note};
      }
      return {precision, SupportLevel::supported, {}, kFp16Note};
  }
  return {precision, SupportLevel::unsupported, "unknown precision", {}};
}

}  // namespace

PrecisionSupport precision_support(Precision precision, const DeviceInfo& device, const RuntimeInfo& runtime) {
  return device.is_cuda() ? on_cuda(precision, device) : on_cpu(precision, device, runtime);
}

std::vector<PrecisionSupport> precision_support(const DeviceInfo& device, const RuntimeInfo& runtime) {
  std::vector<PrecisionSupport> table;
  for (Precision precision : kAllPrecisions) table.push_back(precision_support(precision, device, runtime));
  return table;
}

Status check_precision(Precision precision, const DeviceInfo& device, const RuntimeInfo& runtime) {
  const PrecisionSupport support = precision_support(precision, device, runtime);
  if (support.usable()) return {};
  return unsupported(fmt::format("{} on {}: {}", to_string(precision), device.id, support.reason));
}

}  // namespace trackscope::core
