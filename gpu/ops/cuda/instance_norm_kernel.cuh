#pragma once
// Fused InstanceNorm + ReLU for the backbone (docs/locotrack-spec.md §4: per-sample, per-channel statistics over H x W,
// biased variance, eps, affine), on channels-last activations seen as x [samples, positions, channels].
//
// Two launches instead of the ~12 elementwise/reduction passes of the written-out norm:
//  1. statistics: block (split, sample) reduces a run of positions (about kTargetBlocks / samples runs per sample:
//     one wave of blocks, long runs); each thread takes one 16-byte vector of
//     channels (8 in 16-bit, 4 in fp32) at every rows-th position (rows = 256 / vectors per position), four loads in
//     flight, sums of (x - shift) and their squares in fp32 with the thread's first value as the shift, turned into
//     (mean, M2) per thread and merged over the block's rows with Chan's formula as a tree in shared memory; writes
//     (mean, M2) per (sample, split, channel). The last block of a sample to finish (an atomic ticket per sample,
//     zeroed by a memset before the launch: the workspace is the caching allocator's) merges the sample's splits and
//     folds weight/bias into scale/shift;
//  2. apply: y = max(x * scale + shift, 0), 16-byte vectors, a grid row per sample, each thread's scale/shift in
//     registers.
// Bytes: the activation is read twice and written once (3 passes; the written-out norm needs ~12). With a residual
// (the residual block's addition fused in) the addends are read once and their sum written, then read by the apply.
// Shifted sums or Welford, not plain sum/sum-of-squares: E[x^2] - E[x]^2 loses digits on un-normalised activations,
// and exact mode keeps parity with the two-pass reference.
// Until 2026-12-05 the statistics read one 2-byte channel per thread (a reciprocal per element) and a third kernel
// merged the splits: Nsight Compute on an H100 put the statistics at 60 us per launch (31% of DRAM bandwidth, issue
// bound) and that merge at 18.5 us (12 blocks, 12% occupancy), 1.3 ms per 47 frames together. The version of
// 2026-12-05 (Welford per vector, a serial merge of the rows by `channels` threads, the apply's two 64-bit divisions
// per vector) ran at ~1.4 TB/s in the statistics and 1.6-2.9 TB/s in the apply on the H100 (3.35 TB/s): 0.64 + 0.78 ms
// per 47 frames in fp16. This version (2026-12-06, H100, 128 x 128 x 64 fp16): statistics 2.29 TB/s, apply 2.72 TB/s;
// with the fused residual sum and the apply's parts the backbone went 3.83 -> 3.34 ms per 47 frames (source A/Bs,
// docs/performance-results.md).
//
// Grids are one-dimensional: block = sample * splits + split for the statistics, sample * parts + part for the apply
// (a "grid row" is a sample's `parts` consecutive blocks). The tree's rows and the last-block flag live in dynamic
// shared memory (statistics_shared_bytes). The source is shared with the CPU emulation test
// (tests/gpu/instance_norm_emulation_test.cpp through tests/gpu/cuda_emulation.h): the hardware is reached only through
// mma_primitives.cuh.

#include <algorithm>
#include <cmath>
#include <cstdint>

#ifndef TRACKSCOPE_CUDA_EMULATION
#include "gpu/ops/cuda/mma_primitives.cuh"
#endif
#include "gpu/ops/cuda/element_access.cuh"

