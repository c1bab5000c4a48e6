#pragma once
// Butterfly reductions over the 32 lanes of a warp, written on the primitives of mma_primitives.cuh so that the
// kernels using them run unchanged in the CPU emulation (tests/gpu/cuda_emulation.h). Every lane ends with the
// same bits (each step combines the same two values in both partners); all 32 lanes must call them.

#include <cmath>

#ifndef TRACKSCOPE_CUDA_EMULATION
#include "gpu/ops/cuda/mma_primitives.cuh"
#endif

namespace trackscope::gpu::ops::cuda {

struct Sum {
  TRACKSCOPE_DEVICE_FN float operator()(float a, float b) const { return a + b; }
};
struct Max {
  TRACKSCOPE_DEVICE_FN float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Min {
  TRACKSCOPE_DEVICE_FN float operator()(float a, float b) const { return fminf(a, b); }
};

/// op over the warp's 32 values, offsets 16, 8, 4, 2, 1.
template <class Op>
TRACKSCOPE_DEVICE_FN float warp_reduce(float v, Op op) {
  TRACKSCOPE_UNROLL
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, primitives::warp_xor(v, offset));
  return v;
}

}  // namespace trackscope::gpu::ops::cuda
