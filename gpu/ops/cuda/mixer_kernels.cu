// Instantiations and launchers of the fused temporal mixer's kernels (design in mixer_kernels.cuh and
// docs/kernels.md §5).
#include <cstdint>

#include "gpu/ops/cuda/attention_mma_kernel.cuh"
#include "gpu/ops/cuda/launchers.h"
#include "gpu/ops/cuda/mixer_kernels.cuh"

namespace trackscope::gpu::ops::cuda {
namespace {

int64_t blocks_for_rows(int64_t rows) { return (rows + mixer::kRowWarps - 1) / mixer::kRowWarps; }

template <class Tag, bool Split>
cudaError_t launch_rows_typed(MixerRowOp op, const MixerRowsParams& p, cudaStream_t stream) {
  const int64_t blocks = blocks_for_rows(p.rows);
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  mixer::mixer_rows_kernel<Tag, Tag, Split><<<static_cast<unsigned>(blocks), kMixerRowThreads, 0, stream>>>(p, op);
  return cudaGetLastError();
}

template <class Tag, bool Split>
cudaError_t launch_attention_typed(const MixerAttentionParams& p, cudaStream_t stream) {
  const int64_t tiles = (p.frames + kMixerAttentionRows - 1) / kMixerAttentionRows;
  const int64_t blocks = p.sequences * p.heads * tiles;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  mixer::mixer_attention_kernel<Tag, Tag, Split>
      <<<static_cast<unsigned>(blocks), kMixerAttentionRows, mixer::kAttentionSharedBytes, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_mixer_rows(ElementType element_type, bool split3, MixerRowOp op, const MixerRowsParams& p,
                              cudaStream_t stream) {
  if (p.rows == 0) return cudaSuccess;
  if (p.k <= 0 || p.kp != mixer_padded_k(p.k) || (op == MixerRowOp::layer_norm && p.k > kMixerMaxNormWidth) ||
      (split3 && element_type != ElementType::float32)) {
    return cudaErrorInvalidValue;
  }
  switch (element_type) {
    case ElementType::float32:
      return split3 ? launch_rows_typed<F32Tag, true>(op, p, stream) : launch_rows_typed<F32Tag, false>(op, p, stream);
    case ElementType::bfloat16: return launch_rows_typed<Bf16Tag, false>(op, p, stream);
    case ElementType::float16: return launch_rows_typed<Fp16Tag, false>(op, p, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_mixer_attention(ElementType element_type, bool split3, const MixerAttentionParams& p,
                                   cudaStream_t stream) {
  if (p.sequences == 0 || p.frames == 0) return cudaSuccess;
  if (p.heads <= 0 || p.kp != mixer_padded_k(p.heads * kMixerHeadDim) ||
      (split3 && element_type != ElementType::float32)) {
    return cudaErrorInvalidValue;
  }
  switch (element_type) {
    case ElementType::float32:
      return split3 ? launch_attention_typed<F32Tag, true>(p, stream)
                    : launch_attention_typed<F32Tag, false>(p, stream);
    case ElementType::bfloat16: return launch_attention_typed<Bf16Tag, false>(p, stream);
    case ElementType::float16: return launch_attention_typed<Fp16Tag, false>(p, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_mixer_attention_mma(ElementType element_type, const MixerAttentionMmaParams& p,
                                       cudaStream_t stream) {
  if (p.sequences == 0 || p.frames == 0) return cudaSuccess;
  if (p.heads <= 0 || p.heads % 2 != 0 || p.frames < 0 || p.qkv_stride % 8 != 0 || p.out_stride % 2 != 0 ||
      p.qkv_stride < 3 * p.heads * kMixerHeadDim || p.out_stride < p.heads * kMixerHeadDim || !is_aligned(p.qkv, 16) ||
      !is_aligned(p.out, 4)) {
    return cudaErrorInvalidValue;
  }
  const int64_t blocks = p.sequences * p.heads * attention_mma::query_groups(p.frames);
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  const auto grid = static_cast<unsigned>(blocks);
  constexpr auto shared = static_cast<size_t>(attention_mma::kSharedBytes);
  switch (element_type) {
    case ElementType::bfloat16:
      attention_mma::attention_kernel<Bf16Tag><<<grid, attention_mma::kThreads, shared, stream>>>(p);
      break;
    case ElementType::float16:
      attention_mma::attention_kernel<Fp16Tag><<<grid, attention_mma::kThreads, shared, stream>>>(p);
      break;
    case ElementType::float32: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_mixer_head(ElementType element_type, const MixerHeadParams& p, cudaStream_t stream) {
  if (p.rows == 0) return cudaSuccess;
  if (p.k <= 0 || p.k > kMixerMaxNormWidth) return cudaErrorInvalidValue;
  const int64_t blocks = blocks_for_rows(p.rows);
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  const auto grid = static_cast<unsigned>(blocks);
  switch (element_type) {
    case ElementType::float32: mixer::mixer_head_kernel<F32Tag><<<grid, kMixerRowThreads, 0, stream>>>(p); break;
    case ElementType::bfloat16: mixer::mixer_head_kernel<Bf16Tag><<<grid, kMixerRowThreads, 0, stream>>>(p); break;
    case ElementType::float16: mixer::mixer_head_kernel<Fp16Tag><<<grid, kMixerRowThreads, 0, stream>>>(p); break;
  }
  return cudaGetLastError();
}

}  // namespace trackscope::gpu::ops::cuda
