#pragma once
// The query supports of one pyramid level in one kernel (gpu/ops/ops.h, sample_query_supports): for each query
// (t, y, x) in 256-space, the bilinear samples with border padding (grid_sample, align_corners=False) of frame
// round_half_even(t) of the grid at the 7x7 cell offsets -3..3 around (y, x), in float32, rounded once into the
// grid's element type.
//
// The arithmetic is the eager composite's (ops' CPU implementation), operation by operation, each rounded on its own
// (mul_rn/add_rn: no fused multiply-add), so the output is bit-identical to it:
//   index i = clamp((q * cells/256 + offset) - 0.5, 0, size - 1), i0 = floor(i), w = i - i0, i1 = min(i0 + 1, size - 1)
//   out = ((c00 * ((1-wy)(1-wx)) + c01 * ((1-wy) wx)) + c10 * (wy (1-wx))) + c11 * (wy wx)
// Non-finite coordinates sample cell 0 (fmaxf/fminf drop a NaN); the eager composite cannot index with them.
//
// One thread per vector of `vector_elements` channels of one support point of one query: 16-byte loads of the four
// corners and one 16-byte store where the shape allows it (SupportShape), one element otherwise. No shared memory.
// Bytes: 49 * C * e written per query, four corner reads of the same size (mostly from L2/L1: neighbouring
// support points share corners). The eager composite takes ~40 launches per level and writes float32 temporaries.
//
// The source is shared with the CPU emulation test (tests/gpu/query_supports_emulation_test.cpp through
// tests/gpu/cuda_emulation.h): the hardware is reached only through mma_primitives.cuh.

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "gpu/ops/cuda/cmdtop_mma_layout.h"  // Words4, Fp16Tag, Bf16Tag
#include "gpu/ops/cuda/query_supports_layout.h"
#ifndef TRACKSCOPE_CUDA_EMULATION
#include "gpu/ops/cuda/mma_primitives.cuh"
#endif
#include "gpu/ops/cuda/element_access.cuh"

