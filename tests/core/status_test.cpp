#include <gtest/gtest.h>

#include "core/log.h"
#include "core/tracking/point_tracker.h"
#include "core/perf/stage_timing.h"
#include "core/status.h"

namespace trackscope::core {
namespace {

Expected<int> parse_positive(int value) {
  if (value <= 0) return invalid_argument("must be positive");
  return value;
}

Status chained(int value) {
  TRACKSCOPE_RETURN_IF_ERROR(parse_positive(value));
  return {};
}

TEST(Status, ExpectedHoldsValueOrError) {
  Expected<int> good = parse_positive(3);
  ASSERT_TRUE(good);
  EXPECT_EQ(*good, 3);
  Expected<int> bad = parse_positive(-1);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.status().code(), StatusCode::invalid_argument);
  EXPECT_THROW((void)bad.value(), std::logic_error);
  EXPECT_EQ(chained(-2).message(), "must be positive");
  EXPECT_TRUE(chained(2).ok());
}

TEST(Status, ContextPrefixesMessage) {
  Status s = not_found("no such file").with_context("opening a.mp4");
  EXPECT_EQ(s.message(), "opening a.mp4: no such file");
  EXPECT_EQ(s.code(), StatusCode::not_found);
}

TEST(Status, CheckThrowsWithLocation) {
  try {
    TRACKSCOPE_CHECK(1 + 1 == 3, "arithmetic");
    FAIL() << "no throw";
  } catch (const InvariantError& e) {
    EXPECT_NE(std::string(e.what()).find("status_test.cpp"), std::string::npos) << e.what();
  }
}

TEST(StageTiming, NamesRoundTrip) {
  for (Stage stage : kAllStages) EXPECT_EQ(stage_from_name(stage_name(stage)), stage);
  EXPECT_FALSE(stage_from_name("nonsense").has_value());
  EXPECT_TRUE(is_refinement_stage(Stage::refine_encoder));
  EXPECT_FALSE(is_refinement_stage(Stage::backbone));
}

TEST(TrackerOptions, RejectsAbsurdValues) {
  TrackerOptions options;
  EXPECT_TRUE(options.check().ok());
  options.device = "gpu7";
  EXPECT_FALSE(options.check().ok());
  options.device = "cuda:1";
  EXPECT_TRUE(options.check().ok());
  options.query_chunk = -5;
  EXPECT_FALSE(options.check().ok());
  EXPECT_EQ(*parse_precision("bf16"), Precision::bf16);
  EXPECT_FALSE(parse_precision("fp8"));
}

TEST(Log, SinkReceivesMessagesAtOrAboveLevel) {
  std::vector<std::string> seen;
  {
    auto handle = log::add_sink([&](log::Level, std::string_view text) { seen.emplace_back(text); }, log::Level::info);
    log::debug("hidden {}", 1);
    log::info("shown {}", 2);
  }
  log::info("after removal");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], "shown 2");
}

}  // namespace
}  // namespace trackscope::core
