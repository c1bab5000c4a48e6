// LocoTrack's pipeline stages (docs/locotrack-spec.md §2). Each op mirrors the official code's op sequence where the
// order of floating-point operations is observable (coordinate scaling "multiply first", +0.5 before the
// normalisation, softmax of 20x, ...); comments say where this port deliberately differs and why.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

#include "gpu/model/locotrack.h"
#include "gpu/ops/ops.h"

namespace trackscope::gpu::model {
namespace {

constexpr int kSupportCells = kSupportSize * kSupportSize;

void check_video(const at::Tensor& video, const char* what) {
  TORCH_CHECK(video.dim() == 5 && video.size(4) == 3, what, ": expected a video [B, T, H, W, 3], got ", video.sizes());
  TORCH_CHECK(video.size(0) > 0 && video.size(1) > 0, what, ": the video is empty: ", video.sizes());
}

void check_queries(const at::Tensor& queries, std::int64_t batch, const char* what) {
  TORCH_CHECK(queries.dim() == 3 && queries.size(2) == 3, what, ": expected queries [B, N, 3] (t, y, x), got ",
              queries.sizes());
  TORCH_CHECK(queries.size(0) == batch, what, ": queries have batch ", queries.size(0), ", the video ", batch);
}

// The 7x7 support offsets in (dy, dx), row-major with dy outer: [49] each, made on the device (no host copy).
std::pair<at::Tensor, at::Tensor> support_offsets(const at::TensorOptions& options) {
  const at::Tensor steps = at::arange(-kSupportRadius, kSupportRadius + 1, options.dtype(at::kLong));
  return {steps.repeat_interleave(kSupportSize), steps.repeat({kSupportSize})};
}

// utils.map_coordinates_3d: trilinear grid_sample of feats [B, T, H, W, C] at coords [B, M, 3] (t, y, x) in grid
// cells, with t shifted by +0.5, border padding, align_corners=False -> [B, M, C].
at::Tensor sample_trilinear_border(const at::Tensor& feats, const at::Tensor& coords_tyx) {
  const at::Tensor input = feats.permute({0, 4, 1, 2, 3});  // [B, C, T, H, W] view
  const at::Tensor c = coords_tyx.to(at::kFloat);
  const at::Tensor t = (c.select(-1, 0) + 0.5) / static_cast<double>(feats.size(1));
  const at::Tensor y = c.select(-1, 1) / static_cast<double>(feats.size(2));
  const at::Tensor x = c.select(-1, 2) / static_cast<double>(feats.size(3));
  // Normalised 2 v / size - 1, reordered to (x, y, t).
  at::Tensor grid = at::stack({x, y, t}, -1).mul(2).sub(1);
  grid = grid.unsqueeze(2).unsqueeze(2).to(feats.scalar_type());  // [B, M, 1, 1, 3]
  const at::Tensor out = at::grid_sampler(input, grid, /*bilinear*/ 0, /*border*/ 1, /*align_corners=*/false);
  return out.squeeze(-1).squeeze(-1).permute({0, 2, 1});  // [B, M, C]
}

// utils.map_coordinates_2d: bilinear grid_sample of every frame of feats [B, T, H, W, C] at coords
// [B, n, T, S, 2] (y, x) in grid cells, zeros padding, align_corners=False, no shift -> [B, n, T, S, C].
at::Tensor sample_bilinear_zeros(const at::Tensor& feats, const at::Tensor& coords_yx) {
  const std::int64_t batch = feats.size(0), frames = feats.size(1), channels = feats.size(4);
  const std::int64_t queries = coords_yx.size(1), samples = coords_yx.size(3);
  const at::Tensor input =
      feats.permute({0, 1, 4, 2, 3}).reshape({batch * frames, channels, feats.size(2), feats.size(3)});
  const at::Tensor c = coords_yx.permute({0, 2, 1, 3, 4}).reshape({batch * frames, queries, samples, 2});
  const at::Tensor y = c.select(-1, 0) / static_cast<double>(feats.size(2));
  const at::Tensor x = c.select(-1, 1) / static_cast<double>(feats.size(3));
  const at::Tensor grid = at::stack({x, y}, -1).mul(2).sub(1).to(feats.scalar_type());
  const at::Tensor out = at::grid_sampler(input, grid, /*bilinear*/ 0, /*zeros*/ 0, /*align_corners=*/false);
  return out.permute({0, 2, 3, 1}).reshape({batch, frames, queries, samples, channels}).permute({0, 2, 1, 3, 4});
}

// x / sqrt(max(sum x^2, 1e-12)) along the last axis (clamps the squared norm, unlike F.normalize).
at::Tensor l2_normalise_channels(const at::Tensor& x) {
  return x / at::sqrt(at::clamp_min(x.square().sum(-1, /*keepdim=*/true), 1e-12));
}

struct InitialCosts {
  at::Tensor stacked;  // [T, B, n, 64, 64, 2]: upsampled lowres cost, hires cost
  at::Tensor logits;   // [B, n, T, 64, 64]: cost_conv output
};

InitialCosts initial_costs(const LocoTrack& model, const FeatureGrids& grids, const QueryFeatures& chunk) {
  const at::Tensor cost_lowres = at::einsum("bnc,bthwc->tbnhw", {chunk.lowres, grids.lowres});
  const at::Tensor cost_hires = at::einsum("bnc,bthwc->tbnhw", {chunk.hires, grids.hires});
  const std::int64_t frames = cost_lowres.size(0), batch = cost_lowres.size(1), queries = cost_lowres.size(2);
  const std::int64_t planes = frames * batch * queries;
  at::Tensor upsampled = at::upsample_bilinear2d(
      cost_lowres.reshape({planes, 1, cost_lowres.size(3), cost_lowres.size(4)}),
      {cost_hires.size(3), cost_hires.size(4)}, /*align_corners=*/false, c10::nullopt, c10::nullopt);
  upsampled = upsampled.reshape(cost_hires.sizes());
  InitialCosts costs;
  costs.stacked = at::stack({upsampled, cost_hires}, -1);
  const at::Tensor planes_nchw =
      costs.stacked.permute({0, 1, 2, 5, 3, 4}).reshape({planes, 2, cost_hires.size(3), cost_hires.size(4)});
  costs.logits = model.cost_conv->forward(planes_nchw)
                     .reshape({frames, batch, queries, cost_hires.size(3), cost_hires.size(4)})
                     .permute({1, 2, 0, 3, 4});
  return costs;
}

}  // namespace

// --- data helpers -----------------------------------------------------------------------------------------

QueryFeatures QueryFeatures::slice(std::int64_t begin, std::int64_t end) const {
  QueryFeatures out;
  const std::int64_t length = end - begin;
  out.lowres = lowres.narrow(1, begin, length);
  out.hires = hires.narrow(1, begin, length);
  out.highest = highest.narrow(1, begin, length);
  out.lowres_support = lowres_support.narrow(1, begin, length);
  out.hires_support = hires_support.narrow(1, begin, length);
  out.highest_support = highest_support.narrow(1, begin, length);
  return out;
}

at::Tensor normalize_video_u8(const at::Tensor& video_u8) {
  TORCH_CHECK(video_u8.scalar_type() == at::kByte, "normalize_video_u8: expected uint8, got ", video_u8.scalar_type());
  const auto normalise = [](const at::Tensor& bytes) { return bytes.to(at::kFloat).div(255.0).mul(2).sub(1); };
  if (!video_u8.device().is_cpu()) return normalise(video_u8);
  // On the CPU a lookup in the table of all 256 results (made by the very same operations, so the values are
  // identical) is one pass instead of four full-size passes and three temporaries: a 720p frame took ~8 ms.
  const at::Tensor table = normalise(at::arange(256, at::kFloat));
  const at::Tensor source = video_u8.contiguous();
  at::Tensor out = at::empty(source.sizes(), source.options().dtype(at::kFloat));
  const uint8_t* in = source.data_ptr<uint8_t>();
  float* values = out.data_ptr<float>();
  const float* lookup = table.data_ptr<float>();
  at::parallel_for(0, source.numel(), int64_t{1} << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) values[i] = lookup[in[i]];
  });
  return out;
}