namespace trackscope::gpu::ops::cuda::query_supports {

using namespace primitives;
using core::locotrack::kSupportSize;
using core::locotrack::kSupportTaps;

inline constexpr int kRadius = kSupportSize / 2;
inline constexpr float kModelResolution = 256.0f;

// Element: float, Bf16Tag or Fp16Tag (the grid's and the supports' type; element_access.cuh).
using elements::kElementBytes;
using elements::kVectorElements;
using elements::load_element;
using elements::set_vector_element;
using elements::store_element;
using elements::vector_element;

/// Blocks of kSupportThreads threads for a shape (one thread per vector of one support point of one query).
inline int64_t block_count(const SupportShape& s) {
  const int64_t items = s.queries * kSupportTaps * (s.channels / s.vector_elements);
  return (items + kSupportThreads - 1) / kSupportThreads;
}

// One axis of a support point: the two clamped corner indices and the weight of the second.
struct Axis {
  int64_t first = 0;
  int64_t second = 0;
  float weight = 0.0f;  // of `second`; `first` has 1 - weight
};

TRACKSCOPE_DEVICE_FN Axis support_axis(float coordinate_256, int offset, int64_t cells) {
  const float scale = static_cast<float>(cells) / kModelResolution;
  const float last = static_cast<float>(cells - 1);
  float index = add_rn(add_rn(mul_rn(coordinate_256, scale), static_cast<float>(offset)), -0.5f);
  index = fminf(fmaxf(index, 0.0f), last);
  const float floor_index = floorf(index);
  Axis axis;
  axis.first = static_cast<int64_t>(floor_index);
  axis.second = axis.first + 1 < cells ? axis.first + 1 : cells - 1;
  axis.weight = add_rn(index, -floor_index);
  return axis;
}

// The four corners' weights, formed as the composite forms them: w00 = (1-wy)(1-wx), w01 = (1-wy) wx, ...
struct CornerWeights {
  float w00, w01, w10, w11;
};

TRACKSCOPE_DEVICE_FN CornerWeights corner_weights(float wy, float wx) {
  const float uy = add_rn(1.0f, -wy), ux = add_rn(1.0f, -wx);
  return {mul_rn(uy, ux), mul_rn(uy, wx), mul_rn(wy, ux), mul_rn(wy, wx)};
}

TRACKSCOPE_DEVICE_FN float blend(const CornerWeights& w, float c00, float c01, float c10, float c11) {
  return add_rn(add_rn(add_rn(mul_rn(c00, w.w00), mul_rn(c01, w.w01)), mul_rn(c10, w.w10)), mul_rn(c11, w.w11));
}

/// grid and supports: Element data (SupportShape); queries [n, 3] float32 (t, y, x), 256-space. VectorElements:
/// kVectorElements<Element> (16-byte accesses: grid, strides, channels and supports aligned for them) or 1.
template <class Element, int VectorElements>
TRACKSCOPE_KERNEL(kSupportThreads, 4)
query_supports_kernel(SupportShape s, const void* grid, const float* queries, void* supports) {
  const int64_t vectors = s.channels / VectorElements;
  const int64_t item = block_index() * kSupportThreads + thread_index();
  if (item >= s.queries * kSupportTaps * vectors) return;
  const int64_t query = item / (kSupportTaps * vectors);
  const int tap = static_cast<int>(item / vectors % kSupportTaps);
  const int64_t channel = item % vectors * VectorElements;

  const float t = global_load_f32(queries + 3 * query);
  const float y = global_load_f32(queries + 3 * query + 1);
  const float x = global_load_f32(queries + 3 * query + 2);
  const int64_t frame = static_cast<int64_t>(fminf(fmaxf(round_half_even(t), 0.0f), static_cast<float>(s.frames - 1)));
  const Axis row = support_axis(y, tap / kSupportSize - kRadius, s.height);
  const Axis column = support_axis(x, tap % kSupportSize - kRadius, s.width);
  const CornerWeights w = corner_weights(row.weight, column.weight);

  const int64_t base = frame * s.stride_frame + channel;
  const int64_t i00 = base + row.first * s.stride_row + column.first * s.stride_column;
  const int64_t i01 = base + row.first * s.stride_row + column.second * s.stride_column;
  const int64_t i10 = base + row.second * s.stride_row + column.first * s.stride_column;
  const int64_t i11 = base + row.second * s.stride_row + column.second * s.stride_column;
  const int64_t out = (query * kSupportTaps + tap) * s.channels + channel;
  if constexpr (VectorElements == 1) {
    store_element<Element>(supports, out,
                           blend(w, load_element<Element>(grid, i00), load_element<Element>(grid, i01),
                                 load_element<Element>(grid, i10), load_element<Element>(grid, i11)));
  } else {
    static_assert(VectorElements == kVectorElements<Element>, "a vector is 16 bytes");
    constexpr int64_t kBytes = kElementBytes<Element>;
    const auto* bytes = static_cast<const unsigned char*>(grid);
    const Words4 c00 = global_load16(bytes + i00 * kBytes), c01 = global_load16(bytes + i01 * kBytes);
    const Words4 c10 = global_load16(bytes + i10 * kBytes), c11 = global_load16(bytes + i11 * kBytes);
    Words4 result;
    TRACKSCOPE_UNROLL
    for (int j = 0; j < VectorElements; ++j) {
      set_vector_element<Element>(result, j,
                                  blend(w, vector_element<Element>(c00, j), vector_element<Element>(c01, j),
                                        vector_element<Element>(c10, j), vector_element<Element>(c11, j)));
    }
    global_store16(static_cast<unsigned char*>(supports) + out * kBytes, result);
  }
}

}  // namespace trackscope::gpu::ops::cuda::query_supports
