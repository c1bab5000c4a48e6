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

// --- long videos: the plan's choice of mode ----------------------------------------------------------------

RunPlanInput long_clip_cpu(int frames, int64_t budget_gib) {  // 1080p on the CPU, 64 points
  RunPlanInput input;
  input.tracker = camel_cpu();
  input.tracker.frames = frames;
  input.tracker.source_width = 1920;
  input.tracker.source_height = 1080;
  input.tracker.budget_bytes = budget_gib * kGiB;
  input.tracker.reserve_bytes = int64_t{128} << 20;
  input.device_is_host = true;
  input.decoder_threads = 2;
  input.cache_dir = "/var/tmp";
  return input;
}

RunPlanInput long_clip_cuda(int frames, int64_t budget_gib) {  // the same on a CUDA device, as the tracker sets it up
  RunPlanInput input = long_clip_cpu(frames, budget_gib);
  input.device_is_host = false;
  input.tracker.attention_materialised = false;
  input.tracker.max_chunk = 1024;
  input.tracker.max_backbone_frames = 32;
  input.tracker.reserve_bytes = kGiB;
  input.host_budget_bytes = 64 * kGiB;
  input.max_stream_block = 128;
  input.mixer_block = 256;
  return input;
}

TEST(RunPlan, AShortClipRunsWhole) {
  Expected<RunPlan> plan = plan_run(long_clip_cpu(372, 8));
  ASSERT_TRUE(plan) << plan.status().message();
  EXPECT_EQ(plan->mode, LongVideoMode::whole_clip);
  EXPECT_FALSE(plan->forced);
  EXPECT_LE(plan->whole.peak_bytes, 8 * kGiB);
  // The decoder's pictures are inside the plan.
  EXPECT_EQ(plan->whole.extra_bytes, decoder_memory_bytes(1920, 1080, 2));
  EXPECT_NE(plan->summary().find("whole clip (chosen by the memory plan)"), std::string::npos) << plan->summary();
  // A chunk the user asked for is never "too small" to be useful.
  RunPlanInput asked = long_clip_cpu(372, 8);
  asked.tracker.requested_chunk = 3;
  Expected<RunPlan> small_chunks = plan_run(asked);
  ASSERT_TRUE(small_chunks) << small_chunks.status().message();
  EXPECT_EQ(small_chunks->mode, LongVideoMode::whole_clip);
  EXPECT_EQ(small_chunks->whole.query_chunk, 3);
}

TEST(RunPlan, GridsBeyondTheBudgetGoToACacheFileOrTheClipIsWindowed) {
  // 1,100 frames: 7.52 GiB of grids; with the rest of the run more than the 8 GiB budget.
  RunPlanInput input = long_clip_cpu(1100, 8);
  input.disk_free_bytes = -1;
  Expected<RunPlan> no_disk = plan_run(input);
  ASSERT_TRUE(no_disk) << no_disk.status().message();
  EXPECT_EQ(no_disk->mode, LongVideoMode::windowed);
  EXPECT_NE(no_disk->reason.find("does not fit the 8.00 GiB budget (feature grids 7.52 GiB)"), std::string::npos)
      << no_disk->reason;
  EXPECT_NE(no_disk->reason.find("fit neither in memory"), std::string::npos) << no_disk->reason;
  EXPECT_NE(no_disk->reason.find("--cache-dir"), std::string::npos) << no_disk->reason;
  // With a roomy disk the same run is exact, through a cache file.
  input.disk_free_bytes = 100 * kGiB;
  Expected<RunPlan> disk = plan_run(input);
  ASSERT_TRUE(disk) << disk.status().message();
  EXPECT_EQ(disk->mode, LongVideoMode::exact_streaming);
  EXPECT_EQ(disk->streaming.cache, CacheLocation::file);
  EXPECT_EQ(disk->streaming.cache_bytes, int64_t{1100} * 1'835'008 * 4);
  EXPECT_LE(disk->streaming.device_peak_bytes, 8 * kGiB);
  EXPECT_EQ(disk->streaming.passes, 1);  // every query's encodings fit: one group
  EXPECT_EQ(disk->streaming.queries_per_pass, 64);
  EXPECT_NE(disk->reason.find("cache file in /var/tmp"), std::string::npos) << disk->reason;
  // A larger budget runs the whole clip again.
  input.tracker.budget_bytes = 10 * kGiB;
  Expected<RunPlan> whole = plan_run(input);
  ASSERT_TRUE(whole) << whole.status().message();
  EXPECT_EQ(whole->mode, LongVideoMode::whole_clip);
}