at::Tensor resize_video_bilinear(const at::Tensor& video, std::int64_t height, std::int64_t width) {
  check_video(video, "resize_video_bilinear");
  TORCH_CHECK(height > 0 && width > 0, "resize_video_bilinear: invalid size ", height, "x", width);
  const std::int64_t batch = video.size(0), frames = video.size(1), channels = video.size(4);
  if (video.size(2) == height && video.size(3) == width) return video;
  const at::Tensor planes =
      video.permute({0, 1, 4, 2, 3}).reshape({batch * frames, channels, video.size(2), video.size(3)});
  const at::Tensor resized =
      at::upsample_bilinear2d(planes, {height, width}, /*align_corners=*/false, c10::nullopt, c10::nullopt);
  return resized.reshape({batch, frames, channels, height, width}).permute({0, 1, 3, 4, 2});
}

// --- stage 1: backbone ------------------------------------------------------------------------------------

std::array<at::Tensor, 3> compute_frame_features(const LocoTrack& model, const at::Tensor& frames,
                                                 const BackboneKernels& kernels,
                                                 const std::array<at::Tensor, 3>* into) {
  TORCH_CHECK(frames.dim() == 4 && frames.size(1) == kModelResolution && frames.size(2) == kModelResolution &&
                  frames.size(3) == 3,
              "compute_frame_features: expected frames [F, 256, 256, 3], got ", frames.sizes());
  // NHWC data seen as NCHW (a strided view), as the official code hands it to the first conv.
  const auto [highest, hires, lowres] = model.resnet_torch->forward(frames.permute({0, 3, 1, 2}), kernels);
  auto normalised = [&kernels, into](const at::Tensor& x, std::size_t level) {
    if (into != nullptr) {
      at::Tensor out = (*into)[level];
      TORCH_CHECK(out.sizes() == x.sizes() && out.is_contiguous(), "compute_frame_features: output ", level,
                  " must be a contiguous ", x.sizes(), ", got ", out.sizes());
      if (kernels.l2_normalise_into != nullptr) {
        kernels.l2_normalise_into(x, out);
      } else {
        out.copy_(l2_normalise_channels(x));
      }
      return out;
    }
    return l2_normalise_channels(x).contiguous();
  };
  return {normalised(lowres.permute({0, 2, 3, 1}), 0), normalised(hires.permute({0, 2, 3, 1}), 1),
          normalised(highest.permute({0, 2, 3, 1}), 2)};
}

