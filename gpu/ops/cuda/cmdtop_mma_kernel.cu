// Instantiations and the launcher of the tensor-core CMDTop kernel (design in cmdtop_mma_kernel.cuh and
// docs/kernels.md §3c).
#include <cstdint>

#include "gpu/ops/cuda/cmdtop_mma_kernel.cuh"
#include "gpu/ops/cuda/launchers.h"
#include "gpu/ops/cuda/programmatic_launch.cuh"

namespace trackscope::gpu::ops::cuda {
namespace {

using cmdtop_mma::BaseConfig;
using cmdtop_mma::BaseTf32Config;
using cmdtop_mma::HalfArithmetic;
using cmdtop_mma::Layout;
using cmdtop_mma::SmallConfig;
using cmdtop_mma::SmallTf32Config;

template <class Config>
cudaError_t launch_typed(const void* corr, int64_t samples, int64_t row_stride, const cmdtop_mma::Params& params,
                         float eps, void* out, bool overlap_previous, cudaStream_t stream) {
  const int64_t blocks = (samples + Config::samples - 1) / Config::samples;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  constexpr int shared_bytes = static_cast<int>(Layout<Config>::shared_bytes);
  const auto kernel = cmdtop_mma::cmdtop_mma_kernel<Config>;
  const cudaError_t error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes);
  if (error != cudaSuccess) return error;
  const bool vector_rows = row_stride % (16 / sizeof(typename Config::Arithmetic::Raw)) == 0 &&
                           row_stride >= cmdtop_mma::kCorrPaddedRow && is_aligned(corr, 16);
  return launch_kernel(kernel, dim3(static_cast<unsigned>(blocks)), dim3(cmdtop_mma::kThreads), shared_bytes, stream,
                       overlap_previous, corr, samples, row_stride, vector_rows, params, eps, out);
}

template <class Tag>
cudaError_t launch_half(CmdTopFusedShape shape, int tile_samples, const void* corr, int64_t samples, int64_t row_stride,
                        const cmdtop_mma::Params& params, float eps, void* out, bool overlap_previous,
                        cudaStream_t stream) {
  using A = HalfArithmetic<Tag>;
  if (shape == CmdTopFusedShape::base) {
    return tile_samples == 16
               ? launch_typed<BaseConfig<A, 16>>(corr, samples, row_stride, params, eps, out, overlap_previous, stream)
               : launch_typed<BaseConfig<A, 8>>(corr, samples, row_stride, params, eps, out, overlap_previous, stream);
  }
  return tile_samples == 16
             ? launch_typed<SmallConfig<A, 16>>(corr, samples, row_stride, params, eps, out, overlap_previous, stream)
             : launch_typed<SmallConfig<A, 8>>(corr, samples, row_stride, params, eps, out, overlap_previous, stream);
}

}  // namespace

int64_t cmdtop_mma_shared_bytes(CmdTopFusedShape shape, ElementType element_type, int tile_samples) {
  const bool base = shape == CmdTopFusedShape::base;
  if (element_type == ElementType::float32) {
    if (tile_samples != 8) return -1;
    return base ? Layout<BaseTf32Config>::shared_bytes : Layout<SmallTf32Config>::shared_bytes;
  }
  using A = HalfArithmetic<Fp16Tag>;  // bf16 has the same layout
  if (tile_samples == 16)
    return base ? Layout<BaseConfig<A, 16>>::shared_bytes : Layout<SmallConfig<A, 16>>::shared_bytes;
  if (tile_samples == 8) return base ? Layout<BaseConfig<A, 8>>::shared_bytes : Layout<SmallConfig<A, 8>>::shared_bytes;
  return -1;
}

cudaError_t launch_cmdtop_mma(CmdTopFusedShape shape, ElementType element_type, int tile_samples, const void* corr,
                              int64_t samples, int64_t row_stride, const CmdTopMmaLayer* layers, int layer_count,
                              float eps, void* out, int64_t out_row_stride, bool overlap_previous,
                              cudaStream_t stream) {
  if (samples == 0) return cudaSuccess;
  const int expected = shape == CmdTopFusedShape::base ? 3 : 2;
  const int element_bytes = element_type == ElementType::float32 ? 4 : 2;
  if (layer_count != expected || row_stride < cmdtop_mma::kCorrValues ||
      cmdtop_mma_shared_bytes(shape, element_type, tile_samples) < 0 || !is_aligned(out, 2 * element_bytes) ||
      !is_aligned(corr, element_bytes) || out_row_stride < cmdtop_mma::kOutputChannels || out_row_stride % 2 != 0) {
    return cudaErrorInvalidValue;
  }
  cmdtop_mma::Params params;
  params.out_row_stride = out_row_stride;
  for (int i = 0; i < layer_count; ++i) {
    if (!is_aligned(layers[i].weight, 16)) return cudaErrorInvalidValue;
    params.layer[i].weight = static_cast<const Words4*>(layers[i].weight);
    params.layer[i].bias = layers[i].bias;
    params.layer[i].gamma = layers[i].gamma;
    params.layer[i].beta = layers[i].beta;
  }
  switch (element_type) {
    case ElementType::float32:
      return shape == CmdTopFusedShape::base
                 ? launch_typed<BaseTf32Config>(corr, samples, row_stride, params, eps, out, overlap_previous, stream)
                 : launch_typed<SmallTf32Config>(corr, samples, row_stride, params, eps, out, overlap_previous, stream);
    case ElementType::bfloat16:
      return launch_half<Bf16Tag>(shape, tile_samples, corr, samples, row_stride, params, eps, out, overlap_previous,
                                  stream);
    case ElementType::float16:
      return launch_half<Fp16Tag>(shape, tile_samples, corr, samples, row_stride, params, eps, out, overlap_previous,
                                  stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace trackscope::gpu::ops::cuda
