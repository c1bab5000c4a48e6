// l2_normalise_channels and linear: argument checks, the reference compositions, and the CPU dispatch (contract in
// gpu/ops/ops.h).
#include <ATen/ops/empty.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/TensorOperators.h>
#include <c10/util/Exception.h>

#include <vector>

#include "gpu/ops/cpu/cpu_support.h"
#include "gpu/ops/kernels.h"
#include "gpu/ops/ops.h"

namespace trackscope::gpu::ops {

void l2_normalise_channels_out(const at::Tensor& x, at::Tensor& out) {
  TORCH_CHECK(x.defined() && x.dim() >= 1 && x.size(-1) > 0, "l2_normalise_channels: expected [..., C], got ",
              x.defined() ? x.sizes() : at::IntArrayRef{});
  TORCH_CHECK(out.defined() && out.sizes() == x.sizes() && out.scalar_type() == x.scalar_type() &&
                  out.device() == x.device() && out.is_contiguous(),
              "l2_normalise_channels: out must be a contiguous ", x.scalar_type(), " ", x.sizes(), " on ", x.device(),
              ", got ", out.defined() ? out.sizes() : at::IntArrayRef{});
  if (x.device().is_cpu() && (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16)) {
    detail::l2_normalise_channels_cpu(x.contiguous(), out);
    return;
  }
#ifdef TRACKSCOPE_WITH_CUDA_OPS
  if (x.is_cuda() && detail::l2_normalise_channels_cuda(x.contiguous(), out)) return;
#endif
  // The sum of squares and its clamp in float32 at least: 1e-12 is 0 in fp16, where an all-zero pixel would become
  // 0/0 (the CUDA kernel sums in float32 too).
  const at::Tensor wide = x.scalar_type() == at::kDouble ? x : x.to(at::kFloat);
  out.copy_(wide / at::sqrt(at::clamp_min(wide.square().sum(-1, /*keepdim=*/true), 1e-12)));
}

at::Tensor l2_normalise_channels(const at::Tensor& x) {
  TORCH_CHECK(x.defined() && x.dim() >= 1 && x.size(-1) > 0, "l2_normalise_channels: expected [..., C], got ",
              x.defined() ? x.sizes() : at::IntArrayRef{});
  at::Tensor out = at::empty(x.sizes(), x.options());
  l2_normalise_channels_out(x, out);
  return out;
}

at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias) {
  TORCH_CHECK(
      input.defined() && weight.defined() && input.dim() >= 1 && weight.dim() == 2 && input.size(-1) == weight.size(1),
      "linear: expected input [..., K] and weight [N, K], got ", input.defined() ? input.sizes() : at::IntArrayRef{},
      " and ", weight.defined() ? weight.sizes() : at::IntArrayRef{});
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)), "linear: bias must be [",
              weight.size(0), "], got ", bias.sizes());
  if (!(input.device().is_cpu() && input.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat &&
        (!bias.defined() || bias.scalar_type() == at::kFloat))) {
    return at::linear(input, weight, bias);
  }
  const at::Tensor x = input.contiguous();
  const at::Tensor w = weight.contiguous();
  const int64_t k = w.size(1), n = w.size(0), m = k == 0 ? 0 : x.numel() / k;
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape.back() = n;
  at::Tensor out = at::empty(shape, x.options());
  if (m == 0 || n == 0) return out;
  const at::Tensor rows = out.view({m, n});
  float beta = 0.0f;
  if (bias.defined()) {
    rows.copy_(bias.contiguous().view({1, n}).expand({m, n}));
    beta = 1.0f;
  } else if (k == 0) {
    return out.zero_();
  }
  detail::sgemm(false, true, m, n, k, 1.0f, x.data_ptr<float>(), k, w.data_ptr<float>(), k, beta, out.data_ptr<float>(),
                n);
  return out;
}

}  // namespace trackscope::gpu::ops
