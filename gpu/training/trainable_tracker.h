#pragma once
// The seam between the trainer and a model: anything that holds its parameters in a torch::nn::Module and maps
// (video, queries) to per-iteration track estimates can be trained. The LocoTrack binding lives in
// trainable_models.cpp; tests bind small models of their own.
//
//   class MyTrainable : public TrainableTracker {
//     torch::nn::Module& module() override { return *net_; }
//     TrackerOutputs forward(const at::Tensor& video, const at::Tensor& queries) override {
//       auto out = net_->forward(video, queries);                 // LocoTrack: 5 iterations, the last is the output
//       return {{{out.tracks0, out.occ0, out.expd0}, ..., {out.tracks, out.occlusion, out.expected_dist}}};
//     }
//     std::string describe() const override { return "LocoTrack-S"; }
//   };
//
// Conventions (docs/locotrack-spec.md §0, §1.2-1.3): video [B,T,H,W,3] float32 in [-1,1]; queries [B,N,3] as (t, y, x)
// in raster pixels of that video; tracks [B,N,T,2] as (x, y) in the same pixels; occlusion and expected-distance logits
// [B,N,T] (higher = occluded / farther than 6 px at 256x256). Threads: one thread at a time (the trainer's).

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace trackscope::gpu::training {

/// One iteration's estimate of every track.
struct TrackEstimate {
  at::Tensor tracks_xy;             // [B,N,T,2]
  at::Tensor occlusion_logits;      // [B,N,T]
  at::Tensor expected_dist_logits;  // [B,N,T]; undefined if the model has no such head
};

/// Every estimate the model made, in order; the last one is the model's output. LocoTrack: iteration 0 is the
/// cost-volume initialisation, 1..4 the refinements. The loss is summed over all of them.
struct TrackerOutputs {
  std::vector<TrackEstimate> iterations;
  const TrackEstimate& final_estimate() const { return iterations.back(); }
};

class TrainableTracker {
 public:
  virtual ~TrainableTracker() = default;
  /// The module holding every trainable parameter, named as in its state_dict (the checkpoint's tensor names).
  virtual torch::nn::Module& module() = 0;
  /// Runs the model in the module's current mode (train() / eval()); autograd and autocast as the caller set.
  virtual TrackerOutputs forward(const at::Tensor& video, const at::Tensor& query_points_tyx) = 0;
  /// For logs: "LocoTrack-S (8,236,133 parameters)".
  virtual std::string describe() const = 0;
};

/// Makes a trainable model with fresh weights on `device`, by name.
using TrainableTrackerFactory =
    std::function<core::Expected<std::unique_ptr<TrainableTracker>>(const std::string& name, const at::Device& device)>;

/// The models this build can train (trainable_models.cpp). not_found lists the names it knows.
core::Expected<std::unique_ptr<TrainableTracker>> make_trainable_tracker(const std::string& name,
                                                                         const at::Device& device);

}  // namespace trackscope::gpu::training
