#pragma once
// The LocoTrack cost model: floating-point operations and minimum device-memory bytes of every canonical stage
// (core/perf/stage_timing.h), as functions of the model size, frames, points, query chunk, resolution and
// element size. It follows docs/locotrack-spec.md §5.1: convolutions and matrix products counted from the architecture
// (2 FLOP per multiply-add), elementwise work by hand; "minimum bytes" = each materialised tensor the reference
// code writes at a sub-step boundary written once and read once, weights once per call.
//
//   CostModelConfig config;               // LocoTrack-S, T = 47, N = 1024, chunk 256, 256x256, fp32
//   config.points = 1024;
//   WorkCost encoder = stage_cost(Stage::refine_encoder, config);           // all chunks, all 4 iterations
//   WorkCost one = chunk_stage_cost(Stage::refine_encoder, config, 256);     // one chunk, one iteration
//
// Checked against docs/locotrack-spec.md §5.1's table (1.48 / 3.28 / 2.06 / 5.57 TFLOP) in
// tests/core/perf_cost_model_test. Threads: pure functions.

#include <string_view>

#include "core/perf/stage_timing.h"
#include "core/status.h"

namespace trackscope::core {

enum class ModelSize { small, base };
const char* to_string(ModelSize size);
Expected<ModelSize> parse_model_size(std::string_view text);

struct CostModelConfig {
  ModelSize model_size = ModelSize::small;
  int frames = 47;       // T
  int points = 1024;     // N
  int chunk = 256;       // queries per chunk; 0 = all points in one chunk
  int resolution = 256;  // model input side in pixels (square), a multiple of 8
  int dtype_bytes = 4;   // element size of activations and weights (4 fp32/tf32, 2 bf16/fp16)
  int refinement_iterations = 4;
  bool fused_correlation = false;  // the neighbourhoods are never written (fused gather + dot kernel)

  Status check() const;
  int chunk_points() const { return chunk <= 0 || chunk > points ? points : chunk; }
  int chunk_count() const;
};

struct WorkCost {
  double flops = 0.0;  // floating-point operations, 2 per multiply-add
  double bytes = 0.0;  // minimum device-memory traffic
  WorkCost& operator+=(const WorkCost& other) {
    flops += other.flops;
    bytes += other.bytes;
    return *this;
  }
  WorkCost operator*(double factor) const { return {flops * factor, bytes * factor}; }
};

/// The rows of docs/locotrack-spec.md §5.1's table, totals over one forward pass (all chunks, all iterations).
struct LocoTrackCostBreakdown {
  WorkCost backbone;
  WorkCost query_features;
  WorkCost init;
  WorkCost sampling;     // refinement neighbourhood sampling, all iterations
  WorkCost correlation;  // refinement 4D correlation einsum, all iterations
  WorkCost encoder;      // CMDTop, all iterations
  WorkCost mixer;        // temporal transformer, all iterations
  WorkCost total() const;
};
LocoTrackCostBreakdown locotrack_cost_breakdown(const CostModelConfig& config);

/// Total cost of a stage over one forward pass (refine_correlation = sampling + correlation). Host stages
/// (decode, resize_normalize) have no device cost; upload/download/assembly count their bytes only.
WorkCost stage_cost(Stage stage, const CostModelConfig& config);

/// Cost of one execution of a stage, as one StageSample carries it: per-video stages (decode .. query_features)
/// for the whole video; init and assembly for one chunk of `chunk_points` queries; refinement stages for one
/// chunk and one iteration; download for the whole result.
WorkCost chunk_stage_cost(Stage stage, const CostModelConfig& config, int chunk_points);

/// What kind of work dominates a stage: which precision setting applies and which roofline to use.
enum class StageWork {
  convolution,  // cuDNN convolutions: TF32 follows the cuDNN flag (backbone, CMDTop)
  matrix,       // matrix products / einsums: TF32 follows the matmul flag (init, correlation, transformer)
  gather,       // sampling, elementwise: FP32 CUDA cores, memory-bound (query features, assembly)
  transfer,     // host <-> device copies: PCIe, not device memory (upload, download)
  host,         // host work timed by the steady clock (decode, resize, assembly)
};
StageWork stage_work(Stage stage);
const char* to_string(StageWork work);

}  // namespace trackscope::core
