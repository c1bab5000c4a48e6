// local_corr4d for float32 feature grids with the window loads taken off the critical path (exact mode; the
// contract is local_corr4d's, see launchers.h).
//
// Same arithmetic as the SIMT kernel of local_corr4d_kernel.cu (separable bilinear interpolation of the 8x8
// window in fp32, then corr[h,w,i,j] = sum_c n[h,w,c] s[i,j,c] with thread (frame, h, i) holding the 7x7
// outputs (w, j) in registers), in the same order per output, so the results are the same up to the
// interpolation's association. What changes is the memory pipeline. The SIMT kernel has each of its threads
// walk an 8x8 window column with dependent global loads (~8 round trips per 32-channel step) while only two
// blocks share an SM, so the FMA units wait on DRAM/L2 latency most of the time (3.7x its floor on an H200).
// Here the raw 8x8 x 32-channel windows of the block's 4 frames and the supports' 32-channel slice are copied
// to shared memory with cp.async (16 bytes per copy, zero-filled outside the grid), double-buffered: the
// copies of step k+1 are in flight while step k interpolates (shared -> shared, all 196 threads) and
// multiplies. Per step and block: 32 KB of windows + 6 KB of supports in, 4 x 49 x 49 x 32 FMAs.
// Measured on an H200 (LocoTrack-S, N=1024, T=47, the three levels): 28.8 ms against the SIMT kernel's 32.4 ms.
// The multiply phase, not the loads, bounds it now (14 shared loads per 49 FMAs per thread and k); persistent
// blocks that also overlap one tile's first copies with the previous tile's last step were slower (29.6 ms).
//
// Shared memory (dynamic, 104.8 KB: two blocks per SM on sm_80+):
//   window    [2 stages][4 frames][64 cells][32 channels]
//   support   [2 stages][49 taps][36]    (pitch 36: 16-byte rows, and the 7 support rows i of a warp's
//                                         threads fall into 7 different banks)
//   neighbour [4 frames][32 channels][49 taps] with a frame pitch of 32*49+8 floats (the two frames a warp
//                                         straddles read different banks)
// Eligible: float32 features and supports, C % 32 == 0, strides multiples of 4 elements, 16-byte aligned
// pointers, compute capability >= 8.0 (cp.async), and the device's opt-in shared memory; otherwise the wrapper
// runs the SIMT kernel.

#include <cstdint>

#include "gpu/ops/cuda/device_utils.cuh"
#include "gpu/ops/cuda/launchers.h"

