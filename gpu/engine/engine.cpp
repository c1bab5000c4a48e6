// The tracker's forward pass: the canonical stages with their timings, on the fused kernels or on the
// reference stage functions (engine.h has the contract).
#include "gpu/engine/engine.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <new>
#include <utility>
#include <vector>

#include "gpu/devices.h"
#include "gpu/engine/cuda_support.h"
#include "gpu/torch_compat.h"

namespace trackscope::gpu::engine {
namespace {

using core::Stage;

bool is_reduced(at::ScalarType dtype) { return dtype == at::kBFloat16 || dtype == at::kHalf; }

// The backbone's norm through the fused op, with the model's epsilon (InstanceNorm2d's default, docs/locotrack-spec.md
// §4).
at::Tensor fused_instance_norm_relu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return ops::instance_norm_relu(x, weight, bias, 1e-5);
}
std::array<at::Tensor, 2> fused_add_instance_norm_relu(const at::Tensor& x, const at::Tensor& residual,
                                                       const at::Tensor& weight, const at::Tensor& bias) {
  ops::SumAndNorm result = ops::add_instance_norm_relu(x, residual, weight, bias, 1e-5);
  return {std::move(result.sum), std::move(result.norm)};
}

// A LocoTrack whose parameters are `source`'s converted to `dtype` on `device`. On CUDA the backbone's convolution
// weights are stored channels-last: its activations are channels-last, and cuDNN takes the weight in the input's
// layout, so ATen converted each weight on every call otherwise (20 strided copies per forward pass, 0.29 ms on an
// H100: Nsight Compute, 2026-12-05).
// `widen_block_convs`: the residual blocks' convolutions get their widened weights (Conv2dSame::add_widened_weight),
// so the two stride-2 3x3 convolutions convolve 4x4 without a padded copy of their input. Before, each padded copy
// (a fill and a strided copy of the 98 MB / 49 MB fp16 input at 47 frames) and, for the 129x129 one, cuDNN's NCHW
// fallback with two layout conversions took 0.6 ms of the H100's 4.1 ms backbone (Nsight Compute, 2026-12-05); the
// widened convolutions do 16/9 of the work and the backbone went 3.94 -> 3.76 ms (H100, 2026-12-06). The first
// convolution (7x7, 3 channels) keeps its padded copy: cuDNN runs it with a kernel specialised for 7x7 images.
std::shared_ptr<const model::LocoTrack> converted_copy(const model::LocoTrack& source, c10::Device device,
                                                       at::ScalarType dtype, bool widen_block_convs) {
  auto copy = std::make_shared<model::LocoTrack>(source.config());
  const auto from = source.named_parameters(/*recurse=*/true);
  {
    at::NoGradGuard no_grad;
    for (auto& item : copy->named_parameters(/*recurse=*/true)) {
      const at::Tensor* value = from.find(item.key());
      TORCH_CHECK(value != nullptr, "Engine: parameter ", item.key(), " missing in the source model");
      at::Tensor converted = value->to(device, dtype).clone();
      if (device.is_cuda() && converted.dim() == 4 && item.key().rfind("resnet_torch.", 0) == 0) {
        converted = converted.contiguous(at::MemoryFormat::ChannelsLast);
      }
      item.value().set_data(converted);
    }
    if (widen_block_convs) {
      for (const auto& group : copy->resnet_torch->groups) {
        for (const auto& block : group) {
          for (const auto& conv : {block->proj_conv, block->conv_0, block->conv_1}) {
            // Only a strided conv with taps can pad asymmetrically (a stride-1 SAME conv pads k - 1, split evenly
            // for odd k; a 1x1 conv does not pad).
            if (conv != nullptr && conv->stride > 1 && conv->kernel_size > 1) conv->add_widened_weight();
          }
        }
      }
    }
  }
  return copy;
}

// `t` [..., W] as a view into storage whose rows are padded to a multiple of 16 elements. For the attention bias:
// PyTorch's memory-efficient attention wants the bias's row stride a multiple of 8 (16 for some versions) elements
// and otherwise pads a copy of it on every call (a fill and a copy per layer, 24 kernels per forward pass at T = 47:
// Nsight Compute, H100, 2026-12-05); the cached bias is then padded once.
at::Tensor with_aligned_rows(const at::Tensor& t) {
  constexpr int64_t kAlignment = 16;
  std::vector<int64_t> sizes = t.sizes().vec();
  const int64_t width = sizes.back();
  sizes.back() = (width + kAlignment - 1) / kAlignment * kAlignment;
  return at::zeros(sizes, t.options()).narrow(-1, 0, width).copy_(t);
}

// The mixer's 854 input channels padded with zeros to a multiple of 32 elements: the input projection's GEMM then
// reads 16-byte aligned rows (with 854-element rows cuBLAS leaves its fast reduced-precision kernels, as it did with
// the 2401-element correlation rows: ops::kCorrPaddedRow). The zero columns add nothing to the products.
constexpr int64_t kMixerPaddedInput = 864;

// The module mixer's weights the fast path adds: the input projection padded to kMixerPaddedInput input channels,
// and per layer the stacked query/key/value projection.
struct PaddedMixerWeights {
  const at::Tensor& input_weight;
  const std::vector<at::Tensor>& qkv_weights;
  const std::vector<at::Tensor>& qkv_biases;
  const at::Tensor& alibi_slopes;  // ops::alibi_slopes where ops::alibi_attention runs the attention, else undefined
};

// A batch of one's state without its batch dimension, and back.
ops::MixerState rows_of(const model::TrackState& state) {
  return {state.tracks.select(0, 0), state.occlusion.select(0, 0), state.expected_dist.select(0, 0)};
}
model::TrackState batch_of_one(const ops::MixerState& state) {
  return {state.tracks.unsqueeze(0), state.occlusion.unsqueeze(0), state.expected_dist.unsqueeze(0)};
}

// TemporalMixer::forward on input rows padded to kMixerPaddedInput; bias = model::alibi_bias(heads, T, x's options).
// On the automatic glue path each layer's query, key and value come from one GEMM, whose [S, T, 3D] rows
// ops::alibi_attention reads as they are (with alibi_slopes: Engine::uses_tensor_core_attention; else slices of them
// go to the module's attention as strided views), and each residual add goes with the LayerNorm that reads its
// sum (the layer's second one, then the next layer's first one or ln_out) through ops::add_layer_norm: one kernel per
// pair on CUDA, the last add with ln_out, the output projection's four used rows and the state update through
// ops::add_layer_norm_head (one kernel on CUDA); the MLP's first layer and its GELU are ops::linear_gelu in the form
// `gelu`. The composite glue path is TemporalMixer's own layers (three projections, at::layer_norm and the adds, the
// exact GELU). Returns the next state: previous + the mixer's update.
ops::MixerState padded_mixer_forward(const model::TemporalMixer& mixer, const PaddedMixerWeights& weights,
                                     const at::Tensor& x, const at::Tensor& bias, ops::GluePath glue, ops::MlpGelu gelu,
                                     const ops::MixerState& previous) {
  constexpr double kEps = 1e-5;  // every LayerNorm of the mixer (nn.LayerNorm's default)
  at::Tensor h = at::linear(x, weights.input_weight, mixer.input_proj->bias);
  // The output projection's rows of the two position deltas and the two logit deltas (the rest is unused).
  const at::Tensor head_weight = mixer.output_proj->weight.narrow(0, 0, 4);
  const at::Tensor head_bias = mixer.output_proj->bias.narrow(0, 0, 4);
  if (glue == ops::GluePath::composite) {
    for (const auto& layer : mixer.layers) h = layer->forward(h, bias);
    const at::Tensor normed = ops::layer_norm(h, mixer.ln_out->weight, mixer.ln_out->bias, kEps, glue);
    return ops::apply_mixer_update(at::linear(normed, head_weight, head_bias).to(at::kFloat), previous);
  }
  TORCH_CHECK(!mixer.layers.empty(), "padded_mixer_forward: a mixer without layers");
  const int64_t dim = h.size(-1);
  const model::AffineNorm& first = *mixer.layers.front()->layer_norm1;
  at::Tensor normed = ops::layer_norm(h, first.weight, first.bias, kEps, glue);
  for (size_t l = 0;; ++l) {
    const model::TransformerLayer& layer = *mixer.layers[l];
    const at::Tensor qkv = at::linear(normed, weights.qkv_weights[l], weights.qkv_biases[l]);  // [S, T, 3D]
    at::Tensor attended;
    if (weights.alibi_slopes.defined()) {
      attended = layer.attn->final_proj->forward(ops::alibi_attention(qkv, weights.alibi_slopes)).view(h.sizes());
    } else {
      attended =
          layer.attn->attend(qkv.narrow(-1, 0, dim), qkv.narrow(-1, dim, dim), qkv.narrow(-1, 2 * dim, dim), bias);
    }
    ops::SumAndNorm step =
        ops::add_layer_norm(h, attended, layer.layer_norm2->weight, layer.layer_norm2->bias, kEps, glue);
    const at::Tensor mlp =
        layer.dense_out->forward(ops::linear_gelu(step.norm, layer.dense_in->weight, layer.dense_in->bias, gelu));
    if (l + 1 == mixer.layers.size()) {
      // The last residual add, ln_out, the head and the state update: one kernel on CUDA.
      return ops::add_layer_norm_head(step.sum, mlp, mixer.ln_out->weight, mixer.ln_out->bias, kEps, head_weight,
                                      head_bias, previous, glue);
    }
    const model::AffineNorm& next = *mixer.layers[l + 1]->layer_norm1;
    step = ops::add_layer_norm(step.sum, mlp, next.weight, next.bias, kEps, glue);
    h = step.sum;
    normed = step.norm;
  }
}

// The device as the support table sees it (compute capability from the device list).
core::DeviceInfo device_info_of(c10::Device device) {
  const core::DeviceId id =
      device.is_cuda() ? core::DeviceId::cuda(std::max<int>(0, device.index())) : core::DeviceId::cpu();
  if (core::Expected<core::DeviceInfo> listed = core::resolve_device(id, list_devices())) return *listed;
  core::DeviceInfo unlisted;
  unlisted.id = id.to_string();
  return unlisted;
}

}  // namespace

