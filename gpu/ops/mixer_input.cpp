// The temporal mixer's glue ops, mixer_input_rows, the residual add + LayerNorm and the MLP's linear + GELU:
// argument checks, the ATen composites (the CPU's implementation and the reference) and the CUDA dispatch (contracts
// in gpu/ops/ops.h).
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_addmm_activation.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/sin.h>
#include <ATen/Context.h>
#include <c10/util/Exception.h>

#include <numbers>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "gpu/ops/cuda/mixer_input_layout.h"
#include "gpu/ops/kernels.h"
#include "gpu/ops/ops.h"

namespace trackscope::gpu::ops {
namespace {

bool is_row_dtype(at::ScalarType t) { return t == at::kFloat || t == at::kBFloat16 || t == at::kHalf; }

}  // namespace

at::Tensor relative_motion_encoding(const at::Tensor& tracks) {
  const int64_t frames = tracks.size(-2);
  const at::Tensor earlier = tracks.narrow(-2, 0, frames - 1), later = tracks.narrow(-2, 1, frames - 1);
  const double scale = 1.0 / 256.0;  // (resized / original) / original at 256x256: exact
  const at::Tensor forward_motion = at::constant_pad_nd(earlier - later, {0, 0, 0, 1}, 0.0).mul(scale);
  const at::Tensor backward_motion = at::constant_pad_nd(later - earlier, {0, 0, 1, 0}, 0.0).mul(scale);
  const at::Tensor u = at::cat({forward_motion, backward_motion}, -1);                             // [..., T, 4]
  const at::Tensor scales = at::pow(2.0, at::arange(cuda::kMixerMotionFrequencies, u.options()));  // 2^s, exact
  std::vector<int64_t> shape(u.sizes().begin(), u.sizes().end() - 1);
  shape.push_back(-1);
  const at::Tensor xb = (u.unsqueeze(-2) * scales.unsqueeze(-1)).reshape(shape);     // s-major: xb[4 s + c]
  return at::cat({u, at::sin(at::cat({xb, xb + 0.5 * std::numbers::pi}, -1))}, -1);  // 4 + 40 + 40 = 84
}

void mixer_input_rows_out(const at::Tensor& occlusion, const at::Tensor& expected, const at::Tensor& encoded,
                          const at::Tensor& tracks, at::Tensor& out, GluePath path) {
  TORCH_CHECK(occlusion.defined() && expected.defined() && encoded.defined() && tracks.defined() && out.defined(),
              "mixer_input_rows: undefined tensor argument");
  TORCH_CHECK(tracks.dim() == 3 && tracks.size(2) == 2 && tracks.size(1) > 0 && tracks.scalar_type() == at::kFloat,
              "mixer_input_rows: tracks must be float32 [n,T,2] with T > 0, got ", tracks.scalar_type(), " ",
              tracks.sizes());
  const int64_t queries = tracks.size(0), frames = tracks.size(1);
  for (const auto& [tensor, name] : {std::pair{&occlusion, "occlusion"}, std::pair{&expected, "expected"}}) {
    TORCH_CHECK(tensor->dim() == 2 && tensor->size(0) == queries && tensor->size(1) == frames &&
                    tensor->scalar_type() == at::kFloat,
                "mixer_input_rows: ", name, " must be float32 [", queries, ",", frames, "], got ",
                tensor->scalar_type(), " ", tensor->sizes());
  }
  TORCH_CHECK(out.dim() == 3 && out.size(0) == queries && out.size(1) == frames &&
                  out.size(2) >= cuda::kMixerInputColumns && out.is_contiguous() && is_row_dtype(out.scalar_type()),
              "mixer_input_rows: out must be a contiguous float32/bfloat16/float16 [", queries, ",", frames,
              ",>=", cuda::kMixerInputColumns, "], got ", out.scalar_type(), " ", out.sizes(),
              (out.is_contiguous() ? "" : " (not contiguous)"));
  TORCH_CHECK(encoded.dim() == 3 && encoded.size(0) == queries && encoded.size(1) == frames &&
                  encoded.size(2) == cuda::kMixerEncodedColumns && encoded.stride(2) == 1 &&
                  encoded.scalar_type() == out.scalar_type(),
              "mixer_input_rows: encoded must be ", out.scalar_type(), " [", queries, ",", frames, ",",
              cuda::kMixerEncodedColumns, "] with unit column stride, got ", encoded.scalar_type(), " ",
              encoded.sizes(), " strides ", encoded.strides());
  for (const at::Tensor* t : {&occlusion, &expected, &encoded, &tracks}) {
    TORCH_CHECK(t->device() == out.device(), "mixer_input_rows: inputs on ", t->device(), ", out on ", out.device());
  }
  if (queries == 0) return;
  if (path == GluePath::automatic && detail::use_cuda(out, "mixer_input_rows")) {
#ifdef TRACKSCOPE_WITH_CUDA_OPS
    detail::mixer_input_cuda(occlusion.contiguous(), expected.contiguous(), encoded, tracks.contiguous(), out);
    return;
#endif
  }
  const at::ScalarType dtype = out.scalar_type();
  out.narrow(2, 0, 1).copy_(occlusion.unsqueeze(-1));
  out.narrow(2, 1, 1).copy_(expected.unsqueeze(-1));
  out.narrow(2, cuda::kMixerEncodedBegin, cuda::kMixerEncodedColumns).copy_(encoded);
  out.narrow(2, cuda::kMixerMotionBegin, cuda::kMixerInputColumns - cuda::kMixerMotionBegin)
      .copy_(relative_motion_encoding(tracks).to(dtype));
  if (out.size(2) > cuda::kMixerInputColumns) {
    out.narrow(2, cuda::kMixerInputColumns, out.size(2) - cuda::kMixerInputColumns).zero_();
  }
}

namespace {

void check_layer_norm_arguments(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  TORCH_CHECK(x.defined() && weight.defined() && bias.defined(), "layer_norm: undefined tensor argument");
  TORCH_CHECK(x.dim() >= 1 && is_row_dtype(x.scalar_type()), "layer_norm: x must be float32/bfloat16/float16, got ",
              x.scalar_type(), " ", x.sizes());
  const int64_t width = x.size(-1);
  for (const auto& [tensor, name] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
    TORCH_CHECK(tensor->dim() == 1 && tensor->size(0) == width && tensor->scalar_type() == x.scalar_type() &&
                    tensor->device() == x.device(),
                "layer_norm: ", name, " must be ", x.scalar_type(), " [", width, "] on ", x.device(), ", got ",
                tensor->scalar_type(), " ", tensor->sizes(), " on ", tensor->device());
  }
}

void check_residual(const at::Tensor& x, const at::Tensor& residual, const char* op) {
  TORCH_CHECK(residual.defined() && residual.sizes() == x.sizes() && residual.scalar_type() == x.scalar_type() &&
                  residual.device() == x.device(),
              op, ": residual must be ", x.scalar_type(), " ", x.sizes(), " on ", x.device(), ", got ",
              residual.defined() ? residual.toString() : std::string("undefined"), " ",
              residual.defined() ? residual.sizes() : at::IntArrayRef{});
}

at::Tensor composite_layer_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps) {
  return at::layer_norm(x, {x.size(-1)}, weight, bias, eps, at::globalContext().userEnabledCuDNN()).contiguous();
}

// The CUDA kernel for both forms (residual undefined: the plain LayerNorm, no sum); nullopt where it does not run
// (the composite path, the CPU, an ineligible width or alignment).
std::optional<SumAndNorm> layer_norm_on_cuda(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                                             const at::Tensor& bias, double eps, GluePath path, const char* op) {
  if (path != GluePath::automatic || x.numel() == 0 || !detail::use_cuda(x, op)) return std::nullopt;
#ifdef TRACKSCOPE_WITH_CUDA_OPS
  const at::Tensor input = x.contiguous();
  SumAndNorm result{residual.defined() ? at::empty_like(input) : at::Tensor(), at::empty_like(input)};
  if (detail::layer_norm_cuda(input, residual.defined() ? residual.contiguous() : residual, weight.contiguous(),
                              bias.contiguous(), eps, result.sum, result.norm)) {
    return result;
  }
#else
  (void)residual, (void)weight, (void)bias, (void)eps;
#endif
  return std::nullopt;
}

// add_layer_norm after its argument checks (the head's fallback has made them already).
SumAndNorm add_layer_norm_after_checks(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                                       const at::Tensor& bias, double eps, GluePath path, const char* op) {
  if (auto result = layer_norm_on_cuda(x, residual, weight, bias, eps, path, op)) return *result;
  SumAndNorm result;
  result.sum = x + residual;
  result.norm = composite_layer_norm(result.sum, weight, bias, eps);
  return result;
}

}  // namespace

