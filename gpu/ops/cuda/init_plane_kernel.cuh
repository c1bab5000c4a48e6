#pragma once
// Fused initialisation from the global cost volumes (docs/locotrack-spec.md §2.4), per (query, frame) plane:
// 2x bilinear upsample of the low-resolution cost (align_corners=False), stack with the high-resolution
// cost, 3x3 SAME conv with bias, softmax of 20x over the cells, argmax (first index on ties), soft-argmax in
// the window of squared radius < 25 cells around the argmax cell centre (denominator clamped at 1e-12),
// scaled to 256-space, the query-frame pin, and the mean/max/min of the raw stacked planes.
//
// One block of 256 threads per plane. The low plane and the (upsampled, high) pairs live in shared memory, the
// pairs interleaved in a plane with a one-cell zero border ((Hh+2) x (Wh+2) pairs: the 3x3 conv reads nine 8-byte
// pairs per cell, with no bounds test; 39 KB at 32x32 + 64x64), with the upsampling's per-row and per-column source
// indices and weights in two small tables; each thread keeps the logits of its <= 16 cells in registers, and the
// conv weights too. A thread's cells are tid + 256 k: their (y, x) advance by a fixed step (256 / Wh rows and
// 256 % Wh columns), so no cell needs a division. The cost volumes themselves come from two GEMMs run by cuBLAS
// before this kernel. Both planes are read with 16-byte loads, all issued before the first is used, where the
// plane is aligned for them. The nine totals only thread 0 needs (the window's weights, the plane statistics) are
// reduced per warp and combined after one barrier. After the softmax's maximum the exponentials go to shared memory
// (over the dead pairs): only the argmax's candidates (exponentials within 1e-5 of the largest, 1) are divided by
// the sum, and the soft-argmax window is read back by the 81 threads of the 9 x 9 box around the peak, one cell each
// (until stop 46 every thread divided all its 16 cells and tested each against the window).
// The first version (until 2026-12-05) kept the two planes apart without a border (a bounds test and two 4-byte
// loads per tap, the weights from shared memory) and derived each cell's (y, x) with two divisions per loop:
// Nsight Compute on an H100 measured ~360 instructions per cell, 598 us per 256 queries x 47 frames, bound by
// instruction issue (SM throughput 81%, 3.3 instructions per cycle).
//
// Cost per plane (Hh x Wh high cells, Hl x Wl low cells, element size e):
//   FLOPs ~ Hh*Wh*(7 upsample + 37 conv + 4 softmax + 1 argmax + 8 window + 6 statistics) = 63*Hh*Wh
//   bytes: (Hl*Wl + Hh*Wh)*e read + 8*4 written; nothing else touches global memory.
//   The eager path writes and re-reads the upsampled plane, the stacked plane, the conv output, the heatmap
//   and five or six [Hh,Wh,2] soft-argmax temporaries: ~18 MB per query at T=47 (docs/locotrack-spec.md §6.6).
//
// The source is shared with the CPU emulation test (tests/gpu/init_plane_emulation_test.cpp through
// tests/gpu/cuda_emulation.h): the hardware is reached only through mma_primitives.cuh.

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "gpu/ops/cuda/cmdtop_mma_layout.h"  // Words4, Fp16Tag, Bf16Tag
#include "gpu/ops/cuda/init_layout.h"
#include "gpu/ops/cuda/warp_reduce.cuh"
#ifndef TRACKSCOPE_CUDA_EMULATION
#include "gpu/ops/cuda/mma_primitives.cuh"
#endif
#include "gpu/ops/cuda/element_access.cuh"

