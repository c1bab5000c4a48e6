// Fused InstanceNorm + ReLU for the backbone (docs/locotrack-spec.md §4: per-sample, per-channel statistics over H x W,
// biased variance, eps, affine), on channels-last activations seen as x [samples, positions, channels].
//
// Three launches instead of the ~12 elementwise/reduction passes of the written-out norm:
//  1. partial statistics: block (split, sample, channel tile) reduces a slab of positions x 256/CT rows of
//     threads, each thread one channel (coalesced across channels), Welford in fp32; rows merged with Chan's
//     formula; writes (mean, M2) per (sample, split, channel);
//  2. finalise: one thread per (sample, channel) merges the splits and folds weight/bias into scale/shift;
//  3. apply: y = max(x * scale + shift, 0), 16-byte vectors.
// Bytes: the activation is read twice and written once (3 passes; the written-out norm needs ~12).
// Welford instead of sum/sum-of-squares: E[x^2] - E[x]^2 loses digits on un-normalised activations, and exact
// mode keeps parity with the two-pass reference.

#include <cstdint>

#include "gpu/ops/cuda/device_utils.cuh"
#include "gpu/ops/cuda/launchers.h"

namespace trackscope::gpu::ops::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kPositionsPerThread = 64;  // per split, per thread: ~64 elements each, thousands of blocks
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

int channel_tile(int64_t channels) { return channels >= kThreads ? kThreads : static_cast<int>(channels); }

template <typename T>
__global__ void __launch_bounds__(kThreads)
    partial_moments_kernel(const T* __restrict__ x, int64_t positions, int64_t channels, int64_t positions_per_split,
                           int splits, float2* __restrict__ partial) {
  __shared__ Moments rows[kThreads];
  const int tile = static_cast<int>(channels >= kThreads ? kThreads : channels);
  const int row_count = kThreads / tile;
  const int tid = static_cast<int>(threadIdx.x);
  const int row = tid / tile;
  const int64_t channel = static_cast<int64_t>(blockIdx.z) * tile + tid % tile;
  const int split = static_cast<int>(blockIdx.x);
  const int64_t sample = blockIdx.y;
  const int64_t begin = split * positions_per_split;
  const int64_t end = begin + positions_per_split < positions ? begin + positions_per_split : positions;

  Moments m{0.0f, 0.0f, 0.0f};
  if (row < row_count) {
    const T* base = x + sample * positions * channels + channel;
    for (int64_t p = begin + row; p < end; p += row_count) {
      const float v = to_float(base[p * channels]);
      m.count += 1.0f;
      const float delta = v - m.mean;
      m.mean += delta * __frcp_rn(m.count);
      m.m2 = fmaf(delta, v - m.mean, m.m2);
    }
  }
  rows[tid] = m;
  __syncthreads();
  if (row == 0) {
    for (int r = 1; r < row_count; ++r) m = merge(m, rows[r * tile + tid]);
    partial[(sample * splits + split) * channels + channel] = make_float2(m.mean, m.m2);
  }
}

template <typename W>
__global__ void __launch_bounds__(kThreads)
    finalise_kernel(const float2* __restrict__ partial, int64_t samples, int64_t positions, int64_t channels,
                    int64_t positions_per_split, int splits, const W* __restrict__ weight, const W* __restrict__ bias,
                    float eps, float2* __restrict__ scale_shift) {
  const int64_t index = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (index >= samples * channels) return;
  const int64_t sample = index / channels;
  const int64_t channel = index % channels;
  Moments m{0.0f, 0.0f, 0.0f};
  for (int split = 0; split < splits; ++split) {
    const int64_t begin = split * positions_per_split;
    const int64_t count = (begin + positions_per_split < positions ? positions_per_split : positions - begin);
    const float2 p = partial[(sample * splits + split) * channels + channel];
    m = merge(m, Moments{static_cast<float>(count), p.x, p.y});
  }
  const float variance = m.m2 / static_cast<float>(positions);
  const float scale = rsqrtf(variance + eps) * to_float(weight[channel]);
  scale_shift[index] = make_float2(scale, to_float(bias[channel]) - m.mean * scale);
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
                         float2* partial, float2* scale_shift, void* y, cudaStream_t stream) {
  const int tile = channel_tile(s.channels);
  const int64_t rows = kThreads / tile;
  const int64_t positions_per_split = rows * kPositionsPerThread;
  const int64_t splits = instance_norm_splits(s);
  const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(s.samples),
                  static_cast<unsigned>(s.channels / tile));
  partial_moments_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(x), s.positions, s.channels,
                                                           positions_per_split, static_cast<int>(splits), partial);
  cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  const int64_t pairs = s.samples * s.channels;
  finalise_kernel<W><<<static_cast<unsigned>((pairs + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      partial, s.samples, s.positions, s.channels, positions_per_split, static_cast<int>(splits),
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
                                const void* bias, float eps, float2* partial, float2* scale_shift, void* y,
                                cudaStream_t stream) {
  switch (weight_type) {
    case ElementType::float32: return launch_typed<T, float>(s, x, weight, bias, eps, partial, scale_shift, y, stream);
    case ElementType::bfloat16:
      return launch_typed<T, __nv_bfloat16>(s, x, weight, bias, eps, partial, scale_shift, y, stream);
    case ElementType::float16: return launch_typed<T, __half>(s, x, weight, bias, eps, partial, scale_shift, y, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

bool instance_norm_eligible(const InstanceNormShape& s, ElementType element_type, const void* x, const void* y) {
  const int width = element_type == ElementType::float32 ? 4 : 8;
  const int tile = channel_tile(s.channels);
  const bool tile_ok = s.channels > 0 && kThreads % tile == 0 && s.channels % tile == 0;
  return tile_ok && s.channels % width == 0 && s.samples > 0 && s.samples <= kMaxGridY && s.positions > 0 &&
         s.channels / tile <= kMaxGridY && instance_norm_splits(s) <= 0x7fffffffLL &&
         reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
}

int64_t instance_norm_splits(const InstanceNormShape& s) {
  const int64_t positions_per_split = (kThreads / channel_tile(s.channels)) * int64_t{kPositionsPerThread};
  return (s.positions + positions_per_split - 1) / positions_per_split;
}

cudaError_t launch_instance_norm_relu(const InstanceNormShape& shape, ElementType element_type, const void* x,
                                      ElementType weight_type, const void* weight, const void* bias, float eps,
                                      void* workspace, void* y, cudaStream_t stream) {
  if (shape.samples == 0 || shape.positions == 0 || shape.channels == 0) return cudaSuccess;
  float2* partial = static_cast<float2*>(workspace);
  float2* scale_shift = partial + shape.samples * instance_norm_splits(shape) * shape.channels;
  switch (element_type) {
    case ElementType::float32:
      return launch_with_weights<float>(shape, weight_type, x, weight, bias, eps, partial, scale_shift, y, stream);
    case ElementType::bfloat16:
      return launch_with_weights<__nv_bfloat16>(shape, weight_type, x, weight, bias, eps, partial, scale_shift, y,
                                                stream);
    case ElementType::float16:
      return launch_with_weights<__half>(shape, weight_type, x, weight, bias, eps, partial, scale_shift, y, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace trackscope::gpu::ops::cuda
