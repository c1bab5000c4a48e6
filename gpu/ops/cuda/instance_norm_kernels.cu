// Fused InstanceNorm + ReLU for the backbone (docs/locotrack-spec.md §4: per-sample, per-channel statistics over H x W,
// biased variance, eps, affine), on channels-last activations seen as x [samples, positions, channels].
//
// Two launches instead of the ~12 elementwise/reduction passes of the written-out norm:
//  1. statistics: block (split, sample) reduces a slab of positions; each thread takes one 16-byte vector of
//     channels (8 in 16-bit, 4 in fp32) at every rows-th position (rows = 256 / vectors per position), four loads in
//     flight, sums of (x - shift) and their squares in fp32 with the thread's first value as the shift, turned into
//     (mean, M2) per thread and merged over the block's rows with Chan's formula as a tree in shared memory; writes
//     (mean, M2) per (sample, split, channel). The last block of a sample to finish (an atomic ticket per sample,
//     zeroed by a memset before the launch: the workspace is the caching allocator's) merges the sample's splits and
//     folds weight/bias into scale/shift;
//  2. apply: y = max(x * scale + shift, 0), 16-byte vectors, a grid row per sample, each thread's scale/shift in
//     registers.
// Bytes: the activation is read twice and written once (3 passes; the written-out norm needs ~12).
// Shifted sums or Welford, not plain sum/sum-of-squares: E[x^2] - E[x]^2 loses digits on un-normalised activations,
// and exact mode keeps parity with the two-pass reference.
// Until 2026-12-05 the statistics read one 2-byte channel per thread (a reciprocal per element) and a third kernel
// merged the splits: Nsight Compute on an H100 put the statistics at 60 us per launch (31% of DRAM bandwidth, issue
// bound) and that merge at 18.5 us (12 blocks, 12% occupancy), 1.3 ms per 47 frames together. The version of
// 2026-12-05 (Welford per vector, a serial merge of the rows by `channels` threads, the apply's two 64-bit divisions
// per vector) ran at ~1.4 TB/s in the statistics and 1.6-2.9 TB/s in the apply on the H100 (3.35 TB/s): 0.64 + 0.78 ms
// per 47 frames in fp16.

#include <algorithm>
#include <cstdint>

#include "gpu/ops/cuda/device_utils.cuh"
#include "gpu/ops/cuda/launchers.h"

namespace trackscope::gpu::ops::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxGridY = 65535;
constexpr int64_t kApplyBlocks = 8192;

struct Moments {
  float count;
  float mean;
  float m2;
};