at::ScalarType compute_dtype_of(core::Precision precision) {
  switch (precision) {
    case core::Precision::bf16: return at::kBFloat16;
    case core::Precision::fp16: return at::kHalf;
    case core::Precision::fp32:
    case core::Precision::tf32: break;
  }
  return at::kFloat;
}

Engine::Engine(std::shared_ptr<const model::LocoTrack> model, c10::Device device, EngineOptions options)
    : model_(std::move(model)),
      device_(device),
      options_(options),
      compute_dtype_(compute_dtype_of(options.precision)) {
  TORCH_CHECK(model_ != nullptr, "Engine: no model");
  TORCH_CHECK(model_->cost_conv->weight.device() == device_, "Engine: the model is on ",
              model_->cost_conv->weight.device(), ", the engine on ", device_);
  TORCH_CHECK(model_->cost_conv->weight.scalar_type() == at::kFloat,
              "Engine: the model must hold float32 weights, got ", model_->cost_conv->weight.scalar_type());
  TORCH_CHECK(options_.init_queries_per_pass > 0 && options_.cmdtop_samples_per_pass > 0,
              "Engine: passes must be positive, got init ", options_.init_queries_per_pass, ", CMDTop ",
              options_.cmdtop_samples_per_pass);
  fused_ = options_.path != EnginePath::eager;
  TORCH_CHECK(fused_ || !is_reduced(compute_dtype_), "Engine: ", core::to_string(options_.precision),
              " needs the fused path (the eager stage functions would round sampling coordinates)");
  const core::DeviceInfo device_info = device_info_of(device_);
  const core::PrecisionSupport support = core::precision_support(options_.precision, device_info, runtime_versions());
  TORCH_CHECK(support.usable(), "Engine: ", core::to_string(options_.precision), " on ", device_info.id, ": ",
              support.reason);
  compute_model_ = is_reduced(compute_dtype_)
                       ? converted_copy(*model_, device_, compute_dtype_,
                                        device_.is_cuda() && options_.glue_path == ops::GluePath::automatic)
                       : model_;

  const auto parameters = model_->named_parameters(/*recurse=*/true);
  const ops::CmdTopWeights::Lookup lookup = [&parameters](const std::string& key) -> std::optional<at::Tensor> {
    const at::Tensor* t = parameters.find(key);
    return t == nullptr ? std::nullopt : std::optional<at::Tensor>(*t);
  };
  if (fused_) {
    ops::CmdTopFast::Options cmdtop_options;
    cmdtop_options.compute_dtype = compute_dtype_;
    cmdtop_options.max_samples_per_pass = options_.cmdtop_samples_per_pass;
    cmdtop_options.convolution = options_.cmdtop_convolution;
    for (size_t level = 0; level < cmdtop_.size(); ++level) {
      cmdtop_[level].emplace(ops::CmdTopWeights::from_named(lookup, "cmdtop." + std::to_string(level) + "."), device_,
                             cmdtop_options);
    }
    const at::Tensor& input_weight = compute_model_->torch_pips_mixer->input_proj->weight;
    mixer_input_weight_ =
        at::constant_pad_nd(input_weight, {0, kMixerPaddedInput - input_weight.size(1)}, 0.0).contiguous();
    const bool fused_mixer = options_.fused_mixer.value_or(compute_dtype_ == at::kFloat);
    if (device_.is_cuda() && fused_mixer && ops::MixerFast::available(device_)) {
      ops::MixerFast::Options mixer_options;
      mixer_options.compute_dtype = compute_dtype_;
      mixer_options.arithmetic = options_.mixer_arithmetic;
      mixer_options.input_channels = kMixerPaddedInput;
      mixer_.emplace(ops::MixerWeights::from_named(lookup, "torch_pips_mixer."), device_, mixer_options);
    }
    if (device_.is_cuda() && !mixer_) {  // the module mixer of mix(): one QKV GEMM per layer
      // The tensor-core attention (bf16/fp16, compute capability 8.0+); padded_mixer_forward takes it for long clips.
      if (ops::cuda_kernels_available() && is_reduced(compute_dtype_) && device_info.compute_capability() >= 80) {
        mixer_alibi_slopes_ = ops::alibi_slopes(compute_model_->torch_pips_mixer->layers.front()->attn->heads, device_);
      }
      for (const auto& layer : compute_model_->torch_pips_mixer->layers) {
        const model::AlibiAttention& attn = *layer->attn;
        mixer_qkv_weights_.push_back(
            at::cat({attn.query_proj->weight, attn.key_proj->weight, attn.value_proj->weight}, 0).contiguous());
        mixer_qkv_biases_.push_back(at::cat({attn.query_proj->bias, attn.key_proj->bias, attn.value_proj->bias}, 0));
      }
    }
  }
  if (fused_) {
    std::vector<float> scales;
    for (const int64_t side : kLevelSides) {
      scales.push_back(static_cast<float>(side) / static_cast<float>(model::kModelResolution));
    }
    level_cell_scales_ = at::tensor(scales, at::TensorOptions().dtype(at::kFloat)).view({3, 1, 1, 1}).to(device_);
  }
  cost_conv_weight_ = model_->cost_conv->weight.contiguous();
  cost_conv_bias_ = model_->cost_conv->bias.contiguous();
  occ_weight_ = model_->occ_linear->weight.contiguous();
  occ_bias_ = model_->occ_linear->bias.contiguous();
  set_cost_config(cost_);
}

