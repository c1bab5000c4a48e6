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

// One warp's row: the row's values (the rounded sum with kResidual, which is also stored to `sum` when it is not null)
// in registers as floats, and its mean and 1 / sqrt(var + eps). Every lane of the warp calls it (the shuffles);
// a warp past the last row (inside false) loads and stores nothing.
template <class Element>
struct WarpRow {
  float values[kMaxVectorsPerLane][kVectorElements<Element>];
  float mean = 0.0f;
  float inverse_deviation = 0.0f;
};

template <class Element, bool kResidual>
TRACKSCOPE_DEVICE_FN void load_row(const LayerNormShape& s, const void* x, const void* residual, void* sum,
                                   int64_t row_bytes, bool inside, int lane, WarpRow<Element>& r) {
  constexpr int kVector = kVectorElements<Element>;
  const int vectors = s.width / kVector;
  float total = 0.0f;
  TRACKSCOPE_UNROLL
  for (int k = 0; k < kMaxVectorsPerLane; ++k) {
    const int vector = lane + 32 * k;
    if (inside && vector < vectors) {
      const int64_t offset = row_bytes + int64_t{vector} * 16;
      const Words4 in = global_load16(static_cast<const unsigned char*>(x) + offset);
      if constexpr (kResidual) {
        const Words4 other = global_load16(static_cast<const unsigned char*>(residual) + offset);
        Words4 rounded;
        TRACKSCOPE_UNROLL
        for (int j = 0; j < kVector; ++j) {
          elements::set_vector_element<Element>(
              rounded, j, elements::vector_element<Element>(in, j) + elements::vector_element<Element>(other, j));
        }
        if (sum != nullptr) global_store16(static_cast<unsigned char*>(sum) + offset, rounded);
        TRACKSCOPE_UNROLL
        for (int j = 0; j < kVector; ++j) r.values[k][j] = elements::vector_element<Element>(rounded, j);
      } else {
        TRACKSCOPE_UNROLL
        for (int j = 0; j < kVector; ++j) r.values[k][j] = elements::vector_element<Element>(in, j);
      }
      TRACKSCOPE_UNROLL
      for (int j = 0; j < kVector; ++j) total += r.values[k][j];
    }
  }
  TRACKSCOPE_UNROLL
  for (int offset = 16; offset > 0; offset >>= 1) total += warp_xor(total, offset);
  r.mean = total / static_cast<float>(s.width);
  float squares = 0.0f;
  TRACKSCOPE_UNROLL
  for (int k = 0; k < kMaxVectorsPerLane; ++k) {
    if (inside && lane + 32 * k < vectors) {
      TRACKSCOPE_UNROLL
      for (int j = 0; j < kVector; ++j) {
        const float centred = r.values[k][j] - r.mean;
        squares += centred * centred;
      }
    }
  }
  TRACKSCOPE_UNROLL
  for (int offset = 16; offset > 0; offset >>= 1) squares += warp_xor(squares, offset);
  r.inverse_deviation = 1.0f / sqrtf(squares / static_cast<float>(s.width) + s.eps);
}

// The normalised vector k of the row, rounded to the element type as a stored norm is.
template <class Element>
TRACKSCOPE_DEVICE_FN Words4 normalised_vector(const WarpRow<Element>& r, int k, int vector, const void* weight,
                                              const void* bias) {
  const int64_t column_bytes = int64_t{vector} * 16;
  const Words4 gamma = global_load16(static_cast<const unsigned char*>(weight) + column_bytes);
  const Words4 beta = global_load16(static_cast<const unsigned char*>(bias) + column_bytes);
  Words4 result;
  TRACKSCOPE_UNROLL
  for (int j = 0; j < kVectorElements<Element>; ++j) {
    const float normalised = (r.values[k][j] - r.mean) * r.inverse_deviation;
    elements::set_vector_element<Element>(
        result, j,
        normalised * elements::vector_element<Element>(gamma, j) + elements::vector_element<Element>(beta, j));
  }
  return result;
}

template <class Element, bool kResidual>
TRACKSCOPE_KERNEL(kThreads, 4)
layer_norm_kernel(LayerNormShape s, const void* x, const void* residual, const void* weight, const void* bias,
                  void* sum, void* norm) {
  const int64_t row = block_index() * kRowsPerBlock + thread_index() / 32;
  const int lane = thread_index() % 32;
  const bool inside = row < s.rows;
  const int vectors = s.width / kVectorElements<Element>;
  const int64_t row_bytes = row * s.width * kElementBytes<Element>;
  WarpRow<Element> r;
  load_row<Element, kResidual>(s, x, residual, sum, row_bytes, inside, lane, r);
  if (!inside) return;
  TRACKSCOPE_UNROLL
  for (int k = 0; k < kMaxVectorsPerLane; ++k) {
    const int vector = lane + 32 * k;
    if (vector < vectors) {
      global_store16(static_cast<unsigned char*>(norm) + row_bytes + int64_t{vector} * 16,
                     normalised_vector(r, k, vector, weight, bias));
    }
  }
}

