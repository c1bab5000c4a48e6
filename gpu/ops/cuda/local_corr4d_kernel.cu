// Fused neighbourhood sampling + local 4D correlation (docs/locotrack-spec.md §2.5 steps 1-2).
//
// corr[q,t,h,w,i,j] = sum_c bilinear(F[t], x_qt + (w-3), y_qt + (h-3))[c] * S[q,i,j,c]
//
// All 49 sample positions of one (q,t) share the fractional part of the point, so the 7x7 bilinear
// footprint is the 8x8 integer window starting at (floor(x-0.5)-3, floor(y-0.5)-3) with one set of four
// weights. The 7x7xC neighbourhood is never written to global memory: each block interpolates a 32-channel
// slice of it into shared memory, multiplies it with the matching support slice, and moves on.
//
// Work split: one block = one query x kFramesPerBlock (4) frames; the supports are loaded once per block and
// shared by its frames. Interpolation: one thread per (frame, channel) walks the 8x8 window row by row
// (coalesced across channels, every cell read once) and interpolates separably (x, then y). Correlation:
// 49 threads per frame, thread (h, i) accumulates the 7x7 outputs corr[h, 0..6, i, 0..6] in registers
// (14 shared loads per 49 FMAs). Channels run in chunks of 32, so shared memory is 31 KB for any C.
// fp32 accumulation; bf16/fp16 inputs are widened on load.
//
// Cost per (q,t), C channels, element size e bytes:
//   FLOPs: 2*49*49*C (correlation) + (56+49)*3*C (separable bilinear) = 5117*C
//   bytes: 8*8*C*e window + 49*C*e supports / 4 frames + 8 point + 2401*4 output
//          (C=128 fp32: 32.8 kB + 6.3 kB + 9.6 kB = 48.7 kB for 655 kFLOP, ~13 FLOP/B; windows of nearby
//          queries also share L2 lines, so DRAM traffic is lower still).
//   The eager path writes the 49*C*4 = 25 kB neighbourhood, copies it once more for the einsum (read +
//   write) and reads it again in the bmm: ~100 kB per (q,t) at C=128 on top of the same windows/outputs.
//   Register-limited to 2 blocks (14 warps) per SM: 128 registers, 31.4 KB shared memory per block.

#include <cmath>

#include "gpu/ops/cuda/device_utils.cuh"
#include "gpu/ops/cuda/launchers.h"

