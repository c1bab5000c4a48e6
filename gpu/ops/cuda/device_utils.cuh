#pragma once
// Small device helpers shared by the .cu files: element conversion and asynchronous copies (warp reductions:
// warp_reduce.cuh).
// Torch-free (see launchers.h).

#include <cstdint>

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
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half(v);
}

/// Where the 7x7 bilinear samples around a point (x, y) in grid cells fall: grid_sample with align_corners=False
/// reads continuous v at index v - 0.5, so all 49 samples share the fractions (fx, fy) and their corners form the
/// 8x8 integer window whose top-left cell is (x0 - 3, y0 - 3), x0 = floor(x - 0.5), y0 = floor(y - 0.5). Points
/// beyond a 16-cell margin around the grid, or not finite (every comparison is false for NaN), keep
/// kInvalidWindowCell, which puts every tap outside the grid: all zeros, as grid_sample's zeros padding gives, and
/// the float-to-int conversion stays defined.
inline constexpr int kInvalidWindowCell = -(1 << 20);
struct BilinearWindow {
  int x0 = kInvalidWindowCell;
  int y0 = kInvalidWindowCell;
  float fx = 0.0f;
  float fy = 0.0f;
};
__device__ __forceinline__ BilinearWindow bilinear_window(const float* xy, int64_t width, int64_t height) {
  BilinearWindow window;
  const float ix = xy[0] - 0.5f;
  const float iy = xy[1] - 0.5f;
  const float floor_x = floorf(ix);
  const float floor_y = floorf(iy);
  const float margin = 16.0f;
  if (floor_x >= -margin && floor_x <= static_cast<float>(width) + margin && floor_y >= -margin &&
      floor_y <= static_cast<float>(height) + margin) {
    window.x0 = static_cast<int>(floor_x);
    window.y0 = static_cast<int>(floor_y);
    window.fx = ix - floor_x;
    window.fy = iy - floor_y;
  }
  return window;
}

/// cp.async (compute capability >= 8.0): a 16-byte global -> shared copy that does not pass through registers;
/// with inside == false it zero-fills the 16 bytes without reading global memory (source must still be a valid
/// address). Older targets compile a plain copy instead: the kernels that use these are not eligible there (the
/// wrappers check the compute capability), but every .cu file builds for all TRACKSCOPE_CUDA_ARCHITECTURES.
__device__ __forceinline__ void copy16_async(void* shared_destination, const void* global_source, bool inside) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto destination = static_cast<unsigned>(__cvta_generic_to_shared(shared_destination));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(destination), "l"(global_source),
               "r"(inside ? 16 : 0));
#else
  *static_cast<float4*>(shared_destination) =
      inside ? *static_cast<const float4*>(global_source) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#endif
}
/// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void commit_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
/// Waits until at most `Pending` committed groups are still in flight (0: all copies have landed).
template <int Pending>
__device__ __forceinline__ void wait_for_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
#endif
}

}  // namespace trackscope::gpu::ops::cuda
