#include "core/tracking/tracking_job.h"

#include <exception>

#include "core/log.h"

namespace trackscope::core {
namespace {

// Forwards the tracker's observer calls to the job's callbacks (any of which may be empty).
class CallbackObserver final : public TrackObserver {
 public:
  explicit CallbackObserver(const TrackingJob::Callbacks& callbacks) : callbacks_(callbacks) {}
  void on_progress(const TrackProgress& progress) override {
    if (callbacks_.on_progress) callbacks_.on_progress(progress);
  }
  void on_stage(const StageSample& sample) override {
    if (callbacks_.on_stage) callbacks_.on_stage(sample);
  }
  void on_partial(const TrackSet& partial, size_t first_query) override {
    if (callbacks_.on_partial) callbacks_.on_partial(partial, first_query);
  }

 private:
  const TrackingJob::Callbacks& callbacks_;
};

Expected<TrackSet> run_job(PointTracker& tracker, const VideoOpener& open_video, const TrackRequest& request,
                           TrackObserver& observer, const TrackingJob::Callbacks& callbacks, std::stop_token stop) {
  Expected<std::unique_ptr<VideoSource>> video = open_video();
  if (!video) return video.status();
  if (stop.stop_requested()) return cancelled("tracking cancelled");
  Expected<TrackSet> tracks = tracker.track(**video, request, observer, stop);
  if (callbacks.on_video_integrity) callbacks.on_video_integrity((*video)->integrity());
  return tracks;
}

}  // namespace

std::unique_ptr<TrackingJob> TrackingJob::start(std::shared_ptr<PointTracker> tracker, VideoOpener open_video,
                                                TrackRequest request, Callbacks callbacks) {
  TRACKSCOPE_CHECK(tracker != nullptr, "TrackingJob needs a tracker");
  TRACKSCOPE_CHECK(static_cast<bool>(open_video), "TrackingJob needs a video opener");
  std::unique_ptr<TrackingJob> job(new TrackingJob());
  TrackingJob* self = job.get();
  job->thread_ = std::jthread([self, tracker = std::move(tracker), open_video = std::move(open_video),
                               request = std::move(request), callbacks = std::move(callbacks)](std::stop_token stop) {
    CallbackObserver observer(callbacks);
    Expected<TrackSet> result = internal_error("tracking did not run");
    // A tracker bug must not take the application down with it: report it as a failed job.
    try {
      result = run_job(*tracker, open_video, request, observer, callbacks, stop);
    } catch (const std::bad_alloc&) {
      result = out_of_memory("out of host memory while tracking; try fewer points or a shorter frame range");
    } catch (const std::exception& error) {
      log::error("tracking failed with an exception: {}", error.what());
      result = internal_error(std::string("tracking failed: ") + error.what());
    }
    if (!result && stop.stop_requested() && result.status().code() != StatusCode::cancelled) {
      log::warn("tracking stopped with: {}", result.status().message());
    }
    if (callbacks.on_finished) callbacks.on_finished(std::move(result));
    self->running_.store(false);
  });
  return job;
}

TrackingJob::~TrackingJob() {
  cancel();
  wait();
}

void TrackingJob::cancel() { thread_.request_stop(); }

void TrackingJob::wait() {
  if (thread_.joinable()) thread_.join();
}

}  // namespace trackscope::core