void Engine::apply_precision_flags() const {
  compat::set_tf32_allowed(options_.precision != core::Precision::fp32);
  if (device_.is_cuda()) {
    at::globalContext().setBenchmarkCuDNN(options_.cudnn_benchmark.value_or(true));
    if (options_.cudnn_benchmark_limit) at::globalContext().setBenchmarkLimitCuDNN(*options_.cudnn_benchmark_limit);
  }
}

void Engine::set_cost_config(const core::CostModelConfig& config) {
  cost_ = config;
  cost_.model_size = model_->config().size == model::ModelSize::small ? core::ModelSize::small : core::ModelSize::base;
  cost_.dtype_bytes = static_cast<int>(c10::elementSize(compute_dtype_));
  cost_.fused_correlation = fused_;
}

bool Engine::uses_tensor_core_attention(int64_t frames) const {
  return mixer_alibi_slopes_.defined() && options_.glue_path == ops::GluePath::automatic &&
         frames >= options_.tensor_core_attention_frames;
}

ops::MlpGelu Engine::mlp_gelu() const {
  // The GELU in the GEMM's epilogue approximates the official function: only where the arithmetic is reduced
  // already (bf16/fp16), on the fused path's module mixer with the automatic glue, and on CUDA (cuBLASLt).
  const bool applies = fused_ && !mixer_ && device_.is_cuda() && compute_dtype_ != at::kFloat &&
                       options_.glue_path == ops::GluePath::automatic;
  return applies ? options_.mlp_gelu : ops::MlpGelu::exact;
}