namespace trackscope::gpu::ops::cuda {
namespace {

constexpr int kSide = core::locotrack::kSupportSize;
constexpr int kTaps = core::locotrack::kSupportTaps;
constexpr int kCorrValues = core::locotrack::kCorrPerSample;
constexpr int kRadius = 3;
constexpr int kWindow = 8;
constexpr int kCells = kWindow * kWindow;  // 64
constexpr int kFrames = 4;                 // frames per block
constexpr int kThreads = kTaps * kFrames;  // 196
constexpr int kChunk = 32;                 // channels per pipeline step
constexpr int kVectors = kChunk / 4;       // 16-byte copies per cell and step
constexpr int kSupportPitch = 36;
constexpr int kNeighbourFramePitch = kChunk * kTaps + 8;

constexpr int kWindowFloats = 2 * kFrames * kCells * kChunk;
constexpr int kSupportFloats = 2 * kTaps * kSupportPitch;
constexpr int kNeighbourFloats = kFrames * kNeighbourFramePitch;
constexpr size_t kSharedBytes = sizeof(float) * (kWindowFloats + kSupportFloats + kNeighbourFloats);

// Block coordinates of one step: which tile (query, first frame) and which channel chunk.
template <typename Out>
__global__ void __launch_bounds__(kThreads, 2)
    local_corr4d_pipelined_kernel(LocalCorr4dShape s, const float* __restrict__ features,
                                  const float* __restrict__ points, const float* __restrict__ supports,
                                  Out* __restrict__ corr) {
  extern __shared__ float4 shared_raw[];  // float4: 16-byte alignment for cp.async
  float* const window = reinterpret_cast<float*>(shared_raw);
  float* const support = window + kWindowFloats;
  float* const neighbour = support + kSupportFloats;
  __shared__ int window_x[kFrames];
  __shared__ int window_y[kFrames];
  __shared__ float fraction_x[kFrames];
  __shared__ float fraction_y[kFrames];

  const int64_t tiles_per_query = (s.frames + kFrames - 1) / kFrames;
  const int64_t query = static_cast<int64_t>(blockIdx.x) / tiles_per_query;
  const int64_t first_frame = (static_cast<int64_t>(blockIdx.x) % tiles_per_query) * kFrames;
  const int tid = static_cast<int>(threadIdx.x);

  if (tid < kFrames) {
    BilinearWindow w;
    const int64_t frame = first_frame + tid;
    if (frame < s.frames) w = bilinear_window(points + (query * s.frames + frame) * 2, s.width, s.height);
    window_x[tid] = w.x0 - kRadius;
    window_y[tid] = w.y0 - kRadius;
    fraction_x[tid] = w.fx;
    fraction_y[tid] = w.fy;
  }
  __syncthreads();

  const int height = static_cast<int>(s.height);
  const int width = static_cast<int>(s.width);
  const float* support_base = supports + query * kTaps * s.channels;
  // Issues the copies of channel step `step` into stage buffer `stage` (every thread a share of them).
  auto issue = [&](int64_t step, int stage) {
    const int64_t c0 = step * kChunk;
    float* window_stage = window + stage * (kFrames * kCells * kChunk);
    for (int e = tid; e < kFrames * kCells * kVectors; e += kThreads) {
      const int vector = e % kVectors;
      const int cell = (e / kVectors) % kCells;
      const int slot = e / (kVectors * kCells);
      const int y = window_y[slot] + cell / kWindow;
      const int x = window_x[slot] + cell % kWindow;
      const bool inside = first_frame + slot < s.frames && y >= 0 && y < height && x >= 0 && x < width;
      // Outside: any valid address (nothing is read); the feature base keeps it inside the allocation.
      const float* source = inside ? features + (first_frame + slot) * s.stride_frame + y * s.stride_row +
                                         x * s.stride_column + c0 + vector * 4
                                   : features;
      copy16_async(window_stage + (slot * kCells + cell) * kChunk + vector * 4, source, inside);
    }
    float* support_stage = support + stage * (kTaps * kSupportPitch);
    for (int e = tid; e < kTaps * kVectors; e += kThreads) {
      const int vector = e % kVectors;
      const int tap = e / kVectors;
      copy16_async(support_stage + tap * kSupportPitch + vector * 4, support_base + tap * s.channels + c0 + vector * 4,
                   true);
    }
  };

  const int frame_slot = tid / kTaps;
  const int tile = tid % kTaps;
  const int target_row = tile / kSide;   // h
  const int support_row = tile % kSide;  // i
  const bool active = first_frame + frame_slot < s.frames;

  float acc[kSide][kSide];
#pragma unroll
  for (int w = 0; w < kSide; ++w) {
#pragma unroll
    for (int j = 0; j < kSide; ++j) acc[w][j] = 0.0f;
  }

  const int64_t steps = s.channels / kChunk;
  issue(0, 0);
  commit_copies();
  for (int64_t step = 0; step < steps; ++step) {
    const int stage = static_cast<int>(step & 1);
    if (step + 1 < steps) issue(step + 1, stage ^ 1);
    commit_copies();  // possibly empty: keeps "all but the newest group" meaning "this step's copies"
    wait_for_copies<1>();
    __syncthreads();

    // Interpolation, shared -> shared: item (frame, output row h, channel k) reads window rows h and h+1 and
    // writes the 7 samples of row h, interpolating in x first, then in y (the SIMT kernel's order).
    const float* window_stage = window + stage * (kFrames * kCells * kChunk);
    for (int item = tid; item < kFrames * kSide * kChunk; item += kThreads) {
      const int k = item % kChunk;
      const int h = (item / kChunk) % kSide;
      const int slot = item / (kChunk * kSide);
      const float fx = fraction_x[slot];
      const float fy = fraction_y[slot];
      const float* top = window_stage + (slot * kCells + h * kWindow) * kChunk + k;
      const float* bottom = top + kWindow * kChunk;
      float* destination = neighbour + slot * kNeighbourFramePitch + k * kTaps + h * kSide;
      float top_left = top[0];
      float bottom_left = bottom[0];
#pragma unroll
      for (int w = 0; w < kSide; ++w) {
        const float top_right = top[(w + 1) * kChunk];
        const float bottom_right = bottom[(w + 1) * kChunk];
        const float upper = (1.0f - fx) * top_left + fx * top_right;
        const float lower = (1.0f - fx) * bottom_left + fx * bottom_right;
        destination[w] = (1.0f - fy) * upper + fy * lower;
        top_left = top_right;
        bottom_left = bottom_right;
      }
    }
    __syncthreads();

    if (active) {
      const float* a_base = neighbour + frame_slot * kNeighbourFramePitch + target_row * kSide;
      const float* b_base = support + stage * (kTaps * kSupportPitch) + support_row * kSide * kSupportPitch;
#pragma unroll 4
      for (int k = 0; k < kChunk; ++k) {
        float a[kSide];
        float b[kSide];
#pragma unroll
        for (int w = 0; w < kSide; ++w) a[w] = a_base[k * kTaps + w];
#pragma unroll
        for (int j = 0; j < kSide; ++j) b[j] = b_base[j * kSupportPitch + k];
#pragma unroll
        for (int w = 0; w < kSide; ++w) {
#pragma unroll
          for (int j = 0; j < kSide; ++j) acc[w][j] = fmaf(a[w], b[j], acc[w][j]);
        }
      }
    }
    __syncthreads();  // the next step's copies overwrite this stage, its interpolation the neighbour tile
  }

  if (active) {
    Out* row = corr + (query * s.frames + first_frame + frame_slot) * s.corr_row_pitch;
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

}  // namespace

bool local_corr4d_pipelined_eligible(const LocalCorr4dShape& s, ElementType element_type, const void* features,
                                     const void* supports, int compute_capability, int64_t shared_bytes_optin) {
  return element_type == ElementType::float32 && compute_capability >= 80 &&
         shared_bytes_optin >= static_cast<int64_t>(kSharedBytes) && s.channels > 0 && s.channels % kChunk == 0 &&
         s.stride_frame % 4 == 0 && s.stride_row % 4 == 0 && s.stride_column % 4 == 0 && is_aligned(features, 16) &&
         is_aligned(supports, 16);
}

cudaError_t launch_local_corr4d_pipelined(const LocalCorr4dShape& s, const float* features, const float* points,
                                          const float* supports, void* corr, cudaStream_t stream) {
  const int64_t blocks = s.queries * ((s.frames + kFrames - 1) / kFrames);
  if (blocks == 0) return cudaSuccess;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  const cudaError_t error =
      cudaFuncSetAttribute(local_corr4d_pipelined_kernel<float>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(kSharedBytes));
  if (error != cudaSuccess) return error;
  local_corr4d_pipelined_kernel<float><<<static_cast<unsigned>(blocks), kThreads, kSharedBytes, stream>>>(
      s, features, points, supports, static_cast<float*>(corr));
  return cudaGetLastError();
}

}  // namespace trackscope::gpu::ops::cuda
