#pragma once
// TrackingJob: runs one PointTracker::track() call on its own thread (the tracking thread, which owns every
// torch/CUDA call of the job), with progress, partial results, stage samples and cancellation.
//
//   TrackingJob::Callbacks callbacks;
//   callbacks.on_progress = [](const TrackProgress& p) { /* tracking thread: re-post to the GUI */ };
//   callbacks.on_finished = [](Expected<TrackSet> result) { /* tracking thread, called exactly once */ };
//   auto job = TrackingJob::start(tracker, open_video_file("clip.mp4"), request, std::move(callbacks));
//   ...
//   job->cancel();   // returns at once; the tracker stops at its next chunk boundary
//   job.reset();     // cancels (if still running) and joins
//
// Threads: start/cancel/running/wait and the destructor may be called from any one owner thread. All
// callbacks run on the tracking thread; on_finished runs last, exactly once (with a cancelled Status after
// cancel()). The tracker must not be used by anyone else while the job runs (the job holds a shared_ptr).
// Callbacks must not destroy the job (that would join the thread from itself).

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <thread>

#include "core/tracking/point_tracker.h"

namespace trackscope::core {

/// Opens the job's own decoder instance on the tracking thread.
using VideoOpener = std::function<Expected<std::unique_ptr<VideoSource>>()>;

/// A VideoOpener for a file path (VideoSource::open with default options).
inline VideoOpener open_video_file(std::filesystem::path path) {
  return [path = std::move(path)]() { return VideoSource::open(path); };
}

class TrackingJob {
 public:
  struct Callbacks {
    std::function<void(const TrackProgress&)> on_progress;
    std::function<void(const TrackSet& partial, size_t first_query)> on_partial;
    std::function<void(const StageSample&)> on_stage;
    std::function<void(Expected<TrackSet> result)> on_finished;
    /// After the tracker returned (before on_finished): what the job's decoder found damaged in the frames it
    /// decoded (VideoSource::integrity()). Not called when the video did not open.
    std::function<void(const IntegrityReport& report)> on_video_integrity;
  };

  /// Starts the job at once. `tracker` must be non-null.
  static std::unique_ptr<TrackingJob> start(std::shared_ptr<PointTracker> tracker, VideoOpener open_video,
                                            TrackRequest request, Callbacks callbacks);

  ~TrackingJob();
  TrackingJob(const TrackingJob&) = delete;
  TrackingJob& operator=(const TrackingJob&) = delete;

  /// Requests cancellation; the tracker honours it at its next chunk boundary.
  void cancel();
  /// True until on_finished has returned.
  bool running() const { return running_.load(); }
  /// Blocks until the job has finished (on_finished has returned).
  void wait();

 private:
  TrackingJob() = default;
  std::atomic<bool> running_{true};
  std::jthread thread_;
};

}  // namespace trackscope::core
