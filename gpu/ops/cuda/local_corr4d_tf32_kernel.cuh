#pragma once
// local_corr4d for float32 features on tensor cores as 3xTF32 (exact mode; the contract is local_corr4d's, see
// launchers.h). The formulation is the bf16/fp16 tensor-core kernel's (local_corr4d_mma_kernel.cu): the 49 bilinear
// samples of one (q, t) share one fractional part, so with W the raw 8x8 window of cells (zeros outside the grid)
//   corr[h, w, s] = (1-fy)(1-fx) P[h,w,s] + (1-fy) fx P[h,w+1,s] + fy (1-fx) P[h+1,w,s] + fy fx P[h+1,w+1,s],
//   P = W (64 cells x C) . S^T (C x 49 supports, padded to 56 = 7 n8 tiles),
// with P on mma.sync.m16n8k8 TF32 tensor cores. float32 accuracy comes from the 3xTF32 split (as the CMDTop kernel's):
// each operand x = big + small, both TF32 values (small = tf32(x - big) keeps x to ~2^-22), and
//   P = sum(a_small b_big + a_big b_small) + sum(a_big b_big),
// the two sums in separate fp32 accumulators (the tensor cores' adder truncates; keeping the small terms apart keeps
// the large sum's additions to C/8) added once at the end. The dropped a_small b_small is ~2^-22 of each product.
//
// Work split: one block = one query x kFrames (2) frames, 4 warps; warp (frame, half) owns 2 m16 tiles (32 window
// cells) x all 7 n8 tiles of its frame: 2 x 7 x 4 accumulators twice (big and small sums). Channels run in chunks of
// kChunk (16): the windows of both frames are copied to shared memory with cp.async (16 bytes per copy, zero-filled
// outside the grid), the supports' chunk is loaded into registers, split, and stored as TF32 parts and remainders (the
// split is done once per block instead of once per warp); both are double-buffered, so the next chunk's loads are in
// flight while this chunk's mma run, one barrier per chunk. Fragment loads are 64-bit: a lane's two K registers take
// channels (2t, 2t+1) of its row in A and B alike (the mma sums over K, so any pairing that is the same for A and B
// is the same sum), with a row pitch of 24 floats (conflict-free per half-warp). After the last chunk, P goes to
// shared memory (aliasing the stages) and the block writes the 2401 interpolated outputs per frame, coalesced, and
// zeros in the padding columns.
//
// Shared memory 46.1 KB (no opt-in; 4 blocks per SM by memory). The source reaches the hardware only through
// mma_primitives.cuh: tests/gpu/cuda_emulation.h runs it on the CPU (tests/gpu/corr_tf32_emulation_test.cpp).
// Eligible (launchers.h): float32 features and supports, C % 16 == 0, strides multiples of 4 elements, 16-byte aligned
// pointers, float32 output, compute capability 8.0+.

#include <cmath>
#include <cstdint>

#include "gpu/ops/cuda/cmdtop_mma_layout.h"  // Words4
#ifndef TRACKSCOPE_CUDA_EMULATION
#include "gpu/ops/cuda/mma_primitives.cuh"
#endif