namespace trackscope::gpu::ops::cuda::init_plane {

using namespace primitives;

inline constexpr int kThreads = 256;
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kCellsPerThread = kInitMaxHighCells / kThreads;  // 16
inline constexpr float kSoftmaxMultiplier = 20.0f;
inline constexpr float kWindowRadiusSquared = 25.0f;
inline constexpr float kDenominatorFloor = 1e-12f;
// The window (squared distance < 25 cells) lies inside the 9 x 9 box of cells centred on the peak: a cell 5 rows or
// columns away is outside it.
inline constexpr int kWindowBoxSide = 9;
inline constexpr int kWindowBoxCells = kWindowBoxSide * kWindowBoxSide;
static_assert(kWindowBoxCells <= kThreads);
static_assert(static_cast<float>((kWindowBoxSide / 2 + 1) * (kWindowBoxSide / 2 + 1)) >= kWindowRadiusSquared);
// Cells with an exponential below this cannot hold the heatmap's maximum (the argmax's candidates; see the kernel).
inline constexpr float kArgmaxCandidateFloor = 0.99999f;

// The totals only thread 0 needs: 0-2 the window's weight and weighted x, y; 3-4 the sums, 5-6 the maxima and 7-8
// the minima of the upsampled and high-resolution planes.
inline constexpr int kTailValues = 9;

// One cell of the conv's two input channels: the upsampled low-resolution cost and the high-resolution cost.
struct alignas(8) CellPair {
  float up, high;
};

// The upsampling's source of one output row or column: indices i0, i1 and weights lambda0, lambda1.
struct alignas(16) SourceTap {
  int i0, i1;
  float lambda0, lambda1;
};

// Shared memory, in this order: the padded pairs ((Hh+2) x (Wh+2) CellPairs), the row and column SourceTaps, then in
// floats: 19 conv weights + bias (padded to 20), 32 reduction values, 32 reduction indices, the per-warp tails, the
// low plane.
inline constexpr int kWeightFloats = 20;
inline constexpr int kFixedSharedFloats = kWeightFloats + 32 + 32 + kTailValues * kWarps;

/// The padded pairs of a high_height x high_width plane, rounded up to an even count (the SourceTaps after them
/// are 16-byte aligned).
inline constexpr int64_t padded_pairs(int64_t high_height, int64_t high_width) {
  return ((high_height + 2) * (high_width + 2) + 1) / 2 * 2;
}

/// Dynamic shared memory of one block, bytes (high_height x high_width cells, low_cells low-resolution cells).
inline constexpr int64_t shared_bytes(int64_t low_cells, int64_t high_height, int64_t high_width) {
  return static_cast<int64_t>(sizeof(CellPair)) * padded_pairs(high_height, high_width) +
         static_cast<int64_t>(sizeof(SourceTap)) * (high_height + high_width) +
         static_cast<int64_t>(sizeof(float)) * (kFixedSharedFloats + low_cells);
}

// Element: float, Bf16Tag or Fp16Tag (the cost volumes' dtype; element_access.cuh).
using elements::kElementBytes;
using elements::vector_element;
template <class Element>
TRACKSCOPE_DEVICE_FN float load_cost(const void* plane, int index) {
  return elements::load_element<Element>(plane, index);
}

// Reads `cells` (<= kInitMaxHighCells) cost values and hands each to store(first, j, value), the cell being first + j.
// One element per thread per loop turn left each block waiting out ~16 dependent global-load latencies; so where
// `vectorised` (the caller's alignment condition), 16-byte loads (at most 2 per thread in 16-bit, 4 in fp32), all
// issued before the first store, `first` then a vector's first cell and j < the vector's elements.
template <class Element, class Store>
TRACKSCOPE_DEVICE_FN void load_cells(const void* source, int cells, bool vectorised, Store store) {
  constexpr int kVector = 16 / kElementBytes<Element>;
  constexpr int kMaxVectorsPerThread = kInitMaxHighCells / kVector / kThreads;
  const int tid = thread_index();
  if (!vectorised) {
    for (int c = tid; c < cells; c += kThreads) store(c, 0, load_cost<Element>(source, c));
    return;
  }
  const int vectors = cells / kVector;
  Words4 raw[kMaxVectorsPerThread];
  TRACKSCOPE_UNROLL
  for (int k = 0; k < kMaxVectorsPerThread; ++k) {
    const int v = tid + k * kThreads;
    if (v < vectors) raw[k] = global_load16(static_cast<const unsigned char*>(source) + 16 * static_cast<int64_t>(v));
  }
  TRACKSCOPE_UNROLL
  for (int k = 0; k < kMaxVectorsPerThread; ++k) {
    const int v = tid + k * kThreads;
    if (v < vectors) {
      TRACKSCOPE_UNROLL
      for (int j = 0; j < kVector; ++j) store(v * kVector, j, vector_element<Element>(raw[k], j));
    }
  }
}

template <class Element>
TRACKSCOPE_DEVICE_FN bool vector_aligned(const void* source, int count) {
  return count % (16 / kElementBytes<Element>) == 0 && reinterpret_cast<uintptr_t>(source) % 16 == 0;
}

// Copies one plane of cost values into shared memory as floats.
template <class Element>
TRACKSCOPE_DEVICE_FN void load_plane(const void* source, float* destination, int cells) {
  load_cells<Element>(source, cells, vector_aligned<Element>(source, cells),
                      [destination](int first, int j, float value) { shared_store(destination + first + j, value); });
}

// Copies the high-resolution plane (cells = height x width) into the .high members of the padded pairs (row stride
// width + 2, the first cell at (1, 1)); vectors where its rows are whole vectors (a vector's cells share a row).
template <class Element>
TRACKSCOPE_DEVICE_FN void load_high_plane(const void* source, CellPair* pairs, int height, int width) {
  const int stride = width + 2;
  load_cells<Element>(source, height * width, vector_aligned<Element>(source, width),
                      [pairs, width, stride](int first, int j, float value) {
                        CellPair* row = pairs + (first / width + 1) * stride + first % width + 1;
                        shared_store(&row[j].high, value);
                      });
}

// Zeroes the one-cell border of the padded pairs (the conv's SAME padding).
TRACKSCOPE_DEVICE_FN void zero_border(CellPair* pairs, int height, int width) {
  const int stride = width + 2;
  const int border = 2 * stride + 2 * height;
  for (int i = thread_index(); i < border; i += kThreads) {
    int index;
    if (i < stride) {
      index = i;  // the top row
    } else if (i < 2 * stride) {
      index = (height + 1) * stride + (i - stride);  // the bottom row
    } else {
      const int j = i - 2 * stride;  // rows 1..height: the left, then the right column
      index = (1 + j / 2) * stride + (j % 2) * (width + 1);
    }
    shared_store(pairs + index, CellPair{0.0f, 0.0f});
  }
}

// A thread's cells tid + kThreads k of a plane `width` cells wide, as (y, x) advanced by a fixed step.
struct CellWalk {
  int y, x, step_y, step_x, width;
  TRACKSCOPE_DEVICE_FN CellWalk(int first, int width_) : width(width_) {
    y = first / width;
    x = first % width;
    step_y = kThreads / width;
    step_x = kThreads % width;
  }
  TRACKSCOPE_DEVICE_FN void advance() {
    y += step_y;
    x += step_x;
    if (x >= width) {
      x -= width;
      ++y;
    }
  }
};

// The block-wide result in every thread; every thread calls it. `scratch`: kWarps floats of shared memory.
template <class Op>
TRACKSCOPE_DEVICE_FN float block_all_reduce(float v, Op op, float* scratch) {
  const int lane = thread_index() & 31;
  const int warp = thread_index() >> 5;
  v = warp_reduce(v, op);
  block_sync();  // scratch may still be read by a previous reduction
  if (lane == 0) shared_store(scratch + warp, v);
  block_sync();
  float r = shared_load(scratch);
  for (int w = 1; w < kWarps; ++w) r = op(r, shared_load(scratch + w));
  return r;
}

// The largest value and the smallest index among equal values, in every thread. No NaN values.
TRACKSCOPE_DEVICE_FN void block_argmax(float& value, int& index, float* scratch_values, int* scratch_indices) {
  const int lane = thread_index() & 31;
  const int warp = thread_index() >> 5;
  TRACKSCOPE_UNROLL
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other_value = warp_xor(value, offset);
    // The index travels as the bits of a float: a shuffle moves bits, it does no arithmetic.
    const int other_index =
        static_cast<int>(float_to_bits(warp_xor(bits_to_float(static_cast<uint32_t>(index)), offset)));
    if (other_value > value || (other_value == value && other_index < index)) {
      value = other_value;
      index = other_index;
    }
  }
  block_sync();
  if (lane == 0) {
    shared_store(scratch_values + warp, value);
    shared_store(scratch_indices + warp, index);
  }
  block_sync();
  value = shared_load(scratch_values);
  index = shared_load(scratch_indices);
  for (int w = 1; w < kWarps; ++w) {
    const float v = shared_load(scratch_values + w);
    const int i = shared_load(scratch_indices + w);
    if (v > value || (v == value && i < index)) {
      value = v;
      index = i;
    }
  }
}

