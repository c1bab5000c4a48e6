// Fused initialisation from the global cost volumes (docs/locotrack-spec.md §2.4), per (query, frame) plane:
// 2x bilinear upsample of the low-resolution cost (align_corners=False), stack with the high-resolution
// cost, 3x3 SAME conv with bias, softmax of 20x over the cells, argmax (first index on ties), soft-argmax in
// the window of squared radius < 25 cells around the argmax cell centre (denominator clamped at 1e-12),
// scaled to 256-space, the query-frame pin, and the mean/max/min of the raw stacked planes.
//
// One block of 256 threads per plane. The low plane, the upsampled plane and the high plane live in shared
// memory (36 KB at 32x32 + 2x64x64); each thread keeps the logits of its <= 16 cells in registers. The
// cost volumes themselves come from two GEMMs run by cuBLAS before this kernel.
//
// Cost per plane (Hh x Wh high cells, Hl x Wl low cells, element size e):
//   FLOPs ~ Hh*Wh*(7 upsample + 37 conv + 4 softmax + 1 argmax + 8 window + 6 statistics) = 63*Hh*Wh
//   bytes: (Hl*Wl + Hh*Wh)*e read + 8*4 written; nothing else touches global memory.
//   The eager path writes and re-reads the upsampled plane, the stacked plane, the conv output, the heatmap
//   and five or six [Hh,Wh,2] soft-argmax temporaries: ~18 MB per query at T=47 (docs/locotrack-spec.md §6.6).

#include <cfloat>
#include <climits>
#include <cmath>

#include "gpu/ops/cuda/device_utils.cuh"
#include "gpu/ops/cuda/launchers.h"

namespace trackscope::gpu::ops::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kCellsPerThread = kInitMaxHighCells / kThreads;  // 16
constexpr float kSoftmaxMultiplier = 20.0f;
constexpr float kWindowRadiusSquared = 25.0f;
constexpr float kDenominatorFloor = 1e-12f;

// PyTorch's upsample_bilinear2d (align_corners=False): source = scale*(dst+0.5)-0.5 clamped at 0.
__device__ __forceinline__ void source_index(int dst, float scale, int input_size, int& i0, int& i1, float& lambda0,
                                             float& lambda1) {
  float src = scale * (static_cast<float>(dst) + 0.5f) - 0.5f;
  if (src < 0.0f) src = 0.0f;
  i0 = static_cast<int>(src);
  if (i0 > input_size - 1) i0 = input_size - 1;
  i1 = i0 + (i0 < input_size - 1 ? 1 : 0);
  lambda1 = src - static_cast<float>(i0);
  lambda0 = 1.0f - lambda1;
}