at::Tensor layer_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps,
                      GluePath path) {
  check_layer_norm_arguments(x, weight, bias);
  if (auto result = layer_norm_on_cuda(x, at::Tensor(), weight, bias, eps, path, "layer_norm")) return result->norm;
  return composite_layer_norm(x, weight, bias, eps);
}

SumAndNorm add_layer_norm(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                          const at::Tensor& bias, double eps, GluePath path) {
  check_layer_norm_arguments(x, weight, bias);
  check_residual(x, residual, "add_layer_norm");
  return add_layer_norm_after_checks(x, residual, weight, bias, eps, path, "add_layer_norm");
}

MixerState add_layer_norm_head(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                               const at::Tensor& bias, double eps, const at::Tensor& head_weight,
                               const at::Tensor& head_bias, const MixerState& previous, GluePath path) {
  TORCH_CHECK(x.defined() && x.dim() == 3, "add_layer_norm_head: x must be [S, T, W], got ",
              x.defined() ? x.sizes() : at::IntArrayRef{});
  check_layer_norm_arguments(x, weight, bias);
  check_residual(x, residual, "add_layer_norm_head");
  const int64_t width = x.size(2);
  TORCH_CHECK(head_weight.defined() && head_bias.defined() && head_weight.dim() == 2 && head_weight.size(0) == 4 &&
                  head_weight.size(1) == width && head_bias.dim() == 1 && head_bias.size(0) == 4 &&
                  head_weight.scalar_type() == x.scalar_type() && head_bias.scalar_type() == x.scalar_type() &&
                  head_weight.device() == x.device() && head_bias.device() == x.device(),
              "add_layer_norm_head: head_weight [4, ", width, "] and head_bias [4] of ", x.scalar_type(), " on ",
              x.device(), " expected");
  const std::vector<int64_t> rows{x.size(0), x.size(1)};
  const std::vector<int64_t> track_sizes{x.size(0), x.size(1), 2};
  for (const auto& [tensor, sizes, name] :
       {std::tuple{&previous.tracks, &track_sizes, "tracks"}, std::tuple{&previous.occlusion, &rows, "occlusion"},
        std::tuple{&previous.expected_dist, &rows, "expected_dist"}}) {
    TORCH_CHECK(tensor->defined() && tensor->sizes() == at::IntArrayRef(*sizes) &&
                    tensor->scalar_type() == at::kFloat && tensor->device() == x.device(),
                "add_layer_norm_head: previous ", name, " must be float32 ", at::IntArrayRef(*sizes), " on ",
                x.device(), ", got ", tensor->defined() ? tensor->toString() : std::string("undefined"), " ",
                tensor->defined() ? tensor->sizes() : at::IntArrayRef{});
  }
  if (path == GluePath::automatic && x.numel() > 0 && detail::use_cuda(x, "add_layer_norm_head")) {
#ifdef TRACKSCOPE_WITH_CUDA_OPS
    const at::Tensor tracks = previous.tracks.contiguous(), occlusion = previous.occlusion.contiguous(),
                     expected = previous.expected_dist.contiguous();
    MixerState next{at::empty_like(tracks), at::empty_like(occlusion), at::empty_like(expected)};
    if (detail::layer_norm_head_cuda(x.contiguous(), residual.contiguous(), weight.contiguous(), bias.contiguous(), eps,
                                     head_weight.contiguous(), head_bias.contiguous(), tracks, occlusion, expected,
                                     next.tracks, next.occlusion, next.expected_dist)) {
      return next;
    }
#endif
  }
  return apply_mixer_update(
      at::linear(add_layer_norm_after_checks(x, residual, weight, bias, eps, path, "add_layer_norm_head").norm,
                 head_weight, head_bias)
          .to(at::kFloat),
      previous);
}

