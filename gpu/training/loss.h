#pragma once
// The TAPIR/LocoTrack training loss (tapnet `tapir_loss`, as LocoTrack's PyTorch training uses it), summed with
// equal weight over every iteration the model returns (LocoTrack: the initialisation and the 4 refinements):
//
//   per iteration:  position_weight * mean(Huber_delta(|track - target|) * visible)
//                 + mean(BCE(occlusion_logit, occluded))
//                 + mean(BCE(expected_dist_logit, |track - target| > threshold) * visible)   (track detached)
//
// Means run over every (clip, point, frame) including occluded ones (masked terms count as 0), positions are
// first scaled to 256x256 as the reference does (identity for 256x256 video). Torch side.
//
//   LossTerms loss = tapir_loss(outputs, batch.target_points_xy, batch.occluded, 256, 256, LossOptions{});
//   loss.total.backward();

#include <ATen/ATen.h>

#include <vector>

#include "gpu/training.h"
#include "gpu/training/trainable_tracker.h"

namespace trackscope::gpu::training {

struct LossTerms {
  at::Tensor total;                       // scalar: what to backpropagate
  std::vector<at::Tensor> position;       // scalar per iteration, already multiplied by position_weight
  std::vector<at::Tensor> occlusion;      // scalar per iteration
  std::vector<at::Tensor> expected_dist;  // scalar per iteration (0 if the model has no such head)
};

/// Huber loss of the distance between tracks and targets ([...,2] px), masked by visibility: mean over all
/// entries of d^2/2 where d < delta, else delta * (d - delta/2); d = sqrt(|e|^2 + 1e-12).
at::Tensor huber_position_loss(const at::Tensor& tracks_xy, const at::Tensor& target_xy, const at::Tensor& occluded,
                               double delta_px);
/// BCE of the expected-distance logit against "error beyond threshold" (the error uses detached tracks),
/// masked by visibility, mean over all entries.
at::Tensor expected_dist_loss(const at::Tensor& tracks_xy, const at::Tensor& expected_dist_logits,
                              const at::Tensor& target_xy, const at::Tensor& occluded, double threshold_px);
/// BCE of the occlusion logit against the occlusion flag, mean over all entries.
at::Tensor occlusion_loss(const at::Tensor& occlusion_logits, const at::Tensor& occluded);

/// The consistency of two copies of the same clips (outputs a and b, same queries), summed over iterations:
/// mean(Huber_delta(|tracks_a - tracks_b|) x visible) + mean(|sigmoid(occ_a) - sigmoid(occ_b)|), positions at
/// 256x256, visible = not occluded in the ground truth (the hidden points weighted by options.hidden_weight). Copy b is
/// a fixed target (detached) unless options.symmetric. Unweighted (the caller multiplies by options.weight).
at::Tensor consistency_loss(const TrackerOutputs& a, const TrackerOutputs& b, const at::Tensor& occluded,
                            int64_t height, int64_t width, const ConsistencyOptions& options);

/// The clips [first, first + count) of every estimate of `outputs` (the two copies of a doubled batch).
TrackerOutputs slice_outputs(const TrackerOutputs& outputs, int64_t first, int64_t count);

/// The summed loss over outputs.iterations. Outputs may be bf16 (autocast): they are computed in float32.
/// target_points_xy [B,N,T,2] px and occluded [B,N,T] bool as the generator gives them; height/width of the
/// video scale positions to 256x256.
LossTerms tapir_loss(const TrackerOutputs& outputs, const at::Tensor& target_points_xy, const at::Tensor& occluded,
                     int64_t height, int64_t width, const LossOptions& options);

}  // namespace trackscope::gpu::training