TEST(RunPlan, TheTenMinuteClipIsWindowedWithinEightGibWithoutADisk) {
  RunPlanInput input = long_clip_cpu(18'000, 6);
  input.disk_free_bytes = 75 * kGiB;  // less than the 123 GiB of grids
  Expected<RunPlan> plan = plan_run(input);
  ASSERT_TRUE(plan) << plan.status().message();
  EXPECT_EQ(plan->mode, LongVideoMode::windowed);
  EXPECT_NE(plan->reason.find("123.05 GiB"), std::string::npos) << plan->reason;
  EXPECT_NE(plan->reason.find("75.00 GiB free in /var/tmp"), std::string::npos) << plan->reason;
  const WindowPlan& w = plan->windows;
  EXPECT_GE(w.frames, 256);
  EXPECT_LE(w.frames, 1024);
  EXPECT_GE(w.overlap, 8);
  EXPECT_LT(w.overlap, w.frames / 2);
  EXPECT_EQ(w.count, 1 + (18'000 - w.frames + (w.frames - w.overlap) - 1) / (w.frames - w.overlap));
  EXPECT_LE(w.window.peak_bytes, 6 * kGiB);
  EXPECT_GE(w.window.query_chunk, 8);
  // A window one longer would not fit (the plan takes the longest), unless it hit the 1024-frame cap.
  if (w.frames < 1024) {
    TrackerMemoryInput longer = input.tracker;
    longer.frames = w.frames + 1;
    longer.extra_bytes = w.window.extra_bytes;
    Expected<TrackerMemoryPlan> next = plan_tracker_memory(longer);
    EXPECT_TRUE(!next || next->query_chunk < 8);
  }
  // On a disk with room for the grids, the same run is exact.
  input.disk_free_bytes = 200 * kGiB;
  Expected<RunPlan> exact = plan_run(input);
  ASSERT_TRUE(exact) << exact.status().message();
  EXPECT_EQ(exact->mode, LongVideoMode::exact_streaming);
  EXPECT_LE(exact->streaming.device_peak_bytes, 6 * kGiB);
}

TEST(RunPlan, TheUserOverridesThePlanOrHearsWhyNot) {
  RunPlanInput input = long_clip_cpu(372, 8);
  input.disk_free_bytes = 10 * kGiB;
  input.requested = LongVideoMode::exact_streaming;
  Expected<RunPlan> exact = plan_run(input);
  ASSERT_TRUE(exact) << exact.status().message();
  EXPECT_EQ(exact->mode, LongVideoMode::exact_streaming);
  EXPECT_TRUE(exact->forced);
  EXPECT_EQ(exact->streaming.cache, CacheLocation::host);  // 2.5 GiB of grids fit the 8 GiB budget
  input.requested = LongVideoMode::windowed;
  input.window_frames = 64;
  input.window_overlap = 8;
  Expected<RunPlan> windowed = plan_run(input);
  ASSERT_TRUE(windowed) << windowed.status().message();
  EXPECT_EQ(windowed->mode, LongVideoMode::windowed);
  EXPECT_EQ(windowed->windows.frames, 64);
  EXPECT_EQ(windowed->windows.overlap, 8);
  EXPECT_EQ(windowed->windows.count, 7);  // 1 + ceil((372 - 64) / 56)
  // Whole clip forced on a clip that does not fit: out of memory, pointing at the other modes.
  RunPlanInput big = long_clip_cpu(18'000, 6);
  big.requested = LongVideoMode::whole_clip;
  Expected<RunPlan> whole = plan_run(big);
  ASSERT_FALSE(whole);
  EXPECT_EQ(whole.status().code(), StatusCode::out_of_memory);
  EXPECT_NE(whole.status().message().find("choose auto, exact or windowed"), std::string::npos);
  // Exact streaming forced without room for its cache: out of memory, naming the cache and the windowed mode.
  big.requested = LongVideoMode::exact_streaming;
  big.disk_free_bytes = 75 * kGiB;
  Expected<RunPlan> no_room = plan_run(big);
  ASSERT_FALSE(no_room);
  EXPECT_EQ(no_room.status().code(), StatusCode::out_of_memory);
  EXPECT_NE(no_room.status().message().find("123.05 GiB"), std::string::npos) << no_room.status().message();
  EXPECT_NE(no_room.status().message().find("windowed mode"), std::string::npos) << no_room.status().message();
}

TEST(RunPlan, ACudaRunKeepsTheCacheInHostMemoryWhenItFits) {
  RunPlanInput input = long_clip_cuda(3'000, 24);  // 3,000 frames: 20.5 GiB of grids on a 24 GiB device
  input.disk_free_bytes = 50 * kGiB;
  Expected<RunPlan> plan = plan_run(input);
  ASSERT_TRUE(plan) << plan.status().message();
  // The grids would fit the device, but leave room for one query at a time: not a useful whole-clip run.
  ASSERT_EQ(plan->mode, LongVideoMode::exact_streaming) << plan->summary();
  EXPECT_NE(plan->reason.find("would track only 1 query at a time"), std::string::npos) << plan->reason;
  EXPECT_EQ(plan->streaming.cache, CacheLocation::host);
  EXPECT_LE(plan->streaming.device_peak_bytes, 24 * kGiB);
  EXPECT_LE(plan->streaming.host_peak_bytes, 64 * kGiB);
  EXPECT_EQ(plan->streaming.frame_block, 128);
  // Without host room the cache goes to the disk.
  input.host_budget_bytes = 8 * kGiB;
  Expected<RunPlan> file = plan_run(input);
  ASSERT_TRUE(file) << file.status().message();
  ASSERT_EQ(file->mode, LongVideoMode::exact_streaming);
  EXPECT_EQ(file->streaming.cache, CacheLocation::file);
}

TEST(RunPlan, ExactStreamingRunsTheTransformerOverTheWholeAxisWhereItFits) {
  // pips2_camel's shape on a 24 GiB device, exact streaming asked for: the whole time axis fits in the
  // transformer's place, so it runs at once as in a whole-clip run (the blocked one is ~10x slower there).
  RunPlanInput input = long_clip_cuda(372, 24);
  input.disk_free_bytes = 200 * kGiB;
  input.requested = LongVideoMode::exact_streaming;
  Expected<RunPlan> camel = plan_run(input);
  ASSERT_TRUE(camel) << camel.status().message();
  ASSERT_EQ(camel->mode, LongVideoMode::exact_streaming);
  EXPECT_TRUE(camel->streaming.whole_axis_mixer);
  EXPECT_NE(camel->summary().find("the whole time axis at once"), std::string::npos) << camel->summary();
  EXPECT_GE(camel->streaming.device_peak_bytes, whole_axis_mixer_bytes(input.tracker, 64));
  EXPECT_LE(camel->streaming.device_peak_bytes, 24 * kGiB);
  // Its attention at 18,000 frames would take terabytes: blocks of 256 frames.
  input.tracker.frames = 18'000;
  Expected<RunPlan> hour = plan_run(input);
  ASSERT_TRUE(hour) << hour.status().message();
  ASSERT_EQ(hour->mode, LongVideoMode::exact_streaming);
  EXPECT_FALSE(hour->streaming.whole_axis_mixer);
  EXPECT_GT(whole_axis_mixer_bytes(input.tracker, 64), 24 * kGiB);
  EXPECT_NE(hour->summary().find("in blocks of 256 frames"), std::string::npos) << hour->summary();
  // A block size asked for is kept.
  input.tracker.frames = 372;
  input.whole_axis_mixer = false;
  Expected<RunPlan> asked = plan_run(input);
  ASSERT_TRUE(asked) << asked.status().message();
  EXPECT_FALSE(asked->streaming.whole_axis_mixer);
  // On the CPU the whole axis must not push the cache out of memory: with just the room for the blocked run and
  // the cache, the transformer stays blocked and the cache stays in memory.
  RunPlanInput cpu = long_clip_cpu(372, 64);
  cpu.tracker.points = 1024;  // enough for the whole axis's attention to be the largest term
  cpu.requested = LongVideoMode::exact_streaming;
  cpu.disk_free_bytes = 200 * kGiB;
  Expected<RunPlan> roomy = plan_run(cpu);
  ASSERT_TRUE(roomy) << roomy.status().message();
  ASSERT_EQ(roomy->streaming.cache, CacheLocation::host);
  EXPECT_TRUE(roomy->streaming.whole_axis_mixer);
  cpu.whole_axis_mixer = false;
  Expected<RunPlan> blocked = plan_run(cpu);
  ASSERT_TRUE(blocked) << blocked.status().message();
  ASSERT_EQ(blocked->streaming.cache, CacheLocation::host);
  ASSERT_LT(blocked->streaming.device_peak_bytes, roomy->streaming.device_peak_bytes);
  cpu.whole_axis_mixer = true;
  cpu.tracker.budget_bytes = (blocked->streaming.device_peak_bytes + roomy->streaming.device_peak_bytes) / 2;
  Expected<RunPlan> tight = plan_run(cpu);
  ASSERT_TRUE(tight) << tight.status().message();
  EXPECT_EQ(tight->streaming.cache, CacheLocation::host) << tight->summary();
  EXPECT_FALSE(tight->streaming.whole_axis_mixer) << tight->summary();
}

TEST(RunPlan, DecodedFramesAreInsideThePlan) {
  // An 8192x8192 clip with a 2 GiB budget: the native float copies of one frame (2.4 GiB) would not fit, so frames
  // are prepared one at a time at model size, and the decoder's pictures (0.75 GiB) are counted.
  RunPlanInput input = long_clip_cpu(12, 2);
  input.tracker.points = 1;
  input.tracker.source_width = 8192;
  input.tracker.source_height = 8192;
  Expected<RunPlan> plan = plan_run(input);
  ASSERT_TRUE(plan) << plan.status().message();
  EXPECT_TRUE(plan->low_memory_prepare);
  EXPECT_EQ(plan->mode, LongVideoMode::whole_clip);
  EXPECT_EQ(plan->whole.extra_bytes, decoder_memory_bytes(8192, 8192, 2));
  EXPECT_LE(plan->whole.peak_bytes, 2 * kGiB);
  EXPECT_NE(plan->summary().find("resized one at a time"), std::string::npos);
  // The batched preparation would have needed 2.4 GiB per frame.
  TrackerMemoryInput batched = input.tracker;
  EXPECT_GT(prepare_memory_bytes_per_frame(batched), 2 * kGiB);
  // Frames whose decoding alone exceeds the budget are refused before anything is decoded, saying why.
  input.tracker.source_width = 16384;
  input.tracker.source_height = 16384;
  input.tracker.budget_bytes = kGiB;
  Expected<RunPlan> refused = plan_run(input);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), StatusCode::out_of_memory);
  EXPECT_NE(refused.status().message().find("decoding 16384x16384 frames"), std::string::npos)
      << refused.status().message();
}

TEST(RunPlan, ModesParseAndPrint) {
  for (LongVideoMode mode :
       {LongVideoMode::automatic, LongVideoMode::whole_clip, LongVideoMode::exact_streaming, LongVideoMode::windowed}) {
    Expected<LongVideoMode> parsed = parse_long_video_mode(to_string(mode));
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed, mode);
  }
  EXPECT_EQ(parse_long_video_mode("sliding").status().code(), StatusCode::invalid_argument);
  RunPlanInput input = long_clip_cpu(100, 8);
  input.window_frames = 8;
  EXPECT_EQ(plan_run(input).status().code(), StatusCode::invalid_argument);
  input.window_frames = 64;
  input.window_overlap = 32;
  EXPECT_EQ(plan_run(input).status().code(), StatusCode::invalid_argument);
}

}  // namespace
}  // namespace trackscope::core
