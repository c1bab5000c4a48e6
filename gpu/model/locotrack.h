#pragma once
// LocoTrack-S / LocoTrack-B in LibTorch (torch-side header: include only from gpu/ .cpp files).
// The complete specification is docs/locotrack-spec.md; section numbers below refer to it.
//
// The network is a torch::nn::Module tree whose named_parameters() are exactly the official state_dict keys
// (135 for small, 147 for base, in the official order), so official weights load by name. The pipeline is
// exposed as stage functions that take the module and tensors, so that each stage can be tested alone against
// the reference, timed by the tracking job, or replaced by a fused kernel:
//
//   auto model = std::make_shared<LocoTrack>(LocoTrackConfig{ModelSize::small});
//   // ... load weights (gpu/weights/weights.h), model->to(device) ...
//   c10::InferenceMode inference;                                   // or keep autograd for training
//   at::Tensor video = normalize_video_u8(video_u8);                // [B,T,256,256,3] -> [-1, 1]
//   FeatureGrids grids = compute_feature_grids(*model, video);      // §2.1 (backbone, per frame chunk)
//   QueryFeatures query = compute_query_features(grids, queries);   // §2.2
//   for each query chunk [begin, end):
//     QueryFeatures chunk = query.slice(begin, end);
//     TrackState state = initialise_tracks(*model, grids, chunk, queries.slice(1, begin, end));  // stage 4
//     for (int i = 0; i < 4; ++i) state = refine_tracks(*model, grids, chunk, state);           // stage 5
//   // or simply: ForwardOutput out = forward(*model, video, queries, /*query_chunk=*/64);
//   // or, like the official inference(): InferenceOutput out = inference(*model, video_u8, queries_px);
//
// Coordinates (§0): queries are (t, y, x) and tracks (x, y), both in raster pixels of the video given to the
// stage (pixel i covers [i, i+1), its centre is i + 0.5). Inside the model that video is 256x256 ("256 space").
// Occlusion and expected-distance outputs are logits (higher = occluded / more likely > 6 px off).
//
// Numerics follow §4 exactly: TF "SAME" padding, InstanceNorm with per-sample statistics, clamped L2
// normalisation, grid_sample conventions (border + t+0.5 for queries, zeros for refinement), bilinear 32->64
// upsample, softmax(20x), windowed soft-argmax (first-index argmax, radius^2 < 25 cells), query-frame pin with
// round-half-even, exact GELU, ALiBi slopes computed in double, attention scale 1/8 with a -1e9 additive mask.
// The 384 dead "feature" outputs of output_proj are loaded but not computed (§2.5 step 7).
//
// Autograd: no stage modifies a tensor in place, so the modules can be trained; refine_tracks() detaches its
// input state like the official code. Threads: a model may be used by one thread at a time (torch modules are
// not synchronised); tensors produced here have no thread affinity.

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/tracking/locotrack_shape.h"

namespace trackscope::gpu::model {

enum class ModelSize { small, base };

/// "small" / "base".
std::string_view model_size_name(ModelSize size);
/// "LocoTrack-S" / "LocoTrack-B".
std::string_view model_display_name(ModelSize size);

struct LocoTrackConfig {
  ModelSize size = ModelSize::base;
  int refinement_iterations = 4;   // num_pips_iter
  int feature_chunk_frames = 256;  // backbone frames per call (feature_extractor_chunk_size)

