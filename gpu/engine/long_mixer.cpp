// The temporal transformer block by block over a long time axis (long_mixer.h has the contract and the bound).
#include "gpu/engine/long_mixer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace trackscope::gpu::engine {
namespace {

constexpr double kNormEpsilon = 1e-5;  // nn.LayerNorm's default (docs/locotrack-spec.md §4)
// A softmax weight below e^-kNegligibleLogit relative to the row's maximum is 0 in float (e^-103.3 is the smallest).
constexpr double kNegligibleLogit = 110.0;

at::Tensor layer_norm(const at::Tensor& x, const model::AffineNorm& norm) {
  return at::layer_norm(x, {x.size(-1)}, norm.weight, norm.bias, kNormEpsilon, at::globalContext().userEnabledCuDNN());
}

// The additive bias of query frames [row_first, row_first + rows) against key frames [key_first, key_first + keys)
// for one head, value for value what model::alibi_bias puts there: -slope * distance on the head's side, -1e9 on
// the other.
at::Tensor block_bias(const at::Tensor& slope, bool forward, int64_t row_first, int64_t rows, int64_t key_first,
                      int64_t keys, const at::TensorOptions& options) {
  const auto long_options = options.dtype(at::kLong);
  const at::Tensor j_minus_i = at::arange(key_first, key_first + keys, long_options).unsqueeze(0) -
                               at::arange(row_first, row_first + rows, long_options).unsqueeze(1);
  const at::Tensor allowed = forward ? j_minus_i.le(0) : j_minus_i.ge(0);
  const at::Tensor ramp = slope * (forward ? j_minus_i : j_minus_i.neg());  // float32, as alibi_bias computes it
  return at::where(allowed, ramp, at::full({}, -1e9, ramp.options())).to(options.dtype());
}

}  // namespace

