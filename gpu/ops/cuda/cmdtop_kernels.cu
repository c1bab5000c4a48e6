// CMDTop building blocks (the GEMMs themselves run in cuBLAS through at::matmul):
//  * gather_columns: im2col through an index table. One launch builds the patches of BOTH branches and all
//    output positions of the first convolution straight from the [M, 2401] correlation (branch 1 reads it
//    transposed, branch 2 as is; -1 entries are the SAME zero padding), converting to the GEMM's dtype.
//    Bytes: rows*columns*e_out written + the input row read (L1/L2 serve the k*k/stride^2 reuse).
//  * bias_group_norm_relu: conv bias + GroupNorm + ReLU in place on the channels-last GEMM output, one warp
//    per (row, group), fp32 statistics (two passes over the <= 256 values of a group, served by L1).
//    Bytes: rows*positions*channels*e read once from DRAM and written once; FLOPs ~10 per element.

#include <cstdint>

#include "gpu/ops/cuda/device_utils.cuh"
#include "gpu/ops/cuda/launchers.h"
#include "gpu/ops/cuda/warp_reduce.cuh"

namespace trackscope::gpu::ops::cuda {
namespace {

constexpr int kGatherThreads = 256;
constexpr int kNormThreads = 256;
constexpr int kMaxGridY = 65535;

template <typename In, typename Out>
__global__ void __launch_bounds__(kGatherThreads)
    gather_columns_kernel(const In* __restrict__ input, int64_t rows, int64_t input_row_stride,
                          const int32_t* __restrict__ index, int64_t columns, Out* __restrict__ output) {
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const In* in_row = input + row * input_row_stride;
    Out* out_row = output + row * columns;
    for (int64_t column = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; column < columns;
         column += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      const int32_t source = index[column];
      out_row[column] = from_float<Out>(source >= 0 ? to_float(in_row[source]) : 0.0f);
    }
  }
}

template <typename In, typename Out>
cudaError_t launch_gather_typed(const void* input, int64_t rows, int64_t input_row_stride, const int32_t* index,
                                int64_t columns, void* output, cudaStream_t stream) {
  if (rows == 0 || columns == 0) return cudaSuccess;
  const int64_t blocks_x = (columns + kGatherThreads - 1) / kGatherThreads;
  const dim3 grid(static_cast<unsigned>(blocks_x < 1024 ? blocks_x : 1024),
                  static_cast<unsigned>(rows < kMaxGridY ? rows : kMaxGridY));
  gather_columns_kernel<In, Out><<<grid, kGatherThreads, 0, stream>>>(
      static_cast<const In*>(input), rows, input_row_stride, index, columns, static_cast<Out*>(output));
  return cudaGetLastError();
}

template <typename In>
cudaError_t launch_gather_to(ElementType output_type, const void* input, int64_t rows, int64_t input_row_stride,
                             const int32_t* index, int64_t columns, void* output, cudaStream_t stream) {
  switch (output_type) {
    case ElementType::float32:
      return launch_gather_typed<In, float>(input, rows, input_row_stride, index, columns, output, stream);
    case ElementType::bfloat16:
      return launch_gather_typed<In, __nv_bfloat16>(input, rows, input_row_stride, index, columns, output, stream);
    case ElementType::float16:
      return launch_gather_typed<In, __half>(input, rows, input_row_stride, index, columns, output, stream);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
__global__ void __launch_bounds__(kNormThreads)
    bias_group_norm_relu_kernel(T* __restrict__ x, int64_t rows, int positions, int channels, int groups,
                                const float* __restrict__ bias, const float* __restrict__ gamma,
                                const float* __restrict__ beta, float eps) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t work = static_cast<int64_t>(blockIdx.x) * (kNormThreads / 32) + (threadIdx.x >> 5);
  if (work >= rows * groups) return;  // the whole warp leaves together; there is no block-level barrier
  const int64_t row = work / groups;
  const int group = static_cast<int>(work % groups);
  const int group_channels = channels / groups;
  const int count = positions * group_channels;
  T* base = x + row * positions * channels + group * group_channels;
  const float* group_bias = bias + group * group_channels;

  float sum = 0.0f;
  for (int e = lane; e < count; e += 32) {
    const int position = e / group_channels;
    const int channel = e % group_channels;
    sum += to_float(base[position * channels + channel]) + group_bias[channel];
  }
  const float mean = warp_reduce(sum, Sum{}) / static_cast<float>(count);
  float squares = 0.0f;
  for (int e = lane; e < count; e += 32) {
    const int position = e / group_channels;
    const int channel = e % group_channels;
    const float d = to_float(base[position * channels + channel]) + group_bias[channel] - mean;
    squares = fmaf(d, d, squares);
  }
  const float variance = warp_reduce(squares, Sum{}) / static_cast<float>(count);
  const float inverse_std = rsqrtf(variance + eps);
  for (int e = lane; e < count; e += 32) {
    const int position = e / group_channels;
    const int channel = e % group_channels;
    const int global_channel = group * group_channels + channel;
    T& element = base[position * channels + channel];
    const float v = to_float(element) + group_bias[channel];
    const float y = (v - mean) * inverse_std * gamma[global_channel] + beta[global_channel];
    element = from_float<T>(y < 0.0f ? 0.0f : y);  // NaN stays NaN, as torch.relu
  }
}

template <typename T>
cudaError_t launch_norm_typed(void* x, int64_t rows, int64_t positions, int64_t channels, int64_t groups,
                              const float* bias, const float* gamma, const float* beta, float eps,
                              cudaStream_t stream) {
  const int64_t warps = rows * groups;
  if (warps == 0) return cudaSuccess;
  const int64_t blocks = (warps + kNormThreads / 32 - 1) / (kNormThreads / 32);
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  bias_group_norm_relu_kernel<T><<<static_cast<unsigned>(blocks), kNormThreads, 0, stream>>>(
      static_cast<T*>(x), rows, static_cast<int>(positions), static_cast<int>(channels), static_cast<int>(groups), bias,
      gamma, beta, eps);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_gather_columns(const void* input, ElementType input_type, int64_t rows, int64_t input_row_stride,
                                  const int32_t* index, int64_t columns, void* output, ElementType output_type,
                                  cudaStream_t stream) {
  switch (input_type) {
    case ElementType::float32:
      return launch_gather_to<float>(output_type, input, rows, input_row_stride, index, columns, output, stream);
    case ElementType::bfloat16:
      return launch_gather_to<__nv_bfloat16>(output_type, input, rows, input_row_stride, index, columns, output,
                                             stream);
    case ElementType::float16:
      return launch_gather_to<__half>(output_type, input, rows, input_row_stride, index, columns, output, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_bias_group_norm_relu(void* x, ElementType element_type, int64_t rows, int64_t positions,
                                        int64_t channels, int64_t groups, const float* bias, const float* gamma,
                                        const float* beta, float eps, cudaStream_t stream) {
  switch (element_type) {
    case ElementType::float32:
      return launch_norm_typed<float>(x, rows, positions, channels, groups, bias, gamma, beta, eps, stream);
    case ElementType::bfloat16:
      return launch_norm_typed<__nv_bfloat16>(x, rows, positions, channels, groups, bias, gamma, beta, eps, stream);
    case ElementType::float16:
      return launch_norm_typed<__half>(x, rows, positions, channels, groups, bias, gamma, beta, eps, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace trackscope::gpu::ops::cuda
