#pragma once
// The decode-vs-compute timeline of one run: its stage samples folded into three lanes of busy intervals, for the
// performance view's timeline chart (ui/perf/stage_charts.h) and for asking how much of the decoding the model's
// work hid.
//
//   std::vector<TimelineLane> lanes = stage_timeline(samples);   // decode, frames, model
//   lanes[0].busy_ms;                 // merged [start, end) intervals in ms after the run began
//   double hidden = overlap_ms(lanes[0], lanes[2]);              // decoding while the model computed
//
// Samples without a start (start_ms < 0) or with a non-finite or negative time are left out. Threads: pure.

#include <string>
#include <utility>
#include <vector>

#include "core/perf/stage_timing.h"

namespace trackscope::core {

struct TimelineLane {
  std::string name;                                // "decode", "frames", "model"
  std::vector<std::pair<double, double>> busy_ms;  // sorted, disjoint [start, end) intervals
  double busy_total_ms() const;
  /// Where the lane's intervals end (0 when empty).
  double end_ms() const;
};

/// The lanes, always three, in this order: decode (Stage::decode), frames (resize_normalize, upload: getting
/// decoded frames to the model), model (every other stage: backbone to download). Overlapping or touching samples
/// of one lane merge into one interval.
std::vector<TimelineLane> stage_timeline(const std::vector<StageSample>& samples);

/// Time both lanes were busy at once, in ms.
double overlap_ms(const TimelineLane& a, const TimelineLane& b);

}  // namespace trackscope::core
