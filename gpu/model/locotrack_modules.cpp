// LocoTrack's modules: parameter registration under the official names, default initialisation, and the
// forward computations of the backbone, the correlation encoder and the temporal mixer (docs/locotrack-spec.md §2-§4).
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cmath>
#include <string>
#include <utility>

#include "gpu/model/locotrack.h"
#include "gpu/torch_compat.h"

namespace trackscope::gpu::model {
namespace {

constexpr double kNormEpsilon = 1e-5;

// PyTorch's default Conv/Linear initialisation: kaiming_uniform(a=sqrt(5)) gives bound 1/sqrt(fan_in) for the
// weight; the bias uses the same bound. Only matters for training from scratch: loading replaces the values.
void default_initialise(at::Tensor& weight, at::Tensor& bias, std::int64_t fan_in) {
  at::NoGradGuard no_grad;
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  weight.uniform_(-bound, bound);
  if (bias.defined()) bias.uniform_(-bound, bound);
}

// A parameter-less module used as a container ("block_groups", "layers", "0", ...), so that the registered
// names reproduce nn.ModuleList / nn.Sequential paths.
std::shared_ptr<torch::nn::Module> add_container(torch::nn::Module& parent, const std::string& name) {
  return parent.register_module(name, std::make_shared<torch::nn::Module>("Container"));
}

// InstanceNorm2d(affine, track_running_stats=False): per-sample, per-channel statistics over H x W, biased
// variance, eps 1e-5, affine. Written out (two passes: mean, then the mean of squared deviations, as PyTorch's
// batch-norm statistics) on the [N, H*W, C] view because at::instance_norm returns NCHW-contiguous data, which
// would drop the backbone out of the channels-last layout its convolutions run fastest in (oneDNN on the CPU:
// ~2.5x). GroupNorm with C groups would keep the layout too, but its CPU kernel computes E[x^2] - E[x]^2 and lost
// two orders of magnitude of accuracy on the backbone features (relative L2 1.5e-5 against 6e-8).
at::Tensor instance_norm(const at::Tensor& x, const AffineNorm& norm) {
  const std::int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const at::Tensor pixels = x.permute({0, 2, 3, 1}).reshape({n, h * w, c});  // a view for channels-last input
  const at::Tensor centred = pixels - pixels.mean(1, /*keepdim=*/true);
  const at::Tensor scale = at::rsqrt((centred * centred).mean(1, /*keepdim=*/true) + kNormEpsilon) * norm.weight;
  return (centred * scale + norm.bias).view({n, h, w, c}).permute({0, 3, 1, 2});  // channels-last NCHW
}

at::Tensor layer_norm(const at::Tensor& x, const AffineNorm& norm) {
  return at::layer_norm(x, {x.size(-1)}, norm.weight, norm.bias, kNormEpsilon, at::globalContext().userEnabledCuDNN());
}

}  // namespace

std::string_view model_size_name(ModelSize size) { return size == ModelSize::small ? "small" : "base"; }
std::string_view model_display_name(ModelSize size) { return size == ModelSize::small ? "LocoTrack-S" : "LocoTrack-B"; }

// --- building blocks --------------------------------------------------------------------------------------

Conv2dSame::Conv2dSame(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel, std::int64_t stride_,
                       bool with_bias)
    : torch::nn::Module("Conv2dSamePadding"), kernel_size(kernel), stride(stride_) {
  weight = register_parameter("weight", at::empty({out_channels, in_channels, kernel, kernel}));
  if (with_bias) bias = register_parameter("bias", at::empty({out_channels}));
  default_initialise(weight, bias, in_channels * kernel * kernel);
}

std::array<std::int64_t, 4> Conv2dSame::same_padding(std::int64_t height, std::int64_t width) const {
  auto total = [this](std::int64_t size) {
    const std::int64_t out = (size + stride - 1) / stride;
    return std::max<std::int64_t>((out - 1) * stride + kernel_size - size, 0);
  };
  const std::int64_t pad_h = total(height), pad_w = total(width);
  return {pad_w / 2, pad_w - pad_w / 2, pad_h / 2, pad_h - pad_h / 2};
}

void Conv2dSame::add_widened_weight() {
  at::NoGradGuard no_grad;
  widened_weight = at::constant_pad_nd(weight, {1, 0, 1, 0}, 0.0).contiguous(weight.suggest_memory_format());
}

at::Tensor Conv2dSame::forward(const at::Tensor& input) const {
  const auto [left, right, top, bottom] = same_padding(input.size(-2), input.size(-1));
  if (left == right && top == bottom) {
    // Symmetric SAME padding is the conv's own zero padding: same numbers, no padded copy.
    return at::conv2d(input, weight, bias, {stride, stride}, {top, left});
  }
  if (widened_weight.defined() && right == left + 1 && bottom == top + 1) {
    return at::conv2d(input, widened_weight, bias, {stride, stride}, {bottom, right});
  }
  return at::conv2d(at::constant_pad_nd(input, {left, right, top, bottom}, 0.0), weight, bias, {stride, stride});
}

AffineNorm::AffineNorm(std::int64_t channels) : torch::nn::Module("Norm") {
  weight = register_parameter("weight", at::ones({channels}));
  bias = register_parameter("bias", at::zeros({channels}));
}

Linear::Linear(std::int64_t in_features, std::int64_t out_features) : torch::nn::Module("Linear") {
  weight = register_parameter("weight", at::empty({out_features, in_features}));
  bias = register_parameter("bias", at::empty({out_features}));
  default_initialise(weight, bias, in_features);
}

at::Tensor Linear::forward(const at::Tensor& input, LinearFunction linear) const {
  return linear ? linear(input, weight, bias) : at::linear(input, weight, bias);
}

// --- backbone ---------------------------------------------------------------------------------------------

ResidualBlock::ResidualBlock(std::int64_t in_channels, std::int64_t out_channels, std::int64_t stride, bool projection)
    : torch::nn::Module("BlockV2") {
  // Registration order = the official key order: proj_conv, bn_0, conv_0, conv_1, bn_1.
  if (projection) {
    proj_conv = register_module("proj_conv", std::make_shared<Conv2dSame>(in_channels, out_channels, 1, stride, false));
  }
  bn_0 = register_module("bn_0", std::make_shared<AffineNorm>(in_channels));
  conv_0 = register_module("conv_0", std::make_shared<Conv2dSame>(in_channels, out_channels, 3, stride, false));
  conv_1 = register_module("conv_1", std::make_shared<Conv2dSame>(out_channels, out_channels, 3, 1, false));
  bn_1 = register_module("bn_1", std::make_shared<AffineNorm>(out_channels));
}

at::Tensor ResidualBlock::forward(const at::Tensor& input, const BackboneKernels& kernels) const {
  return forward(input, at::Tensor(), kernels, nullptr).x;
}

ResidualBlock::Output ResidualBlock::forward(const at::Tensor& input, const at::Tensor& activated,
                                             const BackboneKernels& kernels, const AffineNorm* next_norm) const {
  auto normalise = [&kernels](const at::Tensor& x, const AffineNorm& norm) {
    return kernels.norm_relu ? kernels.norm_relu(x, norm.weight, norm.bias) : at::relu(instance_norm(x, norm));
  };
  const at::Tensor first = activated.defined() ? activated : normalise(input, *bn_0);
  const at::Tensor shortcut = proj_conv ? proj_conv->forward(first) : input;
  at::Tensor x = conv_0->forward(first);
  x = normalise(x, *bn_1);
  x = conv_1->forward(x);
  if (kernels.add_norm_relu && next_norm != nullptr) {
    auto [sum, next_activated] = kernels.add_norm_relu(x, shortcut, next_norm->weight, next_norm->bias);
    return {std::move(sum), std::move(next_activated)};
  }
  return {x + shortcut, at::Tensor()};
}

ResNetBackbone::ResNetBackbone() : torch::nn::Module("ResNet") {
  constexpr std::array<std::int64_t, 4> channels = {64, 128, 256, 256};
  constexpr std::array<std::int64_t, 4> strides = {1, 2, 2, 1};
  initial_conv = register_module("initial_conv", std::make_shared<Conv2dSame>(3, 64, 7, 2, false));
  auto block_groups = add_container(*this, "block_groups");
  for (std::size_t g = 0; g < channels.size(); ++g) {
    auto group = add_container(*block_groups, std::to_string(g));
    auto blocks = add_container(*group, "blocks");
    const std::int64_t in_channels = g == 0 ? 64 : channels[g - 1];
    groups.emplace_back();
    for (int b = 0; b < 2; ++b) {
      groups.back().push_back(blocks->register_module(
          std::to_string(b), std::make_shared<ResidualBlock>(b == 0 ? in_channels : channels[g], channels[g],
                                                             b == 0 ? strides[g] : 1, /*projection=*/b == 0)));
    }
  }
}

std::array<at::Tensor, 3> ResNetBackbone::forward(const at::Tensor& frames, const BackboneKernels& kernels) const {
  // Channels-last throughout (see instance_norm); elementwise ops and convs keep the layout.
  at::Tensor x = initial_conv->forward(frames.contiguous(at::MemoryFormat::ChannelsLast));
  std::array<at::Tensor, 3> out;  // highest (group 0), hires (group 1), lowres (group 3)
  // Each block hands the next its first activation where kernels.add_norm_relu computes it with the residual sum.
  at::Tensor activated;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t b = 0; b < groups[g].size(); ++b) {
      const ResidualBlock* next = b + 1 < groups[g].size() ? groups[g][b + 1].get()
                                  : g + 1 < groups.size()  ? groups[g + 1].front().get()
                                                           : nullptr;
      ResidualBlock::Output output = groups[g][b]->forward(x, activated, kernels, next ? next->bn_0.get() : nullptr);
      x = std::move(output.x);
      activated = std::move(output.next_activated);
    }
    if (g == 0) out[0] = x;
    if (g == 1) out[1] = x;
  }
  out[2] = x;
  return out;
}