core::WorkCost Engine::cost_of(Stage stage, int64_t chunk_points) const {
  if (cost_.check().ok()) return core::chunk_stage_cost(stage, cost_, static_cast<int>(chunk_points));
  return {};
}

at::Tensor Engine::prepare_frames(const at::Tensor& frames_u8) const {
  TORCH_CHECK(frames_u8.dim() == 4 && frames_u8.size(3) == 3 && frames_u8.scalar_type() == at::kByte,
              "prepare_frames: expected uint8 frames [F, H, W, 3], got ", frames_u8.scalar_type(), " ",
              frames_u8.sizes());
  at::Tensor video = model::normalize_video_u8(frames_u8.to(device_).unsqueeze(0));
  video = model::resize_video_bilinear(video, model::kModelResolution, model::kModelResolution);
  const at::ScalarType storage = is_reduced(compute_dtype_) ? compute_dtype_ : at::kFloat;
  return video.squeeze(0).to(storage).contiguous();
}

at::Tensor Engine::prepare_normalised_frames(const at::Tensor& frames) const {
  TORCH_CHECK(frames.dim() == 4 && frames.size(1) == model::kModelResolution &&
                  frames.size(2) == model::kModelResolution && frames.size(3) == 3,
              "prepare_normalised_frames: expected [F, 256, 256, 3], got ", frames.sizes());
  const at::ScalarType storage = is_reduced(compute_dtype_) ? compute_dtype_ : at::kFloat;
  return frames.to(device_).to(storage).contiguous();
}

