// Fused InstanceNorm + ReLU for the backbone (docs/locotrack-spec.md §4: per-sample, per-channel statistics over H x W,
// biased variance, eps, affine), on channels-last activations seen as x [samples, positions, channels].
//
// Two launches instead of the ~12 elementwise/reduction passes of the written-out norm:
//  1. statistics: block (split, sample) reduces a slab of positions; each thread takes one 16-byte vector of
//     channels (8 in 16-bit, 4 in fp32) at every rows-th position (rows = 256 / vectors per position), Welford in
//     fp32 (one reciprocal per vector: the count is the vector's), the rows merged with Chan's formula in shared
//     memory; writes (mean, M2) per (sample, split, channel). The last block of a sample to finish (an atomic
//     ticket per sample, zeroed by a memset before the launch: the workspace is the caching allocator's) merges the
//     sample's splits and folds weight/bias into scale/shift;
//  2. apply: y = max(x * scale + shift, 0), 16-byte vectors.
// Bytes: the activation is read twice and written once (3 passes; the written-out norm needs ~12).
// Welford instead of sum/sum-of-squares: E[x^2] - E[x]^2 loses digits on un-normalised activations, and exact
// mode keeps parity with the two-pass reference.
// Until 2026-12-05 the statistics read one 2-byte channel per thread (a reciprocal per element) and a third kernel
// merged the splits: Nsight Compute on an H100 put the statistics at 60 us per launch (31% of DRAM bandwidth, issue
// bound) and that merge at 18.5 us (12 blocks, 12% occupancy), 1.3 ms per 47 frames together.

#include <algorithm>
#include <cstdint>

#include "gpu/ops/cuda/device_utils.cuh"
#include "gpu/ops/cuda/launchers.h"

namespace trackscope::gpu::ops::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxGridY = 65535;

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

template <typename T, typename W>
__global__ void __launch_bounds__(kThreads)
    statistics_kernel(const T* __restrict__ x, int64_t positions, int64_t channels, int64_t positions_per_split,
                      int splits, float2* __restrict__ partial, unsigned* __restrict__ tickets,
                      const W* __restrict__ weight, const W* __restrict__ bias, float eps,
                      float2* __restrict__ scale_shift) {
  constexpr int kWidth = Vector<T>::kWidth;
  __shared__ float row_mean[kThreads * kMaxVectorWidth];
  __shared__ float row_m2[kThreads * kMaxVectorWidth];
  __shared__ float row_count[kThreads];
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

  float count = 0.0f, mean[kWidth], m2[kWidth];
#pragma unroll
  for (int j = 0; j < kWidth; ++j) mean[j] = m2[j] = 0.0f;
  const uint4* base = reinterpret_cast<const uint4*>(x + sample * positions * channels) + vector;
#pragma unroll 4
  for (int64_t p = begin + row; p < end; p += rows) {
    float v[kWidth];
    unpack(base[p * vectors], v, T{});
    count += 1.0f;
    const float inverse = __frcp_rn(count);
#pragma unroll
    for (int j = 0; j < kWidth; ++j) {
      const float delta = v[j] - mean[j];
      mean[j] += delta * inverse;
      m2[j] = fmaf(delta, v[j] - mean[j], m2[j]);
    }
  }
#pragma unroll
  for (int j = 0; j < kWidth; ++j) {
    row_mean[row * channels + vector * kWidth + j] = mean[j];
    row_m2[row * channels + vector * kWidth + j] = m2[j];
  }
  if (vector == 0) row_count[row] = count;
  __syncthreads();
  for (int64_t channel = tid; channel < channels; channel += kThreads) {
    Moments m{row_count[0], row_mean[channel], row_m2[channel]};
    for (int r = 1; r < rows; ++r)
      m = merge(m, Moments{row_count[r], row_mean[r * channels + channel], row_m2[r * channels + channel]});
    partial[(sample * splits + split) * channels + channel] = make_float2(m.mean, m.m2);
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

template <typename T>
__global__ void __launch_bounds__(kThreads)
    apply_kernel(const T* __restrict__ x, int64_t samples, int64_t positions, int64_t channels,
                 const float2* __restrict__ scale_shift, T* __restrict__ y) {
  constexpr int kWidth = Vector<T>::kWidth;
  const int64_t vectors = samples * positions * channels / kWidth;  // channels % kWidth == 0 (launcher)
  const int64_t per_sample = positions * channels;
  for (int64_t v = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; v < vectors;
       v += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t element = v * kWidth;
    const int64_t sample = element / per_sample;
    const int64_t channel = element % channels;
    const float2* ss = scale_shift + sample * channels + channel;
    union {
      uint4 raw;
      T values[kWidth];
    } in, out;
    in.raw = reinterpret_cast<const uint4*>(x)[v];
#pragma unroll
    for (int k = 0; k < kWidth; ++k) {
      const float2 s = ss[k];
      const float r = fmaf(to_float(in.values[k]), s.x, s.y);
      out.values[k] = from_float<T>(r < 0.0f ? 0.0f : r);  // NaN stays NaN, as torch.relu
    }
    reinterpret_cast<uint4*>(y)[v] = out.raw;
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
  const int64_t vectors = s.samples * s.positions * s.channels / Vector<T>::kWidth;
  const int64_t blocks = (vectors + kThreads - 1) / kThreads;
  apply_kernel<T><<<static_cast<unsigned>(blocks < 8192 ? blocks : 8192), kThreads, 0, stream>>>(
      static_cast<const T*>(x), s.samples, s.positions, s.channels, scale_shift, static_cast<T*>(y));
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