__device__ __forceinline__ Moments merge(Moments a, Moments b) {
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

template <typename T>
struct Vector;  // 16 bytes of T
template <>
struct Vector<float> {
  static constexpr int kWidth = 4;
};
template <>
struct Vector<__nv_bfloat16> {
  static constexpr int kWidth = 8;
};
template <>
struct Vector<__half> {
  static constexpr int kWidth = 8;
};

// Positions per thread and split: enough blocks at the backbone's smallest plane (32 x 32 x 256 channels: 8 rows x 16
// = 128 positions per split, 8 splits x 47 samples), few splits for the last block to merge at its largest.
constexpr int kPositionsPerThread = 16;
constexpr int kMaxVectorWidth = 8;

int64_t vector_width(ElementType element_type) { return element_type == ElementType::float32 ? 4 : 8; }

// Positions per block of the statistics kernel: rows of threads (256 / vectors per position) x kPositionsPerThread.
// The workspace's layout (instance_norm_splits) and the launch both derive the splits from it.
int64_t positions_per_split(int64_t channels, int64_t width) {
  return std::max<int64_t>(1, kThreads / std::max<int64_t>(1, channels / width)) * kPositionsPerThread;
}
int64_t split_count(const InstanceNormShape& s, int64_t width) {
  const int64_t split_positions = positions_per_split(s.channels, width);
  return (s.positions + split_positions - 1) / split_positions;
}

__device__ __forceinline__ void unpack(const uint4& raw, float (&v)[4], float) {
  v[0] = __uint_as_float(raw.x);
  v[1] = __uint_as_float(raw.y);
  v[2] = __uint_as_float(raw.z);
  v[3] = __uint_as_float(raw.w);
}
// Two 16-bit values of one 32-bit word (the lower one first) as floats, without a trip through local memory.
__device__ __forceinline__ float2 word_to_float2(unsigned word, __half) {
  __half2 pair;
  memcpy(&pair, &word, sizeof(pair));
  return __half22float2(pair);
}
__device__ __forceinline__ float2 word_to_float2(unsigned word, __nv_bfloat16) {
  __nv_bfloat162 pair;
  memcpy(&pair, &word, sizeof(pair));
  return __bfloat1622float2(pair);
}
template <typename T>
__device__ __forceinline__ void unpack(const uint4& raw, float (&v)[8], T) {
  const float2 p0 = word_to_float2(raw.x, T{}), p1 = word_to_float2(raw.y, T{});
  const float2 p2 = word_to_float2(raw.z, T{}), p3 = word_to_float2(raw.w, T{});
  v[0] = p0.x, v[1] = p0.y, v[2] = p1.x, v[3] = p1.y, v[4] = p2.x, v[5] = p2.y, v[6] = p3.x, v[7] = p3.y;
}

// The statistics of `kWidth` channels over one thread's positions: sums of x - shift and of its squares, the shift
// the thread's first value (shifted sums: three operations per element and no reciprocal, where Welford needs a
// reciprocal per vector and four; with the shift inside the data's spread the cancellation in q - s^2/n stays at a
// few float32 rounding steps, as Welford's error does, also for activations far from zero).
template <int kWidth>
struct ShiftedSums {
  float count = 0.0f;
  float shift[kWidth], sum[kWidth], squares[kWidth];
  __device__ __forceinline__ void add(const float (&v)[kWidth]) {
    count += 1.0f;
#pragma unroll
    for (int j = 0; j < kWidth; ++j) {
      const float d = v[j] - shift[j];
      sum[j] += d;
      squares[j] = fmaf(d, d, squares[j]);
    }
  }
};

template <typename T, typename W>
__global__ void __launch_bounds__(kThreads)
    statistics_kernel(const T* __restrict__ x, int64_t positions, int64_t channels, int64_t positions_per_split,
                      int splits, float2* __restrict__ partial, unsigned* __restrict__ tickets,
                      const W* __restrict__ weight, const W* __restrict__ bias, float eps,
                      float2* __restrict__ scale_shift) {
  constexpr int kWidth = Vector<T>::kWidth;
  constexpr int kBatch = 4;  // loads in flight per thread before their values are used
  __shared__ float row_mean[kThreads / 2 * kMaxVectorWidth];
  __shared__ float row_m2[kThreads / 2 * kMaxVectorWidth];
  __shared__ float row_count[kThreads / 2];
  __shared__ bool last_block;
  const int vectors = static_cast<int>(channels / kWidth);  // a power of two <= kThreads (launcher)
  const int rows = kThreads / vectors;
  const int tid = static_cast<int>(threadIdx.x);
  const int row = tid / vectors;
  const int vector = tid % vectors;
  const int split = static_cast<int>(blockIdx.x);
  const int64_t sample = blockIdx.y;
  const int64_t begin = split * positions_per_split;
  const int64_t end = begin + positions_per_split < positions ? begin + positions_per_split : positions;

  const uint4* base = reinterpret_cast<const uint4*>(x + sample * positions * channels) + vector;
  ShiftedSums<kWidth> sums;
  int64_t p = begin + row;
  if (p < end) {
    unpack(base[p * vectors], sums.shift, T{});
  } else {
#pragma unroll
    for (int j = 0; j < kWidth; ++j) sums.shift[j] = 0.0f;
  }
#pragma unroll
  for (int j = 0; j < kWidth; ++j) sums.sum[j] = sums.squares[j] = 0.0f;
  for (; p + (kBatch - 1) * rows < end; p += kBatch * rows) {
    uint4 raw[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) raw[b] = base[(p + b * rows) * vectors];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      float v[kWidth];
      unpack(raw[b], v, T{});
      sums.add(v);
    }
  }
  for (; p < end; p += rows) {
    float v[kWidth];
    unpack(base[p * vectors], v, T{});
    sums.add(v);
  }
  // This thread's moments, then a tree over the block's rows (log2(rows) steps, every thread of the lower half busy;
  // one division per merge of a vector: the counts are the vector's).
  VectorMoments<kWidth> mine;
  mine.count = sums.count;
  const float inverse_count = sums.count > 0.0f ? 1.0f / sums.count : 0.0f;
#pragma unroll
  for (int j = 0; j < kWidth; ++j) {
    const float mean_shift = sums.sum[j] * inverse_count;
    mine.mean[j] = sums.shift[j] + mean_shift;
    mine.m2[j] = fmaxf(sums.squares[j] - sums.sum[j] * mean_shift, 0.0f);
  }
  for (int half = rows / 2; half > 0; half /= 2) {
    if (row >= half && row < 2 * half) {
      const int slot = row - half;
#pragma unroll
      for (int j = 0; j < kWidth; ++j) {
        row_mean[slot * channels + vector * kWidth + j] = mine.mean[j];
        row_m2[slot * channels + vector * kWidth + j] = mine.m2[j];
      }
      if (vector == 0) row_count[slot] = mine.count;
    }
    __syncthreads();
    if (row < half) {
      const float other_count = row_count[row];
      const float count = mine.count + other_count;
      const float share = count > 0.0f ? other_count / count : 0.0f;
#pragma unroll
      for (int j = 0; j < kWidth; ++j) {
        const float other_mean = row_mean[row * channels + vector * kWidth + j];
        const float delta = other_mean - mine.mean[j];
        mine.mean[j] += delta * share;
        mine.m2[j] += row_m2[row * channels + vector * kWidth + j] + delta * delta * mine.count * share;
      }
      mine.count = count;
    }
    __syncthreads();
  }
  if (row == 0) {
#pragma unroll
    for (int j = 0; j < kWidth; ++j) {
      partial[(sample * splits + split) * channels + vector * kWidth + j] = make_float2(mine.mean[j], mine.m2[j]);
    }
  }

  // The sample's last block merges its splits (the other blocks' partials are visible after their fence and the
  // ticket that counted them).
  __threadfence();
  __syncthreads();
  if (tid == 0) last_block = atomicAdd(tickets + sample, 1u) == static_cast<unsigned>(splits - 1);
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  for (int64_t channel = tid; channel < channels; channel += kThreads) {
    Moments m{0.0f, 0.0f, 0.0f};
    for (int s = 0; s < splits; ++s) {
      const int64_t first = s * positions_per_split;
      const int64_t n = first + positions_per_split < positions ? positions_per_split : positions - first;
      const float2 p = __ldcg(partial + (sample * splits + s) * channels + channel);
      m = merge(m, Moments{static_cast<float>(n), p.x, p.y});
    }
    const float variance = m.m2 / static_cast<float>(positions);
    const float scale = rsqrtf(variance + eps) * to_float(weight[channel]);
    scale_shift[sample * channels + channel] = make_float2(scale, to_float(bias[channel]) - m.mean * scale);
  }
}