/// The outputs of the mixer's head per row (head_kernel).
inline constexpr int kHeadOutputs = 4;

/// The pointers of head_kernel's update (all float32, contiguous): tracks [rows, 2], occlusion and expected_dist
/// [rows]; `previous_*` in, `next_*` out (they may be the same storage).
struct HeadState {
  const float* previous_tracks = nullptr;
  const float* previous_occlusion = nullptr;
  const float* previous_expected_dist = nullptr;
  float* next_tracks = nullptr;
  float* next_occlusion = nullptr;
  float* next_expected_dist = nullptr;
};

/// The mixer's last LayerNorm and its 4-output head in one pass (ops.h add_layer_norm_head): per row, norm =
/// LayerNorm(x + residual) rounded to the element type (nothing stored), update[o] = sum_c norm[c] * head_weight[o][c]
/// + head_bias[o] with float32 products and sums, rounded to the element type (the GEMM's output), then the next
/// state = previous + update in float32 (tracks += update[0:2], occlusion += update[2], expected_dist += update[3]).
/// head_weight [kHeadOutputs, width] and head_bias [kHeadOutputs] of the element type (head_weight 16-byte aligned).
/// Replaces the norm's store, the head's GEMM and its read of the norm, the conversion to float32 and the three
/// additions of the state update. Blocks and threads as layer_norm_kernel.
template <class Element>
TRACKSCOPE_KERNEL(kThreads, 4)
head_kernel(LayerNormShape s, const void* x, const void* residual, const void* weight, const void* bias,
            const void* head_weight, const void* head_bias, HeadState state) {
  constexpr int kVector = kVectorElements<Element>;
  const int64_t row = block_index() * kRowsPerBlock + thread_index() / 32;
  const int lane = thread_index() % 32;
  const bool inside = row < s.rows;
  const int vectors = s.width / kVector;
  const int64_t row_bytes = row * s.width * kElementBytes<Element>;
  WarpRow<Element> r;
  load_row<Element, true>(s, x, residual, nullptr, row_bytes, inside, lane, r);
  float products[kHeadOutputs] = {0.0f, 0.0f, 0.0f, 0.0f};
  TRACKSCOPE_UNROLL
  for (int k = 0; k < kMaxVectorsPerLane; ++k) {
    const int vector = lane + 32 * k;
    if (inside && vector < vectors) {
      const Words4 n = normalised_vector(r, k, vector, weight, bias);
      TRACKSCOPE_UNROLL
      for (int o = 0; o < kHeadOutputs; ++o) {
        const Words4 w = global_load16(static_cast<const unsigned char*>(head_weight) +
                                       int64_t{o} * s.width * kElementBytes<Element> + int64_t{vector} * 16);
        TRACKSCOPE_UNROLL
        for (int j = 0; j < kVector; ++j) {
          products[o] =
              fmaf(elements::vector_element<Element>(n, j), elements::vector_element<Element>(w, j), products[o]);
        }
      }
    }
  }
  TRACKSCOPE_UNROLL
  for (int o = 0; o < kHeadOutputs; ++o) {
    TRACKSCOPE_UNROLL
    for (int offset = 16; offset > 0; offset >>= 1) products[o] += warp_xor(products[o], offset);
  }
  if (!inside || lane != 0) return;
  float update[kHeadOutputs];
  Words4 rounded{};
  TRACKSCOPE_UNROLL
  for (int o = 0; o < kHeadOutputs; ++o) {
    elements::set_vector_element<Element>(rounded, o, products[o] + elements::load_element<Element>(head_bias, o));
    update[o] = elements::vector_element<Element>(rounded, o);
  }
  global_store_f32(state.next_tracks + row * 2, global_load_f32(state.previous_tracks + row * 2) + update[0]);
  global_store_f32(state.next_tracks + row * 2 + 1, global_load_f32(state.previous_tracks + row * 2 + 1) + update[1]);
  global_store_f32(state.next_occlusion + row, global_load_f32(state.previous_occlusion + row) + update[2]);
  global_store_f32(state.next_expected_dist + row, global_load_f32(state.previous_expected_dist + row) + update[3]);
}

}  // namespace trackscope::gpu::ops::cuda::layer_norm
