// MixerFast: the temporal mixer as fused CUDA kernels + one GEMM per linear layer (contract in gpu/ops/mixer_fast.h).
#include "gpu/ops/mixer_fast.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>

#include "gpu/ops/cuda/mixer_layout.h"
#include "gpu/ops/kernels.h"
#include "gpu/ops/ops.h"

namespace trackscope::gpu::ops {
namespace {

constexpr int64_t kMixerRealInput = 854;
constexpr double kMixerNormEpsilon = 1e-5;

at::Tensor mixer_tensor(const MixerWeights::Lookup& lookup, const std::string& key, std::vector<int64_t> shape) {
  const std::optional<at::Tensor> t = lookup(key);
  TORCH_CHECK(t.has_value() && t->defined(), "MixerWeights: missing tensor ", key);
  TORCH_CHECK(t->sizes() == at::IntArrayRef(shape), "MixerWeights: ", key, " has shape ", t->sizes(), ", expected ",
              at::IntArrayRef(shape));
  return t->detach().to(at::kFloat);  // prepared copies: no autograd history, whatever the caller's mode
}

// One linear layer (or several stacked along the outputs) in the W' form of mixer_layout.h, on device in dtype.
at::Tensor pack_mixer_weights(const std::vector<std::pair<at::Tensor, at::Tensor>>& parts, bool split3,
                              at::ScalarType dtype, c10::Device device) {
  std::vector<at::Tensor> packed;
  for (const auto& [weight_any, bias_any] : parts) {
    const at::Tensor weight = weight_any.to(at::kCPU, at::kFloat).contiguous();
    const at::Tensor bias = bias_any.to(at::kCPU, at::kFloat).contiguous();
    const auto n = static_cast<int>(weight.size(0)), k = static_cast<int>(weight.size(1));
    at::Tensor out = at::empty({n, cuda::mixer_blocks(split3) * cuda::mixer_padded_k(k)}, at::kFloat);
    cuda::pack_mixer_linear(weight.data_ptr<float>(), bias.data_ptr<float>(), n, k, split3, out.data_ptr<float>());
    packed.push_back(out);
  }
  return at::cat(packed, 0).to(device, dtype).contiguous();
}

at::Tensor on_device_float(const at::Tensor& t, c10::Device device) { return t.to(device, at::kFloat).contiguous(); }

}  // namespace

MixerWeights MixerWeights::from_named(const Lookup& lookup, const std::string& prefix) {
  MixerWeights w;
  const std::optional<at::Tensor> input = lookup(prefix + "input_proj.weight");
  TORCH_CHECK(input.has_value() && input->dim() == 2 && input->size(1) == kMixerRealInput, "MixerWeights: ", prefix,
              "input_proj.weight missing or not [D, 854]");
  const int64_t d = input->size(0);
  TORCH_CHECK(d % cuda::kMixerHeadDim == 0 && d >= 2 * cuda::kMixerHeadDim, "MixerWeights: transformer width ", d,
              " is not a multiple of 64 with at least two heads");
  w.input_weight = input->detach().to(at::kFloat);
  w.input_bias = mixer_tensor(lookup, prefix + "input_proj.bias", {d});
  for (int l = 0;; ++l) {
    const std::string p = prefix + "transformer.layers." + std::to_string(l) + ".";
    if (!lookup(p + "layer_norm1.weight").has_value()) break;
    Layer layer;
    layer.ln1_weight = mixer_tensor(lookup, p + "layer_norm1.weight", {d});
    layer.ln1_bias = mixer_tensor(lookup, p + "layer_norm1.bias", {d});
    layer.query_weight = mixer_tensor(lookup, p + "attn.query_proj.weight", {d, d});
    layer.query_bias = mixer_tensor(lookup, p + "attn.query_proj.bias", {d});
    layer.key_weight = mixer_tensor(lookup, p + "attn.key_proj.weight", {d, d});
    layer.key_bias = mixer_tensor(lookup, p + "attn.key_proj.bias", {d});
    layer.value_weight = mixer_tensor(lookup, p + "attn.value_proj.weight", {d, d});
    layer.value_bias = mixer_tensor(lookup, p + "attn.value_proj.bias", {d});
    layer.final_weight = mixer_tensor(lookup, p + "attn.final_proj.weight", {d, d});
    layer.final_bias = mixer_tensor(lookup, p + "attn.final_proj.bias", {d});
    layer.ln2_weight = mixer_tensor(lookup, p + "layer_norm2.weight", {d});
    layer.ln2_bias = mixer_tensor(lookup, p + "layer_norm2.bias", {d});
    layer.dense_in_weight = mixer_tensor(lookup, p + "dense.0.weight", {4 * d, d});
    layer.dense_in_bias = mixer_tensor(lookup, p + "dense.0.bias", {4 * d});
    layer.dense_out_weight = mixer_tensor(lookup, p + "dense.2.weight", {d, 4 * d});
    layer.dense_out_bias = mixer_tensor(lookup, p + "dense.2.bias", {d});
    w.layers.push_back(std::move(layer));
  }
  TORCH_CHECK(!w.layers.empty(), "MixerWeights: no ", prefix, "transformer.layers.0.*");
  w.ln_out_weight = mixer_tensor(lookup, prefix + "transformer.ln_out.weight", {d});
  w.ln_out_bias = mixer_tensor(lookup, prefix + "transformer.ln_out.bias", {d});
  const std::optional<at::Tensor> output = lookup(prefix + "output_proj.weight");
  TORCH_CHECK(output.has_value() && output->dim() == 2 && output->size(0) >= 4 && output->size(1) == d,
              "MixerWeights: ", prefix, "output_proj.weight missing or not [>= 4, D]");
  w.output_weight = output->detach().to(at::kFloat);
  w.output_bias = mixer_tensor(lookup, prefix + "output_proj.bias", {output->size(0)});
  return w;
}

bool MixerFast::available(c10::Device device) {
#ifdef TRACKSCOPE_WITH_CUDA_OPS
  return device.is_cuda() && cuda_kernels_available();
#else
  (void)device;
  return false;
#endif
}

MixerFast::MixerFast(const MixerWeights& weights, c10::Device device, Options options)
    : device_(device), options_(options) {
  TORCH_CHECK(available(device), "MixerFast: needs a CUDA device and Trackscope's CUDA kernels (", device,
              "): ", cuda_kernels_status());
  const at::ScalarType dtype = options_.compute_dtype;
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kBFloat16 || dtype == at::kHalf,
              "MixerFast: compute dtype must be float32, bfloat16 or float16, got ", dtype);
  TORCH_CHECK(options_.input_channels >= kMixerRealInput && options_.max_rows_per_pass > 0 && options_.mlp_rows > 0,
              "MixerFast: input_channels ", options_.input_channels, " (>= 854), max_rows_per_pass ",
              options_.max_rows_per_pass, ", mlp_rows ", options_.mlp_rows);
  dim_ = weights.dim();
  heads_ = dim_ / cuda::kMixerHeadDim;
  TORCH_CHECK(dim_ <= cuda::kMixerMaxNormWidth, "MixerFast: transformer width ", dim_, " exceeds the kernels' ",
              cuda::kMixerMaxNormWidth);
  bool tf32_capable = false;
#ifdef TRACKSCOPE_WITH_CUDA_OPS
  tf32_capable = detail::cuda_compute_capability(device) >= 80;
#endif
  if (options_.arithmetic == Arithmetic::tf32x3) {
    TORCH_CHECK(dtype == at::kFloat && tf32_capable,
                "MixerFast: 3xTF32 needs float32 and compute capability 8.0 or later");
  }
  tf32x3_ = dtype == at::kFloat && tf32_capable && options_.arithmetic != Arithmetic::plain;