namespace trackscope::gpu::ops::cuda::instance_norm {

using namespace primitives;
using elements::kVectorElements;

inline constexpr int kThreads = 256;
// Statistics blocks per launch: about one wave at 4 blocks per SM on 132 SMs (H100/H200), so that each block loads a
// long run of positions and its merges (the tree, the ticket, the last block's) are a small part of its time. Until
// 2026-12-06 a block took 16 positions per thread whatever the shape (1,504 blocks for 47 x 128 x 128 x 64): Nsight
// Compute (H100) showed the statistics at 48% of DRAM bandwidth, stalled on memory and at the tree's barriers.
inline constexpr int64_t kTargetBlocks = 512;
inline constexpr int64_t kMinPositionsPerThread = 4;
inline constexpr int kBatch = 4;  // loads in flight per thread before their values are used
// Rows of threads that wait in shared memory for their partner at a step of the tree: at most half of the block's.
inline constexpr int kTreeSlots = kThreads / 2;

/// Whether the kernels take `channels` of Element: whole 16-byte vectors, a power-of-two number of them up to kThreads
/// (kThreads a multiple of it).
template <class Element>
inline bool eligible_channels(int64_t channels) {
  constexpr int kVector = kVectorElements<Element>;
  const int64_t vectors = channels / kVector;
  return channels > 0 && channels % kVector == 0 && vectors <= kThreads && kThreads % vectors == 0;
}

/// Positions per block of the statistics kernel for x [samples, positions, channels] with `width` elements per vector:
/// the positions split into about kTargetBlocks / samples runs (at least kMinPositionsPerThread per thread), each a
/// multiple of the block's rows of threads (kThreads / vectors per position). The workspace's layout
/// (instance_norm_splits) and the launch both derive the splits from it.
inline int64_t positions_per_split(int64_t samples, int64_t positions, int64_t channels, int64_t width) {
  const int64_t rows = std::max<int64_t>(1, kThreads / std::max<int64_t>(1, channels / width));
  const int64_t wanted = std::max<int64_t>(1, kTargetBlocks / std::max<int64_t>(1, samples));
  const int64_t most = std::max<int64_t>(1, positions / (rows * kMinPositionsPerThread));
  const int64_t splits = std::min(wanted, most);
  const int64_t per_split = (positions + splits - 1) / splits;
  return (per_split + rows - 1) / rows * rows;
}
inline int64_t split_count(int64_t samples, int64_t positions, int64_t channels, int64_t width) {
  const int64_t split_positions = positions_per_split(samples, positions, channels, width);
  return (positions + split_positions - 1) / split_positions;
}

/// Dynamic shared memory of a statistics block, bytes: the means and M2 of the rows waiting at a step of the tree (at
/// most rows / 2 of `channels` values each: kTreeSlots x the vector's width, whatever the channels), their counts
/// (kTreeSlots) and the last-block flag.
template <class Element>
inline constexpr int64_t statistics_shared_bytes() {
  return static_cast<int64_t>(sizeof(float)) * (2 * kTreeSlots * kVectorElements<Element> + kTreeSlots) +
         static_cast<int64_t>(sizeof(bool));
}

/// Apply blocks per sample: kApplyVectorsPerThread vectors per thread (a sample's vectors spread over its parts),
/// unless that leaves fewer than kApplyMinBlocks blocks in all (few samples: then more parts, down to a vector per
/// thread). Until 2026-12-06 the parts were about 8192 blocks in all whatever the shape: at 47 frames 1 to 2.9 vectors
/// per thread, ragged at 64 x 64 x 128 (half the threads one vector, half two), each thread loading its eight
/// (scale, shift) pairs for them; Nsight Compute (H100) put the apply at 1.6-1.75 TB/s on the 24.6 and 49 MB planes
/// and 2.9 TB/s on the 98.6 MB ones.
inline constexpr int64_t kApplyVectorsPerThread = 4;
inline constexpr int64_t kApplyMinBlocks = 1024;  // about one wave: 132 SMs x 8 blocks of 256 threads
inline int64_t apply_parts(int64_t samples, int64_t positions, int64_t channels, int64_t width) {
  const int64_t per_sample = positions * channels / width;
  const int64_t needed = (per_sample + kThreads - 1) / kThreads;  // a vector per thread
  const int64_t by_work = (needed + kApplyVectorsPerThread - 1) / kApplyVectorsPerThread;
  const int64_t for_one_wave = (kApplyMinBlocks + samples - 1) / std::max<int64_t>(1, samples);
  return std::min(needed, std::max(by_work, for_one_wave));
}

struct Moments {
  float count;
  float mean;
  float m2;
};

TRACKSCOPE_DEVICE_FN Moments merge(Moments a, Moments b) {
  const float count = a.count + b.count;
  if (count == 0.0f) return a;
  const float delta = b.mean - a.mean;
  const float share = b.count / count;
  return {count, a.mean + delta * share, a.m2 + b.m2 + delta * delta * a.count * share};
}

// Moments of one 16-byte vector's channels over the same positions (one count).
template <int kWidth>
struct VectorMoments {
  float count;
  float mean[kWidth];
  float m2[kWidth];
};

// a + b per element in float, rounded once to Element: at::add's arithmetic (float opmath, one rounding).
template <class Element>
TRACKSCOPE_DEVICE_FN Words4 add_vectors(const Words4& a, const Words4& b) {
  Words4 sum;
  TRACKSCOPE_UNROLL
  for (int j = 0; j < kVectorElements<Element>; ++j) {
    elements::set_vector_element<Element>(
        sum, j, elements::vector_element<Element>(a, j) + elements::vector_element<Element>(b, j));
  }
  return sum;
}

// The kWidth elements of one 16-byte vector as floats.
template <class Element, int kWidth>
TRACKSCOPE_DEVICE_FN void unpack(const Words4& raw, float (&v)[kWidth]) {
  TRACKSCOPE_UNROLL
  for (int j = 0; j < kWidth; ++j) v[j] = elements::vector_element<Element>(raw, j);
}

// The statistics of `kWidth` channels over one thread's positions: sums of x - shift and of its squares, the shift
// the thread's first value (shifted sums: three operations per element and no reciprocal, where Welford needs a
// reciprocal per vector and four; with the shift inside the data's spread the cancellation in q - s^2/n stays at a
// few float32 rounding steps, as Welford's error does, also for activations far from zero).
template <int kWidth>
struct ShiftedSums {
  float count = 0.0f;
  float shift[kWidth], sum[kWidth], squares[kWidth];
  TRACKSCOPE_DEVICE_FN void add(const float (&v)[kWidth]) {
    count += 1.0f;
    TRACKSCOPE_UNROLL
    for (int j = 0; j < kWidth; ++j) {
      const float d = v[j] - shift[j];
      sum[j] += d;
      squares[j] = fmaf(d, d, squares[j]);
    }
  }
};

/// Statistics of x [samples, positions, channels] (Element: float, Bf16Tag or Fp16Tag; channels eligible_channels),
/// or with kResidual of x + residual (both of x's shape, rounded to Element as at::add: add_vectors), which the kernel
/// also stores to `sum` (x's shape; the apply then reads it): the residual block's addition and the next norm's
/// statistics in one pass, one read of the sum fewer than at::add followed by the statistics. The statistics of
/// (x, residual) equal those of the stored sum bit for bit (same values, same order),
/// samples * splits blocks of kThreads threads (block = sample * splits + split, splits = split_count(...)),
/// statistics_shared_bytes<Element>() of dynamic shared memory. partial: [samples, splits, channels] (mean, M2)
/// pairs of floats; tickets: [samples], zero before the launch (each ends at splits); weight, bias [channels] of
/// Weight; writes scale_shift [samples, channels] (scale, shift) pairs of floats.
/// Launch bounds without a minimum of blocks per SM (0, as the plain __launch_bounds__(kThreads) of the kernel before
/// it moved here): with a minimum of 1, ptxas took 72 registers in 16-bit instead of 62 (sm_90).
template <class Element, class Weight, bool kResidual = false>
TRACKSCOPE_KERNEL(kThreads, 0)
statistics_kernel(const void* x, const void* residual, void* sum, int64_t positions, int64_t channels,
                  int64_t positions_per_split, int splits, float* partial, uint32_t* tickets, const void* weight,
                  const void* bias, float eps, float* scale_shift) {
  constexpr int kWidth = kVectorElements<Element>;
  // [kWidth][rows / 2][vectors]: a warp's lanes store and load consecutive words (no bank conflicts; with
  // [rows / 2][channels] the lanes of a 16-bit row were 8 words apart).
  float* const row_mean = static_cast<float*>(dynamic_shared());
  float* const row_m2 = row_mean + kTreeSlots * kWidth;
  float* const row_count = row_m2 + kTreeSlots * kWidth;  // [rows / 2]
  bool* const last_block = reinterpret_cast<bool*>(row_count + kTreeSlots);
  const int vectors = static_cast<int>(channels / kWidth);  // a power of two <= kThreads (launcher)
  const int rows = kThreads / vectors;
  const int tid = thread_index();
  const int row = tid / vectors;
  const int vector = tid % vectors;
  // Unsigned: with a signed division ptxas took 64 registers and spilled 8 bytes (16-bit, sm_90).
  const auto block = static_cast<uint32_t>(block_index());  // samples * splits < 2^31 (launcher)
  const int split = static_cast<int>(block % static_cast<uint32_t>(splits));
  const int64_t sample = block / static_cast<uint32_t>(splits);
  const int64_t begin = split * positions_per_split;
  const int64_t end = begin + positions_per_split < positions ? begin + positions_per_split : positions;
  const int first_channel = vector * kWidth;

  // This thread's vector at position p: base + p * vectors (of residual and sum too, with kResidual).
  const int64_t offset = sample * positions * vectors + vector;
  const Words4* base = static_cast<const Words4*>(x) + offset;
  const Words4* residual_base = kResidual ? static_cast<const Words4*>(residual) + offset : nullptr;
  Words4* sum_base = kResidual ? static_cast<Words4*>(sum) + offset : nullptr;
  ShiftedSums<kWidth> sums;
  int64_t p = begin + row;
  if (p < end) {
    Words4 first = global_load16(base + p * vectors);
    if constexpr (kResidual) first = add_vectors<Element>(first, global_load16(residual_base + p * vectors));
    unpack<Element>(first, sums.shift);
  } else {
    TRACKSCOPE_UNROLL
    for (int j = 0; j < kWidth; ++j) sums.shift[j] = 0.0f;
  }
  TRACKSCOPE_UNROLL
  for (int j = 0; j < kWidth; ++j) sums.sum[j] = sums.squares[j] = 0.0f;
  // With a residual, half the batch: as many loads in flight, and 66 -> 62 registers in 16-bit (sm_90): four
  // blocks per SM, as without.
  constexpr int kLoads = kResidual ? kBatch / 2 : kBatch;
  for (; p + (kLoads - 1) * rows < end; p += kLoads * rows) {
    Words4 raw[kLoads];
    Words4 other[kLoads];  // the residual's (unused without)
    TRACKSCOPE_UNROLL
    for (int b = 0; b < kLoads; ++b) {
      raw[b] = global_load16(base + (p + b * rows) * vectors);
      if constexpr (kResidual) other[b] = global_load16(residual_base + (p + b * rows) * vectors);
    }
    TRACKSCOPE_UNROLL
    for (int b = 0; b < kLoads; ++b) {
      if constexpr (kResidual) {
        raw[b] = add_vectors<Element>(raw[b], other[b]);
        global_store16(sum_base + (p + b * rows) * vectors, raw[b]);
      }
      float v[kWidth];
      unpack<Element>(raw[b], v);
      sums.add(v);
    }
  }
  for (; p < end; p += rows) {
    Words4 raw = global_load16(base + p * vectors);
    if constexpr (kResidual) {
      raw = add_vectors<Element>(raw, global_load16(residual_base + p * vectors));
      global_store16(sum_base + p * vectors, raw);
    }
    float v[kWidth];
    unpack<Element>(raw, v);
    sums.add(v);
  }
  // This thread's moments, then a tree over the block's rows (log2(rows) steps, every thread of the lower half busy;
  // one division per merge of a vector: the counts are the vector's).
  VectorMoments<kWidth> mine;
  mine.count = sums.count;
  const float inverse_count = sums.count > 0.0f ? 1.0f / sums.count : 0.0f;
  TRACKSCOPE_UNROLL
  for (int j = 0; j < kWidth; ++j) {
    const float mean_shift = sums.sum[j] * inverse_count;
    mine.mean[j] = sums.shift[j] + mean_shift;
    mine.m2[j] = fmaxf(sums.squares[j] - sums.sum[j] * mean_shift, 0.0f);
  }
  for (int half = rows / 2; half > 0; half /= 2) {
    if (row >= half && row < 2 * half) {
      const int slot = (row - half) * vectors + vector;
      TRACKSCOPE_UNROLL
      for (int j = 0; j < kWidth; ++j) {
        shared_store(row_mean + j * kTreeSlots + slot, mine.mean[j]);
        shared_store(row_m2 + j * kTreeSlots + slot, mine.m2[j]);
      }
      if (vector == 0) shared_store(row_count + (row - half), mine.count);
    }
    block_sync();
    if (row < half) {
      const float other_count = shared_load(row_count + row);
      const float count = mine.count + other_count;
      const float share = count > 0.0f ? other_count / count : 0.0f;
      const int slot = row * vectors + vector;
      TRACKSCOPE_UNROLL
      for (int j = 0; j < kWidth; ++j) {
        const float other_mean = shared_load(row_mean + j * kTreeSlots + slot);
        const float delta = other_mean - mine.mean[j];
        mine.mean[j] += delta * share;
        mine.m2[j] += shared_load(row_m2 + j * kTreeSlots + slot) + delta * delta * mine.count * share;
      }
      mine.count = count;
    }
    block_sync();
  }
  if (row == 0) {
    float* const out = partial + ((sample * splits + split) * channels + first_channel) * 2;
    TRACKSCOPE_UNROLL
    for (int j = 0; j < kWidth; ++j) {
      global_store_f32(out + 2 * j, mine.mean[j]);
      global_store_f32(out + 2 * j + 1, mine.m2[j]);
    }
  }

  // The sample's last block merges its splits (the other blocks' partials are visible after their fence and the
  // ticket that counted them).
  global_fence();
  block_sync();
  if (tid == 0) {
    shared_store(last_block, global_atomic_add_u32(tickets + sample, 1u) == static_cast<uint32_t>(splits - 1));
  }
  block_sync();
  if (!shared_load(last_block)) return;
  global_fence();
  for (int64_t channel = tid; channel < channels; channel += kThreads) {
    Moments m{0.0f, 0.0f, 0.0f};
    for (int s = 0; s < splits; ++s) {
      const int64_t first = s * positions_per_split;
      const int64_t n = first + positions_per_split < positions ? positions_per_split : positions - first;
      const float* const pair = partial + ((sample * splits + s) * channels + channel) * 2;
      m = merge(m, Moments{static_cast<float>(n), global_load_f32_coherent(pair), global_load_f32_coherent(pair + 1)});
    }
    const float variance = m.m2 / static_cast<float>(positions);
    const float scale = reciprocal_sqrt(variance + eps) * elements::load_element<Weight>(weight, channel);
    global_store_f32(scale_shift + (sample * channels + channel) * 2, scale);
    global_store_f32(scale_shift + (sample * channels + channel) * 2 + 1,
                     elements::load_element<Weight>(bias, channel) - m.mean * scale);
  }
}

/// y = max(x * scale + shift, 0) over x, y [samples, positions, channels] of Element, samples * parts blocks of
/// kThreads threads (block = sample * parts + part, parts = apply_parts(...)), scale_shift from statistics_kernel.
/// A sample's parts stride by parts * kThreads vectors, a multiple of the channels' vectors, so a thread meets the same
/// channels at every step and keeps their scale/shift in registers: until 2026-12-06 every vector recomputed its
/// sample and channel with two 64-bit divisions and loaded its eight (scale, shift) pairs. No minimum of blocks per SM
/// in the launch bounds, and the block's (sample, part) from an unsigned division: 32 registers in 16-bit on sm_90 (a
/// minimum of 1 block or a signed division took ptxas 37-39).
template <class Element>
TRACKSCOPE_KERNEL(kThreads, 0)
apply_kernel(const void* x, int64_t positions, int64_t channels, int parts, const float* scale_shift, void* y) {
  constexpr int kWidth = kVectorElements<Element>;
  const int64_t vectors = channels / kWidth;                // a power of two dividing kThreads (launcher)
  const auto block = static_cast<uint32_t>(block_index());  // samples * parts < 2^31 (launcher)
  const int64_t sample = block / static_cast<uint32_t>(parts);
  const int64_t part = block % static_cast<uint32_t>(parts);
  const int64_t vector = thread_index() % vectors;
  float scale[kWidth], shift[kWidth];
  TRACKSCOPE_UNROLL
  for (int k = 0; k < kWidth; ++k) {
    const float* const s = scale_shift + (sample * channels + vector * kWidth + k) * 2;
    scale[k] = global_load_f32(s);
    shift[k] = global_load_f32(s + 1);
  }
  const int64_t per_sample = positions * vectors;
  const auto* in = static_cast<const unsigned char*>(x) + sample * per_sample * 16;
  auto* out = static_cast<unsigned char*>(y) + sample * per_sample * 16;
  TRACKSCOPE_UNROLL_BY(4)
  for (int64_t v = part * kThreads + thread_index(); v < per_sample; v += int64_t{parts} * kThreads) {
    const Words4 a = global_load16(in + v * 16);
    Words4 b;
    TRACKSCOPE_UNROLL
    for (int k = 0; k < kWidth; ++k) {
      const float r = fmaf(elements::vector_element<Element>(a, k), scale[k], shift[k]);
      elements::set_vector_element<Element>(b, k, r < 0.0f ? 0.0f : r);  // NaN stays NaN, as torch.relu
    }
    global_store16(out + v * 16, b);
  }
}

}  // namespace trackscope::gpu::ops::cuda::instance_norm
