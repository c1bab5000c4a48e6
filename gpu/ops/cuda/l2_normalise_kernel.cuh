#pragma once
// The backbone's feature normalisation in one pass (gpu/ops/ops.h, l2_normalise_channels on CUDA): each pixel's C
// channels divided by sqrt(max(sum_c x^2, 1e-12)), the sum in float32, one rounding at the store. The reference
// composite (square, sum, clamp, sqrt, divide) makes five passes over the grids, in 16-bit each intermediate rounded
// to 16 bits (the sum of squares too); this reads each pixel once and writes it once.
//
// A group of `Group` lanes per pixel (a power of two <= 32, C / 16-byte vectors rounded down to it), each lane
// holding up to kMaxVectorsPerLane vectors in registers; the sum is combined in the group by xor shuffles, so every
// lane of a warp runs them (lanes past the last pixel load nothing and store nothing). No shared memory.
//
// The source is shared with the CPU emulation test (tests/gpu/l2_normalise_emulation_test.cpp through
// tests/gpu/cuda_emulation.h): the hardware is reached only through mma_primitives.cuh.

#include <cmath>
#include <cstdint>

#ifndef TRACKSCOPE_CUDA_EMULATION
#include "gpu/ops/cuda/mma_primitives.cuh"
#endif
#include "gpu/ops/cuda/element_access.cuh"

namespace trackscope::gpu::ops::cuda::l2_normalise {

using namespace primitives;
using elements::kElementBytes;
using elements::kVectorElements;

inline constexpr int kThreads = 256;
inline constexpr int kMaxVectorsPerLane = 4;
inline constexpr float kSumFloor = 1e-12f;

/// x, y [pixels, channels] contiguous (y may be x's own storage: each lane reads its vectors before it writes them).
struct L2Shape {
  int64_t pixels = 0;
  int channels = 0;
};

/// Lanes per pixel for channels of Element: the vectors per pixel, capped at 32; 0 when the kernel cannot take
/// them (channels not whole vectors, not a power of two of them, or more than 32 * kMaxVectorsPerLane).
template <class Element>
inline int group_lanes(int channels) {
  constexpr int kVector = kVectorElements<Element>;
  if (channels <= 0 || channels % kVector != 0) return 0;
  const int vectors = channels / kVector;
  if ((vectors & (vectors - 1)) != 0 || vectors > 32 * kMaxVectorsPerLane) return 0;
  return vectors < 32 ? vectors : 32;
}

inline int64_t block_count(const L2Shape& s, int group) { return (s.pixels * group + kThreads - 1) / kThreads; }

template <class Element, int Group>
TRACKSCOPE_KERNEL(kThreads, 4)
l2_normalise_kernel(L2Shape s, const void* x, void* y) {
  constexpr int kVector = kVectorElements<Element>;
  constexpr int64_t kBytes = kElementBytes<Element>;
  const int64_t thread = block_index() * kThreads + thread_index();
  const int64_t pixel = thread / Group;
  const int lane = static_cast<int>(thread % Group);
  const bool inside = pixel < s.pixels;
  const int per_lane = s.channels / kVector / Group;
  const auto* in = static_cast<const unsigned char*>(x);
  auto* out = static_cast<unsigned char*>(y);

  Words4 raw[kMaxVectorsPerLane];
  float sum = 0.0f;
  TRACKSCOPE_UNROLL
  for (int k = 0; k < kMaxVectorsPerLane; ++k) {
    if (k < per_lane && inside) {
      raw[k] = global_load16(in + (pixel * s.channels + static_cast<int64_t>(lane + k * Group) * kVector) * kBytes);
      TRACKSCOPE_UNROLL
      for (int j = 0; j < kVector; ++j) {
        const float v = elements::vector_element<Element>(raw[k], j);
        sum += v * v;
      }
    }
  }
  TRACKSCOPE_UNROLL
  for (int offset = Group / 2; offset > 0; offset >>= 1) sum += warp_xor(sum, offset);
  if (!inside) return;
  const float norm = sqrtf(fmaxf(sum, kSumFloor));
  TRACKSCOPE_UNROLL
  for (int k = 0; k < kMaxVectorsPerLane; ++k) {
    if (k < per_lane) {
      Words4 result;
      TRACKSCOPE_UNROLL
      for (int j = 0; j < kVector; ++j) {
        elements::set_vector_element<Element>(result, j, elements::vector_element<Element>(raw[k], j) / norm);
      }
      global_store16(out + (pixel * s.channels + static_cast<int64_t>(lane + k * Group) * kVector) * kBytes, result);
    }
  }
}

}  // namespace trackscope::gpu::ops::cuda::l2_normalise
