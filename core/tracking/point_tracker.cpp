#include "core/tracking/point_tracker.h"

#include <fmt/format.h>

namespace trackscope::core {

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
  if (Expected<DeviceId> id = DeviceId::parse(device); !id) return id.status();
  if (query_chunk < 0 || query_chunk > 1'000'000) {
    return invalid_argument(fmt::format("query chunk {} is out of range (0 = automatic, or 1..1000000)", query_chunk));
  }
  if (memory_budget_mb < 0) return invalid_argument(fmt::format("memory budget {} MB is negative", memory_budget_mb));
  if (host_memory_budget_mb < 0) {
    return invalid_argument(fmt::format("host memory budget {} MB is negative", host_memory_budget_mb));
  }
  if (window_frames < 0 || window_overlap < 0) {
    return invalid_argument(fmt::format("window of {} frames with an overlap of {}: use 0 (automatic) or more",
                                        window_frames, window_overlap));
  }
  if (window_frames > 0 && window_frames < 16) {
    return invalid_argument(fmt::format("windows of {} frames are too short: use at least 16", window_frames));
  }
  if (window_frames > 0 && window_overlap >= window_frames / 2) {
    return invalid_argument(
        fmt::format("an overlap of {} frames needs windows longer than {} frames", window_overlap, 2 * window_overlap));
  }
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