  int transformer_dim() const { return size == ModelSize::small ? 256 : 384; }
  int transformer_heads() const { return transformer_dim() / 64; }
  /// Parameter count of the official model of this size (§3.1).
  std::int64_t parameter_count() const { return size == ModelSize::small ? 8'236'133 : 11'519'717; }
};

// Fixed geometry (§2): 256x256 input, feature strides 8 / 4 / 2, 7x7 supports (shape.h), 64x64 init heatmaps.
inline constexpr int kModelResolution = 256;
using core::locotrack::kSupportSize;
inline constexpr int kSupportRadius = 3;
inline constexpr int kHeatmapSize = 64;
inline constexpr double kSoftmaxTemperature = 20.0;
inline constexpr int kSoftArgmaxRadius = 5;  // window radius in heatmap cells (strict: distance^2 < 25)
using core::locotrack::kMixerInputChannels;
inline constexpr int kMixerOutputChannels = 388;

// ---------------------------------------------------------------------------------------------------------
// Modules. Parameter names are the official keys; forward() methods take channels-first (NCHW) tensors.

/// Conv2d with TensorFlow "SAME" padding (§2.1): pad total max((ceil(i/s)-1)s + k - i, 0), the extra
/// pixel at the end. Registers "weight" and, if `bias`, "bias".
class Conv2dSame : public torch::nn::Module {
 public:
  Conv2dSame(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel, std::int64_t stride, bool bias);
  at::Tensor forward(const at::Tensor& input) const;
  /// The (left, right, top, bottom) zero padding SAME applies to an input of this size.
  std::array<std::int64_t, 4> same_padding(std::int64_t height, std::int64_t width) const;
  /// Adds `widened_weight`: the weight with one zero row and column before its taps ([O, I, k+1, k+1], in the
  /// weight's memory format). Where SAME pads one pixel more at the end than at the start on both axes (a stride-2
  /// conv on an even size), forward() then convolves with it and the symmetric padding of the larger side instead
  /// of copying a padded input: output[i] = sum_k w[k] x[s*i + k - before] = sum_k' w'[k'] x[s*i + k' - after] with
  /// w'[0] = 0, w'[k + 1] = w[k]. The products with the zero taps add exact zeros; the sums may round in another
  /// order. The weight must not change afterwards (the engine's reduced-precision copy, which is immutable).
  void add_widened_weight();

  at::Tensor weight;
  at::Tensor bias;            // undefined when the conv has no bias
  at::Tensor widened_weight;  // undefined unless add_widened_weight() ran; not a parameter
  std::int64_t kernel_size;
  std::int64_t stride;
};

/// Affine parameters of a normalisation layer ("weight" = 1, "bias" = 0 at construction).
class AffineNorm : public torch::nn::Module {
 public:
  explicit AffineNorm(std::int64_t channels);
  at::Tensor weight;
  at::Tensor bias;
};

/// Computes input x weight^T + bias (e.g. ops::linear); null = at::linear.
using LinearFunction = at::Tensor (*)(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias);

/// nn.Linear's parameters ("weight" [out, in], "bias" [out]) with PyTorch's default initialisation.
class Linear : public torch::nn::Module {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features);
  at::Tensor forward(const at::Tensor& input, LinearFunction linear = nullptr) const;
  at::Tensor weight;
  at::Tensor bias;
};

/// Pre-activation residual block (nets.BlockV2): a = relu(IN0(x)); y = conv_1(relu(IN1(conv_0(a)))) + shortcut.
/// Computes relu(instance_norm(x) * weight + bias) for the backbone (e.g. ops::instance_norm_relu, the engine's
/// fused kernel); null = the written-out reference of this file (what training and the eager path use).
using NormReluFunction = at::Tensor (*)(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);
/// Computes {x + residual, relu(instance_norm(x + residual) * weight + bias)}, the norm reading the sum as rounded to
/// the dtype (e.g. ops::add_instance_norm_relu: the engine's kernel that reads the sum once fewer).
using AddNormReluFunction = std::array<at::Tensor, 2> (*)(const at::Tensor& x, const at::Tensor& residual,
                                                          const at::Tensor& weight, const at::Tensor& bias);
/// x / sqrt(max(sum x^2, 1e-12)) along the last axis written into out (contiguous, x's shape and dtype; e.g.
/// ops::l2_normalise_channels_out).
using L2NormaliseIntoFunction = void (*)(const at::Tensor& x, at::Tensor& out);

/// Replacements for the backbone's hot operations (the engine's fused path); null members run the reference
/// ops of this file, which training and the eager path use.
struct BackboneKernels {
  NormReluFunction norm_relu = nullptr;
  /// A block's residual sum and the next block's first activation in one op; null: the addition, and the next block
  /// normalises its input itself.
  AddNormReluFunction add_norm_relu = nullptr;
  L2NormaliseIntoFunction l2_normalise_into = nullptr;  // compute_frame_features' output normalisation, when the
                                                        // caller gives the outputs
};

class ResidualBlock : public torch::nn::Module {
 public:
  ResidualBlock(std::int64_t in_channels, std::int64_t out_channels, std::int64_t stride, bool projection);
  at::Tensor forward(const at::Tensor& input, const BackboneKernels& kernels = {}) const;

