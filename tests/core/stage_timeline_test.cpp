// core/stage_timeline: stage samples folded into the decode / frames / model lanes of the performance view's
// timeline: lane assignment, merging of overlapping and touching samples, samples without a start left out, and
// the overlap of two lanes (decoding hidden behind the model's work).
#include <gtest/gtest.h>

#include <limits>

#include "core/perf/stage_timeline.h"

namespace trackscope::core {
namespace {

StageSample at(Stage stage, double start_ms, double elapsed_ms) {
  StageSample sample;
  sample.stage = stage;
  sample.start_ms = start_ms;
  sample.elapsed_ms = elapsed_ms;
  return sample;
}

using Intervals = std::vector<std::pair<double, double>>;

TEST(StageTimeline, AssignsLanesAndMergesOverlappingSamples) {
  const std::vector<TimelineLane> lanes = stage_timeline({
      at(Stage::decode, 0, 10),
      at(Stage::decode, 10, 5),  // touches the first: one interval
      at(Stage::decode, 40, 10),
      at(Stage::upload, 15, 2),
      at(Stage::resize_normalize, 14, 2),  // overlaps the upload
      at(Stage::backbone, 17, 20),
      at(Stage::refine_encoder, 30, 10),  // inside and past the backbone
      at(Stage::download, 60, 1),
  });
  ASSERT_EQ(lanes.size(), 3u);
  EXPECT_EQ(lanes[0].name, "decode");
  EXPECT_EQ(lanes[1].name, "frames");
  EXPECT_EQ(lanes[2].name, "model");
  EXPECT_EQ(lanes[0].busy_ms, (Intervals{{0, 15}, {40, 50}}));
  EXPECT_EQ(lanes[1].busy_ms, (Intervals{{14, 17}}));
  EXPECT_EQ(lanes[2].busy_ms, (Intervals{{17, 40}, {60, 61}}));
  EXPECT_DOUBLE_EQ(lanes[0].busy_total_ms(), 25.0);
  EXPECT_DOUBLE_EQ(lanes[2].busy_total_ms(), 24.0);
  EXPECT_DOUBLE_EQ(lanes[2].end_ms(), 61.0);
}

TEST(StageTimeline, LeavesOutSamplesWithoutAStartOrWithNonsenseTimes) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<TimelineLane> lanes = stage_timeline({
      at(Stage::decode, -1.0, 10),  // unknown start (host samples of old profiles)
      at(Stage::decode, nan, 10),
      at(Stage::decode, 5, -2),
      at(Stage::decode, 5, inf),
      at(Stage::backbone, inf, 1),
      at(Stage::backbone, 2, 3),
  });
  EXPECT_TRUE(lanes[0].busy_ms.empty());
  EXPECT_EQ(lanes[0].end_ms(), 0.0);
  EXPECT_TRUE(lanes[1].busy_ms.empty());
  EXPECT_EQ(lanes[2].busy_ms, (Intervals{{2, 5}}));
  EXPECT_TRUE(stage_timeline({}).at(2).busy_ms.empty());
}

TEST(StageTimeline, OverlapCountsTimeBothLanesWereBusy) {
  const std::vector<TimelineLane> lanes = stage_timeline({
      at(Stage::decode, 0, 10), at(Stage::decode, 20, 10), at(Stage::decode, 35, 30),
      at(Stage::backbone, 5, 20),  // overlaps decode 5-10 and 20-25
      at(Stage::init, 40, 5),      // inside decode 35-65
      at(Stage::download, 70, 5),  // after every decode
  });
  EXPECT_DOUBLE_EQ(overlap_ms(lanes[0], lanes[2]), 5.0 + 5.0 + 5.0);
  EXPECT_DOUBLE_EQ(overlap_ms(lanes[2], lanes[0]), 15.0);
  EXPECT_DOUBLE_EQ(overlap_ms(lanes[0], lanes[1]), 0.0);
  EXPECT_DOUBLE_EQ(overlap_ms(lanes[0], lanes[0]), lanes[0].busy_total_ms());
}

}  // namespace
}  // namespace trackscope::core