  // The input projection: its weight zero-padded to the input's width (the zero columns add nothing).
  const at::Tensor input_weight =
      at::constant_pad_nd(weights.input_weight, {0, options_.input_channels - weights.input_weight.size(1)}, 0.0);
  if (tf32x3_) {
    input_weight_ = pack_mixer_weights({{input_weight, weights.input_bias}}, true, at::kFloat, device_);
  } else {
    input_weight_ = input_weight.to(device_, dtype).contiguous();
    input_bias_ = weights.input_bias.to(device_, dtype).contiguous();
  }
  for (const MixerWeights::Layer& l : weights.layers) {
    Layer layer;
    layer.ln1_weight = on_device_float(l.ln1_weight, device_);
    layer.ln1_bias = on_device_float(l.ln1_bias, device_);
    layer.ln2_weight = on_device_float(l.ln2_weight, device_);
    layer.ln2_bias = on_device_float(l.ln2_bias, device_);
    layer.qkv =
        pack_mixer_weights({{l.query_weight, l.query_bias}, {l.key_weight, l.key_bias}, {l.value_weight, l.value_bias}},
                           tf32x3_, dtype, device_);
    layer.final_proj = pack_mixer_weights({{l.final_weight, l.final_bias}}, tf32x3_, dtype, device_);
    layer.dense_in = pack_mixer_weights({{l.dense_in_weight, l.dense_in_bias}}, tf32x3_, dtype, device_);
    layer.dense_out = pack_mixer_weights({{l.dense_out_weight, l.dense_out_bias}}, tf32x3_, dtype, device_);
    layers_.push_back(std::move(layer));
  }
  ln_out_weight_ = on_device_float(weights.ln_out_weight, device_);
  ln_out_bias_ = on_device_float(weights.ln_out_bias, device_);
  output_weight_ = on_device_float(weights.output_weight.narrow(0, 0, 4), device_);
  output_bias_ = on_device_float(weights.output_bias.narrow(0, 0, 4), device_);
  slopes_ = alibi_slopes(heads_, device_);
}