// --- correlation encoder ----------------------------------------------------------------------------------

CorrelationEncoder::CorrelationEncoder(ModelSize size) : torch::nn::Module("CMDTop") {
  struct Spec {
    std::int64_t out_channels, kernel, stride;
  };
  const std::vector<Spec> specs = size == ModelSize::small ? std::vector<Spec>{{64, 5, 4}, {128, 2, 2}}
                                                           : std::vector<Spec>{{64, 3, 2}, {128, 3, 2}, {128, 2, 2}};
  auto conv = add_container(*this, "conv");
  std::int64_t in_channels = kSupportSize * kSupportSize;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    auto sequential = add_container(*conv, std::to_string(i));
    Layer layer;
    layer.conv = sequential->register_module(
        "0", std::make_shared<Conv2dSame>(in_channels, specs[i].out_channels, specs[i].kernel, specs[i].stride, true));
    layer.norm = sequential->register_module("1", std::make_shared<AffineNorm>(specs[i].out_channels));
    layers.push_back(layer);
    in_channels = specs[i].out_channels;
  }
}

at::Tensor CorrelationEncoder::forward(const at::Tensor& correlation) const {
  const std::int64_t m = correlation.size(0);
  constexpr std::int64_t kCells = kSupportSize * kSupportSize;
  // Branch 1: support offsets (i, j) as channels over the target grid (h, w); branch 2: the reverse. Both share
  // the weights, so they run as one batch of 2M.
  const at::Tensor over_targets = correlation.permute({0, 3, 4, 1, 2}).reshape({m, kCells, kSupportSize, kSupportSize});
  const at::Tensor over_supports = correlation.reshape({m, kCells, kSupportSize, kSupportSize});
  at::Tensor x = at::cat({over_targets, over_supports}, 0);
  for (const Layer& layer : layers) {
    x = layer.conv->forward(x);
    x = at::relu(at::group_norm(x, x.size(1) / 16, layer.norm->weight, layer.norm->bias, kNormEpsilon,
                                at::globalContext().userEnabledCuDNN()));
  }
  x = x.mean({2, 3});
  return at::cat({x.narrow(0, 0, m), x.narrow(0, m, m)}, 1);
}