at::Tensor allocate_host_buffer(at::IntArrayRef sizes, at::ScalarType dtype, bool page_locked) {
  int64_t elements = 1;
  for (const int64_t size : sizes) elements *= size;
  const size_t bytes = std::max<size_t>(1, static_cast<size_t>(elements) * c10::elementSize(dtype));
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED) throw std::bad_alloc();
  if (page_locked) {
    (void)::madvise(data, bytes, MADV_HUGEPAGE);  // fewer page faults
    // Fault the pages in first, one short fault at a time: cudaHostRegister would otherwise fault them all in
    // while it holds the process's memory-map lock, stalling every other thread's mmap/munmap (the decoder's
    // frame buffers) for the whole range.
    auto* const first_byte = static_cast<volatile unsigned char*>(data);
    for (size_t offset = 0; offset < bytes; offset += 4096) first_byte[offset] = 0;
  }
  const bool locked = page_locked && cuda_support::register_host_memory(data, bytes);
  return at::from_blob(
      data, sizes,
      [bytes, locked](void* p) {
        if (locked) cuda_support::unregister_host_memory(p);
        ::munmap(p, bytes);
      },
      at::TensorOptions().dtype(dtype));
}

model::BackboneKernels Engine::backbone_kernels() const {
  model::BackboneKernels kernels;
  if (uses_fused_instance_norm()) {
    kernels.norm_relu = &fused_instance_norm_relu;
    kernels.add_norm_relu = &fused_add_instance_norm_relu;
  }
  // On CUDA the one-pass kernel is a glue op: the composite path keeps the reference for the A/B.
  if (fused_ && (device_.is_cpu() || options_.glue_path == ops::GluePath::automatic)) {
    kernels.l2_normalise_into = &ops::l2_normalise_channels_out;
  }
  return kernels;
}

model::FeatureGrids Engine::allocate_grids(int64_t frames) const {
  if (uses_cuda_graphs() && graph_grids_.lowres.defined() && graph_grids_.frames() == frames) return graph_grids_;
  const auto options = at::TensorOptions().device(device_).dtype(compute_dtype_);
  auto allocate = [&](std::vector<int64_t> sizes) {
    return device_.is_cpu() ? allocate_host_buffer(sizes, compute_dtype_) : at::empty(sizes, options);
  };
  model::FeatureGrids grids;
  grids.hires = allocate({1, frames, kLevelSides[0], kLevelSides[0], 128});
  grids.lowres = allocate({1, frames, kLevelSides[1], kLevelSides[1], 256});
  grids.highest = allocate({1, frames, kLevelSides[2], kLevelSides[2], 64});
  if (uses_cuda_graphs()) {
    graphs_.clear();  // they read the previous grids
    graph_grids_ = grids;
  }
  return grids;
}

void Engine::compute_features(const at::Tensor& frames, model::FeatureGrids& grids, int64_t first,
                              StageRecorder& recorder) const {
  const int64_t count = frames.size(0);
  TORCH_CHECK(first >= 0 && first + count <= grids.frames(), "compute_features: frames [", first, ", ", first + count,
              ") outside the grids' ", grids.frames());
  const int64_t total = std::max<int64_t>(1, cost_.frames);
  const auto scope = recorder.time(
      Stage::backbone, 0, 0, cost_of(Stage::backbone, 0) * (static_cast<double>(count) / static_cast<double>(total)));
  // The normalised features go straight into the grids (one pass fewer over them).
  const std::array<at::Tensor, 3> into = {grids.lowres.select(0, 0).narrow(0, first, count),
                                          grids.hires.select(0, 0).narrow(0, first, count),
                                          grids.highest.select(0, 0).narrow(0, first, count)};
  model::compute_frame_features(*compute_model_, frames.to(compute_dtype_), backbone_kernels(), &into);
}

model::QueryFeatures Engine::query_features(const model::FeatureGrids& grids, const at::Tensor& queries_tyx,
                                            StageRecorder& recorder) const {
  const auto scope = recorder.time(Stage::query_features, 0, 0, cost_of(Stage::query_features, 0));
  const at::Tensor queries = queries_tyx.to(device_, at::kFloat);
  if (!is_reduced(compute_dtype_)) return model::compute_query_features(grids, queries);
  // Reduced-precision grids: sample in float32 (grid_sample would take bf16 coordinates), then store the supports
  // in the compute dtype (ops::sample_query_supports).
  const int64_t count = queries.size(1);
  model::QueryFeatures out;
  const std::array<const at::Tensor*, 3> levels = {&grids.lowres, &grids.hires, &grids.highest};
  const std::array<at::Tensor*, 3> supports = {&out.lowres_support, &out.hires_support, &out.highest_support};
  const std::array<at::Tensor*, 3> centres = {&out.lowres, &out.hires, &out.highest};
  for (size_t level = 0; level < levels.size(); ++level) {
    const at::Tensor& grid = *levels[level];
    at::Tensor support = at::empty({1, count, model::kSupportSize, model::kSupportSize, grid.size(4)}, grid.options());
    at::Tensor support_view = support.select(0, 0);
    ops::sample_query_supports_out(grid.select(0, 0), queries[0], support_view, options_.glue_path);
    *supports[level] = support;
    *centres[level] = support.select(2, model::kSupportRadius).select(2, model::kSupportRadius);
  }
  return out;
}

