#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "core/tracking/tracking_job.h"

namespace trackscope::core {
namespace {

class FakeVideo final : public VideoSource {
 public:
  explicit FakeVideo(int64_t frames) {
    info_.width = 64;
    info_.height = 48;
    info_.frame_count = frames;
    info_.frame_rate = {25, 1};
  }
  const VideoInfo& info() const override { return info_; }
  Expected<FramePtr> read_frame(int64_t index, FrameSize) override {
    auto frame = std::make_shared<Frame>();
    frame->index = index;
    return FramePtr(frame);
  }
  double last_decode_ms() const override { return 0.0; }
  IntegrityReport integrity() const override {
    IntegrityReport report = VideoSource::integrity();
    if (info_.frame_count > 5) report.damaged_frames.push_back({5, {1, true, false}, "concealed"});
    return report;
  }

 private:
  VideoInfo info_;
};

// Tracks by holding every query still; processes one "chunk" per query and honours stop between chunks.
class StillTracker final : public PointTracker {
 public:
  explicit StillTracker(std::chrono::milliseconds per_chunk = std::chrono::milliseconds(0)) : per_chunk_(per_chunk) {}
  const TrackerDescription& description() const override { return description_; }
  Expected<TrackSet> track(VideoSource& video, const TrackRequest& request, TrackObserver& observer,
                           std::stop_token stop) override {
    TrackSet set;
    set.frame_count = video.info().frame_count;
    for (size_t q = 0; q < request.queries.size(); ++q) {
      if (stop.stop_requested()) return cancelled("stopped");
      std::this_thread::sleep_for(per_chunk_);
      Track track;
      track.query = request.queries[q];
      TrackPoint point{static_cast<float>(track.query.x_px), static_cast<float>(track.query.y_px), true, 0.0f, 0.0f};
      track.points.assign(static_cast<size_t>(set.frame_count), point);
      TrackSet partial;
      partial.frame_count = set.frame_count;
      partial.tracks = {track};
      observer.on_partial(partial, q);
      observer.on_stage(StageSample{Stage::refine_encoder, static_cast<int>(q), 1, 1.5});
      observer.on_progress({static_cast<double>(q + 1) / request.queries.size(), static_cast<int>(q + 1),
                            static_cast<int>(request.queries.size()), "tracking"});
      set.tracks.push_back(track);
    }
    return set;
  }

 private:
  std::chrono::milliseconds per_chunk_;
  TrackerDescription description_;
};

class ThrowingTracker final : public PointTracker {
 public:
  const TrackerDescription& description() const override { return description_; }
  Expected<TrackSet> track(VideoSource&, const TrackRequest&, TrackObserver&, std::stop_token) override {
    throw std::runtime_error("boom");
  }

 private:
  TrackerDescription description_;
};

VideoOpener fake_opener(int64_t frames) {
  return [frames]() -> Expected<std::unique_ptr<VideoSource>> {
    return std::unique_ptr<VideoSource>(new FakeVideo(frames));
  };
}

struct Recorder {
  std::mutex mutex;
  std::condition_variable finished_cv;
  std::vector<TrackProgress> progress;
  std::vector<size_t> partial_first;
  std::vector<StageSample> stages;
  std::optional<Expected<TrackSet>> result;
  std::thread::id callback_thread;