void MixerFast::gemm(const at::Tensor& a, const at::Tensor& w, at::Tensor& c, bool accumulate) const {
#ifdef TRACKSCOPE_WITH_CUDA_OPS
  if (tf32x3_) {
    detail::mixer_gemm_tf32x3_cuda(a, w, c, accumulate);
    return;
  }
#endif
  if (accumulate) {
    c.addmm_(a, w.t());
  } else {
    at::mm_out(c, a, w.t());
  }
}

at::Tensor MixerFast::forward(const at::Tensor& x) const {
  TORCH_CHECK(x.defined() && x.dim() == 3 && x.size(2) == options_.input_channels &&
                  x.scalar_type() == options_.compute_dtype && x.device() == device_,
              "MixerFast: input must be [S, T, ", options_.input_channels, "] ", options_.compute_dtype, " on ",
              device_, ", got ", x.defined() ? x.sizes() : at::IntArrayRef{}, " ",
              x.defined() ? x.scalar_type() : at::kFloat, " on ", x.defined() ? x.device() : c10::Device(at::kCPU));
  const int64_t sequences = x.size(0), frames = x.size(1);
  at::Tensor out = at::empty({sequences, frames, 4}, x.options().dtype(at::kFloat));
  if (sequences == 0 || frames == 0) return out;
  const at::Tensor input = x.contiguous();
  const int64_t per_pass = std::max<int64_t>(1, options_.max_rows_per_pass / frames);
  for (int64_t s0 = 0; s0 < sequences; s0 += per_pass) {
    const int64_t count = std::min(per_pass, sequences - s0);
    at::Tensor out_rows = out.narrow(0, s0, count).view({count * frames, 4});
    run_pass(input.narrow(0, s0, count).view({count * frames, options_.input_channels}), count, frames, out_rows);
  }
  return out;
}

