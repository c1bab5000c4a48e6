// local_corr4d on tensor cores, for bf16/fp16 feature grids (docs/locotrack-spec.md §2.5 steps 1-2; the contract
// is local_corr4d's, see launchers.h).
//
// The 49 bilinear samples of one (q,t) share one fractional part, so with the 8x8 integer window W of the
// feature grid around the point (cells outside the grid are 0, as grid_sample's zeros padding makes them),
//   corr[h,w,s] = sum_c bilinear(W)[h,w,c] * S[s,c]
//               = (1-fy)(1-fx) P[h,w,s] + (1-fy) fx P[h,w+1,s] + fy (1-fx) P[h+1,w,s] + fy fx P[h+1,w+1,s]
// with P = W (64 cells x C) . S^T (C x 49 supports): the dot products run on the raw window cells and the
// interpolation is applied to the 64x49 products (the same sum, in another order). P is one small GEMM per
// (q,t), [64 x C] x [C x 64 (49 padded)], on tensor cores through WMMA (16x16x16 tiles, fp32 accumulation).
//
// Work split: one block = one query x kFrames (2) frames, 4 warps; warp (f, half) computes rows
// [32 half, 32 half + 32) of frame f's P (2 x 4 accumulator tiles). Channels run in chunks of 64: the block
// stages the supports' chunk [64 s][64 c] and each frame's window chunk [64 cells][64 c] in shared memory with
// 16-byte loads (channel stride 1, 8 elements per load), zero-filling cells outside the grid and supports >= 49.
// Then P goes to shared memory (fp32) and the block writes the 2401 interpolated outputs per frame (coalesced:
// consecutive threads write consecutive supports).
//
// Cost per (q,t), C channels, e = 2 bytes: FLOPs (executed) 2*64*64*C; bytes 64*C*e window + 49*C*e/2
// supports + 2401*out output. Eligible: bf16 (compute capability >= 8.0) or fp16 (>= 7.0), C % 64 == 0, 16-byte
// aligned cells (strides multiples of 8 elements); the wrapper falls back to the SIMT kernel otherwise.

#include <mma.h>

#include <cstdint>
#include <type_traits>

#include "gpu/ops/cuda/device_utils.cuh"
#include "gpu/ops/cuda/launchers.h"

