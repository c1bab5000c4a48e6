#include "gpu/training/loss.h"

#include <ATen/core/Reduction.h>

namespace trackscope::gpu::training {

namespace {

at::Tensor visible_weight(const at::Tensor& occluded, const at::Tensor& like) {
  return 1.0 - occluded.to(like.scalar_type());
}

at::Tensor to_256(const at::Tensor& xy, int64_t height, int64_t width) {
  if (height == 256 && width == 256) return xy;
  const double scale[2] = {256.0 / static_cast<double>(width), 256.0 / static_cast<double>(height)};
  return xy * at::tensor({scale[0], scale[1]}, xy.options());
}

// huber_position_loss with a weight per entry (of the tracks' leading shape) instead of the visibility mask.
at::Tensor weighted_huber_position_loss(const at::Tensor& tracks_xy, const at::Tensor& target_xy,
                                        const at::Tensor& weight, double delta_px) {
  at::Tensor error = tracks_xy - target_xy;
  at::Tensor distance_sq = (error * error).sum(-1);
  at::Tensor distance = at::sqrt(distance_sq + 1e-12);
  at::Tensor huber = at::where(distance < delta_px, distance_sq * 0.5, (distance - delta_px * 0.5) * delta_px);
  return (huber * weight.to(huber.scalar_type())).mean();
}

}  // namespace

at::Tensor huber_position_loss(const at::Tensor& tracks_xy, const at::Tensor& target_xy, const at::Tensor& occluded,
                               double delta_px) {
  return weighted_huber_position_loss(tracks_xy, target_xy, visible_weight(occluded, tracks_xy), delta_px);
}

at::Tensor expected_dist_loss(const at::Tensor& tracks_xy, const at::Tensor& expected_dist_logits,
                              const at::Tensor& target_xy, const at::Tensor& occluded, double threshold_px) {
  at::Tensor error = tracks_xy.detach() - target_xy;
  at::Tensor far = ((error * error).sum(-1) > threshold_px * threshold_px).to(expected_dist_logits.scalar_type());
  at::Tensor bce = at::binary_cross_entropy_with_logits(expected_dist_logits, far, {}, {}, at::Reduction::None);
  return (bce * visible_weight(occluded, bce)).mean();
}

at::Tensor occlusion_loss(const at::Tensor& occlusion_logits, const at::Tensor& occluded) {
  return at::binary_cross_entropy_with_logits(occlusion_logits, occluded.to(occlusion_logits.scalar_type()), {}, {},
                                              at::Reduction::Mean);
}

LossTerms tapir_loss(const TrackerOutputs& outputs, const at::Tensor& target_points_xy, const at::Tensor& occluded,
                     int64_t height, int64_t width, const LossOptions& options) {
  TORCH_CHECK(!outputs.iterations.empty(), "tapir_loss: the model returned no estimate");
  at::Tensor targets = to_256(target_points_xy.to(at::kFloat), height, width);
  LossTerms terms;
  for (const TrackEstimate& estimate : outputs.iterations) {
    TORCH_CHECK(estimate.tracks_xy.sizes() == target_points_xy.sizes(), "tapir_loss: tracks ",
                estimate.tracks_xy.sizes(), " do not match targets ", target_points_xy.sizes());
    at::Tensor tracks = to_256(estimate.tracks_xy.to(at::kFloat), height, width);
    at::Tensor position =
        huber_position_loss(tracks, targets, occluded, options.huber_delta_px) * options.position_weight;
    at::Tensor occlusion = occlusion_loss(estimate.occlusion_logits.to(at::kFloat), occluded);
    at::Tensor expected = estimate.expected_dist_logits.defined()
                              ? expected_dist_loss(tracks, estimate.expected_dist_logits.to(at::kFloat), targets,
                                                   occluded, options.expected_dist_threshold_px)
                              : at::zeros({}, position.options());
    at::Tensor sum = position + occlusion + expected;
    terms.total = terms.total.defined() ? terms.total + sum : sum;
    terms.position.push_back(position);
    terms.occlusion.push_back(occlusion);
    terms.expected_dist.push_back(expected);
  }
  return terms;
}

at::Tensor consistency_loss(const TrackerOutputs& a, const TrackerOutputs& b, const at::Tensor& occluded,
                            int64_t height, int64_t width, const ConsistencyOptions& options) {
  TORCH_CHECK(a.iterations.size() == b.iterations.size() && !a.iterations.empty(), "consistency_loss: the copies have ",
              a.iterations.size(), " and ", b.iterations.size(), " estimates");
  at::Tensor total;
  for (size_t k = 0; k < a.iterations.size(); ++k) {
    const TrackEstimate& x = a.iterations[k];
    const TrackEstimate& y = b.iterations[k];
    at::Tensor target_xy = to_256(y.tracks_xy.to(at::kFloat), height, width);
    at::Tensor target_occlusion = at::sigmoid(y.occlusion_logits.to(at::kFloat));
    if (!options.symmetric) {
      target_xy = target_xy.detach();
      target_occlusion = target_occlusion.detach();
    }
    // Visible points weigh 1, hidden ones options.hidden_weight.
    const at::Tensor hidden = occluded.to(at::kFloat);
    at::Tensor position = weighted_huber_position_loss(
        to_256(x.tracks_xy.to(at::kFloat), height, width), target_xy,
        visible_weight(occluded, hidden) + options.hidden_weight * hidden, options.huber_delta_px);
    at::Tensor occlusion = (at::sigmoid(x.occlusion_logits.to(at::kFloat)) - target_occlusion).abs().mean();
    at::Tensor sum = position + occlusion;
    total = total.defined() ? total + sum : sum;
  }
  return total;
}

TrackerOutputs slice_outputs(const TrackerOutputs& outputs, int64_t first, int64_t count) {
  TrackerOutputs slice;
  for (const TrackEstimate& e : outputs.iterations) {
    slice.iterations.push_back(
        {e.tracks_xy.narrow(0, first, count), e.occlusion_logits.narrow(0, first, count),
         e.expected_dist_logits.defined() ? e.expected_dist_logits.narrow(0, first, count) : at::Tensor()});
  }
  return slice;
}

}  // namespace trackscope::gpu::training
