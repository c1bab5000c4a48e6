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
//   backbone     activations of one backbone call (per frame ~12 M elements) and the decoded frames in flight
//   chunk        per (query, frame) of one chunk: the three 7^4 correlations, CMDTop outputs, the mixer's input,
//                hidden states and MLP, the attention scores where they are materialised (CPU, LibTorch 1.x),
//                the eager path's neighbourhoods; plus init's cost volumes for one pass of queries
// Peak = weights + frames + grids + queries + max(backbone, chunk) + reserve.
// Threads: pure functions.

#include <cstdint>
#include <string>

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
  int64_t reserve_bytes = 0;  // allocator slack, library workspaces

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
  int64_t peak_bytes = 0;
  int64_t budget_bytes = 0;
  /// "feature grids 2.54 GiB + chunk of 64 queries 0.74 GiB + ... = 3.9 GiB of an 8.0 GiB budget"
  std::string summary() const;
};

/// Bytes of one query chunk of `chunk` queries over T frames (the per-chunk term of the peak).
int64_t chunk_memory_bytes(const TrackerMemoryInput& input, int chunk);
/// Bytes of one backbone call over `frames` frames.
int64_t backbone_memory_bytes(const TrackerMemoryInput& input, int frames);

/// The largest chunk (<= requested or max_chunk, <= N) and backbone call (<= max_backbone_frames) that fit the
/// budget. out_of_memory, saying what is too big and what to do, when even 1 query and 1 frame do not fit;
/// invalid_argument for an input that fails check().
Expected<TrackerMemoryPlan> plan_tracker_memory(const TrackerMemoryInput& input);

}  // namespace trackscope::core