namespace trackscope::gpu::ops::cuda {
namespace {

constexpr int kSide = core::locotrack::kSupportSize;
constexpr int kTaps = core::locotrack::kSupportTaps;
constexpr int kCorrValues = core::locotrack::kCorrPerSample;
constexpr int kRadius = 3;
constexpr int kWindow = 8;                 // 8x8 cells
constexpr int kCells = kWindow * kWindow;  // 64 = GEMM M
constexpr int kSupportsPadded = 64;        // GEMM N
constexpr int kChunk = 64;                 // channels per stage = GEMM K per stage
constexpr int kLead = kChunk + 8;          // bf16/fp16 row pitch in shared memory (breaks bank conflicts)
constexpr int kProductLead = kSupportsPadded + 4;
constexpr int kFrames = 2;
constexpr int kWarpsPerFrame = 2;
constexpr int kThreads = kFrames * kWarpsPerFrame * 32;  // 128

template <typename Element>
struct StageTiles {
  Element supports[kSupportsPadded][kLead];
  Element windows[kFrames][kCells][kLead];
};
struct Products {
  float p[kFrames][kCells][kProductLead];
};
template <typename Element>
union SharedTiles {
  StageTiles<Element> stage;
  Products products;
};

template <typename Element>
constexpr bool kArchSupported =
#if defined(__CUDA_ARCH__)
    (sizeof(Element) == 2) &&
    (__CUDA_ARCH__ >= 800 || (__CUDA_ARCH__ >= 700 && !std::is_same_v<Element, __nv_bfloat16>));
#else
    true;
#endif

template <typename Element, typename Out>
__global__ void __launch_bounds__(kThreads)
    local_corr4d_mma_kernel(LocalCorr4dShape s, const Element* __restrict__ features, const float* __restrict__ points,
                            const Element* __restrict__ supports, Out* __restrict__ corr) {
  if constexpr (!kArchSupported<Element>) {
    return;  // never launched on such devices (the wrapper checks the compute capability)
  } else {
    using namespace nvcuda;
    __shared__ __align__(32) SharedTiles<Element> tiles;
    __shared__ int window_x[kFrames], window_y[kFrames];
    __shared__ float fraction_x[kFrames], fraction_y[kFrames];

    const int64_t tiles_per_query = (s.frames + kFrames - 1) / kFrames;
    const int64_t query = static_cast<int64_t>(blockIdx.x) / tiles_per_query;
    const int64_t first_frame = (static_cast<int64_t>(blockIdx.x) % tiles_per_query) * kFrames;
    const int tid = static_cast<int>(threadIdx.x);
    const int warp = tid / 32;
    const int frame_slot = warp / kWarpsPerFrame;
    const int row_half = warp % kWarpsPerFrame;

    if (tid < kFrames) {
      BilinearWindow w;
      const int64_t frame = first_frame + tid;
      if (frame < s.frames) w = bilinear_window(points + (query * s.frames + frame) * 2, s.width, s.height);
      window_x[tid] = w.x0;
      window_y[tid] = w.y0;
      fraction_x[tid] = w.fx;
      fraction_y[tid] = w.fy;
    }
    __syncthreads();

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][4];
#pragma unroll
    for (int m = 0; m < 2; ++m) {
#pragma unroll
      for (int n = 0; n < 4; ++n) wmma::fill_fragment(acc[m][n], 0.0f);
    }

    const int height = static_cast<int>(s.height), width = static_cast<int>(s.width);
    const Element* support_base = supports + query * kTaps * s.channels;
    constexpr int kVector = 8;                        // elements per 16-byte load
    constexpr int kVectorsPerRow = kChunk / kVector;  // 8
    for (int64_t c0 = 0; c0 < s.channels; c0 += kChunk) {
      // Supports [64 (49 + zero rows)][64 channels].
      for (int v = tid; v < kSupportsPadded * kVectorsPerRow; v += kThreads) {
        const int row = v / kVectorsPerRow, part = v % kVectorsPerRow;
        uint4 value = make_uint4(0, 0, 0, 0);
        if (row < kTaps) value = *reinterpret_cast<const uint4*>(support_base + row * s.channels + c0 + part * kVector);
        *reinterpret_cast<uint4*>(&tiles.stage.supports[row][part * kVector]) = value;
      }
      // Windows [frame][64 cells][64 channels]; cells outside the grid are 0.
      for (int v = tid; v < kFrames * kCells * kVectorsPerRow; v += kThreads) {
        const int slot = v / (kCells * kVectorsPerRow);
        const int cell = (v / kVectorsPerRow) % kCells, part = v % kVectorsPerRow;
        const int y = window_y[slot] - kRadius + cell / kWindow;
        const int x = window_x[slot] - kRadius + cell % kWindow;
        uint4 value = make_uint4(0, 0, 0, 0);
        if (first_frame + slot < s.frames && y >= 0 && y < height && x >= 0 && x < width) {
          const Element* cell_base = features + (first_frame + slot) * s.stride_frame +
                                     static_cast<int64_t>(y) * s.stride_row + static_cast<int64_t>(x) * s.stride_column;
          value = *reinterpret_cast<const uint4*>(cell_base + c0 + part * kVector);
        }
        *reinterpret_cast<uint4*>(&tiles.stage.windows[slot][cell][part * kVector]) = value;
      }
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kChunk; k += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, Element, wmma::row_major> a[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, Element, wmma::col_major> b[4];
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          wmma::load_matrix_sync(a[m], &tiles.stage.windows[frame_slot][(row_half * 2 + m) * 16][k], kLead);
        }
#pragma unroll
        for (int n = 0; n < 4; ++n) wmma::load_matrix_sync(b[n], &tiles.stage.supports[n * 16][k], kLead);
#pragma unroll
        for (int m = 0; m < 2; ++m) {
#pragma unroll
          for (int n = 0; n < 4; ++n) wmma::mma_sync(acc[m][n], a[m], b[n], acc[m][n]);
        }
      }
      __syncthreads();  // the stage tiles are overwritten next (or aliased by the products below)
    }
#pragma unroll
    for (int m = 0; m < 2; ++m) {
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        wmma::store_matrix_sync(&tiles.products.p[frame_slot][(row_half * 2 + m) * 16][n * 16], acc[m][n], kProductLead,
                                wmma::mem_row_major);
      }
    }
    __syncthreads();

