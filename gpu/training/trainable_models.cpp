// The models trackscope-train knows by name. This is the binding point for the real tracker: when gpu/model's
// LocoTrack is merged, add an adapter here (a TrainableTracker whose forward() returns the initialisation and
// the refinement iterations, LOCOTRACK.md §1.3) under "locotrack-small" / "locotrack-base".
#include <fmt/format.h>

#include "gpu/training/trainable_tracker.h"

namespace trackscope::gpu::training {

core::Expected<std::unique_ptr<TrainableTracker>> make_trainable_tracker(const std::string& name, const at::Device& device) {
  return core::not_found(fmt::format(
      "no trainable model '{}' in this build (known: none yet; LocoTrack is bound in gpu/training/trainable_models.cpp)", name));
}

}  // namespace trackscope::gpu::training
