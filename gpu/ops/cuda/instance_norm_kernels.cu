// The launchers of the fused InstanceNorm + ReLU (instance_norm_kernel.cuh has the statistics and apply kernels,
// their design and contract; the CPU emulation test runs the same source).

#include <cstdint>

#include "gpu/ops/cuda/instance_norm_kernel.cuh"
#include "gpu/ops/cuda/launchers.h"

namespace trackscope::gpu::ops::cuda {
namespace {

// The contract of launchers.h (samples <= 65535: the grids had a row per sample); the grids are one-dimensional, so
// the blocks of the statistics (samples x splits) must also number below 2^31.
constexpr int64_t kMaxSamples = 65535;
constexpr int64_t kMaxBlocks = 0x7fffffffLL;

int64_t vector_width(ElementType element_type) { return element_type == ElementType::float32 ? 4 : 8; }

// Element, Weight: float, Bf16Tag or Fp16Tag.
template <class Element, class Weight>
cudaError_t launch_typed(const InstanceNormShape& s, const void* x, const void* weight, const void* bias, float eps,
                         float2* partial, unsigned* tickets, float2* scale_shift, void* y, cudaStream_t stream) {
  constexpr int64_t kWidth = instance_norm::kVectorElements<Element>;
  const int64_t split_positions = instance_norm::positions_per_split(s.samples, s.positions, s.channels, kWidth);
  const int64_t splits = instance_norm::split_count(s.samples, s.positions, s.channels, kWidth);
  cudaError_t error = cudaMemsetAsync(tickets, 0, static_cast<size_t>(s.samples) * sizeof(unsigned), stream);
  if (error != cudaSuccess) return error;
  instance_norm::statistics_kernel<Element, Weight>
      <<<static_cast<unsigned>(s.samples * splits), instance_norm::kThreads,
         static_cast<size_t>(instance_norm::statistics_shared_bytes<Element>()), stream>>>(
          x, s.positions, s.channels, split_positions, static_cast<int>(splits), reinterpret_cast<float*>(partial),
          tickets, weight, bias, eps, reinterpret_cast<float*>(scale_shift));
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  const int64_t parts = instance_norm::apply_parts(s.samples, s.positions, s.channels, kWidth);
  instance_norm::apply_kernel<Element>
      <<<static_cast<unsigned>(s.samples * parts), instance_norm::kThreads, 0, stream>>>(
          x, s.positions, s.channels, static_cast<int>(parts), reinterpret_cast<const float*>(scale_shift), y);
  return cudaGetLastError();
}

template <class Element>
cudaError_t launch_with_weights(const InstanceNormShape& s, ElementType weight_type, const void* x, const void* weight,
                                const void* bias, float eps, float2* partial, unsigned* tickets, float2* scale_shift,
                                void* y, cudaStream_t stream) {
  switch (weight_type) {
    case ElementType::float32:
      return launch_typed<Element, float>(s, x, weight, bias, eps, partial, tickets, scale_shift, y, stream);
    case ElementType::bfloat16:
      return launch_typed<Element, Bf16Tag>(s, x, weight, bias, eps, partial, tickets, scale_shift, y, stream);
    case ElementType::float16:
      return launch_typed<Element, Fp16Tag>(s, x, weight, bias, eps, partial, tickets, scale_shift, y, stream);
  }
  return cudaErrorInvalidValue;
}

bool channels_eligible(int64_t channels, ElementType element_type) {
  switch (element_type) {
    case ElementType::float32: return instance_norm::eligible_channels<float>(channels);
    case ElementType::bfloat16: return instance_norm::eligible_channels<Bf16Tag>(channels);
    case ElementType::float16: return instance_norm::eligible_channels<Fp16Tag>(channels);
  }
  return false;
}

}  // namespace

bool instance_norm_eligible(const InstanceNormShape& s, ElementType element_type, const void* x, const void* y) {
  return channels_eligible(s.channels, element_type) && s.samples > 0 && s.samples <= kMaxSamples && s.positions > 0 &&
         instance_norm_splits(s, element_type) <= kMaxBlocks / s.samples && is_aligned(x, 16) && is_aligned(y, 16);
}

int64_t instance_norm_splits(const InstanceNormShape& s, ElementType element_type) {
  return instance_norm::split_count(s.samples, s.positions, s.channels, vector_width(element_type));
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
      return launch_with_weights<Bf16Tag>(shape, weight_type, x, weight, bias, eps, partial, tickets, scale_shift, y,
                                          stream);
    case ElementType::float16:
      return launch_with_weights<Fp16Tag>(shape, weight_type, x, weight, bias, eps, partial, tickets, scale_shift, y,
                                          stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace trackscope::gpu::ops::cuda
