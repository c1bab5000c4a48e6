#include "ops_reference.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

namespace trackscope::test {
namespace {

at::TensorOptions f32() { return at::TensorOptions().dtype(at::kFloat); }

}  // namespace

at::Tensor reference_local_corr4d(const at::Tensor& features, const at::Tensor& points, const at::Tensor& supports) {
  const int64_t frames = features.size(0);
  const int64_t height = features.size(1);
  const int64_t width = features.size(2);
  const int64_t queries = points.size(0);
  // 49 offsets (dy, dx), row-major with dy outer (docs/locotrack-spec.md §2.2).
  const at::Tensor steps = at::arange(-3, 4, f32());
  const at::Tensor dy = steps.view({7, 1}).expand({7, 7});
  const at::Tensor dx = steps.view({1, 7}).expand({7, 7});
  const at::Tensor offsets_yx = at::stack({dy, dx}, -1).reshape({49, 2});
  const at::Tensor points_yx = at::stack({points.select(-1, 1), points.select(-1, 0)}, -1).to(at::kFloat);
  const at::Tensor coords_yx = points_yx.unsqueeze(2) + offsets_yx;  // [n,T,49,2]
  const at::Tensor size_yx = at::tensor(std::vector<float>{static_cast<float>(height), static_cast<float>(width)});
  const at::Tensor normalised_yx = 2.0 * (coords_yx / size_yx) - 1.0;
  const at::Tensor grid = normalised_yx.flip({-1}).permute({1, 0, 2, 3}).contiguous();  // [T,n,49,2] (x,y)
  const at::Tensor input = features.to(at::kFloat).permute({0, 3, 1, 2});               // [T,C,H,W] strided view
  const at::Tensor sampled = at::grid_sampler(input, grid, /*bilinear*/ 0, /*zeros*/ 0, /*align_corners*/ false);
  const at::Tensor neighbours = sampled.permute({2, 0, 3, 1}).reshape({queries, frames, 7, 7, -1});  // [n,T,7,7,C]
  return at::einsum("nthwc,nijc->nthwij", {neighbours, supports.to(at::kFloat)});
}

ReferenceInit reference_init_from_planes(const at::Tensor& cost_lowres, const at::Tensor& cost_hires,
                                         const at::Tensor& conv_weight, const at::Tensor& conv_bias,
                                         const at::Tensor& query_frames, const at::Tensor& query_xy) {
  const int64_t queries = cost_hires.size(0);
  const int64_t frames = cost_hires.size(1);
  const int64_t high_height = cost_hires.size(2);
  const int64_t high_width = cost_hires.size(3);
  const int64_t cells = high_height * high_width;
  // Batch order (t, q) as the eager code: [T*n, 1, H, W].
  const at::Tensor low = cost_lowres.to(at::kFloat)
                             .permute({1, 0, 2, 3})
                             .reshape({frames * queries, 1, cost_lowres.size(2), cost_lowres.size(3)});
  const at::Tensor high =
      cost_hires.to(at::kFloat).permute({1, 0, 2, 3}).reshape({frames * queries, 1, high_height, high_width});
  const at::Tensor up = at::upsample_bilinear2d(low, {high_height, high_width}, /*align_corners=*/false);
  const at::Tensor stacked = at::cat({up, high}, 1);  // [T*n, 2, Hh, Wh]
  const at::Tensor conv = at::conv2d(stacked, conv_weight.to(at::kFloat), conv_bias.to(at::kFloat), {1, 1}, {1, 1});
  const at::Tensor logits = conv.reshape({frames, queries, cells}).permute({1, 0, 2});  // [n,T,cells]
  const at::Tensor heat = at::softmax(logits * 20.0, -1);

  // soft_argmax_heatmap_batched (threshold 5) on [n*T, Hh, Wh].
  const at::Tensor ys = at::arange(high_height, f32()) + 0.5;
  const at::Tensor xs = at::arange(high_width, f32()) + 0.5;
  const at::Tensor coords = at::stack({xs.view({1, high_width}).expand({high_height, high_width}),
                                       ys.view({high_height, 1}).expand({high_height, high_width})},
                                      -1)
                                .reshape({cells, 2});  // (x, y) per cell
  const at::Tensor flat_heat = heat.reshape({queries * frames, cells});
  const at::Tensor argmax = flat_heat.argmax(1);
  const at::Tensor peak = coords.index_select(0, argmax);  // [n*T, 2]
  const at::Tensor valid = ((coords.unsqueeze(0) - peak.unsqueeze(1)).square().sum(-1) < 25.0).to(at::kFloat);
  const at::Tensor weighted = (coords.unsqueeze(0) * (valid * flat_heat).unsqueeze(-1)).sum(1);
  const at::Tensor denominator = at::clamp_min((valid * flat_heat).sum(1, true), 1e-12);
  const at::Tensor scale =
      at::tensor(std::vector<float>{256.0f / static_cast<float>(high_width), 256.0f / static_cast<float>(high_height)});
  at::Tensor points = (weighted / denominator * scale).view({queries, frames, 2});
  const at::Tensor pinned =
      at::round(query_frames.to(at::kFloat)).unsqueeze(1) == at::arange(frames, f32()).unsqueeze(0);
  points = at::where(pinned.unsqueeze(-1), query_xy.to(at::kFloat).unsqueeze(1).expand({queries, frames, 2}), points);

  const at::Tensor planes = stacked.reshape({frames, queries, 2, cells});
  const at::Tensor stats = at::cat({planes.mean(-1), planes.amax(-1), planes.amin(-1)}, -1).permute({1, 0, 2});
  return {points.contiguous(), stats.contiguous()};
}

ReferenceInit reference_init(const at::Tensor& query_lowres, const at::Tensor& query_hires,
                             const at::Tensor& features_lowres, const at::Tensor& features_hires,
                             const at::Tensor& conv_weight, const at::Tensor& conv_bias, const at::Tensor& query_frames,
                             const at::Tensor& query_xy) {
  // einsum('bnc,bthwc->tbnhw') with B = 1, here directly as [n,T,H,W].
  const at::Tensor cost_low =
      at::einsum("nc,thwc->nthw", {query_lowres.to(at::kFloat), features_lowres.to(at::kFloat)});
  const at::Tensor cost_high = at::einsum("nc,thwc->nthw", {query_hires.to(at::kFloat), features_hires.to(at::kFloat)});
  return reference_init_from_planes(cost_low, cost_high, conv_weight, conv_bias, query_frames, query_xy);
}

at::Tensor reference_cmdtop(const at::Tensor& corr, const gpu::ops::CmdTopWeights& weights) {
  const int64_t samples = corr.numel() / 2401;
  const at::Tensor x = corr.to(at::kFloat).reshape({samples, 7, 7, 7, 7});
  const at::Tensor branch1 = x.permute({0, 3, 4, 1, 2}).reshape({samples, 49, 7, 7});  // channels (i,j), space (h,w)
  const at::Tensor branch2 = x.reshape({samples, 49, 7, 7});                           // channels (h,w), space (i,j)
  const bool small = weights.layers.size() == 2;
  // F.pad order (left, right, top, bottom), from docs/locotrack-spec.md §2.5.
  const std::vector<std::vector<int64_t>> pads =
      small ? std::vector<std::vector<int64_t>>{{1, 1, 1, 1}, {0, 0, 0, 0}}
            : std::vector<std::vector<int64_t>>{{1, 1, 1, 1}, {0, 1, 0, 1}, {0, 0, 0, 0}};
  auto encode = [&](at::Tensor h) {
    for (size_t i = 0; i < weights.layers.size(); ++i) {
      const gpu::ops::CmdTopLayerWeights& l = weights.layers[i];
      h = at::constant_pad_nd(h, pads[i], 0.0);
      h = at::conv2d(h, l.conv_weight.to(at::kFloat), l.conv_bias.to(at::kFloat), {l.stride, l.stride});
      h = at::group_norm(h, l.conv_weight.size(0) / 16, l.norm_weight.to(at::kFloat), l.norm_bias.to(at::kFloat), 1e-5);
      h = at::relu(h);
    }
    return h.mean({2, 3});
  };
  return at::cat({encode(branch1), encode(branch2)}, -1);
}

gpu::ops::CmdTopWeights random_cmdtop_weights(bool base) {
  const std::vector<int64_t> kernels = base ? std::vector<int64_t>{3, 3, 2} : std::vector<int64_t>{5, 2};
  const std::vector<int64_t> strides = base ? std::vector<int64_t>{2, 2, 2} : std::vector<int64_t>{4, 2};
  const std::vector<int64_t> channels = base ? std::vector<int64_t>{64, 128, 128} : std::vector<int64_t>{64, 128};
  gpu::ops::CmdTopWeights weights;
  int64_t in_channels = 49;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in_channels * kernels[i] * kernels[i]));
    gpu::ops::CmdTopLayerWeights l;
    l.conv_weight = (at::rand({channels[i], in_channels, kernels[i], kernels[i]}, f32()) * 2.0 - 1.0) * bound;
    l.conv_bias = (at::rand({channels[i]}, f32()) * 2.0 - 1.0) * bound;
    l.norm_weight = 1.0 + 0.2 * at::randn({channels[i]}, f32());
    l.norm_bias = 0.2 * at::randn({channels[i]}, f32());
    l.stride = strides[i];
    weights.layers.push_back(l);
    in_channels = channels[i];
  }
  return weights;
}

