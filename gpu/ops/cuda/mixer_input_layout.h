#pragma once
// Shape and column layout of the mixer-input kernel (mixer_input_kernel.cuh), shared by its launcher (launchers.h)
// and the CPU emulation test: no CUDA and no torch here.

#include <cstdint>

namespace trackscope::gpu::ops::cuda {

/// The temporal mixer's input row of one (query, frame) (docs/locotrack-spec.md §2.5):
///   [0] occlusion logit, [1] expected-distance logit, [2, 770) the three CMDTop encodings,
///   [770, 774) the relative motion u = (forward x, forward y, backward x, backward y) / 256,
///   [774, 814) sin(u_c 2^s) at 774 + 4 s + c, [814, 854) sin(u_c 2^s + pi/2) at 814 + 4 s + c (s = 0..9),
///   [854, row) zeros.
inline constexpr int kMixerEncodedColumns = 768;
inline constexpr int kMixerMotionFrequencies = 10;
inline constexpr int kMixerEncodedBegin = 2;
inline constexpr int kMixerMotionBegin = kMixerEncodedBegin + kMixerEncodedColumns;         // 770
inline constexpr int kMixerSineBegin = kMixerMotionBegin + 4;                               // 774
inline constexpr int kMixerCosineBegin = kMixerSineBegin + 4 * kMixerMotionFrequencies;     // 814
inline constexpr int kMixerInputColumns = kMixerCosineBegin + 4 * kMixerMotionFrequencies;  // 854

/// occlusion, expected [queries, frames] float32 contiguous; encoded [queries, frames, 768] with element strides
/// encoded_stride_query / encoded_stride_frame (column stride 1); tracks [queries, frames, 2] float32 contiguous
/// (x, y in 256-space); out [queries, frames, row] contiguous, row >= 854. encoded and out share one element type.
struct MixerInputShape {
  int64_t queries = 0;
  int64_t frames = 0;
  int64_t row = kMixerInputColumns;
  int64_t encoded_stride_query = 0;
  int64_t encoded_stride_frame = kMixerEncodedColumns;
  /// 16-bit rows only: row and both encoded strides even, encoded and out 4-byte aligned (the launcher decides):
  /// the kernel then moves two columns per 32-bit load and store.
  bool paired = false;
};

/// Threads per block of the mixer-input kernel (one block per row; 854-864 columns: 7 per thread).
inline constexpr int kMixerInputThreads = 128;

}  // namespace trackscope::gpu::ops::cuda