  TrackingJob::Callbacks callbacks() {
    TrackingJob::Callbacks c;
    c.on_progress = [this](const TrackProgress& p) {
      std::lock_guard l(mutex);
      progress.push_back(p);
      callback_thread = std::this_thread::get_id();
    };
    c.on_partial = [this](const TrackSet&, size_t first) {
      std::lock_guard l(mutex);
      partial_first.push_back(first);
    };
    c.on_stage = [this](const StageSample& s) {
      std::lock_guard l(mutex);
      stages.push_back(s);
    };
    c.on_finished = [this](Expected<TrackSet> r) {
      std::lock_guard l(mutex);
      result = std::move(r);
      finished_cv.notify_all();
    };
    return c;
  }
};

TEST(TrackingJob, RunsOnWorkerThreadAndReportsEverything) {
  Recorder recorder;
  TrackRequest request;
  request.queries = {{0, 10.5, 20.5}, {3, 1.5, 2.5}, {7, 30.5, 40.5}};
  auto job = TrackingJob::start(std::make_shared<StillTracker>(), fake_opener(12), request, recorder.callbacks());
  job->wait();
  EXPECT_FALSE(job->running());
  ASSERT_TRUE(recorder.result.has_value());
  ASSERT_TRUE(*recorder.result) << recorder.result->status().message();
  const TrackSet& set = **recorder.result;
  ASSERT_EQ(set.tracks.size(), 3u);
  EXPECT_EQ(set.tracks[2].points.size(), 12u);
  EXPECT_FLOAT_EQ(set.tracks[2].points[5].x_px, 30.5f);
  EXPECT_EQ(recorder.partial_first, (std::vector<size_t>{0, 1, 2}));
  ASSERT_EQ(recorder.progress.size(), 3u);
  EXPECT_DOUBLE_EQ(recorder.progress.back().fraction, 1.0);
  EXPECT_EQ(recorder.stages.size(), 3u);
  EXPECT_NE(recorder.callback_thread, std::this_thread::get_id());
}

TEST(TrackingJob, ReportsTheDamageItsDecoderFoundBeforeFinishing) {
  Recorder recorder;
  TrackingJob::Callbacks callbacks = recorder.callbacks();
  std::vector<int64_t> damaged;
  bool finished_first = false;
  callbacks.on_video_integrity = [&](const IntegrityReport& report) {
    std::lock_guard l(recorder.mutex);
    finished_first = recorder.result.has_value();
    for (const auto& frame : report.damaged_frames) damaged.push_back(frame.index);
  };
  TrackRequest request;
  request.queries = {{0, 10.5, 20.5}};
  auto job = TrackingJob::start(std::make_shared<StillTracker>(), fake_opener(12), request, std::move(callbacks));
  job->wait();
  ASSERT_TRUE(recorder.result.has_value() && *recorder.result);
  EXPECT_EQ(damaged, std::vector<int64_t>{5});
  EXPECT_FALSE(finished_first) << "on_video_integrity runs before on_finished";
}

TEST(TrackingJob, CancelStopsAtChunkBoundary) {
  Recorder recorder;
  TrackRequest request;
  for (int i = 0; i < 200; ++i) request.queries.push_back({0, 1.0 * i, 1.0});
  auto job = TrackingJob::start(std::make_shared<StillTracker>(std::chrono::milliseconds(5)), fake_opener(4), request,
                                recorder.callbacks());
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  job->cancel();
  job->wait();
  ASSERT_TRUE(recorder.result.has_value());
  ASSERT_FALSE(*recorder.result);
  EXPECT_EQ(recorder.result->status().code(), StatusCode::cancelled);
  EXPECT_LT(recorder.partial_first.size(), 200u);
}

TEST(TrackingJob, DestructorCancelsAndJoins) {
  Recorder recorder;
  TrackRequest request;
  for (int i = 0; i < 1000; ++i) request.queries.push_back({0, 1.0, 1.0});
  {
    auto job = TrackingJob::start(std::make_shared<StillTracker>(std::chrono::milliseconds(2)), fake_opener(4), request,
                                  recorder.callbacks());
  }
  ASSERT_TRUE(recorder.result.has_value());
  EXPECT_EQ(recorder.result->status().code(), StatusCode::cancelled);
}

TEST(TrackingJob, VideoOpenFailureAndTrackerExceptionBecomeErrors) {
  Recorder open_failure;
  auto job = TrackingJob::start(
      std::make_shared<StillTracker>(),
      []() -> Expected<std::unique_ptr<VideoSource>> { return not_found("no such file: x.mp4"); }, TrackRequest{},
      open_failure.callbacks());
  job->wait();
  ASSERT_TRUE(open_failure.result.has_value());
  EXPECT_EQ(open_failure.result->status().code(), StatusCode::not_found);

  Recorder thrown;
  auto job2 =
      TrackingJob::start(std::make_shared<ThrowingTracker>(), fake_opener(2), TrackRequest{}, thrown.callbacks());
  job2->wait();
  ASSERT_TRUE(thrown.result.has_value());
  EXPECT_EQ(thrown.result->status().code(), StatusCode::internal);
  EXPECT_NE(thrown.result->status().message().find("boom"), std::string::npos);
}

}  // namespace
}  // namespace trackscope::core