template <typename Cost>
__global__ void __launch_bounds__(kThreads)
    init_kernel(InitShape s, const Cost* __restrict__ cost_low, const Cost* __restrict__ cost_high,
                const float* __restrict__ conv_weight, const float* __restrict__ conv_bias,
                const float* __restrict__ query_frames, const float* __restrict__ query_xy, float* __restrict__ points,
                float* __restrict__ stats) {
  extern __shared__ float planes[];
  __shared__ float weights[19];
  __shared__ float scratch[32];
  __shared__ int scratch_index[32];

  const int low_cells = s.low_height * s.low_width;
  const int high_cells = s.high_height * s.high_width;
  float* low = planes;
  float* up = low + low_cells;
  float* high = up + high_cells;

  const int64_t plane = blockIdx.x;  // query * frames + frame
  const int64_t query = plane / s.frames;
  const int64_t frame = plane % s.frames;
  const int tid = static_cast<int>(threadIdx.x);

  const Cost* low_plane = cost_low + plane * low_cells;
  const Cost* high_plane = cost_high + plane * high_cells;
  for (int c = tid; c < low_cells; c += kThreads) low[c] = to_float(low_plane[c]);
  if (tid < 18) weights[tid] = conv_weight[tid];
  if (tid == 18) weights[18] = conv_bias[0];
  __syncthreads();

  const float scale_y = static_cast<float>(s.low_height) / static_cast<float>(s.high_height);
  const float scale_x = static_cast<float>(s.low_width) / static_cast<float>(s.high_width);
  float sum_up = 0.0f, sum_high = 0.0f;
  float max_up = -FLT_MAX, max_high = -FLT_MAX, min_up = FLT_MAX, min_high = FLT_MAX;
  for (int c = tid; c < high_cells; c += kThreads) {
    const int y = c / s.high_width;
    const int x = c % s.high_width;
    int y0, y1, x0, x1;
    float ly0, ly1, lx0, lx1;
    source_index(y, scale_y, s.low_height, y0, y1, ly0, ly1);
    source_index(x, scale_x, s.low_width, x0, x1, lx0, lx1);
    const float u = ly0 * (lx0 * low[y0 * s.low_width + x0] + lx1 * low[y0 * s.low_width + x1]) +
                    ly1 * (lx0 * low[y1 * s.low_width + x0] + lx1 * low[y1 * s.low_width + x1]);
    const float h = to_float(high_plane[c]);
    up[c] = u;
    high[c] = h;
    sum_up += u;
    sum_high += h;
    max_up = fmaxf(max_up, u);
    max_high = fmaxf(max_high, h);
    min_up = fminf(min_up, u);
    min_high = fminf(min_high, h);
  }
  __syncthreads();

  // 3x3 conv (zero padding 1, bias) on the stacked [up, high] planes, times the softmax multiplier.
  float logits[kCellsPerThread];
  float local_max = -FLT_MAX;
#pragma unroll
  for (int k = 0; k < kCellsPerThread; ++k) {
    const int c = tid + k * kThreads;
    logits[k] = -FLT_MAX;
    if (c < high_cells) {
      const int y = c / s.high_width;
      const int x = c % s.high_width;
      float v = 0.0f;
      for (int ky = 0; ky < 3; ++ky) {
        const int yy = y + ky - 1;
        if (yy < 0 || yy >= s.high_height) continue;
        for (int kx = 0; kx < 3; ++kx) {
          const int xx = x + kx - 1;
          if (xx < 0 || xx >= s.high_width) continue;
          v = fmaf(weights[ky * 3 + kx], up[yy * s.high_width + xx], v);
          v = fmaf(weights[9 + ky * 3 + kx], high[yy * s.high_width + xx], v);
        }
      }
      logits[k] = kSoftmaxMultiplier * (v + weights[18]);
      local_max = fmaxf(local_max, logits[k]);
    }
  }
  const float plane_max = block_all_reduce(local_max, MaxOp{}, scratch);

  float local_sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kCellsPerThread; ++k) {
    const int c = tid + k * kThreads;
    const float e = c < high_cells ? expf(logits[k] - plane_max) : 0.0f;
    logits[k] = e;
    local_sum += e;
  }
  const float plane_sum = block_all_reduce(local_sum, SumOp{}, scratch);

  // Heatmap values and their argmax (cells are visited in increasing index, so '>' keeps the first).
  float best = -1.0f;
  int best_index = INT_MAX;
#pragma unroll
  for (int k = 0; k < kCellsPerThread; ++k) {
    const int c = tid + k * kThreads;
    if (c < high_cells) {
      logits[k] = logits[k] / plane_sum;
      if (logits[k] > best) {
        best = logits[k];
        best_index = c;
      }
    }
  }
  block_argmax(best, best_index, scratch, scratch_index);
  if (best_index == INT_MAX) best_index = 0;  // every heat value was NaN
  const float peak_x = static_cast<float>(best_index % s.high_width) + 0.5f;
  const float peak_y = static_cast<float>(best_index / s.high_width) + 0.5f;

  float weight_sum = 0.0f, weighted_x = 0.0f, weighted_y = 0.0f;
