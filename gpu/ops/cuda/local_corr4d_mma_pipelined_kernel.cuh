#pragma once
// local_corr4d on mma.sync tensor cores with a cp.async pipeline (the contract is local_corr4d's, see launchers.h), in
// two arithmetics:
//  * float32 features as 3xTF32 (exact mode), mma.m16n8k8: each operand x = big + small, both TF32 values (small =
//    tf32(x - big) keeps x to ~2^-22), P = sum(a_small b_big + a_big b_small) + sum(a_big b_big), the two sums in
//    separate fp32 accumulators (the tensor cores' adder truncates; keeping the small terms apart keeps the large
//    sum's additions to C/8) added once at the end; the dropped a_small b_small is ~2^-22 of each product;
//  * bf16 / fp16 features (fast mode), mma.m16n8k16 with fp32 accumulators (the operands' products are exact).
// The formulation is that of the WMMA kernel (local_corr4d_mma_kernel.cu): the 49 bilinear samples of one (q, t) share
// one fractional part, so with W the raw 8x8 window of cells (zeros outside the grid)
//   corr[h, w, s] = (1-fy)(1-fx) P[h,w,s] + (1-fy) fx P[h,w+1,s] + fy (1-fx) P[h+1,w,s] + fy fx P[h+1,w+1,s],
//   P = W (64 cells x C) . S^T (C x 49 supports, padded to 56 = 7 n8 tiles).
//
// Work split: one block = one query x kFrames (2) frames, 4 warps; warp (frame, half) owns 2 m16 tiles (32 window
// cells) x all 7 n8 tiles of its frame. Channels run in chunks (16 float32 / 32 16-bit channels: 64 bytes per row):
// the windows of both frames are copied to shared memory with cp.async (16 bytes per copy, zero-filled outside the
// grid); the supports' chunk is copied the same way (16-bit) or loaded into registers, split and stored as TF32 parts
// and remainders (3xTF32: the split is done once per block instead of once per warp); both are double-buffered, so
// the next chunk's loads are in flight while this chunk's mma run, one barrier per chunk. Fragment loads are 64-bit:
// a lane's K registers take consecutive channels of its row in A and B alike (the mma sums over K, so any pairing of
// K registers with channels that is the same for A and B gives the same sum): 3xTF32 channels (2t, 2t+1) for the
// registers of k and k+4, 16-bit (4t..4t+3) for the pairs (2t, 2t+1) and (2t+8, 2t+9); rows of 96 bytes keep them
// conflict-free per half-warp. After the last chunk, P goes to shared memory (aliasing the stages) and the block
// writes the 2401 interpolated outputs per frame, coalesced (float32, or the features' dtype rounded once), and zeros
// in the padding columns.
//
// Shared memory 46.1 KB (3xTF32) / 35.4 KB (16-bit): no opt-in. The source reaches the hardware only through
// mma_primitives.cuh: tests/gpu/cuda_emulation.h runs it on the CPU (tests/gpu/corr_mma_emulation_test.cpp).
// Eligible (launchers.h): features and supports of one dtype, C a multiple of the chunk, strides multiples of 16 bytes,
// 16-byte aligned pointers, compute capability 8.0+; 3xTF32 writes float32 only.

#include <cmath>
#include <cstdint>

#include "core/tracking/locotrack_shape.h"
#include "gpu/ops/cuda/cmdtop_mma_layout.h"  // Words4, the element tags
#ifndef TRACKSCOPE_CUDA_EMULATION
#include "gpu/ops/cuda/mma_primitives.cuh"
#endif

