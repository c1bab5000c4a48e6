// The models trackscope-train knows by name: LocoTrack-S/B (gpu/model) behind the TrainableTracker seam.
// The binding compiles when gpu/model/locotrack.h is part of the tree (it lives on the model branch until the
// branches are merged); without it every name is unknown and says so.
#include <fmt/format.h>

#include "gpu/training/trainable_tracker.h"

#if __has_include("gpu/model/locotrack.h")
#include "gpu/model/locotrack.h"
#define TRACKSCOPE_TRAINABLE_LOCOTRACK 1
#endif

namespace trackscope::gpu::training {

#ifdef TRACKSCOPE_TRAINABLE_LOCOTRACK
namespace {

// LocoTrack with every query in one chunk (training batches are small: 256 queries); the loss sees the
// initialisation and the 4 refinements (docs/locotrack-spec.md §1.3), each already in the 256x256 input's pixels.
class TrainableLocoTrack final : public TrainableTracker {
 public:
  TrainableLocoTrack(model::ModelSize size, const at::Device& device)
      : net_(std::make_shared<model::LocoTrack>(model::LocoTrackConfig{size})) {
    net_->to(device);
  }
  torch::nn::Module& module() override { return *net_; }
  std::string describe() const override {
    return fmt::format("{} ({} parameters)", model::model_display_name(net_->config().size),
                       net_->config().parameter_count());
  }
  TrackerOutputs forward(const at::Tensor& video, const at::Tensor& query_points_tyx) override {
    TORCH_CHECK(video.size(2) == 256 && video.size(3) == 256, "LocoTrack trains on 256x256 clips, got ", video.size(3),
                "x", video.size(2));
    const model::ForwardOutput out =
        model::forward(*net_, video, query_points_tyx, std::max<int64_t>(1, query_points_tyx.size(1)));
    TrackerOutputs outputs;
    for (const model::TrackState& state : out.iterations) {
      outputs.iterations.push_back({state.tracks, state.occlusion, state.expected_dist});
    }
    return outputs;
  }

 private:
  std::shared_ptr<model::LocoTrack> net_;
};

}  // namespace
#endif

core::Expected<std::unique_ptr<TrainableTracker>> make_trainable_tracker(const std::string& name,
                                                                         const at::Device& device) {
#ifdef TRACKSCOPE_TRAINABLE_LOCOTRACK
  if (name == "locotrack-small")
    return std::unique_ptr<TrainableTracker>(std::make_unique<TrainableLocoTrack>(model::ModelSize::small, device));
  if (name == "locotrack-base")
    return std::unique_ptr<TrainableTracker>(std::make_unique<TrainableLocoTrack>(model::ModelSize::base, device));
  return core::not_found(fmt::format("no trainable model '{}': use locotrack-small or locotrack-base", name));
#else
  return core::not_found(fmt::format(
      "no trainable model '{}' in this build: LocoTrack (gpu/model/locotrack.h) is not part of this tree yet", name));
#endif
}

}  // namespace trackscope::gpu::training