MixerState apply_mixer_update(const at::Tensor& update, const MixerState& previous) {
  return MixerState{update.narrow(-1, 0, 2) + previous.tracks, update.select(-1, 2) + previous.occlusion,
                    update.select(-1, 3) + previous.expected_dist};
}

at::Tensor linear_gelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, MlpGelu form) {
  TORCH_CHECK(x.defined() && weight.defined() && bias.defined(), "linear_gelu: undefined tensor argument");
  TORCH_CHECK(x.dim() >= 1 && weight.dim() == 2 && bias.dim() == 1 && x.size(-1) == weight.size(1) &&
                  bias.size(0) == weight.size(0),
              "linear_gelu: x [..., K], weight [N, K] and bias [N] expected, got ", x.sizes(), ", ", weight.sizes(),
              " and ", bias.sizes());
  TORCH_CHECK(weight.scalar_type() == x.scalar_type() && bias.scalar_type() == x.scalar_type(),
              "linear_gelu: weight and bias must be ", x.scalar_type(), ", got ", weight.scalar_type(), " and ",
              bias.scalar_type());
  if (form == MlpGelu::exact) return at::gelu(at::linear(x, weight, bias));
  // Off CUDA the same form written out: the CPU's _addmm_activation applies the erf GELU (LibTorch 1.13).
  if (!x.is_cuda()) return at::gelu(at::linear(x, weight, bias), "tanh");
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes.back() = weight.size(0);
  return at::_addmm_activation(bias, x.reshape({-1, x.size(-1)}), weight.t(), 1, 1, /*use_gelu=*/true).view(sizes);
}

}  // namespace trackscope::gpu::ops
