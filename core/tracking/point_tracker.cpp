#include "core/tracking/point_tracker.h"

#include <fmt/format.h>

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
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16}) {
    if (text == to_string(p)) return p;
  }
  return invalid_argument(fmt::format("unknown precision '{}': use fp32, tf32, bf16 or fp16", text));
}

const char* to_string(InputResize resize) {
  switch (resize) {
    case InputResize::bilinear: return "bilinear";
    case InputResize::lanczos: return "lanczos";
  }
  return "?";
}

Expected<InputResize> parse_input_resize(std::string_view text) {
  for (InputResize f : {InputResize::bilinear, InputResize::lanczos}) {
    if (text == to_string(f)) return f;
  }
  return invalid_argument(fmt::format("unknown input resize '{}': use bilinear or lanczos", text));
}

Status TrackerOptions::check() const {
  if (model.empty()) return invalid_argument("no model given: use default, small, base or a weights file");
  const bool device_ok = device == "auto" || device == "cpu" || device == "cuda" ||
                         (device.rfind("cuda:", 0) == 0 && device.size() > 5 &&
                          device.find_first_not_of("0123456789", 5) == std::string::npos);
  if (!device_ok) return invalid_argument(fmt::format("unknown device '{}': use auto, cpu, cuda or cuda:N", device));
  if (query_chunk < 0 || query_chunk > 1'000'000) {
    return invalid_argument(fmt::format("query chunk {} is out of range (0 = automatic, or 1..1000000)", query_chunk));
  }
  if (memory_budget_mb < 0) return invalid_argument(fmt::format("memory budget {} MB is negative", memory_budget_mb));
  // Bytes must fit an int64_t with room for the plan's sums; no machine comes near a pebibyte.
  constexpr int64_t kMaxMemoryBudgetMb = int64_t{1} << 30;
  if (memory_budget_mb > kMaxMemoryBudgetMb) {
    return invalid_argument(
        fmt::format("memory budget {} MB is larger than any machine ({} MB = 1 PiB at most); "
                    "use 0 for automatic",
                    memory_budget_mb, kMaxMemoryBudgetMb));
  }
  return {};
}

}  // namespace trackscope::core
