#pragma once
// The temporal mixer's attention on tensor cores for bf16/fp16 (fast mode): softmax(q k^T / 8 + ALiBi) v per
// (sequence, head), from the QKV projection's rows to the attended rows, in one launch (ops::alibi_attention).
//
// Why: the module path runs it as scaled_dot_product_attention on permuted views of the QKV rows with the ALiBi bias
// as a [H, T, T] tensor (PyTorch's memory-efficient kernel: every 64 x 64 tile of the scores, 21 us per call at 256
// sequences of T = 47 on an H100, Nsight Compute), although half of each head's scores are masked; the fused mixer's
// SIMT kernel (a thread per query row) took 140 us for the same call. This kernel skips what the mask hides, which pays
// for long clips only (docs/kernels.md §6c: the engine takes it from 129 frames on).
//
// Design (FlashAttention-2's structure for short sequences): a block of kWarps warps per (sequence, head, group of
// kGroupRows query rows), each warp one m16 tile of query rows. The group's q rows, then each chunk of kChunkKeys keys'
// k rows and v (transposed: [dim][key]) are staged in shared memory with 16-byte loads; a warp computes its
// 16 x kChunkKeys scores with mma.m16n8k16 (fp32 accumulators), adds the split-direction ALiBi bias (the same float
// products as gpu/model alibi_bias: forward heads j <= i: slope * (j - i), backward heads j >= i: slope * (i - j)),
// masks the rest (they contribute exactly 0, as the reference's -1e9 does after its max subtraction), keeps a running
// row max and sum in fp32 (online softmax across chunks), rounds the probabilities to the element type as the A
// operand of the P v product (the accumulator layout of two n8 tiles is the A layout of one k16 step) and accumulates
// the 16 x 64 output in fp32; the output is divided by the row sum and rounded once. Chunks whose every key is masked
// for the whole group (beyond the group's last row for forward heads, before its first for backward heads) are
// skipped. Shared-memory rows are padded (q, k: 72 elements, v^T: kChunkKeys + 8) so that every fragment load is
// conflict-free. The source is shared with the CPU emulation test (tests/gpu/attention_mma_emulation_test.cpp): the
// hardware is reached only through mma_primitives.cuh.

#include <cmath>
#include <cstdint>

#include "gpu/ops/cuda/mixer_layout.h"
#ifndef TRACKSCOPE_CUDA_EMULATION
#include "gpu/ops/cuda/mma_primitives.cuh"
#endif

