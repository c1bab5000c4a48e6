#pragma once
// The tracker's memory model: how many bytes one tracking run of LocoTrack needs on its device, as a
// function of the frames T, the points N, the precision and the query chunk, and the plan that fits a run into
// a memory budget by choosing the query chunk and the backbone's frames per call. The tracker estimates
// before it allocates, so a long clip or many points are split into smaller pieces instead of failing.
//
//   TrackerMemoryInput input;                     // LocoTrack-S, fp32, CUDA
//   input.frames = 372; input.points = 64; input.budget_bytes = int64_t{8} << 30;
//   Expected<TrackerMemoryPlan> plan = plan_tracker_memory(input);
//   if (!plan) return plan.status();              // out_of_memory: even one query per chunk does not fit
//   log::info("{}", plan->summary());             // "feature grids 2.54 GiB + chunk of 64 queries ..."
//
// What is counted (bytes of live tensors, not allocator slack, which `reserve_bytes` stands for):
//   weights      parameters in float32 (plus a copy in the compute dtype for bf16/fp16)
//   frames       the normalised 256x256 video, float32 (compute dtype for bf16/fp16)
//   grids        the three feature grids, T * 1,835,008 elements in the compute dtype
//   queries      query features and 7x7 supports of all N points (+ float32 sampling temporaries)
//   backbone     activations of one backbone call (per frame ~12 M elements) and the frames being prepared: the
//                decoded uint8 frames and their float copies at native size, or, with low_memory_prepare (very
//                large frames), one model-size frame each plus one frame's bilinear rows
//   extra        memory outside the model on the same budget: on the CPU the decoder's pictures
//                (decoder_memory_bytes) and a windowed run's kept frames
//   chunk        per (query, frame) of one chunk: the three 7^4 correlations, CMDTop outputs, the mixer's input,
//                hidden states and MLP, the attention scores where they are materialised (CPU, LibTorch 1.x),
//                the eager path's neighbourhoods; plus init's cost volumes for one pass of queries
// Peak = weights + frames + grids + queries + max(backbone, chunk) + reserve + extra.
// Threads: pure functions.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/perf/cost_model.h"
#include "core/status.h"

namespace trackscope::core {

struct TrackerMemoryInput {
  ModelSize model_size = ModelSize::small;
  int frames = 0;                       // T
  int points = 0;                       // N
  int compute_dtype_bytes = 4;          // 4 fp32/tf32, 2 bf16/fp16
  bool fused = true;                    // Trackscope's kernels (false: the eager reference path)
  bool attention_materialised = false;  // scores [n, heads, T, T] exist (CPU or LibTorch 1.x math path)
  int64_t budget_bytes = 0;             // the run must fit here (> 0)
  int requested_chunk = 0;              // queries per chunk; 0 = the largest that fits, at most max_chunk
  int max_chunk = 1024;
  int max_backbone_frames = 32;
  int init_queries_per_pass = 256;
  int source_width = 256;  // decoded frames (native size) held per backbone call
  int source_height = 256;
  /// Frames are resized to the model's size one at a time through the rows and columns bilinear reads (the
  /// tracker's low-memory preparation for very large frames) instead of converting a batch at native size.
  bool low_memory_prepare = false;
  int64_t reserve_bytes = 0;  // allocator slack, library workspaces
  int64_t extra_bytes = 0;    // other memory on the same budget (on the CPU: the decoder; a window's frame cache)