FeatureGrids compute_feature_grids(const LocoTrack& model, const at::Tensor& video, std::int64_t frames_per_chunk) {
  check_video(video, "compute_feature_grids");
  TORCH_CHECK(video.size(2) == kModelResolution && video.size(3) == kModelResolution,
              "compute_feature_grids: the model runs at 256x256, got frames of ", video.size(2), "x", video.size(3),
              " (resize first, as inference() does)");
  if (frames_per_chunk <= 0) frames_per_chunk = model.config().feature_chunk_frames;
  const std::int64_t batch = video.size(0), frames = video.size(1);
  const at::Tensor flat = video.reshape({batch * frames, kModelResolution, kModelResolution, 3});
  std::vector<at::Tensor> lowres, hires, highest;
  for (std::int64_t begin = 0; begin < flat.size(0); begin += frames_per_chunk) {
    const std::int64_t length = std::min(frames_per_chunk, flat.size(0) - begin);
    auto features = compute_frame_features(model, flat.narrow(0, begin, length));
    lowres.push_back(std::move(features[0]));
    hires.push_back(std::move(features[1]));
    highest.push_back(std::move(features[2]));
  }
  auto join = [&](std::vector<at::Tensor>& parts) {
    at::Tensor all = parts.size() == 1 ? parts[0] : at::cat(parts, 0);
    parts.clear();
    return all.reshape({batch, frames, all.size(1), all.size(2), all.size(3)});
  };
  FeatureGrids grids;
  grids.lowres = join(lowres);
  grids.hires = join(hires);
  grids.highest = join(highest);
  return grids;
}

// --- stage 2: query features ------------------------------------------------------------------------------