// The combination of tail value i: sums, then maxima, then minima.
TRACKSCOPE_DEVICE_FN float tail_combine(int i, float a, float b) {
  return i < 5 ? Sum{}(a, b) : (i < 7 ? Max{}(a, b) : Min{}(a, b));
}

// Tail value i reduced over this warp, left in tail[i * kWarps + warp]. Same warp and combination order as
// block_all_reduce, so the same bits.
TRACKSCOPE_DEVICE_FN void tail_warp_total(int i, float v, float* tail) {
  v = warp_reduce(v, [i](float a, float b) { return tail_combine(i, a, b); });
  if ((thread_index() & 31) == 0) shared_store(tail + i * kWarps + (thread_index() >> 5), v);
}

// After a barrier that follows every warp's tail_warp_total(i, ...).
TRACKSCOPE_DEVICE_FN float tail_block_total(int i, const float* tail) {
  float r = shared_load(tail + i * kWarps);
  for (int w = 1; w < kWarps; ++w) r = tail_combine(i, r, shared_load(tail + i * kWarps + w));
  return r;
}

// PyTorch's upsample_bilinear2d (align_corners=False): source = scale*(dst+0.5)-0.5 clamped at 0.
TRACKSCOPE_DEVICE_FN void source_index(int dst, float scale, int input_size, int& i0, int& i1, float& lambda0,
                                       float& lambda1) {
  float src = scale * (static_cast<float>(dst) + 0.5f) - 0.5f;
  if (src < 0.0f) src = 0.0f;
  i0 = static_cast<int>(src);
  if (i0 > input_size - 1) i0 = input_size - 1;
  i1 = i0 + (i0 < input_size - 1 ? 1 : 0);
  lambda1 = src - static_cast<float>(i0);
  lambda0 = 1.0f - lambda1;
}