void MixerFast::run_pass(const at::Tensor& x, int64_t sequences, int64_t frames, at::Tensor& out) const {
#ifdef TRACKSCOPE_WITH_CUDA_OPS
  using cuda::MixerRowOp;
  const int64_t rows = sequences * frames;
  const int64_t d = dim_;
  const int64_t blocks = cuda::mixer_blocks(tf32x3_);
  const auto options = x.options();
  const auto operand = [&](int64_t count, int64_t k) {
    return at::empty({count, blocks * cuda::mixer_padded_k(static_cast<int>(k))}, options);
  };
  at::Tensor h;  // the residual stream [rows, D]
  if (tf32x3_) {
    at::Tensor a = operand(rows, options_.input_channels);
    detail::mixer_rows_cuda(x, MixerRowOp::copy, nullptr, nullptr, kMixerNormEpsilon, true, a);
    h = at::empty({rows, d}, options);
    gemm(a, input_weight_, h, false);
  } else {
    h = at::linear(x, input_weight_, input_bias_).contiguous();
  }
  at::Tensor a = operand(rows, d);
  at::Tensor qkv = at::empty({rows, 3 * d}, options);
  const int64_t mlp_rows = std::min(rows, options_.mlp_rows);
  at::Tensor hidden = at::empty({mlp_rows, 4 * d}, options);
  at::Tensor activated = operand(mlp_rows, 4 * d);
  for (const Layer& layer : layers_) {
    detail::mixer_rows_cuda(h, MixerRowOp::layer_norm, &layer.ln1_weight, &layer.ln1_bias, kMixerNormEpsilon, tf32x3_,
                            a);
    gemm(a, layer.qkv, qkv, false);
    detail::mixer_attention_cuda(qkv, sequences, frames, heads_, slopes_, tf32x3_, a);
    gemm(a, layer.final_proj, h, true);
    for (int64_t r0 = 0; r0 < rows; r0 += mlp_rows) {
      const int64_t count = std::min(mlp_rows, rows - r0);
      at::Tensor h_part = h.narrow(0, r0, count);
      at::Tensor a_part = a.narrow(0, r0, count);
      at::Tensor hidden_part = hidden.narrow(0, 0, count);
      at::Tensor activated_part = activated.narrow(0, 0, count);
      detail::mixer_rows_cuda(h_part, MixerRowOp::layer_norm, &layer.ln2_weight, &layer.ln2_bias, kMixerNormEpsilon,
                              tf32x3_, a_part);
      gemm(a_part, layer.dense_in, hidden_part, false);
      detail::mixer_rows_cuda(hidden_part, MixerRowOp::gelu, nullptr, nullptr, kMixerNormEpsilon, tf32x3_,
                              activated_part);
      gemm(activated_part, layer.dense_out, h_part, true);
    }
  }
  detail::mixer_head_cuda(h, ln_out_weight_, ln_out_bias_, output_weight_, output_bias_, kMixerNormEpsilon, out);
#else
  (void)x;
  (void)sequences;
  (void)frames;
  (void)out;
  TORCH_CHECK(false, "MixerFast: this build has no CUDA kernels");
#endif
}

at::Tensor alibi_slopes(int64_t heads, c10::Device device) {
  TORCH_CHECK(heads >= 2 && heads % 2 == 0, "alibi_slopes: heads must be even and positive, got ", heads);
  const int64_t half = heads / 2;
  const double base = std::pow(24.0, 1.0 / static_cast<double>(half));
  const at::Tensor slope = at::pow(base, at::arange(1, half + 1, at::TensorOptions().device(device).dtype(at::kDouble)))
                               .reciprocal()
                               .to(at::kFloat);
  return at::cat({slope, slope}, 0).contiguous();
}

at::Tensor alibi_attention(const at::Tensor& qkv, const at::Tensor& slopes) {
  TORCH_CHECK(qkv.defined() && qkv.dim() == 3 && qkv.size(2) % (3 * cuda::kMixerHeadDim) == 0 && qkv.is_contiguous(),
              "alibi_attention: qkv must be contiguous [S, T, 3 * heads * 64], got ",
              qkv.defined() ? qkv.sizes() : at::IntArrayRef{});
  const int64_t heads = qkv.size(2) / (3 * cuda::kMixerHeadDim);
  TORCH_CHECK(slopes.defined() && slopes.numel() == heads && slopes.device() == qkv.device(),
              "alibi_attention: slopes must be [", heads, "] on ", qkv.device());
  TORCH_CHECK(qkv.is_cuda(), "alibi_attention: CUDA tensors only, got ", qkv.device());
#ifdef TRACKSCOPE_WITH_CUDA_OPS
  const int64_t sequences = qkv.size(0), frames = qkv.size(1), dim = heads * cuda::kMixerHeadDim;
  const at::Tensor rows = qkv.view({sequences * frames, 3 * dim});
  const at::Tensor slopes_f32 = slopes.to(at::kFloat).contiguous();
  at::Tensor attended = at::empty({sequences * frames, dim}, qkv.options());
  if (detail::mixer_attention_mma_cuda(rows, sequences, frames, heads, slopes_f32, attended)) return attended;
  // float32 and older GPUs: the fused mixer's SIMT kernel, into an operand row (its ones column is not read).
  at::Tensor out = at::empty({sequences * frames, cuda::mixer_padded_k(static_cast<int>(dim))}, qkv.options());
  detail::mixer_attention_cuda(rows, sequences, frames, heads, slopes_f32, /*split3=*/false, out);
  return out.narrow(1, 0, dim);
#else
  TORCH_CHECK(false, "alibi_attention: this build has no CUDA kernels");
  return {};
#endif
}

}  // namespace trackscope::gpu::ops
