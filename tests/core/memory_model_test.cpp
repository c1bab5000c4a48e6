// The tracker's memory model: the terms it counts, the plan's choices under a budget, and its errors.
#include <gtest/gtest.h>

#include "core/perf/memory_model.h"

namespace trackscope::core {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

TrackerMemoryInput camel_cpu() {  // pips2_camel.mp4: 372 frames of 960x540, 64 points, fp32 on the CPU
  TrackerMemoryInput input;
  input.frames = 372;
  input.points = 64;
  input.source_width = 960;
  input.source_height = 540;
  input.attention_materialised = true;
  input.max_chunk = 128;
  input.max_backbone_frames = 8;
  input.budget_bytes = 8 * kGiB;
  return input;
}

TEST(MemoryModel, CountsTheFeatureGridsAndFramesPerFrame) {
  TrackerMemoryInput input = camel_cpu();
  Expected<TrackerMemoryPlan> plan = plan_tracker_memory(input);
  ASSERT_TRUE(plan) << plan.status().message();
  EXPECT_EQ(plan->grids_bytes, int64_t{372} * 1'835'008 * 4);  // 2.54 GiB
  EXPECT_EQ(plan->frames_bytes, int64_t{372} * 256 * 256 * 3 * 4);
  EXPECT_EQ(plan->weights_bytes, int64_t{8'236'133} * 4);
  input.compute_dtype_bytes = 2;  // bf16: half the grids, plus a bf16 copy of the weights
  Expected<TrackerMemoryPlan> half = plan_tracker_memory(input);
  ASSERT_TRUE(half);
  EXPECT_EQ(half->grids_bytes * 2, plan->grids_bytes);
  EXPECT_EQ(half->weights_bytes, int64_t{8'236'133} * 6);
}

TEST(MemoryModel, TheCamelClipFitsAnEightGibBudgetInOneChunk) {
  Expected<TrackerMemoryPlan> plan = plan_tracker_memory(camel_cpu());
  ASSERT_TRUE(plan) << plan.status().message();
  EXPECT_EQ(plan->query_chunk, 64);
  EXPECT_EQ(plan->chunk_count, 1);
  EXPECT_EQ(plan->backbone_frames, 8);
  EXPECT_LE(plan->peak_bytes, 8 * kGiB);
  EXPECT_EQ(plan->peak_bytes, plan->weights_bytes + plan->frames_bytes + plan->grids_bytes + plan->queries_bytes +
                                  std::max(plan->backbone_bytes, plan->chunk_bytes) + plan->reserve_bytes);
  EXPECT_NE(plan->summary().find("chunk of 64 queries"), std::string::npos) << plan->summary();
}

TEST(MemoryModel, ATighterBudgetSplitsTheQueriesIntoTheLargestFittingChunks) {
  TrackerMemoryInput input = camel_cpu();
  input.points = 1000;
  Expected<TrackerMemoryPlan> roomy = plan_tracker_memory(input);
  ASSERT_TRUE(roomy);
  const int64_t fixed = roomy->peak_bytes - std::max(roomy->backbone_bytes, roomy->chunk_bytes);
  input.budget_bytes = fixed + chunk_memory_bytes(input, 37) + 1;
  Expected<TrackerMemoryPlan> tight = plan_tracker_memory(input);
  ASSERT_TRUE(tight) << tight.status().message();
  EXPECT_EQ(tight->query_chunk, 37);  // the largest chunk whose bytes fit
  EXPECT_EQ(tight->chunk_count, (1000 + 36) / 37);
  EXPECT_LE(tight->peak_bytes, input.budget_bytes);
  EXPECT_GT(chunk_memory_bytes(input, 38), input.budget_bytes - fixed);
}

TEST(MemoryModel, ATighterBudgetShrinksTheBackboneCalls) {
  TrackerMemoryInput input = camel_cpu();
  input.points = 1;
  Expected<TrackerMemoryPlan> roomy = plan_tracker_memory(input);
  ASSERT_TRUE(roomy);
  const int64_t fixed = roomy->peak_bytes - std::max(roomy->backbone_bytes, roomy->chunk_bytes);
  ASSERT_LT(chunk_memory_bytes(input, 1), backbone_memory_bytes(input, 3));
  input.budget_bytes = fixed + backbone_memory_bytes(input, 3) + 1;
  Expected<TrackerMemoryPlan> tight = plan_tracker_memory(input);
  ASSERT_TRUE(tight) << tight.status().message();
  EXPECT_EQ(tight->backbone_frames, 3);
  EXPECT_LE(tight->peak_bytes, input.budget_bytes);
}

TEST(MemoryModel, ChunkBytesGrowWithEveryTerm) {
  TrackerMemoryInput input = camel_cpu();
  const int64_t fused = chunk_memory_bytes(input, 64);
  EXPECT_GT(chunk_memory_bytes(input, 65), fused);
  input.fused = false;
  EXPECT_GT(chunk_memory_bytes(input, 64), fused);  // eager neighbourhoods
  input.fused = true;
  input.attention_materialised = false;
  EXPECT_LT(chunk_memory_bytes(input, 64), fused);
  TrackerMemoryInput base = camel_cpu();
  base.model_size = ModelSize::base;  // wider transformer (384 channels)
  EXPECT_GT(chunk_memory_bytes(base, 64), chunk_memory_bytes(camel_cpu(), 64));
}

TEST(MemoryModel, AskedChunkIsAnUpperBound) {
  TrackerMemoryInput input = camel_cpu();
  input.requested_chunk = 16;
  Expected<TrackerMemoryPlan> plan = plan_tracker_memory(input);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->query_chunk, 16);
  EXPECT_EQ(plan->chunk_count, 4);
}

TEST(MemoryModel, TooSmallABudgetIsOutOfMemoryWithAdvice) {
  TrackerMemoryInput input = camel_cpu();
  input.budget_bytes = 2 * kGiB;  // the feature grids alone need 2.54 GiB
  Expected<TrackerMemoryPlan> plan = plan_tracker_memory(input);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.status().code(), StatusCode::out_of_memory);
  EXPECT_NE(plan.status().message().find("feature grids alone 2.54 GiB"), std::string::npos) << plan.status().message();
  EXPECT_NE(plan.status().message().find("shorter frame range"), std::string::npos);
}

TEST(MemoryModel, AbsurdInputsAreRejected) {
  TrackerMemoryInput input = camel_cpu();
  input.frames = 0;
  EXPECT_EQ(plan_tracker_memory(input).status().code(), StatusCode::invalid_argument);
  input = camel_cpu();
  input.budget_bytes = 0;
  EXPECT_EQ(plan_tracker_memory(input).status().code(), StatusCode::invalid_argument);
  input = camel_cpu();
  input.compute_dtype_bytes = 3;
  EXPECT_EQ(plan_tracker_memory(input).status().code(), StatusCode::invalid_argument);
  input = camel_cpu();
  input.points = 0;
  Expected<TrackerMemoryPlan> none = plan_tracker_memory(input);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->query_chunk, 0);
  EXPECT_EQ(none->chunk_count, 0);
}

}  // namespace
}  // namespace trackscope::core