  Status check() const;
};

struct TrackerMemoryPlan {
  int query_chunk = 0;
  int chunk_count = 0;
  int backbone_frames = 0;
  int64_t weights_bytes = 0;
  int64_t frames_bytes = 0;
  int64_t grids_bytes = 0;
  int64_t queries_bytes = 0;
  int64_t backbone_bytes = 0;  // for backbone_frames frames per call
  int64_t chunk_bytes = 0;     // for query_chunk queries
  int64_t reserve_bytes = 0;
  int64_t extra_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t budget_bytes = 0;
  /// "feature grids 2.54 GiB + chunk of 64 queries 0.74 GiB + ... = 3.9 GiB of an 8.0 GiB budget"
  std::string summary() const;
};

/// Bytes of one query chunk of `chunk` queries over T frames (the per-chunk term of the peak).
int64_t chunk_memory_bytes(const TrackerMemoryInput& input, int chunk);
/// Bytes of one backbone call over `frames` frames (activations and the frames being prepared).
int64_t backbone_memory_bytes(const TrackerMemoryInput& input, int frames);
/// Bytes of preparing one frame of the input's source size: the decoded uint8 frame and its float copies at
/// native size (batched preparation), or the model-size result and one frame's bilinear rows (low memory).
int64_t prepare_memory_bytes_per_frame(const TrackerMemoryInput& input);
/// Host bytes of decoding frames of `width` x `height`: FFmpeg's reference and in-flight YUV 4:2:0 pictures
/// (4 + decoder_threads) and the RGB frame it hands out.
int64_t decoder_memory_bytes(int width, int height, int decoder_threads);

/// The largest chunk (<= requested or max_chunk, <= N) and backbone call (<= max_backbone_frames) that fit the
/// budget. out_of_memory, saying what is too big and what to do, when even 1 query and 1 frame do not fit;
/// invalid_argument for an input that fails check().
Expected<TrackerMemoryPlan> plan_tracker_memory(const TrackerMemoryInput& input);

// ---------------------------------------------------------------------------------------------------------
// Long videos: how a run covers its frames (docs/long-videos.md).
//
//   RunPlanInput input;                     // the run's shape, budgets, where a cache file could go
//   input.tracker = tracker_input;          // T, N, precision, the device budget
//   input.host_budget_bytes = ...;          // CUDA runs: host RAM for caches (the CPU has one budget)
//   input.disk_free_bytes = free_disk_bytes(cache_dir);
//   Expected<RunPlan> plan = plan_run(input);
//   log::info("{}", plan->summary());       // "exact streaming: the whole clip needs 132 GiB ..."
//
// whole_clip       every frame's feature grids stay on the device (the reference path, the fastest);
// exact_streaming  the grids go to a cache (host RAM, else a scratch file) and are streamed back to the device a
//                  block of frames at a time for the initialisation and each refinement pass; the temporal
//                  transformer runs over the whole time axis in blocks: the result equals whole_clip (to float
//                  rounding), at the price of the cache's size and its traffic;
// windowed         overlapping windows of frames, each tracked like a short clip, the track handed from one window
//                  to the next (core/tracking/windowed_tracking.h): any length, approximate.
// automatic picks the first that fits, in this order, and says why; a forced mode that cannot fit is an error
// that names what would.

enum class LongVideoMode { automatic, whole_clip, exact_streaming, windowed };
/// "auto", "whole", "exact", "windowed".
const char* to_string(LongVideoMode mode);
/// Also accepts "whole_clip", "exact_streaming", "streaming".
Expected<LongVideoMode> parse_long_video_mode(std::string_view text);

enum class CacheLocation { none, host, file };
const char* to_string(CacheLocation location);

struct RunPlanInput {
  TrackerMemoryInput tracker;      // the run's shape and the device's budget (tracker.budget_bytes)
  bool device_is_host = true;      // a CPU run: one budget for everything
  int64_t host_budget_bytes = 0;   // a CUDA run: host RAM for the cache, stores and decoding (> 0)
  int64_t disk_free_bytes = -1;    // free bytes where a cache file would go; < 0 = no cache file possible
  std::string cache_dir;           // where a cache file would go (for the messages)
  bool prefer_cache_file = false;  // a cache folder was named: a cache file even where host memory has room
  int decoder_threads = 1;         // the decoder's threads (its in-flight pictures)
  LongVideoMode requested = LongVideoMode::automatic;
  int window_frames = 0;      // windowed: frames per window (0 = the largest that fits, at most 1024)
  int window_overlap = 0;     // windowed: frames shared by neighbouring windows (0 = window / 16, 8..64)
  int max_stream_block = 64;  // exact streaming: the most frames per streamed block
  int mixer_block = 64;       // exact streaming: frames per block of the long-sequence transformer
  /// Exact streaming: the transformer over the whole time axis in one call (as a whole-clip run does) where its
  /// attention fits the budget in place of the blocked long-sequence transformer's memory; false = always in
  /// blocks of mixer_block frames.
  bool whole_axis_mixer = true;

  Status check() const;
};

struct StreamingPlan {
  CacheLocation cache = CacheLocation::none;
  int64_t cache_bytes = 0;        // the feature grids of every frame, in the compute dtype
  int frame_block = 0;            // frames per streamed block
  int backbone_frames = 0;        // frames per backbone call of the feature pass
  int mixer_block = 0;            // frames per block of the long-sequence transformer
  bool whole_axis_mixer = false;  // the transformer over the whole time axis at once instead (it fits)
  int block_query_chunk = 0;      // queries per initialisation / correlation call on a block
  int mixer_query_chunk = 0;      // queries per long-sequence transformer call
  int queries_per_pass = 0;       // queries whose encoded correlations the host holds at once
  int passes = 0;                 // groups of queries; each reads the cache 1 + iterations times
  int64_t encoded_bytes = 0;      // host store of the encoded correlations of one group
  int64_t device_peak_bytes = 0;  // CPU: the whole process's working memory (one budget)
  int64_t host_peak_bytes = 0;    // CUDA: host RAM (cache if in RAM, stores, staging, decoder)
};

struct WindowPlan {
  int frames = 0;                 // per window
  int overlap = 0;                // frames shared with the next window
  int count = 0;                  // windows covering the frames
  int64_t frame_cache_bytes = 0;  // decoded frames kept for the next window's overlap
  TrackerMemoryPlan window;       // the plan of one window (a whole-clip run of `frames` frames)
};

struct RunPlan {
  LongVideoMode mode = LongVideoMode::whole_clip;
  bool forced = false;  // the user asked for this mode
  std::string reason;   // why this mode, in a sentence for the status bar and the profile
  int64_t decoder_bytes = 0;
  bool low_memory_prepare = false;
  TrackerMemoryPlan whole;  // mode whole_clip
  StreamingPlan streaming;  // mode exact_streaming
  WindowPlan windows;       // mode windowed
  int64_t budget_bytes = 0;
  int64_t host_budget_bytes = 0;
  /// "exact streaming (chosen by the memory plan): <reason>; <the chosen mode's figures>"
  std::string summary() const;
  /// The summary without the figures (for a status bar).
  std::string headline() const;
};

/// Bytes of the device side of exact streaming, for the plan's choices (exposed for tests).
int64_t streaming_block_bytes(const TrackerMemoryInput& input, int frame_block, int query_chunk);
int64_t long_mixer_bytes(const TrackerMemoryInput& input, int queries, int mixer_block);
/// The transformer over the whole time axis at once for `queries` queries, its attention materialised.
int64_t whole_axis_mixer_bytes(const TrackerMemoryInput& input, int queries);

/// Picks (or checks the user's) mode for the run and sizes its pieces. out_of_memory, naming what does not fit
/// and what would, when nothing fits (automatic) or the forced mode does not; invalid_argument for bad input.
Expected<RunPlan> plan_run(const RunPlanInput& input);

}  // namespace trackscope::core
