#pragma once
// The temporal transformer (model::TemporalMixer, docs/locotrack-spec.md §2.5 step 6) over a time axis of any length,
// a block of frames at a time (torch-side header: include only from gpu/ .cpp files). It computes the same
// function as TemporalMixer::forward on [S, T, 854] -- the same operations in the same dtype, up to the order of
// floating-point sums -- in O(S T D) memory instead of the O(S H T^2) of the attention scores and the [H, T, T]
// ALiBi bias, which at T = 18,000 frames would take gigabytes per sequence.
//
//   LongMixerStats stats;
//   at::Tensor update = long_sequence_mixer(engine.mixer(), S, T, 64,
//       [&](int64_t begin, int64_t count) { return input_of_frames(begin, count); },   // [S, count, 854]
//       &stats);                                                                   // -> [S, T, 4] float32
//
// Attention reach. Each head attends to one side only (forward heads to the past and the frame itself, backward
// heads to the future), with the bias -slope * distance. A key at distance d from query row i is skipped only
// when its softmax weight is exactly zero in float arithmetic in the full computation too: its score is at most
// |q_i| max_j |k_j| / 8 - slope * d while the row's maximum is at least the diagonal score q_i k_i / 8, so with
// d > (|q_i| max|k| / 8 - q_i k_i / 8 + 110) / slope the weight is below e^-110, which rounds to 0 (the smallest
// float is e^-103.3). The reach is certified per block of query frames and head; for the small slopes (1/24 per
// frame) it is typically a few thousand frames, so the cost is O(T * reach), not O(T^2).
//
// Threads: like the Engine, one thread at a time.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>

#include "gpu/model/locotrack.h"

namespace trackscope::gpu::engine {

struct LongMixerStats {
  int64_t max_reach_frames = 0;  // the longest certified attention reach of any block and head
  int64_t key_frames = 0;        // keys read over all blocks and heads (for the cost: T * heads * layers if full)
  int64_t blocks = 0;
};

/// [S, T, 4] float32 = TemporalMixer::forward(input)[..., 0:4] where input [S, T, 854] is produced block by block by
/// `input_block(begin, count)` ([S, count, 854] in the mixer's dtype on its device). `block` frames per block.
at::Tensor long_sequence_mixer(const model::TemporalMixer& mixer, int64_t sequences, int64_t frames, int64_t block,
                               const std::function<at::Tensor(int64_t begin, int64_t count)>& input_block,
                               LongMixerStats* stats = nullptr);

}  // namespace trackscope::gpu::engine