QueryFeatures compute_query_features(const FeatureGrids& grids, const at::Tensor& query_points_tyx) {
  check_queries(query_points_tyx, grids.lowres.size(0), "compute_query_features");
  const std::int64_t batch = query_points_tyx.size(0), queries = query_points_tyx.size(1);
  const at::Tensor q = query_points_tyx.to(grids.lowres.device(), at::kFloat);
  const auto [offset_y, offset_x] = support_offsets(q.options());
  auto sample_level = [&](const at::Tensor& grid, at::Tensor& centre, at::Tensor& support) {
    const double frames = static_cast<double>(grid.size(1));
    // convert_grid_coordinates: coords * out_size / in_size, multiply first.
    const at::Tensor t = q.select(-1, 0).mul(frames).div(frames);
    const at::Tensor y =
        q.select(-1, 1).mul(static_cast<double>(grid.size(2))).div(static_cast<double>(kModelResolution));
    const at::Tensor x =
        q.select(-1, 2).mul(static_cast<double>(grid.size(3))).div(static_cast<double>(kModelResolution));
    const at::Tensor positions = at::stack({t.unsqueeze(-1).expand({batch, queries, kSupportCells}),
                                            y.unsqueeze(-1) + offset_y, x.unsqueeze(-1) + offset_x},
                                           -1);  // [B, N, 49, 3]
    const at::Tensor sampled = sample_trilinear_border(grid, positions.reshape({batch, queries * kSupportCells, 3}));
    support = sampled.reshape({batch, queries, kSupportSize, kSupportSize, grid.size(4)});
    centre = support.select(2, kSupportRadius).select(2, kSupportRadius);
  };
  QueryFeatures out;
  sample_level(grids.lowres, out.lowres, out.lowres_support);
  sample_level(grids.hires, out.hires, out.hires_support);
  sample_level(grids.highest, out.highest, out.highest_support);
  return out;
}

// --- stage 4: initialisation ------------------------------------------------------------------------------

at::Tensor initial_heatmap_logits(const LocoTrack& model, const FeatureGrids& grids, const QueryFeatures& chunk) {
  return initial_costs(model, grids, chunk).logits;
}

at::Tensor windowed_soft_argmax(const at::Tensor& heatmap) {
  TORCH_CHECK(heatmap.dim() >= 2, "windowed_soft_argmax: expected [..., H, W], got ", heatmap.sizes());
  const std::int64_t height = heatmap.size(-2), width = heatmap.size(-1);
  const at::Tensor flat = heatmap.reshape({-1, height * width});
  // argmax returns the first maximal index, as the reference's torch.argmax does.
  const at::Tensor peak = flat.argmax(-1, /*keepdim=*/true);  // [P, 1]
  const at::Tensor peak_y = peak.div(width, "floor"), peak_x = peak.remainder(width);
  // Only cells with squared distance < 25 can be valid: a 9x9 window around the peak, masked to the disc.
  // The reference sums over all cells with a 0/1 mask; the sum here has the same terms in another order.
  const auto long_options = flat.options().dtype(at::kLong);
  const at::Tensor steps = at::arange(-(kSoftArgmaxRadius - 1), kSoftArgmaxRadius, long_options);
  const std::int64_t side = steps.size(0);
  const at::Tensor dy = steps.repeat_interleave(side), dx = steps.repeat({side});
  const at::Tensor in_disc = (dy * dy + dx * dx) < kSoftArgmaxRadius * kSoftArgmaxRadius;
  const at::Tensor cell_y = peak_y + dy, cell_x = peak_x + dx;  // [P, 81]
  const at::Tensor valid = in_disc & (cell_y >= 0) & (cell_y < height) & (cell_x >= 0) & (cell_x < width);
  const at::Tensor index = cell_y.clamp(0, height - 1) * width + cell_x.clamp(0, width - 1);
  const at::Tensor weights = flat.gather(1, index) * valid;
  const at::Tensor total = at::clamp_min(weights.sum(-1), 1e-12);
  const at::Tensor x = (weights * (cell_x.to(flat.scalar_type()) + 0.5)).sum(-1) / total;
  const at::Tensor y = (weights * (cell_y.to(flat.scalar_type()) + 0.5)).sum(-1) / total;
  std::vector<std::int64_t> shape(heatmap.sizes().begin(), heatmap.sizes().end() - 2);
  shape.push_back(2);
  return at::stack({x, y}, -1).reshape(shape);
}

