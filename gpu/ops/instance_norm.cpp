// instance_norm_relu: argument checks, the reference, and the CPU/CUDA dispatch (contract in gpu/ops/ops.h).
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/Exception.h>

#include <optional>
#include <utility>

#include "gpu/ops/kernels.h"
#include "gpu/ops/ops.h"

namespace trackscope::gpu::ops {
namespace {

// allow_double: the reference also runs in float64 (tests compare the kernels with it).
void check_arguments(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, bool allow_double) {
  TORCH_CHECK(x.defined() && weight.defined() && bias.defined(), "instance_norm_relu: undefined tensor argument");
  TORCH_CHECK(x.dim() == 4, "instance_norm_relu: x must be [N,C,H,W], got ", x.sizes());
  const int64_t channels = x.size(1);
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == channels && bias.dim() == 1 && bias.size(0) == channels,
              "instance_norm_relu: weight and bias must be [", channels, "], got ", weight.sizes(), " and ",
              bias.sizes());
  TORCH_CHECK(x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16 || x.scalar_type() == at::kHalf ||
                  (allow_double && x.scalar_type() == at::kDouble),
              "instance_norm_relu: x must be float32, bfloat16 or float16", allow_double ? " (or float64)" : "",
              ", got ", x.scalar_type());
  TORCH_CHECK(weight.scalar_type() == bias.scalar_type() &&
                  (weight.scalar_type() == at::kFloat || weight.scalar_type() == x.scalar_type()),
              "instance_norm_relu: weight and bias must be float32 or ", x.scalar_type(), ", got ",
              weight.scalar_type(), " and ", bias.scalar_type());
  TORCH_CHECK(weight.device() == x.device() && bias.device() == x.device(),
              "instance_norm_relu: all tensors must be on one device: x ", x.device(), ", weight ", weight.device(),
              ", bias ", bias.device());
}

// The CUDA kernels' result, or nullopt where they do not run (not a CUDA tensor, a width they do not take, a build
// without them). residual undefined: the norm of x alone (result.sum stays undefined).
std::optional<SumAndNorm> instance_norm_on_cuda(const at::Tensor& x, const at::Tensor& residual,
                                                const at::Tensor& weight, const at::Tensor& bias, double eps) {
#ifdef TRACKSCOPE_WITH_CUDA_OPS
  if (!x.is_cuda()) return std::nullopt;
  const at::Tensor input = x.contiguous(at::MemoryFormat::ChannelsLast);
  SumAndNorm result{residual.defined() ? at::empty_like(input, at::MemoryFormat::ChannelsLast) : at::Tensor(),
                    at::empty_like(input, at::MemoryFormat::ChannelsLast)};
  const at::Tensor other = residual.defined() ? residual.contiguous(at::MemoryFormat::ChannelsLast) : residual;
  if (detail::instance_norm_relu_cuda(input, other, weight.contiguous(), bias.contiguous(), eps, result.sum,
                                      result.norm)) {
    return result;
  }
#else
  (void)x, (void)residual, (void)weight, (void)bias, (void)eps;
#endif
  return std::nullopt;
}

}  // namespace

at::Tensor instance_norm_relu_reference(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                        double eps) {
  check_arguments(x, weight, bias, /*allow_double=*/true);
  // Same op sequence as gpu/model's instance_norm (on the [N, H*W, C] view, which is free for channels-last).
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const at::Tensor pixels = x.permute({0, 2, 3, 1}).reshape({n, h * w, c});
  const at::Tensor centred = pixels - pixels.mean(1, /*keepdim=*/true);
  const at::Tensor scale = ((centred * centred).mean(1, /*keepdim=*/true) + eps).rsqrt() * weight.to(x.scalar_type());
  return (centred * scale + bias.to(x.scalar_type())).relu().view({n, h, w, c}).permute({0, 3, 1, 2});
}

at::Tensor instance_norm_relu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps) {
  check_arguments(x, weight, bias, /*allow_double=*/false);
  TORCH_CHECK(eps > 0.0, "instance_norm_relu: eps must be positive, got ", eps);
  if (auto result = instance_norm_on_cuda(x, at::Tensor(), weight, bias, eps)) return result->norm;
  if (x.device().is_cpu()) {
    const at::Tensor input = x.contiguous(at::MemoryFormat::ChannelsLast);
    at::Tensor y = at::empty_like(input, at::MemoryFormat::ChannelsLast);
    detail::instance_norm_relu_cpu(input, weight.to(at::kFloat).contiguous(), bias.to(at::kFloat).contiguous(), eps, y);
    return y;
  }
  // Elsewhere (a width the CUDA kernels do not take) the reference in float32, rounded once: in 16-bit its every
  // intermediate (the centred values, the variance) would be rounded too, 5% off in bfloat16 at C = 24 (measured on
  // an H100, 2026-12-05). For float32 input the conversions are no-ops.
  return instance_norm_relu_reference(x.to(at::kFloat), weight.to(at::kFloat), bias.to(at::kFloat), eps)
      .to(x.scalar_type());
}

SumAndNorm add_instance_norm_relu(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                                  const at::Tensor& bias, double eps) {
  check_arguments(x, weight, bias, /*allow_double=*/false);
  TORCH_CHECK(residual.defined() && residual.sizes() == x.sizes() && residual.scalar_type() == x.scalar_type() &&
                  residual.device() == x.device(),
              "add_instance_norm_relu: residual must match x (", x.sizes(), ", ", x.scalar_type(), ", ", x.device(),
              "), got ", residual.defined() ? residual.sizes() : at::IntArrayRef{}, ", ",
              residual.defined() ? residual.scalar_type() : at::ScalarType::Undefined);
  TORCH_CHECK(eps > 0.0, "add_instance_norm_relu: eps must be positive, got ", eps);
  if (auto result = instance_norm_on_cuda(x, residual, weight, bias, eps)) return *result;
  // Elsewhere the addition, then the norm (on the CPU one more pass over the sum than the CUDA kernel's).
  at::Tensor sum = x + residual;
  at::Tensor norm = instance_norm_relu(sum, weight, bias, eps);
  return {std::move(sum), std::move(norm)};
}

}  // namespace trackscope::gpu::ops