  /// The block's output x and, where kernels.add_norm_relu is set and next_norm given (the next block's bn_0),
  /// next_activated = relu(next_norm(x)) from the same op (else undefined).
  struct Output {
    at::Tensor x;
    at::Tensor next_activated;
  };
  /// activated: relu(bn_0(input)) if the previous block computed it, else undefined (computed here).
  Output forward(const at::Tensor& input, const at::Tensor& activated, const BackboneKernels& kernels,
                 const AffineNorm* next_norm) const;

  std::shared_ptr<Conv2dSame> proj_conv;  // null without projection
  std::shared_ptr<AffineNorm> bn_0, bn_1;
  std::shared_ptr<Conv2dSame> conv_0, conv_1;
};

/// The ResNet-18-like backbone ("resnet_torch"): 4 groups of 2 blocks, channels 64/128/256/256, strides 1/2/2/1.
class ResNetBackbone : public torch::nn::Module {
 public:
  ResNetBackbone();
  /// frames [F,3,256,256] -> {group 0 [F,64,128,128] ("highest"), group 1 [F,128,64,64] ("hires"),
  /// group 3 [F,256,32,32] ("lowres")}, not normalised.
  std::array<at::Tensor, 3> forward(const at::Tensor& frames, const BackboneKernels& kernels = {}) const;

  std::shared_ptr<Conv2dSame> initial_conv;
  std::vector<std::vector<std::shared_ptr<ResidualBlock>>> groups;  // "block_groups.G.blocks.B"
};

/// Correlation encoder (cmdtop.CMDTop): two weight-shared branches of SAME conv -> GroupNorm(C/16) -> ReLU.
class CorrelationEncoder : public torch::nn::Module {
 public:
  explicit CorrelationEncoder(ModelSize size);
  /// correlation [M,7,7,7,7] (target h, w, support i, j) -> [M, 256] = [branch over supports, branch over targets].
  at::Tensor forward(const at::Tensor& correlation) const;

  struct Layer {
    std::shared_ptr<Conv2dSame> conv;
    std::shared_ptr<AffineNorm> norm;
  };
  std::vector<Layer> layers;  // "conv.I.0" (conv), "conv.I.1" (GroupNorm)
};

/// Multi-head attention with the split-direction ALiBi bias (forward heads first, then backward heads).
class AlibiAttention : public torch::nn::Module {
 public:
  AlibiAttention(std::int64_t dim, std::int64_t heads);
  /// x [S, T, D] -> [S, T, D]; every sequence uses the same additive bias [H, T, T] (see alibi_bias()).
  at::Tensor forward(const at::Tensor& x, const at::Tensor& bias, LinearFunction linear = nullptr) const;
  /// The attention after the projections: q, k, v [S, T, D] (the projections' outputs; unit stride in D, other
  /// strides free, e.g. slices of one fused [S, T, 3D] projection) -> final_proj(softmax(q k^T / sqrt(D/H) + bias) v).
  at::Tensor attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& bias,
                    LinearFunction linear = nullptr) const;

  std::int64_t heads;
  std::shared_ptr<Linear> query_proj, key_proj, value_proj, final_proj;
};

class TransformerLayer : public torch::nn::Module {
 public:
  TransformerLayer(std::int64_t dim, std::int64_t heads);
  /// Pre-LN: x += attn(LN1 x, bias); x += MLP(LN2 x).
  at::Tensor forward(const at::Tensor& x, const at::Tensor& attention_bias, LinearFunction linear = nullptr) const;

  std::shared_ptr<AlibiAttention> attn;
  std::shared_ptr<Linear> dense_in, dense_out;  // "dense.0", "dense.2" (GELU at index 1)
  std::shared_ptr<AffineNorm> layer_norm1, layer_norm2;
};

/// The temporal mixer ("torch_pips_mixer"): input_proj 854->D, 3 transformer layers, ln_out, output_proj D->388.
class TemporalMixer : public torch::nn::Module {
 public:
  explicit TemporalMixer(ModelSize size);
  /// x [S, T, 854] -> [S, T, 4] = (dx, dy, d_occlusion, d_expected_dist); output rows 4..387 are not computed.
  /// linear: the projections' matrix products (the engine's fused path on the CPU); null = at::linear.
  at::Tensor forward(const at::Tensor& x, LinearFunction linear = nullptr) const;