#pragma unroll
  for (int k = 0; k < kCellsPerThread; ++k) {
    const int c = tid + k * kThreads;
    if (c < high_cells) {
      const float cx = static_cast<float>(c % s.high_width) + 0.5f;
      const float cy = static_cast<float>(c / s.high_width) + 0.5f;
      const float dx = cx - peak_x;
      const float dy = cy - peak_y;
      if (dx * dx + dy * dy < kWindowRadiusSquared) {
        weight_sum += logits[k];
        weighted_x += logits[k] * cx;
        weighted_y += logits[k] * cy;
      }
    }
  }
  weight_sum = block_all_reduce(weight_sum, SumOp{}, scratch);
  weighted_x = block_all_reduce(weighted_x, SumOp{}, scratch);
  weighted_y = block_all_reduce(weighted_y, SumOp{}, scratch);
  sum_up = block_all_reduce(sum_up, SumOp{}, scratch);
  sum_high = block_all_reduce(sum_high, SumOp{}, scratch);
  max_up = block_all_reduce(max_up, MaxOp{}, scratch);
  max_high = block_all_reduce(max_high, MaxOp{}, scratch);
  min_up = block_all_reduce(min_up, MinOp{}, scratch);
  min_high = block_all_reduce(min_high, MinOp{}, scratch);

  if (tid == 0) {
    const float denominator = fmaxf(weight_sum, kDenominatorFloor);
    float x = weighted_x / denominator * s.output_scale_x;
    float y = weighted_y / denominator * s.output_scale_y;
    // Query-frame pin: round half to even, as torch.round.
    if (rintf(query_frames[query]) == static_cast<float>(frame)) {
      x = query_xy[query * 2 + 0];
      y = query_xy[query * 2 + 1];
    }
    points[plane * 2 + 0] = x;
    points[plane * 2 + 1] = y;
    const float cells = static_cast<float>(high_cells);
    float* out = stats + plane * 6;
    out[0] = sum_up / cells;
    out[1] = sum_high / cells;
    out[2] = max_up;
    out[3] = max_high;
    out[4] = min_up;
    out[5] = min_high;
  }
}

template <typename Cost>
cudaError_t launch_typed(const InitShape& s, const void* cost_low, const void* cost_high, const float* conv_weight,
                         const float* conv_bias, const float* query_frames, const float* query_xy, float* points,
                         float* stats, cudaStream_t stream) {
  const int64_t blocks = s.queries * s.frames;
  if (blocks == 0) return cudaSuccess;
  if (blocks > 0x7fffffffLL || s.high_height * s.high_width > kInitMaxHighCells) return cudaErrorInvalidConfiguration;
  const auto shared = static_cast<size_t>(init_shared_bytes(s));
  if (shared > 48 * 1024) {
    const cudaError_t error =
        cudaFuncSetAttribute(init_kernel<Cost>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
    if (error != cudaSuccess) return error;
  }
  init_kernel<Cost><<<static_cast<unsigned>(blocks), kThreads, shared, stream>>>(
      s, static_cast<const Cost*>(cost_low), static_cast<const Cost*>(cost_high), conv_weight, conv_bias, query_frames,
      query_xy, points, stats);
  return cudaGetLastError();
}

}  // namespace

int64_t init_shared_bytes(const InitShape& shape) {
  return static_cast<int64_t>(sizeof(float)) * (static_cast<int64_t>(shape.low_height) * shape.low_width +
                                                2 * static_cast<int64_t>(shape.high_height) * shape.high_width);
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
      return launch_typed<__nv_bfloat16>(shape, cost_low, cost_high, conv_weight, conv_bias, query_frames, query_xy,
                                         points, stats, stream);
    case ElementType::float16:
      return launch_typed<__half>(shape, cost_low, cost_high, conv_weight, conv_bias, query_frames, query_xy, points,
                                  stats, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace trackscope::gpu::ops::cuda