namespace trackscope::gpu::ops::cuda::corr_tf32 {

using namespace primitives;

constexpr int kSide = 7;
constexpr int kTaps = 49;
constexpr int kRadius = 3;
constexpr int kWindow = 8;
constexpr int kCells = 64;        // GEMM M per frame
constexpr int kSupportRows = 56;  // GEMM N: 49 supports + 7 zero rows
constexpr int kNTiles = kSupportRows / 8;
constexpr int kFrames = 2;  // issue_windows selects between the two frames' origins
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kChunk = 16;  // channels per stage: two k8 steps
constexpr int kPitch = 24;  // floats per cell / support row in a stage (16-byte rows; 64-bit loads conflict-free)
constexpr int kProductPitch = 56;
constexpr int kWindowStageFloats = kFrames * kCells * kPitch;
constexpr int kSupportPartFloats = kSupportRows * kPitch;
constexpr int kStageFloats = kWindowStageFloats + 2 * kSupportPartFloats;  // windows, support parts, remainders
constexpr int kProductFloats = kFrames * kCells * kProductPitch;
constexpr int kHeaderBytes = 32;  // window origins and fractions of the block's frames
constexpr int kSharedBytes =
    kHeaderBytes + 4 * (2 * kStageFloats > kProductFloats ? 2 * kStageFloats : kProductFloats);
constexpr int kSupportVectors = kTaps * kChunk / 4;  // 16-byte support loads per chunk (196)
constexpr int kSupportLoads = (kSupportVectors + kThreads - 1) / kThreads;
constexpr int kInvalidWindowCell = -(1 << 20);
static_assert(kWarps * 32 == kFrames * kCells, "each warp owns 32 window cells (2 m16 tiles) of one frame");

struct Params {
  int64_t queries = 0;
  int64_t frames = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;  // multiple of kChunk
  int64_t stride_frame = 0;
  int64_t stride_row = 0;
  int64_t stride_column = 0;
  int64_t corr_row_pitch = 2401;
  const float* features = nullptr;  // [frames, height, width, channels], the strides above, channel stride 1
  const float* points = nullptr;    // [queries, frames, 2] (x, y) in cells
  const float* supports = nullptr;  // [queries, 49, channels]
  float* corr = nullptr;            // [queries, frames, corr_row_pitch]
};

struct alignas(8) Floats2 {
  float x = 0.0f, y = 0.0f;
};
struct alignas(16) Floats4 {
  float x = 0.0f, y = 0.0f, z = 0.0f, w = 0.0f;
};

struct Split {
  float big = 0.0f, small = 0.0f;
};
TRACKSCOPE_DEVICE_FN Split split(float x) {
  Split s;
  s.big = bits_to_float(to_tf32(x));
  s.small = bits_to_float(to_tf32(x - s.big));
  return s;
}

// gpu/ops/cuda/device_utils.cuh bilinear_window: the window's top-left cell + 3 and the fractions of point (x, y);
// points beyond a 16-cell margin or not finite keep kInvalidWindowCell (every tap outside: zeros).
TRACKSCOPE_DEVICE_FN void bilinear_window(const float* xy, int64_t width, int64_t height, int& x0, int& y0, float& fx,
                                          float& fy) {
  x0 = kInvalidWindowCell;
  y0 = kInvalidWindowCell;
  fx = 0.0f;
  fy = 0.0f;
  const float ix = global_load_f32(xy) - 0.5f;
  const float iy = global_load_f32(xy + 1) - 0.5f;
  const float floor_x = floorf(ix);
  const float floor_y = floorf(iy);
  const float margin = 16.0f;
  if (floor_x >= -margin && floor_x <= static_cast<float>(width) + margin && floor_y >= -margin &&
      floor_y <= static_cast<float>(height) + margin) {
    x0 = static_cast<int>(floor_x);
    y0 = static_cast<int>(floor_y);
    fx = ix - floor_x;
    fy = iy - floor_y;
  }
}

TRACKSCOPE_KERNEL(kThreads, 2)
local_corr4d_tf32_kernel(Params p) {
  char* const shared = static_cast<char*>(dynamic_shared());
  int* const window_x = reinterpret_cast<int*>(shared);
  int* const window_y = window_x + kFrames;
  float* const fraction_x = reinterpret_cast<float*>(window_y + kFrames);
  float* const fraction_y = fraction_x + kFrames;
  float* const stages = reinterpret_cast<float*>(shared + kHeaderBytes);
  float* const products = stages;  // after the K loop

  const int tid = thread_index();
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int64_t tiles_per_query = (p.frames + kFrames - 1) / kFrames;
  const int64_t query = block_index() / tiles_per_query;
  const int64_t first_frame = (block_index() % tiles_per_query) * kFrames;

  if (tid < kFrames) {
    int x0 = kInvalidWindowCell, y0 = kInvalidWindowCell;
    float fx = 0.0f, fy = 0.0f;
    const int64_t frame = first_frame + tid;
    if (frame < p.frames) bilinear_window(p.points + (query * p.frames + frame) * 2, p.width, p.height, x0, y0, fx, fy);
    shared_store(window_x + tid, x0);
    shared_store(window_y + tid, y0);
    shared_store(fraction_x + tid, fx);
    shared_store(fraction_y + tid, fy);
  }
  // The support rows past 49 are zero in both stages and both parts (never rewritten).
  for (int e = tid; e < 2 * 2 * (kSupportRows - kTaps) * (kChunk / 4); e += kThreads) {
    const int vector = e % (kChunk / 4);
    const int row = kTaps + (e / (kChunk / 4)) % (kSupportRows - kTaps);
    const int part = (e / ((kChunk / 4) * (kSupportRows - kTaps))) % 2;
    const int stage = e / (2 * (kChunk / 4) * (kSupportRows - kTaps));
    float* destination =
        stages + stage * kStageFloats + kWindowStageFloats + part * kSupportPartFloats + row * kPitch + vector * 4;
    shared_store(reinterpret_cast<Floats4*>(destination), Floats4{});
  }
  block_sync();  // the window origins are visible

  int origin_x[kFrames], origin_y[kFrames];
  TRACKSCOPE_UNROLL
  for (int f = 0; f < kFrames; ++f) {
    origin_x[f] = shared_load(window_x + f) - kRadius;
    origin_y[f] = shared_load(window_y + f) - kRadius;
  }
  const auto height = static_cast<int>(p.height), width = static_cast<int>(p.width);
  const float* const support_base = p.supports + query * kTaps * p.channels;

  // The raw windows of chunk `step` of both frames into stage `stage` (cp.async, zeros outside the grid).
  auto issue_windows = [&](int64_t step, int stage) {
    float* const destination = stages + stage * kStageFloats;
    const int64_t c0 = step * kChunk;
    for (int e = tid; e < kFrames * kCells * (kChunk / 4); e += kThreads) {
      const int vector = e % (kChunk / 4);
      const int cell = (e / (kChunk / 4)) % kCells;
      const int slot = e / ((kChunk / 4) * kCells);
      // (kFrames == 2: a select, not a run-time index into a register array, which would go to local memory)
      const int y = (slot == 0 ? origin_y[0] : origin_y[1]) + cell / kWindow;
      const int x = (slot == 0 ? origin_x[0] : origin_x[1]) + cell % kWindow;
      const bool inside = first_frame + slot < p.frames && y >= 0 && y < height && x >= 0 && x < width;
      // Outside: any valid address (nothing is read).
      const float* source = inside ? p.features + (first_frame + slot) * p.stride_frame + y * p.stride_row +
                                         x * p.stride_column + c0 + vector * 4
                                   : p.features;
      async_copy16(destination + (slot * kCells + cell) * kPitch + vector * 4, source, inside);
    }
  };
  Words4 support_raw[kSupportLoads];
  auto load_supports = [&](int64_t step) {
    TRACKSCOPE_UNROLL
    for (int u = 0; u < kSupportLoads; ++u) {
      const int item = tid + u * kThreads;
      support_raw[u] = Words4{};
      if (item < kSupportVectors) {
        const int row = item / (kChunk / 4);
        const int vector = item % (kChunk / 4);
        support_raw[u] = global_load16(support_base + row * p.channels + step * kChunk + vector * 4);
      }
    }
  };
  auto store_supports = [&](int stage) {
    float* const parts = stages + stage * kStageFloats + kWindowStageFloats;
    float* const remainders = parts + kSupportPartFloats;
    TRACKSCOPE_UNROLL
    for (int u = 0; u < kSupportLoads; ++u) {
      const int item = tid + u * kThreads;
      if (item < kSupportVectors) {
        const int offset = (item / (kChunk / 4)) * kPitch + (item % (kChunk / 4)) * 4;
        const Split a = split(bits_to_float(support_raw[u].x)), b = split(bits_to_float(support_raw[u].y));
        const Split c = split(bits_to_float(support_raw[u].z)), d = split(bits_to_float(support_raw[u].w));
        shared_store(reinterpret_cast<Floats4*>(parts + offset), Floats4{a.big, b.big, c.big, d.big});
        shared_store(reinterpret_cast<Floats4*>(remainders + offset), Floats4{a.small, b.small, c.small, d.small});
      }
    }
  };

  const int frame_slot = warp / 2;
  const int row_base = (warp % 2) * 32;  // this warp's 32 window cells: m-tiles row_base / 16 + {0, 1}
  float big[2][kNTiles][4];
  float small[2][kNTiles][4];
  TRACKSCOPE_UNROLL
  for (int mt = 0; mt < 2; ++mt) {
    TRACKSCOPE_UNROLL
    for (int nt = 0; nt < kNTiles; ++nt) {
      TRACKSCOPE_UNROLL
      for (int i = 0; i < 4; ++i) {
        big[mt][nt][i] = 0.0f;
        small[mt][nt][i] = 0.0f;
      }
    }
  }

  const int64_t steps = p.channels / kChunk;
  issue_windows(0, 0);
  load_supports(0);
  store_supports(0);
  for (int64_t step = 0; step < steps; ++step) {
    const int stage = static_cast<int>(step & 1);
    async_wait_all();
    block_sync();  // this chunk's windows and supports are visible; every warp is done with the other stage
    if (step + 1 < steps) {
      issue_windows(step + 1, stage ^ 1);
      load_supports(step + 1);
    }
    const float* const windows = stages + stage * kStageFloats + frame_slot * kCells * kPitch;
    const float* const parts = stages + stage * kStageFloats + kWindowStageFloats;
    const float* const remainders = parts + kSupportPartFloats;
    TRACKSCOPE_UNROLL
    for (int ks = 0; ks < kChunk / 8; ++ks) {
      const int column = ks * 8 + 2 * t;  // this lane's K registers: channels column, column + 1
      uint32_t a_big[2][4], a_small[2][4];
      TRACKSCOPE_UNROLL
      for (int mt = 0; mt < 2; ++mt) {
        const int row = row_base + mt * 16 + g;
        const Floats2 top = shared_load(reinterpret_cast<const Floats2*>(windows + row * kPitch + column));
        const Floats2 bottom = shared_load(reinterpret_cast<const Floats2*>(windows + (row + 8) * kPitch + column));
        // Registers {a0, a1, a2, a3} = {(g, k0), (g + 8, k0), (g, k1), (g + 8, k1)}.
        const float values[4] = {top.x, bottom.x, top.y, bottom.y};
        TRACKSCOPE_UNROLL
        for (int r = 0; r < 4; ++r) {
          const Split s = split(values[r]);
          a_big[mt][r] = float_to_bits(s.big);
          a_small[mt][r] = float_to_bits(s.small);
        }
      }
      TRACKSCOPE_UNROLL
      for (int nt = 0; nt < kNTiles; ++nt) {
        const int support = nt * 8 + g;  // b0 = (k0, n = g), b1 = (k1, n = g)
        const Floats2 b_big = shared_load(reinterpret_cast<const Floats2*>(parts + support * kPitch + column));
        const Floats2 b_small = shared_load(reinterpret_cast<const Floats2*>(remainders + support * kPitch + column));
        TRACKSCOPE_UNROLL
        for (int mt = 0; mt < 2; ++mt) {
          mma_1688_tf32(small[mt][nt], a_small[mt], float_to_bits(b_big.x), float_to_bits(b_big.y));
          mma_1688_tf32(small[mt][nt], a_big[mt], float_to_bits(b_small.x), float_to_bits(b_small.y));
          mma_1688_tf32(big[mt][nt], a_big[mt], float_to_bits(b_big.x), float_to_bits(b_big.y));
        }
      }
    }
    if (step + 1 < steps) store_supports(stage ^ 1);
  }
  block_sync();  // every warp is done with the stages: the products alias them

  // P[frame][cell][support] = big + small (accumulator (row g, columns 2t, 2t + 1) and row g + 8).
  TRACKSCOPE_UNROLL
  for (int mt = 0; mt < 2; ++mt) {
    const int row = row_base + mt * 16 + g;
    TRACKSCOPE_UNROLL
    for (int nt = 0; nt < kNTiles; ++nt) {
      float* const top = products + (frame_slot * kCells + row) * kProductPitch + nt * 8 + 2 * t;
      shared_store(reinterpret_cast<Floats2*>(top),
                   Floats2{big[mt][nt][0] + small[mt][nt][0], big[mt][nt][1] + small[mt][nt][1]});
      shared_store(reinterpret_cast<Floats2*>(top + 8 * kProductPitch),
                   Floats2{big[mt][nt][2] + small[mt][nt][2], big[mt][nt][3] + small[mt][nt][3]});
    }
  }
  block_sync();

  // corr[h, w, s] from the four window cells around target (h, w): 2401 outputs per frame, then the padding zeros.
  for (int slot = 0; slot < kFrames; ++slot) {
    const int64_t frame = first_frame + slot;
    if (frame >= p.frames) break;
    const float fx = shared_load(fraction_x + slot), fy = shared_load(fraction_y + slot);
    const float w00 = (1.0f - fy) * (1.0f - fx), w01 = (1.0f - fy) * fx, w10 = fy * (1.0f - fx), w11 = fy * fx;
    const float* const product = products + slot * kCells * kProductPitch;
    float* const out = p.corr + (query * p.frames + frame) * p.corr_row_pitch;
    for (int64_t o = kTaps * kTaps + tid; o < p.corr_row_pitch; o += kThreads) global_store_f32(out + o, 0.0f);
    for (int o = tid; o < kTaps * kTaps; o += kThreads) {
      const int target = o / kTaps;
      const int support = o - target * kTaps;
      const int cell = (target / kSide) * kWindow + target % kSide;
      const float value = w00 * shared_load(product + cell * kProductPitch + support) +
                          w01 * shared_load(product + (cell + 1) * kProductPitch + support) +
                          w10 * shared_load(product + (cell + kWindow) * kProductPitch + support) +
                          w11 * shared_load(product + (cell + kWindow + 1) * kProductPitch + support);
      global_store_f32(out + o, value);
    }
  }
}

}  // namespace trackscope::gpu::ops::cuda::corr_tf32
