#pragma once
// The one place where LibTorch 1.13 (Debian, CPU) and 2.x (GPU machine, CUDA) differ for this code base.
// Include only from gpu/ .cpp files.

#include <ATen/ATen.h>
#include <torch/version.h>

#define TRACKSCOPE_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace trackscope::gpu::compat {

/// Scaled-dot-product attention with an additive float mask. LibTorch 2.x dispatches to its fused kernels
/// (memory-efficient on fp32); 1.13 has no SDPA, so the math path is spelled out with the same semantics.
inline at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                               const at::Tensor& additive_mask, double scale) {
#if TRACKSCOPE_TORCH_AT_LEAST(2, 1)
  return at::scaled_dot_product_attention(q, k, v, additive_mask, /*dropout_p=*/0.0, /*is_causal=*/false, scale);
#else
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * scale + additive_mask;
  return at::matmul(at::softmax(scores, -1), v);
#endif
}

/// Allows or forbids TF32 tensor-core math for fp32 cuDNN convolutions and cuBLAS matmuls (both LibTorch
/// versions keep these two switches; 1.13 simply has no effect without CUDA). Parity runs need them off.
inline void set_tf32_allowed(bool allowed) {
  at::globalContext().setAllowTF32CuDNN(allowed);
  at::globalContext().setAllowTF32CuBLAS(allowed);
}

}  // namespace trackscope::gpu::compat
