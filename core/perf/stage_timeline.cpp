#include "core/perf/stage_timeline.h"

#include <algorithm>
#include <cmath>

namespace trackscope::core {

namespace {

size_t lane_of(Stage stage) {
  switch (stage) {
    case Stage::decode: return 0;
    case Stage::resize_normalize:
    case Stage::upload: return 1;
    default: return 2;
  }
}

void merge(std::vector<std::pair<double, double>>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<std::pair<double, double>> merged;
  for (const auto& interval : intervals) {
    if (!merged.empty() && interval.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, interval.second);
    } else {
      merged.push_back(interval);
    }
  }
  intervals = std::move(merged);
}

}  // namespace

double TimelineLane::busy_total_ms() const {
  double total = 0.0;
  for (const auto& [start, end] : busy_ms) total += end - start;
  return total;
}

double TimelineLane::end_ms() const { return busy_ms.empty() ? 0.0 : busy_ms.back().second; }

std::vector<TimelineLane> stage_timeline(const std::vector<StageSample>& samples) {
  std::vector<TimelineLane> lanes = {{"decode", {}}, {"frames", {}}, {"model", {}}};
  for (const StageSample& sample : samples) {
    if (!(sample.start_ms >= 0.0) || !std::isfinite(sample.start_ms) || !(sample.elapsed_ms >= 0.0) ||
        !std::isfinite(sample.elapsed_ms)) {
      continue;
    }
    lanes[lane_of(sample.stage)].busy_ms.emplace_back(sample.start_ms, sample.start_ms + sample.elapsed_ms);
  }
  for (TimelineLane& lane : lanes) merge(lane.busy_ms);
  return lanes;
}

double overlap_ms(const TimelineLane& a, const TimelineLane& b) {
  double total = 0.0;
  size_t i = 0, j = 0;
  while (i < a.busy_ms.size() && j < b.busy_ms.size()) {
    const double start = std::max(a.busy_ms[i].first, b.busy_ms[j].first);
    const double end = std::min(a.busy_ms[i].second, b.busy_ms[j].second);
    if (end > start) total += end - start;
    if (a.busy_ms[i].second < b.busy_ms[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

}  // namespace trackscope::core
