#pragma once
// Small device helpers shared by the .cu files: element conversion and block reductions.
// Torch-free (see launchers.h).

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace trackscope::gpu::ops::cuda {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half(v); }

struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct MinOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fminf(a, b); }
};

template <typename Op>
__device__ __forceinline__ float warp_all_reduce(float v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/// Reduces one value per thread over the whole block and returns the result to every thread.
/// scratch: >= 32 floats of shared memory. Every thread of the block must call it (it synchronises).
/// blockDim.x must be a multiple of 32.
template <typename Op>
__device__ float block_all_reduce(float v, Op op, float* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  v = warp_all_reduce(v, op);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float r = scratch[0];
  for (int w = 1; w < warps; ++w) r = op(r, scratch[w]);
  return r;
}

/// Block-wide argmax: the largest value, the smallest index among equal values (first index wins).
/// Callers pass no NaN values. scratch_values/scratch_indices: >= 32 entries each.
__device__ inline void block_argmax(float& value, int& index, float* scratch_values, int* scratch_indices) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other_value = __shfl_xor_sync(0xffffffffu, value, offset);
    const int other_index = __shfl_xor_sync(0xffffffffu, index, offset);
    if (other_value > value || (other_value == value && other_index < index)) {
      value = other_value;
      index = other_index;
    }
  }
  __syncthreads();
  if (lane == 0) {
    scratch_values[warp] = value;
    scratch_indices[warp] = index;
  }
  __syncthreads();
  value = scratch_values[0];
  index = scratch_indices[0];
  for (int w = 1; w < warps; ++w) {
    if (scratch_values[w] > value || (scratch_values[w] == value && scratch_indices[w] < index)) {
      value = scratch_values[w];
      index = scratch_indices[w];
    }
  }
}

}  // namespace trackscope::gpu::ops::cuda
