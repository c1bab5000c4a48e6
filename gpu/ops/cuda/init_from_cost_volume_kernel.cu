// The launcher of the fused init_from_cost_volume plane kernel (init_plane_kernel.cuh has the kernel and its
// contract; the CPU emulation test runs the same source).

#include "gpu/ops/cuda/init_plane_kernel.cuh"
#include "gpu/ops/cuda/launchers.h"

namespace trackscope::gpu::ops::cuda {
namespace {

template <class Element>
cudaError_t launch_typed(const InitShape& s, const void* cost_low, const void* cost_high, const float* conv_weight,
                         const float* conv_bias, const float* query_frames, const float* query_xy, float* points,
                         float* stats, cudaStream_t stream) {
  const int64_t blocks = s.queries * s.frames;
  if (blocks == 0) return cudaSuccess;
  if (blocks > 0x7fffffffLL || s.high_height * s.high_width > kInitMaxHighCells) return cudaErrorInvalidConfiguration;
  const auto shared = static_cast<size_t>(init_shared_bytes(s));
  if (shared > 48 * 1024) {
    const cudaError_t error = cudaFuncSetAttribute(
        init_plane::init_plane_kernel<Element>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
    if (error != cudaSuccess) return error;
  }
  init_plane::init_plane_kernel<Element><<<static_cast<unsigned>(blocks), init_plane::kThreads, shared, stream>>>(
      s, cost_low, cost_high, conv_weight, conv_bias, query_frames, query_xy, points, stats);
  return cudaGetLastError();
}

}  // namespace

int64_t init_shared_bytes(const InitShape& shape) {
  return init_plane::shared_bytes(static_cast<int64_t>(shape.low_height) * shape.low_width, shape.high_height,
                                  shape.high_width);
}

cudaError_t launch_init_from_cost_volume(const InitShape& shape, ElementType cost_type, const void* cost_low,
                                         const void* cost_high, const float* conv_weight, const float* conv_bias,
                                         const float* query_frames, const float* query_xy, float* points, float* stats,
                                         cudaStream_t stream) {
  switch (cost_type) {
    case ElementType::float32:
      return launch_typed<float>(shape, cost_low, cost_high, conv_weight, conv_bias, query_frames, query_xy, points,
                                 stats, stream);
    case ElementType::bfloat16:
      return launch_typed<Bf16Tag>(shape, cost_low, cost_high, conv_weight, conv_bias, query_frames, query_xy, points,
                                   stats, stream);
    case ElementType::float16:
      return launch_typed<Fp16Tag>(shape, cost_low, cost_high, conv_weight, conv_bias, query_frames, query_xy, points,
                                   stats, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace trackscope::gpu::ops::cuda