namespace trackscope::gpu::ops::cuda::attention_mma {

using namespace primitives;

inline constexpr int kHeadDim = kMixerHeadDim;
inline constexpr int kWarps = 4;
inline constexpr int kThreads = 32 * kWarps;
inline constexpr int kGroupRows = 16 * kWarps;       // query rows per block
inline constexpr int kChunkKeys = 64;                // keys per shared-memory chunk (8 n8 tiles, 4 k16 steps)
inline constexpr int kRowElements = kHeadDim + 8;    // q and k rows in shared memory (36 words: no conflicts)
inline constexpr int kKeyElements = kChunkKeys + 8;  // v^T rows in shared memory
inline constexpr int64_t kSharedBytes = 2 * (2 * kGroupRows * kRowElements + kHeadDim * kKeyElements);

using Params = MixerAttentionMmaParams;

/// Blocks of a launch: sequences x heads x query groups (block = (sequence * heads + head) * groups + group).
inline int64_t query_groups(int frames) { return (frames + kGroupRows - 1) / kGroupRows; }

// The two 16-bit halves of a 32-bit word.
TRACKSCOPE_DEVICE_FN uint16_t low_half(uint32_t w) { return static_cast<uint16_t>(w & 0xffffu); }
TRACKSCOPE_DEVICE_FN uint16_t high_half(uint32_t w) { return static_cast<uint16_t>(w >> 16); }

// One chunk's 16-byte vectors into shared memory: the group's q rows (with_q), the chunk's k rows and its v rows (v
// transposed, [dim][key]); rows at or past `frames` are zeros. kStageBatch loads per thread are in flight before their
// stores. For v, consecutive threads take consecutive rows of one column block, so that their transposed 2-byte stores
// land in consecutive words (with a thread per row's column blocks, the eight blocks' stores hit one bank).
inline constexpr int kStageBatch = 6;
TRACKSCOPE_DEVICE_FN void stage_chunk(const uint16_t* base, int64_t stride, int frames, bool with_q, int q0,
                                      int q_column, int k0, int k_column, int v_column, uint16_t* q_rows,
                                      uint16_t* k_rows, uint16_t* v_columns) {
  constexpr int kVectors = kHeadDim / 8;
  constexpr int kPerMatrix = kChunkKeys * kVectors;
  static_assert(kGroupRows == kChunkKeys, "q and k chunks share the vector numbering");
  struct Slot {
    int matrix, row, c8;  // matrix 0: q, 1: k, 2: v; row within the chunk
  };
  const auto slot = [](int e) {
    const int matrix = e / kPerMatrix, i = e % kPerMatrix;
    return matrix == 2 ? Slot{2, i % kChunkKeys, i / kChunkKeys} : Slot{matrix, i / kVectors, i % kVectors};
  };
  for (int e0 = (with_q ? 0 : kPerMatrix) + thread_index(); e0 < 3 * kPerMatrix; e0 += kStageBatch * kThreads) {
    Words4 w[kStageBatch];
    TRACKSCOPE_UNROLL
    for (int b = 0; b < kStageBatch; ++b) {
      const int e = e0 + b * kThreads;
      w[b] = Words4{0u, 0u, 0u, 0u};
      if (e >= 3 * kPerMatrix) continue;
      const Slot at = slot(e);
      const int row = (at.matrix == 0 ? q0 : k0) + at.row;
      const int column = at.matrix == 0 ? q_column : (at.matrix == 1 ? k_column : v_column);
      if (row < frames) w[b] = global_load16(base + row * stride + column + at.c8 * 8);
    }
    TRACKSCOPE_UNROLL
    for (int b = 0; b < kStageBatch; ++b) {
      const int e = e0 + b * kThreads;
      if (e >= 3 * kPerMatrix) continue;
      const Slot at = slot(e);
      if (at.matrix < 2) {
        uint16_t* const rows = at.matrix == 0 ? q_rows : k_rows;
        shared_store(reinterpret_cast<Words4*>(rows + at.row * kRowElements + at.c8 * 8), w[b]);
      } else {
        const uint32_t words[4] = {w[b].x, w[b].y, w[b].z, w[b].w};
        TRACKSCOPE_UNROLL
        for (int j = 0; j < 4; ++j) {
          shared_store(v_columns + (at.c8 * 8 + 2 * j) * kKeyElements + at.row, low_half(words[j]));
          shared_store(v_columns + (at.c8 * 8 + 2 * j + 1) * kKeyElements + at.row, high_half(words[j]));
        }
      }
    }
  }
}

/// One block per (sequence, head, query group), kThreads threads, kSharedBytes of dynamic shared memory; Element:
/// Bf16Tag or Fp16Tag. frames >= 1. Three blocks per SM in the launch bounds (143 registers, sm_90): capped at 128
/// for four, ptxas spilled 112 bytes.
template <class Element>
TRACKSCOPE_KERNEL(kThreads, 3)
attention_kernel(Params p) {
  auto* const q_rows = static_cast<uint16_t*>(dynamic_shared());    // [kGroupRows][kRowElements]
  uint16_t* const k_rows = q_rows + kGroupRows * kRowElements;      // [kChunkKeys][kRowElements]
  uint16_t* const v_columns = k_rows + kChunkKeys * kRowElements;   // [kHeadDim][kKeyElements]: v transposed
  const int64_t groups = (p.frames + kGroupRows - 1) / kGroupRows;  // query_groups (host-only)
  const int group = static_cast<int>(block_index() % groups);
  const int head = static_cast<int>((block_index() / groups) % p.heads);
  const int64_t sequence = block_index() / (groups * p.heads);
  const int dim = p.heads * kHeadDim;
  const auto* base = static_cast<const uint16_t*>(p.qkv) + sequence * p.frames * p.qkv_stride;
  const int tid = thread_index(), warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int q0 = group * kGroupRows;
  const int last_row = q0 + kGroupRows - 1 < p.frames - 1 ? q0 + kGroupRows - 1 : p.frames - 1;
  const bool forward = head < p.heads / 2;
  const float slope = global_load_f32(p.slopes + head);

  const int tile_row = warp * 16;  // this warp's rows in the group
  const bool tile_active = q0 + tile_row < p.frames;
  uint32_t a[4][4] = {};  // q's A fragments, 4 k16 steps over the head's 64 channels (from the first chunk staged)
  float o[kHeadDim / 8][4];
  TRACKSCOPE_UNROLL
  for (int n = 0; n < kHeadDim / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};  // rows g and g + 8 of the tile

  // Backward heads start at the chunk holding the group's first row (every key before it is excluded), forward heads
  // at the first chunk and stop after the chunk holding its last row.
  const int first_chunk = forward ? 0 : q0 / kChunkKeys * kChunkKeys;
  for (int k0 = first_chunk; k0 < p.frames; k0 += kChunkKeys) {
    if (forward && k0 > last_row) break;
    const bool with_q = k0 == first_chunk;
    block_sync();  // the previous chunk's readers are done
    stage_chunk(base, p.qkv_stride, p.frames, with_q, q0, head * kHeadDim, k0, dim + head * kHeadDim,
                2 * dim + head * kHeadDim, q_rows, k_rows, v_columns);
    block_sync();
    if (with_q) {
      TRACKSCOPE_UNROLL
      for (int ks = 0; ks < 4; ++ks) {
        const uint16_t* const row0 = q_rows + (tile_row + g) * kRowElements + ks * 16 + 2 * t;
        const uint16_t* const row8 = row0 + 8 * kRowElements;
        a[ks][0] = shared_load(reinterpret_cast<const uint32_t*>(row0));
        a[ks][1] = shared_load(reinterpret_cast<const uint32_t*>(row8));
        a[ks][2] = shared_load(reinterpret_cast<const uint32_t*>(row0 + 8));
        a[ks][3] = shared_load(reinterpret_cast<const uint32_t*>(row8 + 8));
      }
    }
    if (!tile_active) continue;
    // The n8 tiles of this chunk's keys that the tile's rows can attend to: forward heads j <= the tile's last row,
    // backward heads j >= its first row (at T = 47 a warp needs 2-6 of the 8 tiles, half of them on average).
    const int r0 = q0 + tile_row;
    const int key_end = (forward ? (r0 + 16 < p.frames ? r0 + 16 : p.frames) : p.frames) - k0;
    const int key_begin = forward || r0 <= k0 ? 0 : r0 - k0;
    const int n_begin = key_begin / 8, n_end = key_end >= kChunkKeys ? kChunkKeys / 8 : (key_end + 7) / 8;
    if (n_end <= n_begin) continue;
    float s[kChunkKeys / 8][4];
    TRACKSCOPE_UNROLL
    for (int n = 0; n < kChunkKeys / 8; ++n) {
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
      if (n < n_begin || n >= n_end) continue;
      TRACKSCOPE_UNROLL
      for (int ks = 0; ks < 4; ++ks) {
        const uint16_t* const key = k_rows + (n * 8 + g) * kRowElements + ks * 16 + 2 * t;
        mma_16816<Element>(s[n], a[ks], shared_load(reinterpret_cast<const uint32_t*>(key)),
                           shared_load(reinterpret_cast<const uint32_t*>(key + 8)));
      }
    }
    // Scale, bias, mask; the chunk's row maxima (a row's values sit in the quad of lanes with the same g).
    float chunk_max[2] = {-INFINITY, -INFINITY};
    TRACKSCOPE_UNROLL
    for (int n = 0; n < kChunkKeys / 8; ++n) {
      if (n < n_begin || n >= n_end) continue;
      TRACKSCOPE_UNROLL
      for (int e = 0; e < 4; ++e) {
        const int i = q0 + tile_row + g + (e >= 2 ? 8 : 0);
        const int j = k0 + n * 8 + 2 * t + (e & 1);
        const bool valid = j < p.frames && (forward ? j <= i : j >= i);
        const float bias = slope * static_cast<float>(forward ? j - i : i - j);
        s[n][e] = valid ? s[n][e] * p.scale + bias : -INFINITY;
        chunk_max[e >> 1] = s[n][e] > chunk_max[e >> 1] ? s[n][e] : chunk_max[e >> 1];
      }
    }
    float correction[2];
    TRACKSCOPE_UNROLL
    for (int h = 0; h < 2; ++h) {
      chunk_max[h] = fmaxf(chunk_max[h], warp_xor(chunk_max[h], 1));
      chunk_max[h] = fmaxf(chunk_max[h], warp_xor(chunk_max[h], 2));
      const float new_max = row_max[h] > chunk_max[h] ? row_max[h] : chunk_max[h];
      // Nothing kept yet (or nothing valid so far): no correction; exp(-inf - -inf) would be NaN.
      correction[h] = row_max[h] == -INFINITY ? 1.0f : exp_f32(row_max[h] - new_max);
      row_max[h] = new_max;
    }
    float chunk_sum[2] = {0.0f, 0.0f};
    TRACKSCOPE_UNROLL
    for (int n = 0; n < kChunkKeys / 8; ++n) {
      if (n < n_begin || n >= n_end) {
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;  // keys none of the rows attend to: probability 0
        continue;
      }
      TRACKSCOPE_UNROLL
      for (int e = 0; e < 4; ++e) {
        s[n][e] = s[n][e] == -INFINITY ? 0.0f : exp_f32(s[n][e] - row_max[e >> 1]);
        chunk_sum[e >> 1] += s[n][e];
      }
    }
    TRACKSCOPE_UNROLL
    for (int h = 0; h < 2; ++h) {
      chunk_sum[h] += warp_xor(chunk_sum[h], 1);
      chunk_sum[h] += warp_xor(chunk_sum[h], 2);
      row_sum[h] = row_sum[h] * correction[h] + chunk_sum[h];
    }
    TRACKSCOPE_UNROLL
    for (int n = 0; n < kHeadDim / 8; ++n) {
      o[n][0] *= correction[0];
      o[n][1] *= correction[0];
      o[n][2] *= correction[1];
      o[n][3] *= correction[1];
    }
    TRACKSCOPE_UNROLL
    for (int kk = 0; kk < kChunkKeys / 16; ++kk) {
      if (2 * kk + 1 < n_begin || 2 * kk >= n_end) continue;
      const uint32_t pa[4] = {pack2<Element>(s[2 * kk][0], s[2 * kk][1]), pack2<Element>(s[2 * kk][2], s[2 * kk][3]),
                              pack2<Element>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack2<Element>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
      TRACKSCOPE_UNROLL
      for (int n = 0; n < kHeadDim / 8; ++n) {
        const uint16_t* const column = v_columns + (n * 8 + g) * kKeyElements + kk * 16 + 2 * t;
        mma_16816<Element>(o[n], pa, shared_load(reinterpret_cast<const uint32_t*>(column)),
                           shared_load(reinterpret_cast<const uint32_t*>(column + 8)));
      }
    }
  }
  if (!tile_active) return;
  TRACKSCOPE_UNROLL
  for (int h = 0; h < 2; ++h) {
    const int i = q0 + tile_row + g + 8 * h;
    if (i >= p.frames) continue;
    const float inverse = 1.0f / row_sum[h];
    auto* const out =
        static_cast<uint16_t*>(p.out) + (sequence * p.frames + i) * p.out_stride + head * kHeadDim + 2 * t;
    TRACKSCOPE_UNROLL
    for (int n = 0; n < kHeadDim / 8; ++n) {
      global_store_u32(reinterpret_cast<uint32_t*>(out + n * 8),
                       pack2<Element>(o[n][2 * h] * inverse, o[n][2 * h + 1] * inverse));
    }
  }
}

}  // namespace trackscope::gpu::ops::cuda::attention_mma