// --- temporal mixer ---------------------------------------------------------------------------------------

AlibiAttention::AlibiAttention(std::int64_t dim, std::int64_t heads_)
    : torch::nn::Module("MultiHeadAttention"), heads(heads_) {
  query_proj = register_module("query_proj", std::make_shared<Linear>(dim, dim));
  key_proj = register_module("key_proj", std::make_shared<Linear>(dim, dim));
  value_proj = register_module("value_proj", std::make_shared<Linear>(dim, dim));
  final_proj = register_module("final_proj", std::make_shared<Linear>(dim, dim));
}

at::Tensor AlibiAttention::forward(const at::Tensor& x, const at::Tensor& bias, LinearFunction linear) const {
  return attend(query_proj->forward(x, linear), key_proj->forward(x, linear), value_proj->forward(x, linear), bias,
                linear);
}

at::Tensor AlibiAttention::attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& bias,
                                  LinearFunction linear) const {
  const std::int64_t sequences = q.size(0), frames = q.size(1), dim = q.size(2);
  const std::int64_t head_dim = dim / heads;
  auto split = [&](const at::Tensor& projected) {
    return projected.view({sequences, frames, heads, head_dim}).permute({0, 2, 1, 3});
  };
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));  // 1/8 for 64-channel heads
  at::Tensor attended = compat::scaled_dot_product_attention(split(q), split(k), split(v), bias, scale);
  attended = attended.permute({0, 2, 1, 3}).reshape({sequences, frames, dim});
  return final_proj->forward(attended, linear);
}