at::Tensor random_features(int64_t frames, int64_t height, int64_t width, int64_t channels) {
  const at::Tensor raw = at::randn({frames, height, width, channels}, f32());
  return raw / at::sqrt(at::clamp_min(raw.square().sum(-1, true), 1e-12));
}

at::Tensor random_points(int64_t queries, int64_t frames, int64_t height, int64_t width, double margin) {
  const at::Tensor unit = at::rand({queries, frames, 2}, f32());
  const at::Tensor size = at::tensor(std::vector<float>{static_cast<float>(width), static_cast<float>(height)});
  at::Tensor points = unit * (size + 2.0 * margin) - margin;
  // Exact integer and half-integer positions hit the floor() edge cases; far-away points must give zeros.
  auto flat = points.view({queries * frames, 2});
  const int64_t count = queries * frames;
  if (count > 0) flat[0] = at::tensor(std::vector<float>{0.0f, 0.0f});
  if (count > 1) flat[1] = at::tensor(std::vector<float>{static_cast<float>(width), static_cast<float>(height)});
  if (count > 2) flat[2] = at::tensor(std::vector<float>{2.5f, 1.5f});
  if (count > 3) flat[3] = at::tensor(std::vector<float>{-60.0f, 3.0f});
  if (count > 4) flat[4] = at::tensor(std::vector<float>{static_cast<float>(width) + 40.0f, -45.0f});
  if (count > 5) flat[5] = at::tensor(std::vector<float>{-3.25f, static_cast<float>(height) + 3.75f});
  return points;
}