  std::vector<std::shared_ptr<TransformerLayer>> layers;  // "transformer.layers.L"
  std::shared_ptr<AffineNorm> ln_out;                     // "transformer.ln_out"
  std::shared_ptr<Linear> input_proj, output_proj;
};

class LocoTrack : public torch::nn::Module {
 public:
  explicit LocoTrack(LocoTrackConfig config);
  const LocoTrackConfig& config() const { return config_; }

  std::shared_ptr<ResNetBackbone> resnet_torch;
  std::shared_ptr<TemporalMixer> torch_pips_mixer;
  std::array<std::shared_ptr<CorrelationEncoder>, 3> cmdtop;  // level order: hires, lowres, highest
  std::shared_ptr<Conv2dSame> cost_conv;                      // 2 -> 1, 3x3, with bias
  std::shared_ptr<Linear> occ_linear;                         // 6 -> 2

 private:
  LocoTrackConfig config_;
};

// ---------------------------------------------------------------------------------------------------------
// Stage data.

/// L2-normalised, channels-last feature maps of every frame (§2.1).
struct FeatureGrids {
  at::Tensor lowres;   // [B, T, 32, 32, 256]
  at::Tensor hires;    // [B, T, 64, 64, 128]
  at::Tensor highest;  // [B, T, 128, 128, 64]
  std::int64_t frames() const { return lowres.size(1); }
};

/// Query features and 7x7 supports (§2.2); supports are indexed [dy + 3][dx + 3].
struct QueryFeatures {
  at::Tensor lowres, hires, highest;                          // [B, N, C]
  at::Tensor lowres_support, hires_support, highest_support;  // [B, N, 7, 7, C]
  /// Queries [begin, end) (views, no copy).
  QueryFeatures slice(std::int64_t begin, std::int64_t end) const;
  std::int64_t queries() const { return lowres.size(1); }
};

/// One estimate of the tracks of a query chunk, in 256 space.
struct TrackState {
  at::Tensor tracks;         // [B, n, T, 2] (x, y)
  at::Tensor occlusion;      // [B, n, T] logits
  at::Tensor expected_dist;  // [B, n, T] logits
};

struct ForwardOutput {
  at::Tensor tracks;                   // [B, N, T, 2] (x, y) in the pixels of the video given to forward()
  at::Tensor occlusion;                // [B, N, T] logits
  at::Tensor expected_dist;            // [B, N, T] logits
  std::vector<TrackState> iterations;  // 0 = initialisation, 1..4 = refinements (the last equals the output)
};

struct InferenceOutput {
  at::Tensor tracks;                 // [B, N, T, 2] (x, y) in original pixels
  at::Tensor occluded;               // [B, N, T] bool, the official rule (occlusion_probability > 0.5)
  at::Tensor occlusion_probability;  // [B, N, T] 1 - (1 - sigmoid(occ)) (1 - sigmoid(expd))
  at::Tensor occlusion;              // [B, N, T] logits
  at::Tensor expected_dist;          // [B, N, T] logits
};

// ---------------------------------------------------------------------------------------------------------
// Stages.

/// uint8 [.., 3] -> float32 u/255*2-1, on the tensor's device.
at::Tensor normalize_video_u8(const at::Tensor& video_u8);

/// Bilinear resize of [B, T, H, W, 3] float frames to [B, T, height, width, 3] as the official inference():
/// F.interpolate(mode='bilinear', align_corners=False), no antialias. Returns the input when the size matches.
at::Tensor resize_video_bilinear(const at::Tensor& video, std::int64_t height, std::int64_t width);

/// Backbone + normalisation of a batch of frames [F, 256, 256, 3] in [-1, 1] (one chunk):
/// {lowres [F,32,32,256], hires [F,64,64,128], highest [F,128,128,64]}, channels-last, L2-normalised.
/// `into`, if given, holds three contiguous tensors of those shapes (e.g. slices of the feature grids, in the
/// features' dtype): the normalised features are written there (kernels.l2_normalise_into, else the reference's
/// are copied there) and returned. Without it the reference normalises into new tensors.
std::array<at::Tensor, 3> compute_frame_features(const LocoTrack& model, const at::Tensor& frames,
                                                 const BackboneKernels& kernels = {},
                                                 const std::array<at::Tensor, 3>* into = nullptr);

