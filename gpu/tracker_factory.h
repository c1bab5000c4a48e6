#pragma once
// The LocoTrack tracker factory: gpu's implementation of core::TrackerFactory (torch-free header; app/ wires
// it into the GUI and the CLI, tests use it directly).
//
//   std::unique_ptr<core::TrackerFactory> factory = gpu::make_tracker_factory({});
//   core::TrackerOptions options;                    // model "default", device "auto", fp32
//   auto tracker = factory->create(options);         // loads the weights on the device (seconds)
//   auto tracks = (*tracker)->track(video, request, observer, stop);
//
// Models: "default" = the bundled LocoTrack-S weights (resources/models, see docs/model-card.md); "small" /
// "base" = the official checkpoints locotrack_{small,base}.ckpt (or a converted .safetensors of the same
// stem), looked up in the model folders; anything else is a weights file path (.safetensors, .ckpt, .pt).
// Model folders, in order: TrackerFactoryOptions::model_dirs, $TRACKSCOPE_MODEL_DIR, $XDG_DATA_HOME/trackscope/models
// (~/.local/share/trackscope/models), the installed share/trackscope/models and the source tree's resources/models.
//
// Devices and precisions: "cpu", "cuda:N", "auto" (the first CUDA device, else the CPU), as core::DeviceId parses
// them; a precision is refused where core::precision_support (core/tracking/device.h) says unsupported on the
// device with this build's runtime, and logged where it says slow or emulated. create() fails with a Status a user
// can act on.
// Threads: create() may run on any thread (the GUI runs it on a loader thread); one create() at a time per
// factory. Each tracker is then used by one thread at a time.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tracking/point_tracker.h"

namespace trackscope::gpu {

struct TrackerFactoryOptions {
  std::vector<std::filesystem::path> model_dirs;  // searched first for "small"/"base" and "default"
  std::filesystem::path default_model;            // overrides the bundled default weights (tests, packaging)
};

std::unique_ptr<core::TrackerFactory> make_tracker_factory(TrackerFactoryOptions options = {});

/// The weights file a model name resolves to (see above), or not_found naming where it was looked for and how
/// to install it.
core::Expected<std::filesystem::path> resolve_model_path(const std::string& model,
                                                         const TrackerFactoryOptions& options);

/// Whether `precision` is usable on `device` with `runtime` (default: this build's, runtime_versions()): the
/// refusal of create(), core::check_precision of the support table.
core::Status check_precision_supported(core::Precision precision, const core::DeviceInfo& device);
core::Status check_precision_supported(core::Precision precision, const core::DeviceInfo& device,
                                       const core::RuntimeInfo& runtime);

/// Default working-memory budget of the tracker on a device: 85% of the free device memory on CUDA; on the CPU
/// 60% of the available host memory, at most 16 GiB.
int64_t default_memory_budget_bytes(const core::DeviceInfo& device);

}  // namespace trackscope::gpu