at::Tensor long_sequence_mixer(const model::TemporalMixer& mixer, int64_t sequences, int64_t frames, int64_t block,
                               const std::function<at::Tensor(int64_t begin, int64_t count)>& input_block,
                               LongMixerStats* stats) {
  TORCH_CHECK(sequences > 0 && frames > 0 && block > 0, "long_sequence_mixer: ", sequences, " sequences of ", frames,
              " frames in blocks of ", block);
  const auto options = mixer.input_proj->weight.options();
  const int64_t dim = mixer.input_proj->weight.size(0);
  const int64_t heads = mixer.layers.front()->attn->heads, head_dim = dim / heads, half = heads / 2;
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  // The slopes exactly as alibi_bias rounds them: -bias[k][1][0] (forward heads), -bias[k][0][1] (backward heads).
  const at::Tensor small_bias = model::alibi_bias(heads, 2, options.dtype(at::kFloat));
  std::vector<at::Tensor> slopes;
  std::vector<double> slope_values;
  for (int64_t k = 0; k < heads; ++k) {
    const at::Tensor s = k < half ? small_bias[k][1][0].neg() : small_bias[k][0][1].neg();
    slopes.push_back(s);
    slope_values.push_back(s.item<double>());
  }
  auto blocks = [&](const std::function<void(int64_t, int64_t)>& body) {
    for (int64_t begin = 0; begin < frames; begin += block) body(begin, std::min(block, frames - begin));
  };

  at::Tensor h = at::empty({sequences, frames, dim}, options);  // the residual stream
  blocks([&](int64_t begin, int64_t count) {
    const at::Tensor x = input_block(begin, count);
    TORCH_CHECK(x.dim() == 3 && x.size(0) == sequences && x.size(1) == count && x.size(2) == model::kMixerInputChannels,
                "long_sequence_mixer: input block ", x.sizes(), " for ", sequences, " x ", count);
    h.narrow(1, begin, count).copy_(mixer.input_proj->forward(x));
  });

  for (const auto& layer : mixer.layers) {
    const model::AlibiAttention& attn = *layer->attn;
    // Keys and values of every frame, from the layer's input (the residual stream is updated in place below).
    at::Tensor keys = at::empty({sequences, frames, dim}, options),
               values = at::empty({sequences, frames, dim}, options);
    blocks([&](int64_t begin, int64_t count) {
      const at::Tensor normed = layer_norm(h.narrow(1, begin, count), *layer->layer_norm1);
      keys.narrow(1, begin, count).copy_(attn.key_proj->forward(normed));
      values.narrow(1, begin, count).copy_(attn.value_proj->forward(normed));
    });
    // max_j |k_j| per sequence and head, for the reach bound.
    at::Tensor key_norm_max = at::zeros({sequences, heads}, options.dtype(at::kFloat));
    blocks([&](int64_t begin, int64_t count) {
      const at::Tensor k = keys.narrow(1, begin, count).to(at::kFloat).view({sequences, count, heads, head_dim});
      key_norm_max = at::maximum(key_norm_max, k.norm(2, -1).amax(1));
    });

    blocks([&](int64_t begin, int64_t count) {
      const at::Tensor normed = layer_norm(h.narrow(1, begin, count), *layer->layer_norm1);
      const at::Tensor queries =
          attn.query_proj->forward(normed).view({sequences, count, heads, head_dim}).permute({0, 2, 1, 3});
      at::Tensor attended = at::empty({sequences, heads, count, head_dim}, options);
      for (int64_t k = 0; k < heads; ++k) {
        const bool forward = k < half;
        const at::Tensor q = queries.select(1, k);  // [S, count, hd]
        const at::Tensor q_float = q.to(at::kFloat);
        const at::Tensor own_keys = keys.narrow(1, begin, count).narrow(2, k * head_dim, head_dim).to(at::kFloat);
        const at::Tensor diagonal = (q_float * own_keys).sum(-1) * scale;  // [S, count]
        const at::Tensor bound = q_float.norm(2, -1) * key_norm_max.select(1, k).unsqueeze(1) * scale;
        const double margin = std::max(0.0, (bound - diagonal).max().item<double>());
        const double reach_frames = std::ceil((margin + kNegligibleLogit) / slope_values[static_cast<size_t>(k)]);
        const int64_t reach = reach_frames >= static_cast<double>(frames) ? frames : static_cast<int64_t>(reach_frames);
        const int64_t key_first = forward ? std::max<int64_t>(0, begin - reach) : begin;
        const int64_t key_end = forward ? begin + count : std::min(frames, begin + count + reach);
        const at::Tensor k_block = keys.narrow(1, key_first, key_end - key_first).narrow(2, k * head_dim, head_dim);
        const at::Tensor v_block = values.narrow(1, key_first, key_end - key_first).narrow(2, k * head_dim, head_dim);
        const at::Tensor bias =
            block_bias(slopes[static_cast<size_t>(k)], forward, begin, count, key_first, key_end - key_first, options);
        const at::Tensor scores = at::matmul(q, k_block.transpose(-2, -1)) * scale + bias;
        attended.select(1, k).copy_(at::matmul(at::softmax(scores, -1), v_block));
        if (stats != nullptr) {
          stats->max_reach_frames = std::max(stats->max_reach_frames, reach);
          stats->key_frames += key_end - key_first;
        }
      }
      const at::Tensor merged = attended.permute({0, 2, 1, 3}).reshape({sequences, count, dim});
      at::Tensor rows = h.narrow(1, begin, count);
      rows.add_(attn.final_proj->forward(merged));
      if (stats != nullptr) ++stats->blocks;
    });
    keys = at::Tensor();
    values = at::Tensor();
    blocks([&](int64_t begin, int64_t count) {
      at::Tensor rows = h.narrow(1, begin, count);
      rows.add_(layer->dense_out->forward(at::gelu(layer->dense_in->forward(layer_norm(rows, *layer->layer_norm2)))));
    });
  }

  at::Tensor out = at::empty({sequences, frames, 4}, options.dtype(at::kFloat));
  const at::Tensor out_weight = mixer.output_proj->weight.narrow(0, 0, 4),
                   out_bias = mixer.output_proj->bias.narrow(0, 0, 4);
  blocks([&](int64_t begin, int64_t count) {
    out.narrow(1, begin, count)
        .copy_(at::linear(layer_norm(h.narrow(1, begin, count), *mixer.ln_out), out_weight, out_bias));
  });
  return out;
}

}  // namespace trackscope::gpu::engine
