#pragma once
// LocoTrackTracker: core::PointTracker on the Engine (torch-side header; the public entry is
// gpu/tracker_factory.h). One track() call streams the requested frames from the video (decoded at native
// size, resized to 256x256 bilinearly like the official inference() or with Pillow's Lanczos like the
// official evaluation), runs the backbone per batch of frames while the next batch decodes, then the query
// chunks; each chunk's tracks are delivered as a partial result with their stage timings. The whole decoded
// video is never held at full resolution: only one batch of native frames is in memory at a time, and frames too
// large for the budget are resized one at a time through only the rows and columns bilinear reads.
//
// Long clips (docs/long-videos.md): before any work, core::plan_run picks how the run covers its frames -- the
// whole clip on the device, exact streaming (the grids in a host or file cache, streamed back per block of
// frames; streaming_run.cpp) or windowed tracking (core/tracking/windowed_tracking.h) -- or takes the mode the
// options force, and reports the plan through TrackObserver::on_plan.
//
// Memory: within a mode, the plan also sizes the query chunk and the backbone's frames per call; should a chunk
// still run out of device memory, the whole-clip path frees the allocator's cache, halves the chunk and retries,
// down to one query, before it reports out_of_memory.
// Threads: see core::PointTracker (one thread at a time; callbacks on that thread).

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "core/perf/memory_model.h"
#include "core/tracking/point_tracker.h"
#include "gpu/engine/engine.h"

namespace trackscope::gpu {

struct LocoTrackTrackerOptions {
  core::InputResize resize = core::InputResize::bilinear;
  int query_chunk = 0;                   // 0 = from the memory plan
  int64_t memory_budget_bytes = 0;       // > 0: the device's budget (the CPU: the whole run's)
  int64_t host_memory_budget_bytes = 0;  // CUDA: host memory for caches and stores (0 = 60% of what is available)
  core::LongVideoMode long_video = core::LongVideoMode::automatic;
  std::string cache_dir;  // exact streaming's cache file ("" = core::io::default_scratch_directory())
  int window_frames = 0;  // windowed: 0 = from the plan
  int window_overlap = 0;
  int stream_block_frames = 0;  // exact streaming: the most frames per streamed block (0 = 128 on CUDA, 32 on the CPU)
  int mixer_block_frames = 0;   // exact streaming: frames per transformer block (0 = the whole time axis at once
                                // where it fits, else 256 on CUDA, 64 on the CPU)
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
  /// The plan of the last track() call (for tests and the bench).
  const core::RunPlan& last_plan() const { return last_plan_; }

 private:
  // Exact streaming's cache folder: options_.cache_dir, else core::io::default_scratch_directory().
  std::filesystem::path cache_directory() const;
  // A request checked against the video: the frames [first_frame, end_frame).
  struct Run {
    const core::TrackRequest* request = nullptr;
    int64_t first_frame = 0;
    int64_t end_frame = 0;
    int64_t frames() const { return end_frame - first_frame; }
  };
  // Receives each batch of prepared frames [F, 256, 256, 3] (storage dtype, on the device) and its first frame
  // relative to the run.
  using FrameConsumer = std::function<core::Status(const at::Tensor& prepared, int64_t begin)>;

  core::Expected<core::TrackSet> run(core::VideoSource& video, const core::TrackRequest& request,
                                     core::TrackObserver& observer, const std::stop_token& stop);
  core::Expected<core::RunPlan> plan(const core::VideoInfo& info, int64_t frames, int points) const;
  core::TrackerMemoryInput memory_input(const core::VideoInfo& info, int64_t frames, int points) const;
  /// `reuse`, if given, holds grids of at least run.frames() frames to use instead of allocating (windowed runs
  /// keep one set for every window: a 5 GB block freed and allocated again per window fragments the host heap).
  core::Expected<core::TrackSet> run_whole(core::VideoSource& video, const Run& run,
                                           const core::TrackerMemoryPlan& plan, bool low_memory_prepare,
                                           core::TrackObserver& observer, const std::stop_token& stop,
                                           const model::FeatureGrids* reuse = nullptr);
  core::Expected<core::TrackSet> run_windowed(core::VideoSource& video, const Run& run, const core::RunPlan& plan,
                                              core::TrackObserver& observer, const std::stop_token& stop);
  core::Expected<core::TrackSet> run_streaming(core::VideoSource& video, const Run& run, const core::RunPlan& plan,
                                               core::TrackObserver& observer, const std::stop_token& stop);
  /// Decodes frames [first_frame, first_frame + frames) in batches of `batch_frames`, prepares each batch
  /// (timed: decode, upload, resize_normalize) and hands it to `consume`; `on_batch(done)` after each.
  core::Status feed_frames(core::VideoSource& video, int64_t first_frame, int64_t frames, int batch_frames,
                           bool low_memory_prepare, engine::StageRecorder& recorder, const std::stop_token& stop,
                           const FrameConsumer& consume, const std::function<void(int64_t done)>& on_batch);
  /// Queries (t, y, x) in 256 space, t relative to `first_frame`, as the official inference() scales them.
  std::vector<float> queries_tyx(const core::VideoInfo& info, const core::TrackRequest& request,
                                 int64_t first_frame) const;

  core::TrackerDescription description_;
  LocoTrackTrackerOptions options_;
  engine::Engine engine_;
  core::RunPlan last_plan_;
};

/// The per-frame results on the host (tracks [frames, 2] in 256 space, logits [frames]) as a core::Track in
/// original pixels, as the official inference() converts them.
core::Track to_track(const core::Query& query, int64_t first_frame, const float* tracks_256, const float* occlusion,
                     const float* expected, int64_t frames, float scale_x, float scale_y);

}  // namespace trackscope::gpu
