// The launcher of the one-pass residual add + LayerNorm (layer_norm_kernel.cuh has the kernel and its contract; the
// CPU emulation test runs the same source).

#include "gpu/ops/cuda/launchers.h"
#include "gpu/ops/cuda/layer_norm_kernel.cuh"

namespace trackscope::gpu::ops::cuda {
namespace {

template <class Element>
cudaError_t launch_typed(const layer_norm::LayerNormShape& s, const void* x, const void* residual, const void* weight,
                         const void* bias, void* sum, void* norm, cudaStream_t stream) {
  const int64_t blocks = layer_norm::block_count(s);
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  const auto grid = static_cast<unsigned>(blocks);
  if (residual != nullptr) {
    layer_norm::layer_norm_kernel<Element, true>
        <<<grid, layer_norm::kThreads, 0, stream>>>(s, x, residual, weight, bias, sum, norm);
  } else {
    layer_norm::layer_norm_kernel<Element, false>
        <<<grid, layer_norm::kThreads, 0, stream>>>(s, x, residual, weight, bias, sum, norm);
  }
  return cudaGetLastError();
}

template <class Element>
cudaError_t launch_head_typed(const layer_norm::LayerNormShape& s, const void* x, const void* residual,
                              const void* weight, const void* bias, const void* head_weight, const void* head_bias,
                              const layer_norm::HeadState& state, cudaStream_t stream) {
  const int64_t blocks = layer_norm::block_count(s);
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  layer_norm::head_kernel<Element><<<static_cast<unsigned>(blocks), layer_norm::kThreads, 0, stream>>>(
      s, x, residual, weight, bias, head_weight, head_bias, state);
  return cudaGetLastError();
}

// A null pointer (no residual, no sum) is no obstacle.
bool aligned(const void* pointer) { return pointer == nullptr || is_aligned(pointer, 16); }

}  // namespace

bool layer_norm_eligible(int64_t width, ElementType element_type, const void* x, const void* residual,
                         const void* weight, const void* bias, const void* sum, const void* norm) {
  if (width > 0x7fffffff || (residual == nullptr) != (sum == nullptr) || !aligned(x) || !aligned(residual) ||
      !aligned(weight) || !aligned(bias) || !aligned(sum) || !aligned(norm)) {
    return false;
  }
  switch (element_type) {
    case ElementType::float32: return layer_norm::eligible_width<float>(static_cast<int>(width));
    case ElementType::bfloat16: return layer_norm::eligible_width<Bf16Tag>(static_cast<int>(width));
    case ElementType::float16: return layer_norm::eligible_width<Fp16Tag>(static_cast<int>(width));
  }
  return false;
}

cudaError_t launch_layer_norm(int64_t rows, int64_t width, float eps, ElementType element_type, const void* x,
                              const void* residual, const void* weight, const void* bias, void* sum, void* norm,
                              cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (!layer_norm_eligible(width, element_type, x, residual, weight, bias, sum, norm)) return cudaErrorInvalidValue;
  const layer_norm::LayerNormShape shape{rows, static_cast<int>(width), eps};
  switch (element_type) {
    case ElementType::float32: return launch_typed<float>(shape, x, residual, weight, bias, sum, norm, stream);
    case ElementType::bfloat16: return launch_typed<Bf16Tag>(shape, x, residual, weight, bias, sum, norm, stream);
    case ElementType::float16: return launch_typed<Fp16Tag>(shape, x, residual, weight, bias, sum, norm, stream);
  }
  return cudaErrorInvalidValue;
}

bool layer_norm_head_eligible(int64_t width, ElementType element_type, const void* x, const void* residual,
                              const void* weight, const void* bias, const void* head_weight) {
  // The residual form's rules; the head kernel writes no sum or norm, so residual stands in for both (non-null and
  // aligned as they would have to be).
  return x != nullptr && residual != nullptr && is_aligned(head_weight, 16) &&
         layer_norm_eligible(width, element_type, x, residual, weight, bias, residual, residual);
}

cudaError_t launch_layer_norm_head(int64_t rows, int64_t width, float eps, ElementType element_type, const void* x,
                                   const void* residual, const void* weight, const void* bias, const void* head_weight,
                                   const void* head_bias, const float* previous_tracks, const float* previous_occlusion,
                                   const float* previous_expected_dist, float* next_tracks, float* next_occlusion,
                                   float* next_expected_dist, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (!layer_norm_head_eligible(width, element_type, x, residual, weight, bias, head_weight)) {
    return cudaErrorInvalidValue;
  }
  const layer_norm::LayerNormShape shape{rows, static_cast<int>(width), eps};
  const layer_norm::HeadState state{previous_tracks, previous_occlusion, previous_expected_dist,
                                    next_tracks,     next_occlusion,     next_expected_dist};
  switch (element_type) {
    case ElementType::float32:
      return launch_head_typed<float>(shape, x, residual, weight, bias, head_weight, head_bias, state, stream);
    case ElementType::bfloat16:
      return launch_head_typed<Bf16Tag>(shape, x, residual, weight, bias, head_weight, head_bias, state, stream);
    case ElementType::float16:
      return launch_head_typed<Fp16Tag>(shape, x, residual, weight, bias, head_weight, head_bias, state, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace trackscope::gpu::ops::cuda
