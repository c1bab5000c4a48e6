#pragma once
// LocoTrackTracker: core::PointTracker on the Engine (torch-side header; the public entry is
// gpu/tracker_factory.h). One track() call streams the requested frames from the video (decoded at native
// size, resized to 256x256 bilinearly like the official inference() or with Pillow's Lanczos like the
// official evaluation), runs the backbone per batch of frames while the next batch decodes, then the query
// chunks; each chunk's tracks are delivered as a partial result with their stage timings. The whole decoded
// video is never held at full resolution: only one batch of native frames is in memory at a time.
//
// Memory: before allocating, the run is planned with core::plan_tracker_memory against the tracker's budget
// (query chunk, backbone frames per call); should a chunk still run out of device memory, the tracker frees
// the allocator's cache, halves the chunk and retries, down to one query, before it reports out_of_memory.
// Threads: see core::PointTracker (one thread at a time; callbacks on that thread).

#include <memory>

#include "core/tracking/point_tracker.h"
#include "gpu/engine/engine.h"

namespace trackscope::gpu {

struct LocoTrackTrackerOptions {
  core::InputResize resize = core::InputResize::bilinear;
  int query_chunk = 0;              // 0 = from the memory plan
  int64_t memory_budget_bytes = 0;  // > 0
  engine::EngineOptions engine;
};

class LocoTrackTracker final : public core::PointTracker {
 public:
  LocoTrackTracker(std::shared_ptr<const model::LocoTrack> model, core::TrackerDescription description,
                   LocoTrackTrackerOptions options);
  const core::TrackerDescription& description() const override { return description_; }
  core::Expected<core::TrackSet> track(core::VideoSource& video, const core::TrackRequest& request,
                                       core::TrackObserver& observer, std::stop_token stop) override;

  const engine::Engine& engine() const { return engine_; }

 private:
  core::Expected<core::TrackSet> run(core::VideoSource& video, const core::TrackRequest& request,
                                     core::TrackObserver& observer, const std::stop_token& stop);

  core::TrackerDescription description_;
  LocoTrackTrackerOptions options_;
  engine::Engine engine_;
};

}  // namespace trackscope::gpu