namespace trackscope::gpu::ops::cuda::corr_mma {

using namespace primitives;

constexpr int kSide = core::locotrack::kSupportSize;
constexpr int kTaps = core::locotrack::kSupportTaps;
constexpr int kRadius = 3;
constexpr int kWindow = 8;
constexpr int kCells = 64;        // GEMM M per frame
constexpr int kSupportRows = 56;  // GEMM N: 49 supports + 7 zero rows
constexpr int kNTiles = kSupportRows / 8;
constexpr int kFrames = 2;  // issue_windows selects between the two frames' origins
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowBytes = 96;  // one cell / support row of a stage: 64 bytes of channels + 32 (conflict-free)
constexpr int kProductPitch = 56;
constexpr int kHeaderBytes = 32;  // window origins and fractions of the block's frames
constexpr int kInvalidWindowCell = -(1 << 20);
static_assert(kWarps * 32 == kFrames * kCells, "each warp owns 32 window cells (2 m16 tiles) of one frame");

// float32 features as 3xTF32 on mma.m16n8k8.
struct Tf32x3 {
  using Raw = float;
  static constexpr bool split = true;
  static constexpr int chunk = 16;  // channels per stage (two k8 steps)
  static constexpr int k_step = 8;
};
// bf16 / fp16 features (Tag = Bf16Tag / Fp16Tag) on mma.m16n8k16.
template <class Tag>
struct Half {
  using Raw = uint16_t;
  using Element = Tag;
  static constexpr bool split = false;
  static constexpr int chunk = 32;  // channels per stage (two k16 steps)
  static constexpr int k_step = 16;
};

template <class A>
struct Layout {
  using Raw = typename A::Raw;
  static constexpr int pitch = kRowBytes / static_cast<int>(sizeof(Raw));  // Raw elements per row
  static constexpr int per_vector = 16 / static_cast<int>(sizeof(Raw));    // Raw elements per 16-byte copy
  static constexpr int vectors = A::chunk / per_vector;                    // 16-byte copies per row and chunk (4)
  static constexpr int window_elements = kFrames * kCells * pitch;
  static constexpr int support_part_elements = kSupportRows * pitch;
  static constexpr int support_parts = A::split ? 2 : 1;  // TF32 parts (and remainders)
  static constexpr int stage_elements = window_elements + support_parts * support_part_elements;
  static constexpr int stage_bytes = stage_elements * static_cast<int>(sizeof(Raw));
  static constexpr int product_bytes = kFrames * kCells * kProductPitch * 4;
  static constexpr int shared_bytes =
      kHeaderBytes + (2 * stage_bytes > product_bytes ? 2 * stage_bytes : product_bytes);
  static constexpr int support_vectors = kTaps * vectors;  // per chunk (196)
  static constexpr int support_loads = (support_vectors + kThreads - 1) / kThreads;
  static_assert(A::chunk * sizeof(Raw) == 64 && vectors == 4, "64 bytes of channels per row and chunk");
};

struct Params {
  int64_t queries = 0;
  int64_t frames = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;  // multiple of the arithmetic's chunk
  int64_t stride_frame = 0;
  int64_t stride_row = 0;
  int64_t stride_column = 0;
  int64_t corr_row_pitch = core::locotrack::kCorrPerSample;
  const void* features = nullptr;  // [frames, height, width, channels], the strides above (elements), channel stride 1
  const float* points = nullptr;   // [queries, frames, 2] (x, y) in cells
  const void* supports = nullptr;  // [queries, 49, channels]
  void* corr = nullptr;            // [queries, frames, corr_row_pitch] of the output type
};

struct alignas(8) Floats2 {
  float x = 0.0f, y = 0.0f;
};
struct alignas(8) Words2 {
  uint32_t x = 0, y = 0;
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

// Output stores: float32, or the 16-bit element type (rounded to nearest even).
struct FloatOut {
  using Raw = float;
  TRACKSCOPE_DEVICE_FN static void store(float* p, float v) { global_store_f32(p, v); }
};
template <class Tag>
struct HalfOut {
  using Raw = uint16_t;
  TRACKSCOPE_DEVICE_FN static void store(uint16_t* p, float v) { global_store_u16(p, float_to_half<Tag>(v)); }
};

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

template <class A, class Out>
TRACKSCOPE_KERNEL(kThreads, 2)
local_corr4d_mma_pipelined_kernel(Params p) {
  // A kernel launched after this one with overlap_previous (the next pyramid level's correlation) may start on the
  // SMs our last blocks leave idle (programmatic_launch.cuh).
  allow_dependent_launch();
  using Raw = typename A::Raw;
  using L = Layout<A>;
  constexpr int kPitch = L::pitch;
  char* const shared = static_cast<char*>(dynamic_shared());
  int* const window_x = reinterpret_cast<int*>(shared);
  int* const window_y = window_x + kFrames;
  float* const fraction_x = reinterpret_cast<float*>(window_y + kFrames);
  float* const fraction_y = fraction_x + kFrames;
  Raw* const stages = reinterpret_cast<Raw*>(shared + kHeaderBytes);
  float* const products = reinterpret_cast<float*>(shared + kHeaderBytes);  // after the K loop

  const int tid = thread_index();
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int64_t tiles_per_query = (p.frames + kFrames - 1) / kFrames;
  const int64_t query = block_index() / tiles_per_query;
  const int64_t first_frame = (block_index() % tiles_per_query) * kFrames;
  const Raw* const features = static_cast<const Raw*>(p.features);

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
  // The support rows past 49 are zero in both stages and every part (never rewritten).
  constexpr int kZeroRows = kSupportRows - kTaps;
  for (int e = tid; e < 2 * L::support_parts * kZeroRows * L::vectors; e += kThreads) {
    const int vector = e % L::vectors;
    const int row = kTaps + (e / L::vectors) % kZeroRows;
    const int part = (e / (L::vectors * kZeroRows)) % L::support_parts;
    const int stage = e / (L::support_parts * L::vectors * kZeroRows);
    Raw* destination = stages + stage * L::stage_elements + L::window_elements + part * L::support_part_elements +
                       row * kPitch + vector * L::per_vector;
    shared_store(reinterpret_cast<Words4*>(destination), Words4{});
  }
  block_sync();  // the window origins are visible

  int origin_x[kFrames], origin_y[kFrames];
  TRACKSCOPE_UNROLL
  for (int f = 0; f < kFrames; ++f) {
    origin_x[f] = shared_load(window_x + f) - kRadius;
    origin_y[f] = shared_load(window_y + f) - kRadius;
  }
  const auto height = static_cast<int>(p.height), width = static_cast<int>(p.width);
  const Raw* const support_base = static_cast<const Raw*>(p.supports) + query * kTaps * p.channels;

  // This thread's window copies, the same cells in every chunk (only the channel offset moves): copy u is element
  // e = tid + u kThreads of (slot, cell, 16-byte vector), i.e. slot u / 2 (kThreads is half of one frame's copies);
  // its source offset from the start of its frame (elements; local_corr4d_mma_pipelined_eligible keeps a frame's span
  // within int32), -1 outside the grid or past the last frame (zero-filled). Computed once: per chunk a copy is then
  // one addition.
  constexpr int kWindowCopies = kFrames * kCells * L::vectors / kThreads;
  static_assert(kWindowCopies * kThreads == kFrames * kCells * L::vectors && kCells * L::vectors == 2 * kThreads,
                "each thread copies the same vector of two cells per frame");
  int32_t window_source[kWindowCopies];
  TRACKSCOPE_UNROLL
  for (int u = 0; u < kWindowCopies; ++u) {
    const int e = tid + u * kThreads;
    const int vector = e % L::vectors;
    const int cell = (e / L::vectors) % kCells;
    const int slot = u / 2;  // a constant once unrolled
    // (kFrames == 2: a select, not a run-time index into a register array, which would go to local memory)
    const int y = (slot == 0 ? origin_y[0] : origin_y[1]) + cell / kWindow;
    const int x = (slot == 0 ? origin_x[0] : origin_x[1]) + cell % kWindow;
    const bool inside = first_frame + slot < p.frames && y >= 0 && y < height && x >= 0 && x < width;
    window_source[u] =
        inside ? static_cast<int32_t>(y * p.stride_row + x * p.stride_column + vector * L::per_vector) : -1;
  }
  const Raw* const frame_start[kFrames] = {
      features + first_frame * p.stride_frame,
      first_frame + 1 < p.frames ? features + (first_frame + 1) * p.stride_frame : features};
  // The raw windows of chunk `step` of both frames into stage `stage` (cp.async, zeros outside the grid).
  auto issue_windows = [&](int64_t step, int stage) {
    Raw* const destination = stages + stage * L::stage_elements;
    const int64_t c0 = step * A::chunk;
    TRACKSCOPE_UNROLL
    for (int u = 0; u < kWindowCopies; ++u) {
      const int e = tid + u * kThreads;
      const int cell = (e / L::vectors) % kCells;
      const int vector = e % L::vectors;
      const bool inside = window_source[u] >= 0;
      // Outside: any valid address (nothing is read).
      const Raw* source = inside ? frame_start[u / 2] + window_source[u] + c0 : features;
      async_copy16(destination + ((u / 2) * kCells + cell) * kPitch + vector * L::per_vector, source, inside);
    }
  };
  // This thread's support copies: item tid + u kThreads = (row, vector), the same in every chunk.
  int32_t support_offset[L::support_loads];
  TRACKSCOPE_UNROLL
  for (int u = 0; u < L::support_loads; ++u) {
    const int item = tid + u * kThreads;
    support_offset[u] = static_cast<int32_t>((item / L::vectors) * p.channels + (item % L::vectors) * L::per_vector);
  }
  // Supports: 16-bit, cp.async like the windows; 3xTF32, loaded into registers now and split + stored after this
  // chunk's mma (store_supports).
  Words4 support_raw[L::support_loads];
  (void)support_raw;  // 16-bit: unused (the supports go through cp.async)
  auto load_supports = [&](int64_t step, int stage) {
    TRACKSCOPE_UNROLL
    for (int u = 0; u < L::support_loads; ++u) {
      const int item = tid + u * kThreads;
      if (item < L::support_vectors) {
        const int row = item / L::vectors;
        const int vector = item % L::vectors;
        const Raw* source = support_base + support_offset[u] + step * A::chunk;
        if constexpr (A::split) {
          support_raw[u] = global_load16(source);
        } else {
          async_copy16(stages + stage * L::stage_elements + L::window_elements + row * kPitch + vector * L::per_vector,
                       source, true);
        }
      }
    }
  };
  auto store_supports = [&](int stage) {
    if constexpr (A::split) {
      float* const parts = stages + stage * L::stage_elements + L::window_elements;
      float* const remainders = parts + L::support_part_elements;
      TRACKSCOPE_UNROLL
      for (int u = 0; u < L::support_loads; ++u) {
        const int item = tid + u * kThreads;
        if (item < L::support_vectors) {
          const int offset = (item / L::vectors) * kPitch + (item % L::vectors) * 4;
          const Split a = split(bits_to_float(support_raw[u].x)), b = split(bits_to_float(support_raw[u].y));
          const Split c = split(bits_to_float(support_raw[u].z)), d = split(bits_to_float(support_raw[u].w));
          shared_store(reinterpret_cast<Floats4*>(parts + offset), Floats4{a.big, b.big, c.big, d.big});
          shared_store(reinterpret_cast<Floats4*>(remainders + offset), Floats4{a.small, b.small, c.small, d.small});
        }
      }
    }
  };

  const int frame_slot = warp / 2;
  const int row_base = (warp % 2) * 32;    // this warp's 32 window cells: m-tiles row_base / 16 + {0, 1}
  constexpr int kSums = A::split ? 2 : 1;  // 3xTF32: [0] the big x big sum, [1] the small terms
  float acc[kSums][2][kNTiles][4];
  TRACKSCOPE_UNROLL
  for (int k = 0; k < kSums; ++k) {
    TRACKSCOPE_UNROLL
    for (int mt = 0; mt < 2; ++mt) {
      TRACKSCOPE_UNROLL
      for (int nt = 0; nt < kNTiles; ++nt) {
        TRACKSCOPE_UNROLL
        for (int i = 0; i < 4; ++i) acc[k][mt][nt][i] = 0.0f;
      }
    }
  }

  const int64_t steps = p.channels / A::chunk;
  issue_windows(0, 0);
  load_supports(0, 0);
  store_supports(0);
  for (int64_t step = 0; step < steps; ++step) {
    const int stage = static_cast<int>(step & 1);
    async_wait_all();
    block_sync();  // this chunk's windows and supports are visible; every warp is done with the other stage
    if (step + 1 < steps) {
      issue_windows(step + 1, stage ^ 1);
      load_supports(step + 1, stage ^ 1);
    }
    const Raw* const windows = stages + stage * L::stage_elements + frame_slot * kCells * kPitch;
    const Raw* const supports = stages + stage * L::stage_elements + L::window_elements;
    TRACKSCOPE_UNROLL
    for (int ks = 0; ks < A::chunk / A::k_step; ++ks) {
      // This lane's 64 bits of channels in every A row and B column of the k step (see the header).
      const int column = ks * A::k_step + (A::split ? 2 : 4) * t;
      uint32_t a[kSums][2][4];  // 3xTF32: [0] big, [1] small; 16-bit: the pairs
      TRACKSCOPE_UNROLL
      for (int mt = 0; mt < 2; ++mt) {
        const int row = row_base + mt * 16 + g;
        const Words2 top = shared_load(reinterpret_cast<const Words2*>(windows + row * kPitch + column));
        const Words2 bottom = shared_load(reinterpret_cast<const Words2*>(windows + (row + 8) * kPitch + column));
        // Registers {a0, a1, a2, a3} = rows {g, g + 8, g, g + 8} x K halves {first, first, second, second}.
        const uint32_t words[4] = {top.x, bottom.x, top.y, bottom.y};
        TRACKSCOPE_UNROLL
        for (int r = 0; r < 4; ++r) {
          if constexpr (A::split) {
            const Split s = split(bits_to_float(words[r]));
            a[0][mt][r] = float_to_bits(s.big);
            a[kSums - 1][mt][r] = float_to_bits(s.small);
          } else {
            a[0][mt][r] = words[r];
          }
        }
      }
      TRACKSCOPE_UNROLL
      for (int nt = 0; nt < kNTiles; ++nt) {
        const int support = nt * 8 + g;  // b0, b1 = column g of the k step
        const Words2 b = shared_load(reinterpret_cast<const Words2*>(supports + support * kPitch + column));
        if constexpr (A::split) {
          const Words2 b_small = shared_load(
              reinterpret_cast<const Words2*>(supports + L::support_part_elements + support * kPitch + column));
          TRACKSCOPE_UNROLL
          for (int mt = 0; mt < 2; ++mt) {
            mma_1688_tf32(acc[kSums - 1][mt][nt], a[kSums - 1][mt], b.x, b.y);
            mma_1688_tf32(acc[kSums - 1][mt][nt], a[0][mt], b_small.x, b_small.y);
            mma_1688_tf32(acc[0][mt][nt], a[0][mt], b.x, b.y);
          }
        } else {
          TRACKSCOPE_UNROLL
          for (int mt = 0; mt < 2; ++mt) mma_16816<typename A::Element>(acc[0][mt][nt], a[0][mt], b.x, b.y);
        }
      }
    }
    if (step + 1 < steps) store_supports(stage ^ 1);
  }
  block_sync();  // every warp is done with the stages: the products alias them

  // P[frame][cell][support] (accumulator (row g, columns 2t, 2t + 1) and row g + 8); 3xTF32: big + small.
  TRACKSCOPE_UNROLL
  for (int mt = 0; mt < 2; ++mt) {
    const int row = row_base + mt * 16 + g;
    TRACKSCOPE_UNROLL
    for (int nt = 0; nt < kNTiles; ++nt) {
      float v[4];
      TRACKSCOPE_UNROLL
      for (int i = 0; i < 4; ++i) v[i] = A::split ? acc[0][mt][nt][i] + acc[kSums - 1][mt][nt][i] : acc[0][mt][nt][i];
      float* const top = products + (frame_slot * kCells + row) * kProductPitch + nt * 8 + 2 * t;
      shared_store(reinterpret_cast<Floats2*>(top), Floats2{v[0], v[1]});
      shared_store(reinterpret_cast<Floats2*>(top + 8 * kProductPitch), Floats2{v[2], v[3]});
    }
  }
  block_sync();

  // corr[h, w, s] from the four window cells around target (h, w): 2401 outputs per frame, then the padding zeros.
  // Separable: a thread takes a column (w, s) of a frame, interpolates along x once per window row (X[r] =
  // P[r, w] + fx (P[r, w + 1] - P[r, w]), r = 0..7, in registers), then along y for the column's 7 outputs
  // (X[h] + fy (X[h + 1] - X[h])): 16 shared loads per 7 outputs instead of 28, and one division per column instead of
  // two per output. Lanes take consecutive supports, so each output row's stores stay coalesced.
  for (int slot = 0; slot < kFrames; ++slot) {
    const int64_t frame = first_frame + slot;
    if (frame >= p.frames) break;
    const float fx = shared_load(fraction_x + slot), fy = shared_load(fraction_y + slot);
    const float* const product = products + slot * kCells * kProductPitch;
    auto* const out = static_cast<typename Out::Raw*>(p.corr) + (query * p.frames + frame) * p.corr_row_pitch;
    for (int64_t o = core::locotrack::kCorrPerSample + tid; o < p.corr_row_pitch; o += kThreads)
      Out::store(out + o, 0.0f);
    for (int column = tid; column < kSide * kTaps; column += kThreads) {
      const int w = column / kTaps;
      const int support = column - w * kTaps;
      const float* const cells = product + w * kProductPitch + support;  // P[row 0, w], then + kWindow rows
      float x_interpolated[kWindow];
      TRACKSCOPE_UNROLL
      for (int r = 0; r < kWindow; ++r) {
        const float left = shared_load(cells + r * kWindow * kProductPitch);
        const float right = shared_load(cells + (r * kWindow + 1) * kProductPitch);
        x_interpolated[r] = left + fx * (right - left);
      }
      TRACKSCOPE_UNROLL
      for (int h = 0; h < kSide; ++h) {
        const float value = x_interpolated[h] + fy * (x_interpolated[h + 1] - x_interpolated[h]);
        Out::store(out + (h * kSide + w) * kTaps + support, value);
      }
    }
  }
}

}  // namespace trackscope::gpu::ops::cuda::corr_mma