// y = max(x * scale + shift, 0) over one sample per grid row (blockIdx.y). The grid's stride is a multiple of the
// channels' vectors, so a thread meets the same channels at every step and keeps their scale/shift in registers:
// until 2026-12-06 every vector recomputed its sample and channel with two 64-bit divisions and loaded its eight
// (scale, shift) pairs.
template <typename T>
__global__ void __launch_bounds__(kThreads) apply_kernel(const T* __restrict__ x, int64_t positions, int64_t channels,
                                                         const float2* __restrict__ scale_shift, T* __restrict__ y) {
  constexpr int kWidth = Vector<T>::kWidth;
  const int64_t vectors = channels / kWidth;  // a power of two dividing kThreads (launcher)
  const int64_t sample = blockIdx.y;
  const int64_t vector = threadIdx.x % vectors;
  float scale[kWidth], shift[kWidth];
#pragma unroll
  for (int k = 0; k < kWidth; ++k) {
    const float2 s = scale_shift[sample * channels + vector * kWidth + k];
    scale[k] = s.x;
    shift[k] = s.y;
  }
  const int64_t per_sample = positions * vectors;
  const uint4* in = reinterpret_cast<const uint4*>(x) + sample * per_sample;
  uint4* out = reinterpret_cast<uint4*>(y) + sample * per_sample;
#pragma unroll 4
  for (int64_t v = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; v < per_sample;
       v += static_cast<int64_t>(gridDim.x) * kThreads) {
    union {
      uint4 raw;
      T values[kWidth];
    } a, b;
    a.raw = in[v];
#pragma unroll
    for (int k = 0; k < kWidth; ++k) {
      const float r = fmaf(to_float(a.values[k]), scale[k], shift[k]);
      b.values[k] = from_float<T>(r < 0.0f ? 0.0f : r);  // NaN stays NaN, as torch.relu
    }
    out[v] = b.raw;
  }
}