model::TrackState Engine::initialise(const model::FeatureGrids& grids, const model::QueryFeatures& chunk,
                                     const at::Tensor& chunk_queries_tyx, int chunk_index,
                                     StageRecorder& recorder) const {
  const int64_t count = chunk.queries();
  const auto scope = recorder.time(Stage::init, chunk_index, 0, cost_of(Stage::init, count));
  if (!fused_) return model::initialise_tracks(*model_, grids, chunk, chunk_queries_tyx);
  const at::Tensor q = chunk_queries_tyx.select(0, 0);                         // [n, 3] (t, y, x)
  const at::Tensor query_xy = at::stack({q.select(1, 2), q.select(1, 1)}, 1);  // [n, 2] (x, y)
  const ops::InitResult init = ops::init_from_cost_volume(
      chunk.lowres.select(0, 0), chunk.hires.select(0, 0), grids.lowres.select(0, 0), grids.hires.select(0, 0),
      cost_conv_weight_, cost_conv_bias_, q.select(1, 0), query_xy.contiguous(), options_.init_queries_per_pass);
  const at::Tensor logits = at::linear(init.stats, occ_weight_, occ_bias_);  // [n, T, 2]
  return {init.points.unsqueeze(0), logits.select(-1, 0).unsqueeze(0), logits.select(-1, 1).unsqueeze(0)};
}

at::Tensor Engine::encode(const model::FeatureGrids& grids, const model::QueryFeatures& chunk, const at::Tensor& tracks,
                          int chunk_index, int iteration, StageRecorder& recorder) const {
  TORCH_CHECK(tracks.dim() == 4 && tracks.size(0) == 1 && tracks.size(3) == 2 && tracks.size(2) == grids.frames(),
              "encode: expected tracks [1, n, ", grids.frames(), ", 2], got ", tracks.sizes());
  const int64_t count = tracks.size(1), frames = tracks.size(2);
  if (!fused_) {
    std::array<at::Tensor, 3> correlations;
    {
      const auto scope =
          recorder.time(Stage::refine_correlation, chunk_index, iteration, cost_of(Stage::refine_correlation, count));
      correlations = model::local_correlations(grids, chunk, tracks);
    }
    const auto scope =
        recorder.time(Stage::refine_encoder, chunk_index, iteration, cost_of(Stage::refine_encoder, count));
    return model::encode_correlations(*model_, correlations, 1, count).select(0, 0);
  }

  // Level order of the reference: hires, lowres, highest (cmdtop.0 .. cmdtop.2).
  const std::array<const at::Tensor*, 3> levels = {&grids.hires, &grids.lowres, &grids.highest};
  const std::array<const at::Tensor*, 3> supports = {&chunk.hires_support, &chunk.lowres_support,
                                                     &chunk.highest_support};
  const at::Tensor points_256 = tracks.select(0, 0);  // [n, T, 2] float32, 256 space
  const at::ScalarType corr_dtype = is_reduced(compute_dtype_) ? compute_dtype_ : at::kFloat;
  std::array<at::Tensor, 3> correlations;
  {
    const auto scope =
        recorder.time(Stage::refine_correlation, chunk_index, iteration, cost_of(Stage::refine_correlation, count));
    // Grid cells from 256 space, multiplying first as the reference does (the grids are square). Where the grid's
    // side is a power of two both steps are exact, so one multiplication by side / 256 gives the same values; for
    // the grids' own sides that is one broadcast multiplication for the three levels (one launch instead of three).
    const bool standard_sides =
        level_cell_scales_.defined() &&
        std::ranges::equal(levels, kLevelSides, {}, [](const at::Tensor* grid) { return grid->size(3); });
    const at::Tensor level_points = standard_sides ? points_256.unsqueeze(0).mul(level_cell_scales_) : at::Tensor();
    const auto points_in_cells = [&](size_t level, int64_t side) {
      if (standard_sides) return level_points.select(0, static_cast<int64_t>(level));
      const auto resolution = static_cast<double>(model::kModelResolution);
      return std::has_single_bit(static_cast<uint64_t>(side))
                 ? points_256.mul(static_cast<double>(side) / resolution)
                 : points_256.mul(static_cast<double>(side)).div(resolution);
    };
    for (size_t level = 0; level < levels.size(); ++level) {
      const at::Tensor grid = levels[level]->select(0, 0);
      const at::Tensor points = points_in_cells(level, grid.size(2));
      // Padded rows: CMDTop's GEMMs read 16-byte aligned rows (ops::kCorrPaddedRow).
      correlations[level] = at::empty({count, frames, ops::kCorrPaddedRow}, points_256.options().dtype(corr_dtype));
      // With the standard sides nothing is launched between two levels' correlations, and each reads the grids and
      // points and writes its own rows: from the second level on it may start beside the previous one's last blocks.
      ops::local_corr4d_out(grid, points, supports[level]->select(0, 0), correlations[level], options_.corr_kernel,
                            /*overlap_previous=*/standard_sides && level > 0);
    }
  }
  const auto scope =
      recorder.time(Stage::refine_encoder, chunk_index, iteration, cost_of(Stage::refine_encoder, count));
  // Each level's encoder writes its columns of the [n, T, 3 x 256] rows directly (no concatenation pass).
  const int64_t width = cmdtop_[0]->output_channels();
  const at::Tensor encoded = at::empty({count, frames, width * static_cast<int64_t>(levels.size())},
                                       correlations[0].options().dtype(compute_dtype_));
  const at::Tensor rows = encoded.view({count * frames, -1});
  for (size_t level = 0; level < levels.size(); ++level) {
    at::Tensor columns = rows.narrow(1, width * static_cast<int64_t>(level), width);
    // Each level reads its own correlations and writes its own columns: from the second level on, its encoder may
    // start beside the previous level's last blocks.
    cmdtop_[level]->forward_out(correlations[level].view({count * frames, ops::kCorrPaddedRow}), columns,
                                /*overlap_previous=*/level > 0);
    correlations[level] = at::Tensor();
  }
  return encoded;
}

