// Instantiations and the launcher of the tensor-core CMDTop kernel (design in cmdtop_mma_kernel.cuh and
// docs/kernels.md §3c).
#include <cstdint>

#include "gpu/ops/cuda/cmdtop_mma_kernel.cuh"
#include "gpu/ops/cuda/launchers.h"

namespace trackscope::gpu::ops::cuda {
namespace {

template <class Config, class Element>
cudaError_t launch_typed(const void* corr, int64_t samples, int64_t row_stride, const cmdtop_mma::Params& params,
                         float eps, void* out, cudaStream_t stream) {
  const int64_t blocks = (samples + Config::samples - 1) / Config::samples;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  constexpr int shared_bytes = static_cast<int>(cmdtop_mma::Layout<Config>::shared_bytes);
  const auto kernel = cmdtop_mma::cmdtop_mma_kernel<Config, Element>;
  const cudaError_t error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes);
  if (error != cudaSuccess) return error;
  const bool vector_rows =
      row_stride % 8 == 0 && row_stride >= 8 * cmdtop_mma::kCorrVectors && reinterpret_cast<uintptr_t>(corr) % 16 == 0;
  kernel<<<static_cast<unsigned>(blocks), cmdtop_mma::kThreads, shared_bytes, stream>>>(
      static_cast<const uint16_t*>(corr), samples, row_stride, vector_rows, params, eps, static_cast<uint16_t*>(out));
  return cudaGetLastError();
}

template <class Element>
cudaError_t launch_element(CmdTopFusedShape shape, int tile_samples, const void* corr, int64_t samples,
                           int64_t row_stride, const cmdtop_mma::Params& params, float eps, void* out,
                           cudaStream_t stream) {
  if (shape == CmdTopFusedShape::base) {
    return tile_samples == 16
               ? launch_typed<cmdtop_mma::BaseConfig<16>, Element>(corr, samples, row_stride, params, eps, out, stream)
               : launch_typed<cmdtop_mma::BaseConfig<8>, Element>(corr, samples, row_stride, params, eps, out, stream);
  }
  return tile_samples == 16
             ? launch_typed<cmdtop_mma::SmallConfig<16>, Element>(corr, samples, row_stride, params, eps, out, stream)
             : launch_typed<cmdtop_mma::SmallConfig<8>, Element>(corr, samples, row_stride, params, eps, out, stream);
}

}  // namespace

int64_t cmdtop_mma_shared_bytes(CmdTopFusedShape shape, int tile_samples) {
  if (tile_samples != 16 && tile_samples != 8) return -1;
  if (shape == CmdTopFusedShape::base) {
    return tile_samples == 16 ? cmdtop_mma::Layout<cmdtop_mma::BaseConfig<16>>::shared_bytes
                              : cmdtop_mma::Layout<cmdtop_mma::BaseConfig<8>>::shared_bytes;
  }
  return tile_samples == 16 ? cmdtop_mma::Layout<cmdtop_mma::SmallConfig<16>>::shared_bytes
                            : cmdtop_mma::Layout<cmdtop_mma::SmallConfig<8>>::shared_bytes;
}

cudaError_t launch_cmdtop_mma(CmdTopFusedShape shape, ElementType element_type, int tile_samples, const void* corr,
                              int64_t samples, int64_t row_stride, const CmdTopMmaLayer* layers, int layer_count,
                              float eps, void* out, cudaStream_t stream) {
  if (samples == 0) return cudaSuccess;
  const int expected = shape == CmdTopFusedShape::base ? 3 : 2;
  if (layer_count != expected || row_stride < cmdtop_mma::kCorrValues || (tile_samples != 16 && tile_samples != 8) ||
      element_type == ElementType::float32 || reinterpret_cast<uintptr_t>(out) % 4 != 0 ||
      reinterpret_cast<uintptr_t>(corr) % 2 != 0) {
    return cudaErrorInvalidValue;
  }
  cmdtop_mma::Params params;
  for (int i = 0; i < layer_count; ++i) {
    if (reinterpret_cast<uintptr_t>(layers[i].weight) % 16 != 0) return cudaErrorInvalidValue;
    params.layer[i].weight = static_cast<const Words4*>(layers[i].weight);
    params.layer[i].bias = layers[i].bias;
    params.layer[i].gamma = layers[i].gamma;
    params.layer[i].beta = layers[i].beta;
  }
  return element_type == ElementType::bfloat16
             ? launch_element<Bf16Tag>(shape, tile_samples, corr, samples, row_stride, params, eps, out, stream)
             : launch_element<Fp16Tag>(shape, tile_samples, corr, samples, row_stride, params, eps, out, stream);
}

}  // namespace trackscope::gpu::ops::cuda