/// Feature grids of a video [B, T, 256, 256, 3] in [-1, 1], at most `frames_per_chunk` frames per backbone call
/// (default: the model's feature_chunk_frames, 256).
FeatureGrids compute_feature_grids(const LocoTrack& model, const at::Tensor& video, std::int64_t frames_per_chunk = 0);

/// Query features and supports for queries [B, N, 3] (t, y, x) in 256 space: trilinear grid_sample with border
/// padding at (t + 0.5, y / stride, x / stride) + the 7x7 offsets.
QueryFeatures compute_query_features(const FeatureGrids& grids, const at::Tensor& query_points_tyx);

/// Iteration 0 (§2.4): global cost volumes (lowres upsampled 32->64, hires), cost_conv, softmax(20x),
/// windowed soft-argmax, query-frame pin; occlusion head on mean/max/min of the costs.
/// `query_points_tyx` [B, n, 3] are the chunk's queries in 256 space (used for the pin).
TrackState initialise_tracks(const LocoTrack& model, const FeatureGrids& grids, const QueryFeatures& chunk,
                             const at::Tensor& query_points_tyx);

/// The cost_conv logits of the initialisation, [B, n, T, 64, 64], before the softmax (for diagnosing ties).
at::Tensor initial_heatmap_logits(const LocoTrack& model, const FeatureGrids& grids, const QueryFeatures& chunk);

/// soft_argmax_heatmap_batched: probabilities [.., 64, 64] -> (x, y) [.., 2] in heatmap cells. The argmax is
/// the first maximal cell; the average is over cells whose centre lies strictly within 5 cells of it.
at::Tensor windowed_soft_argmax(const at::Tensor& heatmap);

/// One refinement iteration (§2.5) from `previous` (detached first). The three parts are public too.
TrackState refine_tracks(const LocoTrack& model, const FeatureGrids& grids, const QueryFeatures& chunk,
                         const TrackState& previous);

/// Refinement part 1: 7x7 neighbourhoods around the tracks at the three levels (bilinear, zeros padding) and their
/// local 4D correlation with the supports; level order hires, lowres, highest; each [B*n*T, 7, 7, 7, 7] (h,w,i,j).
std::array<at::Tensor, 3> local_correlations(const FeatureGrids& grids, const QueryFeatures& chunk,
                                             const at::Tensor& tracks);
/// Refinement part 2: CMDTop of each level, concatenated: [B, n, T, 768].
at::Tensor encode_correlations(const LocoTrack& model, const std::array<at::Tensor, 3>& correlations,
                               std::int64_t batch, std::int64_t queries);
/// Refinement part 3: mixer input [occ, expd, encoded, posenc] (854; posenc: ops::relative_motion_encoding),
/// transformer, update of the state.
TrackState apply_mixer(const LocoTrack& model, const at::Tensor& encoded, const TrackState& previous);

/// The additive attention bias [heads, T, T]: ALiBi for forward heads (attend to j <= i) and backward heads
/// (j >= i), -1e9 elsewhere; slopes 24^(-(k+1)/(heads/2)) computed in double.
at::Tensor alibi_bias(std::int64_t heads, std::int64_t frames, const at::TensorOptions& options);

/// The whole model on a video [B, T, 256, 256, 3] in [-1, 1] with queries [B, N, 3] (t, y, x), chunked over queries
/// like estimate_trajectories. `grids` may carry precomputed feature grids of this video (else they are computed).
ForwardOutput forward(const LocoTrack& model, const at::Tensor& video, const at::Tensor& query_points_tyx,
                      std::int64_t query_chunk = 64, const FeatureGrids* grids = nullptr);

/// The official inference(): uint8 video [B, T, H, W, 3] of any size, queries [B, N, 3] (t, y, x) in its pixels;
/// bilinear resize to 256x256, queries scaled by 256/(H, W), tracks scaled back by (W, H)/256.
InferenceOutput inference(const LocoTrack& model, const at::Tensor& video_u8, const at::Tensor& query_points_tyx,
                          std::int64_t query_chunk = 64);

/// 1 - (1 - sigmoid(occlusion)) (1 - sigmoid(expected_dist)); a point is occluded iff this is > 0.5.
at::Tensor occlusion_probability(const at::Tensor& occlusion, const at::Tensor& expected_dist);

}  // namespace trackscope::gpu::model