at::Tensor Engine::mixer_input(const at::Tensor& encoded, const model::TrackState& previous) const {
  return mixer_rows(encoded, previous, model::kMixerInputChannels);
}

at::Tensor Engine::mixer_rows(const at::Tensor& encoded, const model::TrackState& previous, int64_t columns) const {
  const at::ScalarType dtype = fused_ ? compute_dtype_ : at::kFloat;
  const at::Tensor tracks = previous.tracks.select(0, 0);
  at::Tensor rows = at::empty({tracks.size(0), tracks.size(1), columns}, encoded.options().dtype(dtype));
  ops::mixer_input_rows_out(previous.occlusion.select(0, 0), previous.expected_dist.select(0, 0), encoded.to(dtype),
                            tracks, rows, options_.glue_path);
  return rows;
}

model::TrackState Engine::apply_update(const at::Tensor& update, const model::TrackState& previous) {
  return batch_of_one(ops::apply_mixer_update(update, rows_of(previous)));
}

model::TrackState Engine::mix(const at::Tensor& encoded, const model::TrackState& previous, int chunk_index,
                              int iteration, StageRecorder& recorder) const {
  const int64_t count = previous.tracks.size(1);
  const auto scope =
      recorder.time(Stage::refine_transformer, chunk_index, iteration, cost_of(Stage::refine_transformer, count));
  if (!fused_) return model::apply_mixer(*model_, encoded.unsqueeze(0), previous);
  const at::Tensor tracks = previous.tracks.select(0, 0);
  const int64_t frames = tracks.size(1);
  if (device_.is_cpu()) {
    // The CPU's projections run through ops::linear (oneDNN's GEMM: gpu/ops/cpu/cpu_support.h), which gains
    // nothing from the padded rows that serve cuBLAS's alignment.
    const at::Tensor update =
        compute_model_->torch_pips_mixer->forward(mixer_input(encoded, previous), &ops::linear).to(at::kFloat);
    return apply_update(update, previous);
  }
  // mixer_input()'s rows, padded to kMixerPaddedInput for the padded input projection.
  const at::Tensor input = mixer_rows(encoded, previous, kMixerPaddedInput);
  if (mixer_) return apply_update(mixer_->forward(input), previous);  // update [n, T, 4]
  const model::TemporalMixer& mixer = *compute_model_->torch_pips_mixer;
  at::Tensor& bias = alibi_biases_[frames];
  if (!bias.defined()) {
    bias = with_aligned_rows(model::alibi_bias(mixer.layers.front()->attn->heads, frames, input.options()));
  }
  const at::Tensor no_slopes;
  const PaddedMixerWeights weights{mixer_input_weight_, mixer_qkv_weights_, mixer_qkv_biases_,
                                   uses_tensor_core_attention(input.size(1)) ? mixer_alibi_slopes_ : no_slopes};
  return batch_of_one(
      padded_mixer_forward(mixer, weights, input, bias, options_.glue_path, mlp_gelu(), rows_of(previous)));
}

model::TrackState Engine::refine(const model::FeatureGrids& grids, const model::QueryFeatures& chunk,
                                 const model::TrackState& previous, int chunk_index, int iteration,
                                 StageRecorder& recorder) const {
  const at::Tensor encoded = encode(grids, chunk, previous.tracks, chunk_index, iteration, recorder);
  return mix(encoded, previous, chunk_index, iteration, recorder);
}

