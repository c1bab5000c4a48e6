#pragma once
// Shape of the query-support gather kernel (query_supports_kernel.cuh), shared by its launcher (launchers.h) and the
// CPU emulation test: no CUDA and no torch here.

#include <cstdint>

#include "core/tracking/locotrack_shape.h"  // kSupportSize, kSupportTaps

namespace trackscope::gpu::ops::cuda {

/// grid [frames, height, width, channels] with element strides stride_frame/row/column (channel stride 1);
/// queries [queries, 3] float32 contiguous (t, y, x) in 256-space; supports [queries, 7, 7, channels] contiguous,
/// the grid's element type. vector_elements: channels moved per thread (8 for 16-bit and 4 for float32 elements
/// where the grid, its strides, the channels and the supports allow 16-byte accesses; else 1).
struct SupportShape {
  int64_t queries = 0;
  int64_t frames = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
  int64_t stride_frame = 0;
  int64_t stride_row = 0;
  int64_t stride_column = 0;
  int vector_elements = 1;
};

/// The vector width (SupportShape::vector_elements) that a shape and its pointers allow: 16-byte accesses where both
/// pointers are 16-byte aligned and the channels and every stride are whole vectors, else 1.
inline int support_vector_elements(const SupportShape& s, int element_bytes, const void* grid, const void* supports) {
  const int64_t vector = 16 / element_bytes;
  const bool aligned = reinterpret_cast<uintptr_t>(grid) % 16 == 0 && reinterpret_cast<uintptr_t>(supports) % 16 == 0;
  const bool whole = s.channels % vector == 0 && s.stride_frame % vector == 0 && s.stride_row % vector == 0 &&
                     s.stride_column % vector == 0;
  return aligned && whole ? static_cast<int>(vector) : 1;
}

/// Threads per block of the gather kernel (one thread per vector of one support point of one query).
inline constexpr int kSupportThreads = 256;

}  // namespace trackscope::gpu::ops::cuda
