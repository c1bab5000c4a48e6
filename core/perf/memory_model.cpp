#include "core/perf/memory_model.h"

#include <fmt/format.h>

#include <algorithm>

namespace trackscope::core {
namespace {

constexpr int64_t kGridElementsPerFrame = 32 * 32 * 256 + 64 * 64 * 128 + 128 * 128 * 64;  // 1,835,008
constexpr int64_t kFramePixels = 256 * 256 * 3;
constexpr int64_t kSupportElements = 49 * (256 + 128 + 64);
constexpr int64_t kCorrelation = 2408;  // 7^4 per level, rows padded to a multiple of 8
constexpr int64_t kMixerInput = 854;
constexpr int64_t kEncoded = 3 * 256;
// Live activations of the backbone per frame: measured peak of the ResNet forward (stem output, block input,
// normalised copy, two conv outputs, residual sum at 128x128x64 = 1 M elements each, and the smaller groups).
constexpr int64_t kBackboneElementsPerFrame = 12 * 1024 * 1024;
// The eager path materialises the 7x7xC neighbourhoods of the three levels (49 x 448 per (q, t)), the einsum's
// permuted copy and its output, all float32.
constexpr int64_t kEagerNeighbourhoodBytes = 3 * 49 * 448 * 4;
// Eager initialisation: cost volumes, the upsampled plane, the stacked copy, conv output, heatmap and the
// soft-argmax temporaries over 64x64 cells, ~16 float32 planes per (q, t).
constexpr int64_t kEagerInitBytesPerQueryFrame = 16 * 4096 * 4;

int64_t parameter_count(ModelSize size) { return size == ModelSize::small ? 8'236'133 : 11'519'717; }
int transformer_dim(ModelSize size) { return size == ModelSize::small ? 256 : 384; }

double gib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

}  // namespace

Status TrackerMemoryInput::check() const {
  if (frames <= 0 || frames > 1'000'000) return invalid_argument(fmt::format("memory plan: {} frames", frames));
  if (points < 0 || points > 10'000'000) return invalid_argument(fmt::format("memory plan: {} points", points));
  if (compute_dtype_bytes != 2 && compute_dtype_bytes != 4) {
    return invalid_argument(fmt::format("memory plan: element size {} (2 or 4)", compute_dtype_bytes));
  }
  if (budget_bytes <= 0) return invalid_argument("memory plan: the budget must be positive");
  if (requested_chunk < 0 || max_chunk <= 0 || max_backbone_frames <= 0 || init_queries_per_pass <= 0) {
    return invalid_argument("memory plan: chunk, backbone frames and init pass must be positive");
  }
  if (source_width <= 0 || source_height <= 0) return invalid_argument("memory plan: empty source frames");
  if (reserve_bytes < 0) return invalid_argument("memory plan: negative reserve");
  return {};
}

int64_t chunk_memory_bytes(const TrackerMemoryInput& input, int chunk) {
  const int64_t e = input.compute_dtype_bytes;
  const int64_t frames = input.frames;
  const int64_t dim = transformer_dim(input.model_size);
  const int64_t heads = dim / 64;
  // Per (query, frame): correlations of the three levels, CMDTop outputs, mixer input and relative-motion
  // features, ~12 D of hidden states (residual stream, LN outputs, q/k/v, attention output) and the 4 D MLP
  // twice (linear output and GELU), the float32 state (tracks, logits, update, probabilities).
  int64_t per_query_frame = e * (3 * kCorrelation + kEncoded + kMixerInput + 84 + 12 * dim + 8 * dim) + 4 * 16;
  if (input.attention_materialised) per_query_frame += 2 * heads * frames * e;
  if (!input.fused) per_query_frame += kEagerNeighbourhoodBytes;
  const int64_t pass = std::min<int64_t>(chunk, input.init_queries_per_pass);
  const int64_t init_bytes = input.fused ? pass * frames * (32 * 32 + 64 * 64) * e
                                         : static_cast<int64_t>(chunk) * frames * kEagerInitBytesPerQueryFrame;
  return static_cast<int64_t>(chunk) * frames * per_query_frame + std::max<int64_t>(init_bytes, 0);
}

int64_t backbone_memory_bytes(const TrackerMemoryInput& input, int frames) {
  const int64_t decoded = static_cast<int64_t>(input.source_width) * input.source_height * 3 * (1 + 4);  // u8 + float
  return static_cast<int64_t>(frames) * (kBackboneElementsPerFrame * input.compute_dtype_bytes + decoded);
}

std::string TrackerMemoryPlan::summary() const {
  return fmt::format(
      "weights {:.2f} GiB + frames {:.2f} GiB + feature grids {:.2f} GiB + query features {:.2f} GiB + "
      "max(backbone of {} frames {:.2f} GiB, chunk of {} queries {:.2f} GiB) + reserve {:.2f} GiB = "
      "{:.2f} GiB of a {:.2f} GiB budget ({} chunks)",
      gib(weights_bytes), gib(frames_bytes), gib(grids_bytes), gib(queries_bytes), backbone_frames, gib(backbone_bytes),
      query_chunk, gib(chunk_bytes), gib(reserve_bytes), gib(peak_bytes), gib(budget_bytes), chunk_count);
}

Expected<TrackerMemoryPlan> plan_tracker_memory(const TrackerMemoryInput& input) {
  TRACKSCOPE_RETURN_IF_ERROR(input.check());
  const int64_t e = input.compute_dtype_bytes;
  TrackerMemoryPlan plan;
  plan.budget_bytes = input.budget_bytes;
  plan.reserve_bytes = input.reserve_bytes;
  plan.weights_bytes = parameter_count(input.model_size) * (4 + (e == 4 ? 0 : e));
  plan.frames_bytes = static_cast<int64_t>(input.frames) * kFramePixels * e;
  plan.grids_bytes = static_cast<int64_t>(input.frames) * kGridElementsPerFrame * e;
  plan.queries_bytes = static_cast<int64_t>(input.points) * kSupportElements * e +
                       std::min<int64_t>(input.points, 1024) * 49 * 256 * 4 * 6;
  const int64_t fixed =
      plan.weights_bytes + plan.frames_bytes + plan.grids_bytes + plan.queries_bytes + plan.reserve_bytes;
  const int64_t available = input.budget_bytes - fixed;
  const int64_t minimum_chunk = input.points > 0 ? chunk_memory_bytes(input, 1) : 0;
  const int64_t minimum = std::max(backbone_memory_bytes(input, 1), minimum_chunk);
  if (available < minimum) {
    return out_of_memory(fmt::format(
        "tracking {} points over {} frames needs at least {:.2f} GiB (feature grids alone {:.2f} GiB), more than "
        "the {:.2f} GiB memory budget: track fewer frames at a time (a shorter frame range), use bf16 or fp16 "
        "(half the grid memory), or raise the budget",
        input.points, input.frames, gib(fixed + minimum), gib(plan.grids_bytes), gib(input.budget_bytes)));
  }
  plan.backbone_frames = std::min(input.max_backbone_frames, input.frames);
  while (plan.backbone_frames > 1 && backbone_memory_bytes(input, plan.backbone_frames) > available) {
    --plan.backbone_frames;
  }
  plan.backbone_bytes = backbone_memory_bytes(input, plan.backbone_frames);
  if (input.points > 0) {
    const int wanted = input.requested_chunk > 0 ? input.requested_chunk : input.max_chunk;
    int chunk = std::max(1, std::min(wanted, input.points));
    // Largest fitting chunk by bisection: chunk_memory_bytes grows with the chunk.
    if (chunk_memory_bytes(input, chunk) > available) {
      int low = 1, high = chunk;
      while (low < high) {
        const int middle = low + (high - low + 1) / 2;
        if (chunk_memory_bytes(input, middle) <= available)
          low = middle;
        else
          high = middle - 1;
      }
      chunk = low;
    }
    plan.query_chunk = chunk;
    plan.chunk_count = (input.points + chunk - 1) / chunk;
    plan.chunk_bytes = chunk_memory_bytes(input, chunk);
  }
  plan.peak_bytes = fixed + std::max(plan.backbone_bytes, plan.chunk_bytes);
  return plan;
}

}  // namespace trackscope::core