template <typename T, typename W>
cudaError_t launch_typed(const InstanceNormShape& s, const void* x, const void* weight, const void* bias, float eps,
                         float2* partial, unsigned* tickets, float2* scale_shift, void* y, cudaStream_t stream) {
  const int64_t split_positions = positions_per_split(s.channels, Vector<T>::kWidth);
  const int64_t splits = split_count(s, Vector<T>::kWidth);
  cudaError_t error = cudaMemsetAsync(tickets, 0, static_cast<size_t>(s.samples) * sizeof(unsigned), stream);
  if (error != cudaSuccess) return error;
  const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(s.samples));
  statistics_kernel<T, W><<<grid, kThreads, 0, stream>>>(
      static_cast<const T*>(x), s.positions, s.channels, split_positions, static_cast<int>(splits), partial, tickets,
      static_cast<const W*>(weight), static_cast<const W*>(bias), eps, scale_shift);
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  // About 8192 blocks in all (a few waves of 132 SMs x 8 blocks), a sample's vectors spread over its grid row.
  const int64_t per_sample = s.positions * s.channels / Vector<T>::kWidth;
  const int64_t needed = (per_sample + kThreads - 1) / kThreads;
  const int64_t share = std::max<int64_t>(1, kApplyBlocks / s.samples);
  const dim3 apply_grid(static_cast<unsigned>(std::min(needed, share)), static_cast<unsigned>(s.samples));
  apply_kernel<T><<<apply_grid, kThreads, 0, stream>>>(static_cast<const T*>(x), s.positions, s.channels, scale_shift,
                                                       static_cast<T*>(y));
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_with_weights(const InstanceNormShape& s, ElementType weight_type, const void* x, const void* weight,
                                const void* bias, float eps, float2* partial, unsigned* tickets, float2* scale_shift,
                                void* y, cudaStream_t stream) {
  switch (weight_type) {
    case ElementType::float32:
      return launch_typed<T, float>(s, x, weight, bias, eps, partial, tickets, scale_shift, y, stream);
    case ElementType::bfloat16:
      return launch_typed<T, __nv_bfloat16>(s, x, weight, bias, eps, partial, tickets, scale_shift, y, stream);
    case ElementType::float16:
      return launch_typed<T, __half>(s, x, weight, bias, eps, partial, tickets, scale_shift, y, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

bool instance_norm_eligible(const InstanceNormShape& s, ElementType element_type, const void* x, const void* y) {
  const int64_t width = vector_width(element_type);
  const int64_t vectors = s.channels / width;
  const bool vectors_ok = s.channels > 0 && s.channels % width == 0 && vectors <= kThreads && kThreads % vectors == 0;
  return vectors_ok && s.samples > 0 && s.samples <= kMaxGridY && s.positions > 0 &&
         instance_norm_splits(s, element_type) <= 0x7fffffffLL && is_aligned(x, 16) && is_aligned(y, 16);
}

int64_t instance_norm_splits(const InstanceNormShape& s, ElementType element_type) {
  return split_count(s, vector_width(element_type));
}

cudaError_t launch_instance_norm_relu(const InstanceNormShape& shape, ElementType element_type, const void* x,
                                      ElementType weight_type, const void* weight, const void* bias, float eps,
                                      void* workspace, void* y, cudaStream_t stream) {
  if (shape.samples == 0 || shape.positions == 0 || shape.channels == 0) return cudaSuccess;
  float2* partial = static_cast<float2*>(workspace);
  float2* scale_shift = partial + shape.samples * instance_norm_splits(shape, element_type) * shape.channels;
  auto* tickets = reinterpret_cast<unsigned*>(scale_shift + shape.samples * shape.channels);
  switch (element_type) {
    case ElementType::float32:
      return launch_with_weights<float>(shape, weight_type, x, weight, bias, eps, partial, tickets, scale_shift, y,
                                        stream);
    case ElementType::bfloat16:
      return launch_with_weights<__nv_bfloat16>(shape, weight_type, x, weight, bias, eps, partial, tickets, scale_shift,
                                                y, stream);
    case ElementType::float16:
      return launch_with_weights<__half>(shape, weight_type, x, weight, bias, eps, partial, tickets, scale_shift, y,
                                         stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace trackscope::gpu::ops::cuda