TrackState initialise_tracks(const LocoTrack& model, const FeatureGrids& grids, const QueryFeatures& chunk,
                             const at::Tensor& query_points_tyx) {
  check_queries(query_points_tyx, grids.lowres.size(0), "initialise_tracks");
  TORCH_CHECK(query_points_tyx.size(1) == chunk.queries(), "initialise_tracks: ", query_points_tyx.size(1),
              " query points for ", chunk.queries(), " query features");
  const InitialCosts costs = initial_costs(model, grids, chunk);
  const std::int64_t batch = costs.logits.size(0), queries = costs.logits.size(1), frames = costs.logits.size(2);
  const std::int64_t cells_h = costs.logits.size(3), cells_w = costs.logits.size(4);

  const at::Tensor probabilities =
      at::softmax(costs.logits.reshape({batch, queries, frames, cells_h * cells_w}) * kSoftmaxTemperature, -1)
          .view({batch, queries, frames, cells_h, cells_w});
  const at::Tensor cells_xy = windowed_soft_argmax(probabilities);  // [B, n, T, 2] in heatmap cells
  const at::Tensor x =
      cells_xy.select(-1, 0).mul(static_cast<double>(kModelResolution)).div(static_cast<double>(cells_w));
  const at::Tensor y =
      cells_xy.select(-1, 1).mul(static_cast<double>(kModelResolution)).div(static_cast<double>(cells_h));
  at::Tensor points = at::stack({x, y}, -1);

  // Query-frame pin: on frame round(t) (half to even) the track is the query itself.
  const at::Tensor q = query_points_tyx.to(points.device(), points.scalar_type());
  const at::Tensor query_frame =
      at::round(q.select(-1, 0).mul(static_cast<double>(frames)).div(static_cast<double>(frames)));
  const at::Tensor frame_index = at::arange(frames, q.options());
  const at::Tensor is_query_frame = (query_frame.unsqueeze(-1) == frame_index).unsqueeze(-1);  // [B, n, T, 1]
  const at::Tensor query_xy = at::stack({q.select(-1, 2), q.select(-1, 1)}, -1).unsqueeze(2);  // [B, n, 1, 2]
  points = at::where(is_query_frame, query_xy, points);

  // Occlusion head on [mean, max, min] over the cells of both raw costs: 6 features per (t, b, q).
  const at::Tensor statistics = at::cat(
      {costs.stacked.mean({-2, -3}), costs.stacked.amax({-2, -3}), costs.stacked.amin({-2, -3})}, -1);  // [T, B, n, 6]
  const at::Tensor logits = model.occ_linear->forward(statistics);                                      // [T, B, n, 2]
  TrackState state;
  state.tracks = points;
  state.occlusion = logits.select(-1, 0).permute({1, 2, 0});
  state.expected_dist = logits.select(-1, 1).permute({1, 2, 0});
  return state;
}

// --- stage 5: refinement ----------------------------------------------------------------------------------

std::array<at::Tensor, 3> local_correlations(const FeatureGrids& grids, const QueryFeatures& chunk,
                                             const at::Tensor& tracks) {
  TORCH_CHECK(tracks.dim() == 4 && tracks.size(3) == 2, "local_correlations: expected tracks [B, n, T, 2], got ",
              tracks.sizes());
  const std::array<const at::Tensor*, 3> levels = {&grids.hires, &grids.lowres, &grids.highest};
  const std::array<const at::Tensor*, 3> supports = {&chunk.hires_support, &chunk.lowres_support,
                                                     &chunk.highest_support};
  const auto [offset_y, offset_x] = support_offsets(tracks.options());
  std::array<at::Tensor, 3> out;
  for (std::size_t level = 0; level < levels.size(); ++level) {
    const at::Tensor& grid = *levels[level];
    const at::Tensor x =
        tracks.select(-1, 0).mul(static_cast<double>(grid.size(3))).div(static_cast<double>(kModelResolution));
    const at::Tensor y =
        tracks.select(-1, 1).mul(static_cast<double>(grid.size(2))).div(static_cast<double>(kModelResolution));
    const at::Tensor coords = at::stack({y.unsqueeze(-1) + offset_y, x.unsqueeze(-1) + offset_x}, -1);  // [B,n,T,49,2]
    const at::Tensor neighbourhood = sample_bilinear_zeros(grid, coords);
    const at::Tensor windows =
        neighbourhood.reshape({neighbourhood.size(0), neighbourhood.size(1), neighbourhood.size(2), kSupportSize,
                               kSupportSize, neighbourhood.size(4)});
    const at::Tensor correlation = at::einsum("bnthwc,bnijc->bnthwij", {windows, *supports[level]});
    out[level] = correlation.reshape({-1, kSupportSize, kSupportSize, kSupportSize, kSupportSize});
  }
  return out;
}