    // corr[h, w, s] from the four window cells around target (h, w): 2401 outputs per frame.
    for (int slot = 0; slot < kFrames; ++slot) {
      const int64_t frame = first_frame + slot;
      if (frame >= s.frames) break;
      const float fx = fraction_x[slot], fy = fraction_y[slot];
      const float w00 = (1.0f - fy) * (1.0f - fx), w01 = (1.0f - fy) * fx, w10 = fy * (1.0f - fx), w11 = fy * fx;
      const float(*p)[kProductLead] = tiles.products.p[slot];
      Out* out = corr + (query * s.frames + frame) * s.corr_row_pitch;
      for (int o = kCorrValues + tid; o < s.corr_row_pitch; o += kThreads) out[o] = from_float<Out>(0.0f);
      for (int o = tid; o < kCorrValues; o += kThreads) {
        const int target = o / kTaps, support = o % kTaps;
        const int cell = (target / kSide) * kWindow + target % kSide;
        const float value = w00 * p[cell][support] + w01 * p[cell + 1][support] + w10 * p[cell + kWindow][support] +
                            w11 * p[cell + kWindow + 1][support];
        out[o] = from_float<Out>(value);
      }
    }
  }
}

template <typename Element, typename Out>
cudaError_t launch_typed(const LocalCorr4dShape& s, const void* features, const float* points, const void* supports,
                         void* corr, cudaStream_t stream) {
  const int64_t blocks = s.queries * ((s.frames + kFrames - 1) / kFrames);
  if (blocks == 0) return cudaSuccess;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  local_corr4d_mma_kernel<Element, Out><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      s, static_cast<const Element*>(features), points, static_cast<const Element*>(supports), static_cast<Out*>(corr));
  return cudaGetLastError();
}

template <typename Element>
cudaError_t launch_with_output(const LocalCorr4dShape& s, const void* features, const float* points,
                               const void* supports, void* corr, bool float_output, cudaStream_t stream) {
  return float_output ? launch_typed<Element, float>(s, features, points, supports, corr, stream)
                      : launch_typed<Element, Element>(s, features, points, supports, corr, stream);
}

}  // namespace

bool local_corr4d_mma_eligible(const LocalCorr4dShape& s, ElementType element_type, const void* features,
                               const void* supports, int compute_capability) {
  if (element_type == ElementType::float32) return false;
  if (element_type == ElementType::bfloat16 && compute_capability < 80) return false;
  if (element_type == ElementType::float16 && compute_capability < 70) return false;
  return s.channels % kChunk == 0 && s.stride_frame % 8 == 0 && s.stride_row % 8 == 0 && s.stride_column % 8 == 0 &&
         is_aligned(features, 16) && is_aligned(supports, 16);
}

cudaError_t launch_local_corr4d_mma(const LocalCorr4dShape& shape, ElementType element_type, const void* features,
                                    const float* points, const void* supports, void* corr, ElementType corr_type,
                                    cudaStream_t stream) {
  if (corr_type != ElementType::float32 && corr_type != element_type) return cudaErrorInvalidValue;
  const bool float_output = corr_type == ElementType::float32;
  switch (element_type) {
    case ElementType::bfloat16:
      return launch_with_output<__nv_bfloat16>(shape, features, points, supports, corr, float_output, stream);
    case ElementType::float16:
      return launch_with_output<__half>(shape, features, points, supports, corr, float_output, stream);
    case ElementType::float32: break;
  }
  return cudaErrorInvalidValue;
}

}  // namespace trackscope::gpu::ops::cuda