namespace trackscope::gpu::ops::cuda {
namespace {

constexpr int kSide = core::locotrack::kSupportSize;
constexpr int kTaps = core::locotrack::kSupportTaps;
constexpr int kCorrValues = core::locotrack::kCorrPerSample;
constexpr int kRadius = 3;
constexpr int kFramesPerBlock = 4;
constexpr int kChannelsPerStep = 32;
constexpr int kThreads = kTaps * kFramesPerBlock;  // 196

// Offsets inside one frame fit in 32 bits (the wrapper checks it); only the frame offset needs 64.
template <typename Element>
__device__ __forceinline__ float fetch_cell(const Element* __restrict__ frame_channel, int height, int width,
                                            int stride_row, int stride_column, int y, int x) {
  if (y < 0 || y >= height || x < 0 || x >= width) return 0.0f;
  return to_float(frame_channel[y * stride_row + x * stride_column]);
}

// 2 blocks per SM: the 7x7 register tile plus software-pipelined operands need ~128 registers; forcing 3
// blocks spills ~90 bytes per thread.
template <typename Element, typename Out>
__global__ void __launch_bounds__(kThreads, 2)
    local_corr4d_kernel(LocalCorr4dShape s, const Element* __restrict__ features, const float* __restrict__ points,
                        const Element* __restrict__ supports, Out* __restrict__ corr) {
  __shared__ float support_tile[kChannelsPerStep][kTaps];
  __shared__ float neighbour_tile[kFramesPerBlock][kChannelsPerStep][kTaps];
  __shared__ int window_x[kFramesPerBlock];
  __shared__ int window_y[kFramesPerBlock];
  __shared__ float fraction_x[kFramesPerBlock];
  __shared__ float fraction_y[kFramesPerBlock];

  const int64_t tiles_per_query = (s.frames + kFramesPerBlock - 1) / kFramesPerBlock;
  const int64_t query = static_cast<int64_t>(blockIdx.x) / tiles_per_query;
  const int64_t first_frame = (static_cast<int64_t>(blockIdx.x) % tiles_per_query) * kFramesPerBlock;
  const int tid = static_cast<int>(threadIdx.x);

  if (tid < kFramesPerBlock) {
    BilinearWindow w;
    const int64_t frame = first_frame + tid;
    if (frame < s.frames) w = bilinear_window(points + (query * s.frames + frame) * 2, s.width, s.height);
    window_x[tid] = w.x0;
    window_y[tid] = w.y0;
    fraction_x[tid] = w.fx;
    fraction_y[tid] = w.fy;
  }
  __syncthreads();

  const int frame_slot = tid / kTaps;
  const int tile = tid % kTaps;
  const int target_row = tile / kSide;   // h
  const int support_row = tile % kSide;  // i
  const int64_t my_frame = first_frame + frame_slot;
  const bool active = my_frame < s.frames;

  float acc[kSide][kSide];
#pragma unroll
  for (int w = 0; w < kSide; ++w) {
#pragma unroll
    for (int j = 0; j < kSide; ++j) acc[w][j] = 0.0f;
  }

  const Element* support_base = supports + query * kTaps * s.channels;
  const int height = static_cast<int>(s.height);
  const int width = static_cast<int>(s.width);
  const int stride_row = static_cast<int>(s.stride_row);
  const int stride_column = static_cast<int>(s.stride_column);
  for (int64_t c0 = 0; c0 < s.channels; c0 += kChannelsPerStep) {
    // Support slice [32 channels][49 taps]: consecutive threads read consecutive channels.
    for (int e = tid; e < kTaps * kChannelsPerStep; e += kThreads) {
      const int tap = e / kChannelsPerStep;
      const int k = e % kChannelsPerStep;
      const int64_t c = c0 + k;
      support_tile[k][tap] = c < s.channels ? to_float(support_base[tap * s.channels + c]) : 0.0f;
    }
    // Interpolated neighbourhood slice [frame][32 channels][49 taps], separably: one thread per (frame,
    // channel) walks the 8x8 window row by row (8 coalesced loads per row), interpolates each row in x, and
    // combines consecutive rows in y. Every window cell is read once; cells outside the grid are 0.
    for (int column = tid; column < kFramesPerBlock * kChannelsPerStep; column += kThreads) {
      const int slot = column / kChannelsPerStep;
      const int k = column % kChannelsPerStep;
      const int64_t c = c0 + k;
      float* destination = &neighbour_tile[slot][k][0];
      if (c >= s.channels || first_frame + slot >= s.frames) {
#pragma unroll
        for (int tap = 0; tap < kTaps; ++tap) destination[tap] = 0.0f;
        continue;
      }
      const Element* base = features + (first_frame + slot) * s.stride_frame + c;
      const int left = window_x[slot] - kRadius;
      const int top = window_y[slot] - kRadius;
      const float fx = fraction_x[slot];
      const float fy = fraction_y[slot];
      float previous[kSide];
#pragma unroll 1
      for (int r = 0; r <= kSide; ++r) {
        float row[kSide + 1];
#pragma unroll
        for (int x = 0; x <= kSide; ++x)
          row[x] = fetch_cell(base, height, width, stride_row, stride_column, top + r, left + x);
        float current[kSide];
#pragma unroll
        for (int w = 0; w < kSide; ++w) current[w] = (1.0f - fx) * row[w] + fx * row[w + 1];
        if (r > 0) {
#pragma unroll
          for (int w = 0; w < kSide; ++w)
            destination[(r - 1) * kSide + w] = (1.0f - fy) * previous[w] + fy * current[w];
        }
#pragma unroll
        for (int w = 0; w < kSide; ++w) previous[w] = current[w];
      }
    }
    __syncthreads();
    if (active) {
#pragma unroll 4
      for (int k = 0; k < kChannelsPerStep; ++k) {
        float a[kSide];
        float b[kSide];
#pragma unroll
        for (int w = 0; w < kSide; ++w) a[w] = neighbour_tile[frame_slot][k][target_row * kSide + w];
#pragma unroll
        for (int j = 0; j < kSide; ++j) b[j] = support_tile[k][support_row * kSide + j];
#pragma unroll
        for (int w = 0; w < kSide; ++w) {
#pragma unroll
          for (int j = 0; j < kSide; ++j) acc[w][j] = fmaf(a[w], b[j], acc[w][j]);
        }
      }
    }
    __syncthreads();
  }

  if (active) {
    Out* row = corr + (query * s.frames + my_frame) * s.corr_row_pitch;
    if (tile == 0) {
      for (int64_t pad = kCorrValues; pad < s.corr_row_pitch; ++pad) row[pad] = from_float<Out>(0.0f);
    }
    Out* out = row + target_row * kSide * kTaps + support_row * kSide;
#pragma unroll
    for (int w = 0; w < kSide; ++w) {
#pragma unroll
      for (int j = 0; j < kSide; ++j) out[w * kTaps + j] = from_float<Out>(acc[w][j]);
    }
  }
}

template <typename Element, typename Out>
cudaError_t launch_typed(const LocalCorr4dShape& s, const void* features, const float* points, const void* supports,
                         void* corr, cudaStream_t stream) {
  const int64_t blocks = s.queries * ((s.frames + kFramesPerBlock - 1) / kFramesPerBlock);
  if (blocks == 0) return cudaSuccess;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  local_corr4d_kernel<Element, Out><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      s, static_cast<const Element*>(features), points, static_cast<const Element*>(supports), static_cast<Out*>(corr));
  return cudaGetLastError();
}

// corr is float32 or the input type (the ops layer checks it).
template <typename Element>
cudaError_t launch_with_output(const LocalCorr4dShape& s, const void* features, const float* points,
                               const void* supports, void* corr, bool float_output, cudaStream_t stream) {
  return float_output ? launch_typed<Element, float>(s, features, points, supports, corr, stream)
                      : launch_typed<Element, Element>(s, features, points, supports, corr, stream);
}

}  // namespace

cudaError_t launch_local_corr4d(const LocalCorr4dShape& shape, ElementType element_type, const void* features,
                                const float* points, const void* supports, void* corr, ElementType corr_type,
                                cudaStream_t stream) {
  if (corr_type != ElementType::float32 && corr_type != element_type) return cudaErrorInvalidValue;
  const bool float_output = corr_type == ElementType::float32;
  switch (element_type) {
    case ElementType::float32: return launch_typed<float, float>(shape, features, points, supports, corr, stream);
    case ElementType::bfloat16:
      return launch_with_output<__nv_bfloat16>(shape, features, points, supports, corr, float_output, stream);
    case ElementType::float16:
      return launch_with_output<__half>(shape, features, points, supports, corr, float_output, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace trackscope::gpu::ops::cuda
