#pragma once
// Shape of the fused init_from_cost_volume plane kernel (init_plane_kernel.cuh), shared by its launcher
// (launchers.h) and the CPU emulation test: no CUDA and no torch here.

#include <cstdint>

namespace trackscope::gpu::ops::cuda {

/// The largest high-resolution plane one block holds (64x64 cells: the 256x256 input at stride 4).
inline constexpr int kInitMaxHighCells = 4096;

/// cost_low [queries, frames, low_height, low_width] and cost_high [queries, frames, high_height, high_width];
/// high_height * high_width <= kInitMaxHighCells.
struct InitShape {
  int64_t queries = 0;
  int64_t frames = 0;
  int low_height = 0;
  int low_width = 0;
  int high_height = 0;
  int high_width = 0;
  float output_scale_x = 4.0f;  // 256 / high_width
  float output_scale_y = 4.0f;  // 256 / high_height
};

}  // namespace trackscope::gpu::ops::cuda
