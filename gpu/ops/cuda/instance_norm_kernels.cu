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
// The kernels count positions in float: exact up to 2^24 per sample (a 4096 x 4096 plane).
constexpr int64_t kMaxPositions = int64_t{1} << 24;

int64_t vector_width(ElementType element_type) { return element_type == ElementType::float32 ? 4 : 8; }

// The pointers of one launch: x (and residual, sum: both null or both set) in, y out, the weights and the workspace.
struct Buffers {
  const void* x;
  const void* residual;
  void* sum;
  const void* weight;
  const void* bias;
  float2* partial;
  unsigned* tickets;
  float2* scale_shift;
  void* y;
};

// Element, Weight: float, Bf16Tag or Fp16Tag.
template <class Element, class Weight>
cudaError_t launch_typed(const InstanceNormShape& s, const Buffers& b, float eps, cudaStream_t stream) {
  constexpr int64_t kWidth = instance_norm::kVectorElements<Element>;
  const int64_t split_positions = instance_norm::positions_per_split(s.samples, s.positions, s.channels, kWidth);
  const int64_t splits = instance_norm::split_count(s.samples, s.positions, s.channels, kWidth);
  cudaError_t error = cudaMemsetAsync(b.tickets, 0, static_cast<size_t>(s.samples) * sizeof(unsigned), stream);
  if (error != cudaSuccess) return error;
  const auto blocks = static_cast<unsigned>(s.samples * splits);
  const auto shared = static_cast<size_t>(instance_norm::statistics_shared_bytes<Element>());
  auto* partial = reinterpret_cast<float*>(b.partial);
  auto* scale_shift = reinterpret_cast<float*>(b.scale_shift);
  if (b.residual != nullptr) {
    instance_norm::statistics_kernel<Element, Weight, true><<<blocks, instance_norm::kThreads, shared, stream>>>(
        b.x, b.residual, b.sum, s.positions, s.channels, split_positions, static_cast<int>(splits), partial, b.tickets,
        b.weight, b.bias, eps, scale_shift);
  } else {
    instance_norm::statistics_kernel<Element, Weight, false><<<blocks, instance_norm::kThreads, shared, stream>>>(
        b.x, nullptr, nullptr, s.positions, s.channels, split_positions, static_cast<int>(splits), partial, b.tickets,
        b.weight, b.bias, eps, scale_shift);
  }
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  const int64_t parts = instance_norm::apply_parts(s.samples, s.positions, s.channels, kWidth);
  instance_norm::apply_kernel<Element>
      <<<static_cast<unsigned>(s.samples * parts), instance_norm::kThreads, 0, stream>>>(
          b.residual != nullptr ? b.sum : b.x, s.positions, s.channels, static_cast<int>(parts), scale_shift, b.y);
  return cudaGetLastError();
}

template <class Element>
cudaError_t launch_with_weights(const InstanceNormShape& s, ElementType weight_type, const Buffers& b, float eps,
                                cudaStream_t stream) {
  switch (weight_type) {
    case ElementType::float32: return launch_typed<Element, float>(s, b, eps, stream);
    case ElementType::bfloat16: return launch_typed<Element, Bf16Tag>(s, b, eps, stream);
    case ElementType::float16: return launch_typed<Element, Fp16Tag>(s, b, eps, stream);
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

bool instance_norm_eligible(const InstanceNormShape& s, ElementType element_type, const void* x, const void* residual,
                            const void* sum, const void* y) {
  return channels_eligible(s.channels, element_type) && s.samples > 0 && s.samples <= kMaxSamples && s.positions > 0 &&
         s.positions <= kMaxPositions && instance_norm_splits(s, element_type) <= kMaxBlocks / s.samples &&
         is_aligned(x, 16) && is_aligned(y, 16) && (residual == nullptr) == (sum == nullptr) &&
         is_aligned(residual, 16) && is_aligned(sum, 16);
}

int64_t instance_norm_splits(const InstanceNormShape& s, ElementType element_type) {
  return instance_norm::split_count(s.samples, s.positions, s.channels, vector_width(element_type));
}

cudaError_t launch_instance_norm_relu(const InstanceNormShape& shape, ElementType element_type, const void* x,
                                      const void* residual, ElementType weight_type, const void* weight,
                                      const void* bias, float eps, void* workspace, void* sum, void* y,
                                      cudaStream_t stream) {
  if (shape.samples == 0 || shape.positions == 0 || shape.channels == 0) return cudaSuccess;
  if ((residual == nullptr) != (sum == nullptr)) return cudaErrorInvalidValue;
  Buffers b{x, residual, sum, weight, bias, static_cast<float2*>(workspace), nullptr, nullptr, y};
  b.scale_shift = b.partial + shape.samples * instance_norm_splits(shape, element_type) * shape.channels;
  b.tickets = reinterpret_cast<unsigned*>(b.scale_shift + shape.samples * shape.channels);
  switch (element_type) {
    case ElementType::float32: return launch_with_weights<float>(shape, weight_type, b, eps, stream);
    case ElementType::bfloat16: return launch_with_weights<Bf16Tag>(shape, weight_type, b, eps, stream);
    case ElementType::float16: return launch_with_weights<Fp16Tag>(shape, weight_type, b, eps, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace trackscope::gpu::ops::cuda