/// One block per plane (blockIdx = query * frames + frame), kThreads threads, shared_bytes() of dynamic shared
/// memory. cost_low / cost_high: contiguous [queries, frames, cells] of Element; conv_weight [18], conv_bias [1],
/// query_frames [queries], query_xy [queries, 2] fp32; writes points [queries, frames, 2] and stats
/// [queries, frames, 6] fp32. Four blocks per SM: 64 registers, no spills on sm_75-90 (the conv weights and 16
/// logits stay in registers until the exponentials go to shared memory; with every cell's heat value kept to the
/// end ptxas needed 80 and the SMs held three blocks); shared memory (~39 KB at 64x64) would allow five.
template <class Element>
TRACKSCOPE_KERNEL(kThreads, 4)
init_plane_kernel(InitShape s, const void* cost_low, const void* cost_high, const float* conv_weight,
                  const float* conv_bias, const float* query_frames, const float* query_xy, float* points,
                  float* stats) {
  const int low_cells = s.low_height * s.low_width;
  const int high_cells = s.high_height * s.high_width;
  const int stride = s.high_width + 2;
  auto* pairs = static_cast<CellPair*>(dynamic_shared());
  auto* row_taps = reinterpret_cast<SourceTap*>(pairs + padded_pairs(s.high_height, s.high_width));
  SourceTap* column_taps = row_taps + s.high_height;
  float* weights = reinterpret_cast<float*>(column_taps + s.high_width);
  float* scratch = weights + kWeightFloats;
  int* scratch_index = reinterpret_cast<int*>(scratch + 32);
  float* tail = scratch + 64;
  float* low = tail + kTailValues * kWarps;

  const int64_t plane = block_index();
  const int64_t query = plane / s.frames;
  const int64_t frame = plane % s.frames;
  const int tid = thread_index();

  load_plane<Element>(static_cast<const unsigned char*>(cost_low) + plane * low_cells * kElementBytes<Element>, low,
                      low_cells);
  load_high_plane<Element>(static_cast<const unsigned char*>(cost_high) + plane * high_cells * kElementBytes<Element>,
                           pairs, s.high_height, s.high_width);
  zero_border(pairs, s.high_height, s.high_width);
  if (tid < 18) shared_store(weights + tid, global_load_f32(conv_weight + tid));
  if (tid == 18) shared_store(weights + 18, global_load_f32(conv_bias));
  const float scale_y = static_cast<float>(s.low_height) / static_cast<float>(s.high_height);
  const float scale_x = static_cast<float>(s.low_width) / static_cast<float>(s.high_width);
  for (int i = tid; i < s.high_height + s.high_width; i += kThreads) {
    SourceTap tap;
    if (i < s.high_height) {
      source_index(i, scale_y, s.low_height, tap.i0, tap.i1, tap.lambda0, tap.lambda1);
    } else {
      source_index(i - s.high_height, scale_x, s.low_width, tap.i0, tap.i1, tap.lambda0, tap.lambda1);
    }
    shared_store(row_taps + i, tap);  // the column taps follow the row taps
  }
  block_sync();

  float sum_up = 0.0f, sum_high = 0.0f;
  float max_up = -FLT_MAX, max_high = -FLT_MAX, min_up = FLT_MAX, min_high = FLT_MAX;
  {
    CellWalk cell(tid, s.high_width);
    for (int c = tid; c < high_cells; c += kThreads, cell.advance()) {
      const SourceTap ty = shared_load(row_taps + cell.y);
      const SourceTap tx = shared_load(column_taps + cell.x);
      const float* low_row0 = low + ty.i0 * s.low_width;
      const float* low_row1 = low + ty.i1 * s.low_width;
      const float u =
          ty.lambda0 * (tx.lambda0 * shared_load(low_row0 + tx.i0) + tx.lambda1 * shared_load(low_row0 + tx.i1)) +
          ty.lambda1 * (tx.lambda0 * shared_load(low_row1 + tx.i0) + tx.lambda1 * shared_load(low_row1 + tx.i1));
      float* pair = &pairs[(cell.y + 1) * stride + cell.x + 1].up;
      const float h = shared_load(pair + 1);
      shared_store(pair, u);
      sum_up += u;
      sum_high += h;
      max_up = fmaxf(max_up, u);
      max_high = fmaxf(max_high, h);
      min_up = fminf(min_up, u);
      min_high = fminf(min_high, h);
    }
  }
  // The statistics leave the registers now, before the logits need them.
  tail_warp_total(3, sum_up, tail);
  tail_warp_total(4, sum_high, tail);
  tail_warp_total(5, max_up, tail);
  tail_warp_total(6, max_high, tail);
  tail_warp_total(7, min_up, tail);
  tail_warp_total(8, min_high, tail);
  block_sync();

  // 3x3 conv (zero padding 1: the border, bias) on the [up, high] pairs, times the softmax multiplier. Per tap the
  // up channel, then the high one, taps in row-major order: the order of the reference's sum.
  float w[19];
  TRACKSCOPE_UNROLL
  for (int i = 0; i < 19; ++i) w[i] = shared_load(weights + i);
  float logits[kCellsPerThread];
  float local_max = -FLT_MAX;
  {
    CellWalk cell(tid, s.high_width);
    TRACKSCOPE_UNROLL
    for (int k = 0; k < kCellsPerThread; ++k) {
      const int c = tid + k * kThreads;
      logits[k] = -FLT_MAX;
      if (c < high_cells) {
        const CellPair* window = pairs + cell.y * stride + cell.x;  // the padded cell (y - 1, x - 1) + (1, 1)
        float v = 0.0f;
        TRACKSCOPE_UNROLL
        for (int ky = 0; ky < 3; ++ky) {
          TRACKSCOPE_UNROLL
          for (int kx = 0; kx < 3; ++kx) {
            const CellPair p = shared_load(window + ky * stride + kx);
            v = fmaf(w[ky * 3 + kx], p.up, v);
            v = fmaf(w[9 + ky * 3 + kx], p.high, v);
          }
        }
        logits[k] = kSoftmaxMultiplier * (v + w[18]);
        local_max = fmaxf(local_max, logits[k]);
      }
      cell.advance();
    }
  }
  const float plane_max = block_all_reduce(local_max, Max{}, scratch);

  // The exponentials go to shared memory (over the pairs: every thread's conv reads ended before the barriers of
  // the reduction above), where the window's threads read them; a thread keeps a mask of its argmax candidates.
  float* exponentials = &pairs[0].up;
  float local_sum = 0.0f;
  unsigned candidates = 0;
  TRACKSCOPE_UNROLL
  for (int k = 0; k < kCellsPerThread; ++k) {
    const int c = tid + k * kThreads;
    if (c < high_cells) {
      const float e = exp_f32(logits[k] - plane_max);
      shared_store(exponentials + c, e);
      local_sum += e;
      if (e >= kArgmaxCandidateFloor) candidates |= 1u << k;
    }
  }
  const float plane_sum = block_all_reduce(local_sum, Sum{}, scratch);

  // The argmax of the heatmap e / plane_sum (first index on ties). The largest heat value is 1 / plane_sum, from a
  // cell whose logit is the maximum (exp(0) = 1); a cell with e below kArgmaxCandidateFloor lies a relative 1e-5
  // below it, about 80 floats at any plane_sum in [1, 4096], so its rounded quotient is strictly smaller and it can
  // neither win nor tie. Dividing only the candidates gives the full argmax's cell (cells are visited in increasing
  // index, so '>' keeps the first).
  float best = -1.0f;
  int best_index = INT_MAX;
  TRACKSCOPE_UNROLL
  for (int k = 0; k < kCellsPerThread; ++k) {
    if ((candidates >> k) & 1u) {
      const int c = tid + k * kThreads;
      const float heat = shared_load(exponentials + c) / plane_sum;
      if (heat > best) {
        best = heat;
        best_index = c;
      }
    }
  }
  block_argmax(best, best_index, scratch, scratch_index);
  if (best_index == INT_MAX) best_index = 0;  // every heat value was NaN
  const int peak_column = best_index % s.high_width;
  const int peak_row = best_index / s.high_width;
  const float peak_x = static_cast<float>(peak_column) + 0.5f;
  const float peak_y = static_cast<float>(peak_row) + 0.5f;

  // The soft-argmax window: cells with squared distance < 25 from the peak cell's centre, all inside the 9 x 9 box
  // around it; the box's first kWindowBoxCells threads take one cell each.
  float weight_sum = 0.0f, weighted_x = 0.0f, weighted_y = 0.0f;
  if (tid < kWindowBoxCells) {
    const int y = peak_row + tid / kWindowBoxSide - kWindowBoxSide / 2;
    const int x = peak_column + tid % kWindowBoxSide - kWindowBoxSide / 2;
    if (y >= 0 && y < s.high_height && x >= 0 && x < s.high_width) {
      const float cx = static_cast<float>(x) + 0.5f;
      const float cy = static_cast<float>(y) + 0.5f;
      const float dx = cx - peak_x;
      const float dy = cy - peak_y;
      if (dx * dx + dy * dy < kWindowRadiusSquared) {
        const float heat = shared_load(exponentials + y * s.high_width + x) / plane_sum;
        weight_sum = heat;
        weighted_x = heat * cx;
        weighted_y = heat * cy;
      }
    }
  }
  tail_warp_total(0, weight_sum, tail);
  tail_warp_total(1, weighted_x, tail);
  tail_warp_total(2, weighted_y, tail);
  block_sync();

  if (tid == 0) {
    const float denominator = fmaxf(tail_block_total(0, tail), kDenominatorFloor);
    float x = tail_block_total(1, tail) / denominator * s.output_scale_x;
    float y = tail_block_total(2, tail) / denominator * s.output_scale_y;
    // Query-frame pin: round half to even, as torch.round.
    if (rintf(global_load_f32(query_frames + query)) == static_cast<float>(frame)) {
      x = global_load_f32(query_xy + query * 2 + 0);
      y = global_load_f32(query_xy + query * 2 + 1);
    }
    global_store_f32(points + plane * 2 + 0, x);
    global_store_f32(points + plane * 2 + 1, y);
    const float cells = static_cast<float>(high_cells);
    float* out = stats + plane * 6;
    global_store_f32(out + 0, tail_block_total(3, tail) / cells);
    global_store_f32(out + 1, tail_block_total(4, tail) / cells);
    global_store_f32(out + 2, tail_block_total(5, tail));
    global_store_f32(out + 3, tail_block_total(6, tail));
    global_store_f32(out + 4, tail_block_total(7, tail));
    global_store_f32(out + 5, tail_block_total(8, tail));
  }
}

}  // namespace trackscope::gpu::ops::cuda::init_plane