at::Tensor encode_correlations(const LocoTrack& model, const std::array<at::Tensor, 3>& correlations,
                               std::int64_t batch, std::int64_t queries) {
  std::vector<at::Tensor> encoded;
  for (std::size_t level = 0; level < correlations.size(); ++level) {
    const at::Tensor e = model.cmdtop[level]->forward(correlations[level]);
    encoded.push_back(e.reshape({batch, queries, -1, e.size(1)}));
  }
  return at::cat(encoded, -1);
}

at::Tensor alibi_bias(std::int64_t heads, std::int64_t frames, const at::TensorOptions& options) {
  const std::int64_t half = heads / 2;
  const auto float_options = options.dtype(at::kFloat);
  // The forward heads' slopes (the backward heads have the same), computed on the device: no host-to-device copy (the
  // mixer runs inside CUDA graphs, which cannot capture copies from pageable host memory).
  const at::Tensor slope = ops::alibi_slopes(heads, options.device()).narrow(0, 0, half).view({-1, 1, 1});
  const at::Tensor position = at::arange(frames, float_options.dtype(at::kLong));
  const at::Tensor j_minus_i = position.unsqueeze(0) - position.unsqueeze(1);  // [i, j] = j - i
  const at::Tensor forward_bias =
      slope * at::tril(j_minus_i) + at::triu(at::full({half, frames, frames}, -1e9, float_options), 1);
  const at::Tensor backward_bias =
      slope * at::triu(-j_minus_i) + at::tril(at::full({half, frames, frames}, -1e9, float_options), -1);
  return at::cat({forward_bias, backward_bias}, 0).to(options.dtype());
}

TrackState apply_mixer(const LocoTrack& model, const at::Tensor& encoded, const TrackState& previous) {
  const std::int64_t batch = encoded.size(0), queries = encoded.size(1), frames = encoded.size(2);
  const at::Tensor mixer_input = at::cat({previous.occlusion.unsqueeze(-1), previous.expected_dist.unsqueeze(-1),
                                          encoded, ops::relative_motion_encoding(previous.tracks)},
                                         -1);  // [B, n, T, 854]
  const at::Tensor update = model.torch_pips_mixer->forward(mixer_input.reshape({batch * queries, frames, -1}))
                                .reshape({batch, queries, frames, 4});
  TrackState next;
  // The position update is scaled by orig/resized = 1 at 256x256.
  next.tracks = update.narrow(-1, 0, 2) + previous.tracks;
  next.occlusion = update.select(-1, 2) + previous.occlusion;
  next.expected_dist = update.select(-1, 3) + previous.expected_dist;
  return next;
}

TrackState refine_tracks(const LocoTrack& model, const FeatureGrids& grids, const QueryFeatures& chunk,
                         const TrackState& previous) {
  TrackState input{previous.tracks.detach(), previous.occlusion.detach(), previous.expected_dist.detach()};
  const auto correlations = local_correlations(grids, chunk, input.tracks);
  const at::Tensor encoded = encode_correlations(model, correlations, input.tracks.size(0), input.tracks.size(1));
  return apply_mixer(model, encoded, input);
}

// --- whole model ------------------------------------------------------------------------------------------