Difference difference(const at::Tensor& actual, const at::Tensor& expected) {
  const at::Tensor a = actual.to(at::kCPU).to(at::kDouble);
  const at::Tensor e = expected.to(at::kCPU).to(at::kDouble);
  Difference d;
  if (a.numel() == 0) return d;
  const at::Tensor diff = (a - e).abs();
  const at::Tensor unexplained_nan = at::logical_and(at::isnan(diff), at::logical_not(at::isnan(e)));
  if (unexplained_nan.any().item<bool>()) {
    d.max_abs_diff = std::numeric_limits<double>::infinity();
    d.mean_abs_diff = std::numeric_limits<double>::infinity();
  } else {
    d.max_abs_diff = at::nan_to_num(diff, 0.0).max().item<double>();
    d.mean_abs_diff = at::nan_to_num(diff, 0.0).mean().item<double>();
  }
  d.max_abs_expected = at::nan_to_num(e, 0.0).abs().max().item<double>();
  return d;
}

void report(const std::string& what, const Difference& d, const std::string& tolerance) {
  std::printf("[ops] %-58s max|diff| %.3e  mean|diff| %.3e  max|ref| %.3e  rel %.3e  (tolerance %s)\n", what.c_str(),
              d.max_abs_diff, d.mean_abs_diff, d.max_abs_expected, d.relative(), tolerance.c_str());
  std::fflush(stdout);
}

}  // namespace trackscope::test