TransformerLayer::TransformerLayer(std::int64_t dim, std::int64_t heads) : torch::nn::Module("TransformerLayer") {
  attn = register_module("attn", std::make_shared<AlibiAttention>(dim, heads));
  auto dense = add_container(*this, "dense");
  dense_in = dense->register_module("0", std::make_shared<Linear>(dim, 4 * dim));
  dense_out = dense->register_module("2", std::make_shared<Linear>(4 * dim, dim));
  layer_norm1 = register_module("layer_norm1", std::make_shared<AffineNorm>(dim));
  layer_norm2 = register_module("layer_norm2", std::make_shared<AffineNorm>(dim));
}

at::Tensor TransformerLayer::forward(const at::Tensor& x, const at::Tensor& attention_bias,
                                     LinearFunction linear) const {
  const at::Tensor h = x + attn->forward(layer_norm(x, *layer_norm1), attention_bias, linear);
  return h + dense_out->forward(at::gelu(dense_in->forward(layer_norm(h, *layer_norm2), linear)),
                                linear);  // exact (erf) GELU
}

TemporalMixer::TemporalMixer(ModelSize size) : torch::nn::Module("PIPSTransformer") {
  const LocoTrackConfig config{size};
  const std::int64_t dim = config.transformer_dim();
  auto transformer = add_container(*this, "transformer");
  auto layer_list = add_container(*transformer, "layers");
  for (int l = 0; l < 3; ++l) {
    layers.push_back(layer_list->register_module(std::to_string(l),
                                                 std::make_shared<TransformerLayer>(dim, config.transformer_heads())));
  }
  ln_out = transformer->register_module("ln_out", std::make_shared<AffineNorm>(dim));
  input_proj = register_module("input_proj", std::make_shared<Linear>(kMixerInputChannels, dim));
  output_proj = register_module("output_proj", std::make_shared<Linear>(dim, kMixerOutputChannels));
}

at::Tensor TemporalMixer::forward(const at::Tensor& x, LinearFunction linear) const {
  at::Tensor h = input_proj->forward(x, linear);
  const at::Tensor bias = alibi_bias(layers.front()->attn->heads, x.size(1), x.options());  // once, not per layer
  for (const auto& layer : layers) h = layer->forward(h, bias, linear);
  h = layer_norm(h, *ln_out);
  // Rows 4..387 produce the carried "feature" that nothing reads (§2.5 step 7).
  return at::linear(h, output_proj->weight.narrow(0, 0, 4), output_proj->bias.narrow(0, 0, 4));
}

// --- the model --------------------------------------------------------------------------------------------

LocoTrack::LocoTrack(LocoTrackConfig config) : torch::nn::Module("LocoTrack"), config_(config) {
  TORCH_CHECK(config.refinement_iterations >= 0, "refinement_iterations must be >= 0, got ",
              config.refinement_iterations);
  TORCH_CHECK(config.feature_chunk_frames > 0, "feature_chunk_frames must be > 0, got ", config.feature_chunk_frames);
  // Registration order = the official state_dict order (§3.1).
  resnet_torch = register_module("resnet_torch", std::make_shared<ResNetBackbone>());
  torch_pips_mixer = register_module("torch_pips_mixer", std::make_shared<TemporalMixer>(config.size));
  auto encoders = add_container(*this, "cmdtop");
  for (std::size_t k = 0; k < cmdtop.size(); ++k) {
    cmdtop[k] = encoders->register_module(std::to_string(k), std::make_shared<CorrelationEncoder>(config.size));
  }
  cost_conv = register_module("cost_conv", std::make_shared<Conv2dSame>(2, 1, 3, 1, true));
  occ_linear = register_module("occ_linear", std::make_shared<Linear>(6, 2));
}

}  // namespace trackscope::gpu::model