model::TrackState Engine::track_chunk(const model::FeatureGrids& grids, const model::QueryFeatures& chunk,
                                      const at::Tensor& chunk_queries_tyx, int chunk_index, StageRecorder& recorder,
                                      std::vector<model::TrackState>* every_iteration) const {
  TORCH_CHECK(chunk_queries_tyx.dim() == 3 && chunk_queries_tyx.size(0) == 1 &&
                  chunk_queries_tyx.size(1) == chunk.queries() && chunk_queries_tyx.size(2) == 3,
              "track_chunk: expected queries [1, ", chunk.queries(), ", 3], got ", chunk_queries_tyx.sizes());
  const at::Tensor queries = chunk_queries_tyx.to(device_, at::kFloat);
  if (uses_cuda_graphs() && every_iteration == nullptr) {
    return track_chunk_graphed(grids, chunk, queries, chunk_index, recorder);
  }
  return track_chunk_eager(grids, chunk, queries, chunk_index, recorder, every_iteration);
}

model::TrackState Engine::track_chunk_eager(const model::FeatureGrids& grids, const model::QueryFeatures& chunk,
                                            const at::Tensor& queries, int chunk_index, StageRecorder& recorder,
                                            std::vector<model::TrackState>* every_iteration) const {
  model::TrackState state = initialise(grids, chunk, queries, chunk_index, recorder);
  if (every_iteration != nullptr) every_iteration->push_back(state);
  for (int iteration = 1; iteration <= model_->config().refinement_iterations; ++iteration) {
    state = refine(grids, chunk, state, chunk_index, iteration, recorder);
    if (every_iteration != nullptr) every_iteration->push_back(state);
  }
  return state;
}

namespace {

model::QueryFeatures clone_features(const model::QueryFeatures& q) {
  return {q.lowres.clone(),         q.hires.clone(),         q.highest.clone(),
          q.lowres_support.clone(), q.hires_support.clone(), q.highest_support.clone()};
}

void copy_features(model::QueryFeatures& into, const model::QueryFeatures& from) {
  into.lowres.copy_(from.lowres);
  into.hires.copy_(from.hires);
  into.highest.copy_(from.highest);
  into.lowres_support.copy_(from.lowres_support);
  into.hires_support.copy_(from.hires_support);
  into.highest_support.copy_(from.highest_support);
}

}  // namespace

model::TrackState Engine::track_chunk_graphed(const model::FeatureGrids& grids, const model::QueryFeatures& chunk,
                                              const at::Tensor& queries, int chunk_index,
                                              StageRecorder& recorder) const {
  const std::array<const void*, 3> grid_pointers = {grids.lowres.data_ptr(), grids.hires.data_ptr(),
                                                    grids.highest.data_ptr()};
  const int64_t count = chunk.queries(), frames = grids.frames();
  ChunkGraph* graph = nullptr;
  for (const auto& g : graphs_) {
    if (g->grids == grid_pointers && g->queries == count && g->frames == frames && g->chunk_index == chunk_index) {
      graph = g.get();
    }
  }
  if (graph == nullptr) {
    // Each graph holds its own memory pool (its temporaries): keep only a few shapes.
    constexpr size_t kMaxGraphs = 8;
    if (graphs_.size() >= kMaxGraphs) graphs_.erase(graphs_.begin());
    auto fresh = std::make_unique<ChunkGraph>();
    fresh->grids = grid_pointers;
    fresh->queries = count;
    fresh->frames = frames;
    fresh->chunk_index = chunk_index;
    fresh->chunk = clone_features(chunk);
    fresh->queries_tyx = queries.clone();
    fresh->stages = std::make_unique<StageRecorder>(cuda_index());
    fresh->graph = std::make_unique<cuda_support::Graph>();
    ChunkGraph& g = *fresh;
    g.graph->capture(cuda_index(), [&](bool capturing) {
      if (capturing) {
        g.out = track_chunk_eager(grids, g.chunk, g.queries_tyx, chunk_index, *g.stages, nullptr);
      } else {
        StageRecorder warm_up(cuda_index());
        track_chunk_eager(grids, g.chunk, g.queries_tyx, chunk_index, warm_up, nullptr);
        warm_up.collect();
      }
    });
    graphs_.push_back(std::move(fresh));
    graph = graphs_.back().get();
  } else {
    copy_features(graph->chunk, chunk);
    graph->queries_tyx.copy_(queries);
  }
  graph->graph->replay(cuda_index());
  recorder.add_replayed(*graph->stages);
  // The outputs live in the graph's pool and are overwritten by the next replay: hand out copies.
  return {graph->out.tracks.clone(), graph->out.occlusion.clone(), graph->out.expected_dist.clone()};
}

}  // namespace trackscope::gpu::engine