ForwardOutput forward(const LocoTrack& model, const at::Tensor& video, const at::Tensor& query_points_tyx,
                      std::int64_t query_chunk, const FeatureGrids* grids) {
  check_video(video, "forward");
  check_queries(query_points_tyx, video.size(0), "forward");
  TORCH_CHECK(query_chunk > 0, "forward: query_chunk must be > 0, got ", query_chunk);
  FeatureGrids computed;
  if (grids == nullptr) {
    computed = compute_feature_grids(model, video);
    grids = &computed;
  }
  TORCH_CHECK(grids->frames() == video.size(1), "forward: feature grids of ", grids->frames(),
              " frames for a video of ", video.size(1));
  const at::Tensor queries = query_points_tyx.to(grids->lowres.device(), at::kFloat);
  const QueryFeatures query_features = queries.size(1) > 0 ? compute_query_features(*grids, queries) : QueryFeatures{};
  const int iterations = model.config().refinement_iterations;
  std::vector<std::vector<TrackState>> per_iteration(static_cast<std::size_t>(iterations) + 1);
  for (std::int64_t begin = 0; begin < queries.size(1); begin += query_chunk) {
    const std::int64_t end = std::min(begin + query_chunk, queries.size(1));
    const QueryFeatures chunk = query_features.slice(begin, end);
    TrackState state = initialise_tracks(model, *grids, chunk, queries.narrow(1, begin, end - begin));
    per_iteration[0].push_back(state);
    for (int i = 1; i <= iterations; ++i) {
      state = refine_tracks(model, *grids, chunk, state);
      per_iteration[static_cast<std::size_t>(i)].push_back(state);
    }
  }
  ForwardOutput out;
  const std::int64_t batch = video.size(0), frames = video.size(1);
  for (auto& chunks : per_iteration) {
    TrackState joined;
    if (chunks.empty()) {  // no queries
      joined.tracks = at::zeros({batch, 0, frames, 2}, queries.options());
      joined.occlusion = at::zeros({batch, 0, frames}, queries.options());
      joined.expected_dist = at::zeros({batch, 0, frames}, queries.options());
    } else {
      std::vector<at::Tensor> tracks, occlusion, expected;
      for (const TrackState& s : chunks) {
        tracks.push_back(s.tracks);
        occlusion.push_back(s.occlusion);
        expected.push_back(s.expected_dist);
      }
      joined = {at::cat(tracks, 1), at::cat(occlusion, 1), at::cat(expected, 1)};
    }
    out.iterations.push_back(joined);
  }
  out.tracks = out.iterations.back().tracks;
  out.occlusion = out.iterations.back().occlusion;
  out.expected_dist = out.iterations.back().expected_dist;
  return out;
}

at::Tensor occlusion_probability(const at::Tensor& occlusion, const at::Tensor& expected_dist) {
  return 1 - (1 - at::sigmoid(occlusion)) * (1 - at::sigmoid(expected_dist));
}

InferenceOutput inference(const LocoTrack& model, const at::Tensor& video_u8, const at::Tensor& query_points_tyx,
                          std::int64_t query_chunk) {
  check_video(video_u8, "inference");
  check_queries(query_points_tyx, video_u8.size(0), "inference");
  const at::Device device = model.cost_conv->weight.device();
  const double height = static_cast<double>(video_u8.size(2)), width = static_cast<double>(video_u8.size(3));
  at::Tensor video = normalize_video_u8(video_u8.to(device));
  at::Tensor queries = query_points_tyx.to(device, at::kFloat);
  if (video.size(2) != kModelResolution || video.size(3) != kModelResolution) {
    video = resize_video_bilinear(video, kModelResolution, kModelResolution);
    // The official code divides first here: y / H * 256.
    queries = at::stack({queries.select(-1, 0), queries.select(-1, 1).div(height).mul(kModelResolution),
                         queries.select(-1, 2).div(width).mul(kModelResolution)},
                        -1);
  }
  video = video.to(model.cost_conv->weight.scalar_type());
  const ForwardOutput forward_out = forward(model, video, queries, query_chunk);
  InferenceOutput out;
  const at::Tensor back_to_pixels =
      at::tensor({static_cast<float>(width / kModelResolution), static_cast<float>(height / kModelResolution)})
          .to(device, forward_out.tracks.scalar_type());
  out.tracks = forward_out.tracks * back_to_pixels;
  out.occlusion = forward_out.occlusion;
  out.expected_dist = forward_out.expected_dist;
  out.occlusion_probability = occlusion_probability(forward_out.occlusion, forward_out.expected_dist);
  out.occluded = out.occlusion_probability > 0.5;
  return out;
}

}  // namespace trackscope::gpu::model
