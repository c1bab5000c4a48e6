#pragma once
// The temporal mixer's residual add and LayerNorm in one pass (gpu/ops/ops.h, add_layer_norm on CUDA):
//   sum = x + residual (in float32, rounded once into the element type; the composite's add),
//   norm = (sum - mean) / sqrt(var + eps) * weight + bias over the last dimension, from the *rounded* sum (what the
// composite's LayerNorm reads), the statistics in float32 (mean first, then the mean squared deviation from the
// registers: two passes over values already loaded), one rounding at the store. Without a residual it is a plain
// LayerNorm (sum not written).
//
// Why: ATen's vectorized LayerNorm runs a block per row; the mixer's rows are 256 (small) or 384 (base) values, 0.5-0.8
// KB in 16-bit, and at 1,024 queries x 47 frames it ran at ~63 us per call on the H200 where its bytes need ~12
// (Nsight Compute, 2026-12-05: 1.76 ms of LayerNorm and ~0.5 ms of residual adds per forward pass). Here a warp
// takes a row: its lanes hold 16-byte vectors lane, lane + 32, ... in registers, the sums combine by xor shuffles
// (every lane of a warp runs them; a warp past the last row loads and stores nothing). No shared memory.
//
// The source is shared with the CPU emulation test (tests/gpu/layer_norm_emulation_test.cpp through
// tests/gpu/cuda_emulation.h): the hardware is reached only through mma_primitives.cuh.

#include <cmath>
#include <cstdint>

#ifndef TRACKSCOPE_CUDA_EMULATION
#include "gpu/ops/cuda/mma_primitives.cuh"
#endif
#include "gpu/ops/cuda/element_access.cuh"

namespace trackscope::gpu::ops::cuda::layer_norm {

using namespace primitives;
using elements::kElementBytes;
using elements::kVectorElements;

inline constexpr int kThreads = 256;
inline constexpr int kRowsPerBlock = kThreads / 32;
inline constexpr int kMaxVectorsPerLane = 4;

/// x, residual, sum, norm [rows, width] contiguous, of one element type; weight, bias [width] of the same type.
/// residual and sum are null for a plain LayerNorm. sum may be x's or residual's storage, norm may be x's when
/// there is no residual (each warp reads its row before it writes it).
struct LayerNormShape {
  int64_t rows = 0;
  int width = 0;
  float eps = 1e-5f;
};

/// Whether the kernel takes rows of `width` elements: whole 16-byte vectors, at most 32 x kMaxVectorsPerLane of them
/// (16-bit: up to 1,024 values; float32: 512).
template <class Element>
inline bool eligible_width(int width) {
  constexpr int kVector = kVectorElements<Element>;
  return width > 0 && width % kVector == 0 && width / kVector <= 32 * kMaxVectorsPerLane;
}

inline int64_t block_count(const LayerNormShape& s) { return (s.rows + kRowsPerBlock - 1) / kRowsPerBlock; }

template <class Element, bool kResidual>
TRACKSCOPE_KERNEL(kThreads, 4)
layer_norm_kernel(LayerNormShape s, const void* x, const void* residual, const void* weight, const void* bias,
                  void* sum, void* norm) {
  constexpr int kVector = kVectorElements<Element>;
  constexpr int64_t kBytes = kElementBytes<Element>;
  const int64_t row = block_index() * kRowsPerBlock + thread_index() / 32;
  const int lane = thread_index() % 32;
  const bool inside = row < s.rows;
  const int vectors = s.width / kVector;
  const int64_t row_bytes = row * s.width * kBytes;
  const auto* x_bytes = static_cast<const unsigned char*>(x);

  float values[kMaxVectorsPerLane][kVector];
  float total = 0.0f;
  TRACKSCOPE_UNROLL
  for (int k = 0; k < kMaxVectorsPerLane; ++k) {
    const int vector = lane + 32 * k;
    if (inside && vector < vectors) {
      const int64_t offset = row_bytes + int64_t{vector} * kVector * kBytes;
      const Words4 in = global_load16(x_bytes + offset);
      if constexpr (kResidual) {
        const Words4 other = global_load16(static_cast<const unsigned char*>(residual) + offset);
        Words4 rounded;
        TRACKSCOPE_UNROLL
        for (int j = 0; j < kVector; ++j) {
          elements::set_vector_element<Element>(
              rounded, j, elements::vector_element<Element>(in, j) + elements::vector_element<Element>(other, j));
        }
        global_store16(static_cast<unsigned char*>(sum) + offset, rounded);
        TRACKSCOPE_UNROLL
        for (int j = 0; j < kVector; ++j) values[k][j] = elements::vector_element<Element>(rounded, j);
      } else {
        TRACKSCOPE_UNROLL
        for (int j = 0; j < kVector; ++j) values[k][j] = elements::vector_element<Element>(in, j);
      }
      TRACKSCOPE_UNROLL
      for (int j = 0; j < kVector; ++j) total += values[k][j];
    }
  }
  TRACKSCOPE_UNROLL
  for (int offset = 16; offset > 0; offset >>= 1) total += warp_xor(total, offset);
  const float mean = total / static_cast<float>(s.width);
  float squares = 0.0f;
  TRACKSCOPE_UNROLL
  for (int k = 0; k < kMaxVectorsPerLane; ++k) {
    if (inside && lane + 32 * k < vectors) {
      TRACKSCOPE_UNROLL
      for (int j = 0; j < kVector; ++j) {
        const float centred = values[k][j] - mean;
        squares += centred * centred;
      }
    }
  }
  TRACKSCOPE_UNROLL
  for (int offset = 16; offset > 0; offset >>= 1) squares += warp_xor(squares, offset);
  if (!inside) return;
  const float inverse_deviation = 1.0f / sqrtf(squares / static_cast<float>(s.width) + s.eps);
  TRACKSCOPE_UNROLL
  for (int k = 0; k < kMaxVectorsPerLane; ++k) {
    const int vector = lane + 32 * k;
    if (vector < vectors) {
      const int64_t column_bytes = int64_t{vector} * kVector * kBytes;
      const Words4 gamma = global_load16(static_cast<const unsigned char*>(weight) + column_bytes);
      const Words4 beta = global_load16(static_cast<const unsigned char*>(bias) + column_bytes);
      Words4 result;
      TRACKSCOPE_UNROLL
      for (int j = 0; j < kVector; ++j) {
        const float normalised = (values[k][j] - mean) * inverse_deviation;
        elements::set_vector_element<Element>(
            result, j,
            normalised * elements::vector_element<Element>(gamma, j) + elements::vector_element<Element>(beta, j));
      }
      global_store16(static_cast<unsigned char*>(norm) + row_bytes + column_bytes, result);
    }
  }
}

}  // namespace trackscope::gpu::ops::cuda::layer_norm
