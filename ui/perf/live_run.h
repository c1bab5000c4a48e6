#pragma once
// What a running job reports to the performance dock, in a header of its own: the tracker service produces it
// and the dock pulls it, and neither needs the other's header for it.

#include <cstdint>
#include <vector>

#include "core/perf/stage_timing.h"

namespace trackscope::ui {

/// What a running job reports to the dock: its stage samples so far (chunk by chunk).
struct LiveRunSnapshot {
  bool running = false;
  std::vector<core::StageSample> samples;
  uint64_t run = 0;  // which job the samples are of (a new number per job; 0 before the first)
};

}  // namespace trackscope::ui
