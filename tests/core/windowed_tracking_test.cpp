// Windowed tracking (core/tracking/windowed_tracking.h): the window layout, the hand-off between windows, the
// blending of overlaps, progress, cancellation and errors, with fake window trackers whose answers are known; and
// the recent-frames cache that spares the overlap a second decode.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "core/tracking/windowed_tracking.h"

namespace trackscope::core {
namespace {

// Ground-truth trajectories: point i at frame t.
TrackPoint truth(size_t point, int64_t frame) {
  TrackPoint p;
  p.x_px = static_cast<float>(40.0 + 30.0 * static_cast<double>(point) + 0.5 * static_cast<double>(frame));
  p.y_px = static_cast<float>(100.0 + 20.0 * std::sin(static_cast<double>(frame) / 10.0));
  p.visible = true;
  p.p_occluded = 0.02f;
  p.p_far = 0.02f;
  return p;
}

// A window tracker that knows the truth: it finds the trajectory through each query and returns it over the
// window, with the point hidden on `hidden` frames and window k's positions shifted by k * shift_per_window px.
class TruthTracker {
 public:
  size_t points = 3;
  std::set<int64_t> hidden;
  float shift_per_window = 0.0f;
  int fail_on_run = -1;
  std::function<void()> after_run;

  struct Call {
    TrackRequest request;
    std::vector<size_t> points;  // the trajectory each query was matched to
  };
  std::vector<Call> calls;

  Expected<TrackSet> operator()(const TrackRequest& window, TrackObserver& observer, std::stop_token stop) {
    if (stop.stop_requested()) return cancelled("stopped");
    if (static_cast<int>(calls.size()) == fail_on_run) return io_error("the window's frames could not be read");
    Call call{window, {}};
    TrackSet set;
    set.first_frame = window.first_frame;
    set.frame_count = window.end_frame - window.first_frame;
    const float shift = shift_per_window * static_cast<float>(window_number(window.first_frame));
    for (const Query& q : window.queries) {
      EXPECT_GE(q.frame, window.first_frame);
      EXPECT_LT(q.frame, window.end_frame);
      size_t best = 0;
      double best_distance = 1e30;
      for (size_t p = 0; p < points; ++p) {
        const TrackPoint t = truth(p, q.frame);
        const double d = std::hypot(t.x_px - q.x_px, t.y_px - q.y_px);
        if (d < best_distance) best_distance = d, best = p;
      }
      call.points.push_back(best);
      Track track;
      track.query = q;
      track.first_frame = window.first_frame;
      for (int64_t f = window.first_frame; f < window.end_frame; ++f) {
        TrackPoint p = truth(best, f);
        p.x_px += shift;
        if (hidden.count(f) != 0) {
          p.p_occluded = 0.9f;
          p.visible = false;
        }
        track.points.push_back(p);
      }
      set.tracks.push_back(track);
    }
    observer.on_progress({0.5, 0, 1, "tracking chunk 1/1"});
    observer.on_stage(StageSample{Stage::backbone, 0, 0, 2.0});
    observer.on_progress({1.0, 1, 1, "done"});
    calls.push_back(std::move(call));
    if (after_run) after_run();
    return set;
  }

  std::vector<FrameWindow> windows;
  int64_t window_number(int64_t first) const {
    for (size_t k = 0; k < windows.size(); ++k) {
      if (windows[k].first == first) return static_cast<int64_t>(k);
    }
    return 0;
  }
};

struct Recorder final : TrackObserver {
  void on_progress(const TrackProgress& p) override { progress.push_back(p); }
  void on_stage(const StageSample& s) override { stages.push_back(s); }
  void on_partial(const TrackSet& partial, size_t first) override {
    partials.push_back(partial.tracks.size());
    EXPECT_EQ(first, 0u);
  }
  std::vector<TrackProgress> progress;
  std::vector<StageSample> stages;
  std::vector<size_t> partials;
};

WindowOptions options(int frames, int overlap) {
  WindowOptions o;
  o.frames = frames;
  o.overlap = overlap;
  return o;
}

TEST(WindowLayout, EqualWindowsShareExactlyTheOverlapAndCoverTheRange) {
  for (const auto& [first, end, frames, overlap] : std::vector<std::tuple<int64_t, int64_t, int, int>>{
           {0, 300, 64, 8}, {10, 18'010, 669, 41}, {0, 65, 64, 8}, {0, 1000, 512, 32}, {5, 200, 16, 7}}) {
    const std::vector<FrameWindow> windows = layout_windows(first, end, options(frames, overlap));
    ASSERT_FALSE(windows.empty());
    EXPECT_EQ(windows.front().first, first);
    EXPECT_EQ(windows.back().end, end);
    const int64_t expected = 1 + (end - first - frames + (frames - overlap) - 1) / (frames - overlap);
    EXPECT_EQ(static_cast<int64_t>(windows.size()), expected) << first << " " << end << " " << frames;
    for (size_t k = 0; k < windows.size(); ++k) {
      EXPECT_LE(windows[k].size(), frames);
      EXPECT_GT(windows[k].size(), 2 * overlap);
      if (k + 1 < windows.size()) {
        EXPECT_EQ(windows[k].end - windows[k + 1].first, overlap);  // exactly the overlap
        EXPECT_EQ(windows[k].size(), windows[0].size());            // equal lengths
      }
    }
  }
  // A range that fits is one window.
  EXPECT_EQ(layout_windows(3, 40, options(64, 8)), (std::vector<FrameWindow>{{3, 40}}));
}

TEST(WindowLayout, EveryFrameBelongsToTheInteriorOfOneWindow) {
  const std::vector<FrameWindow> windows = layout_windows(0, 300, options(64, 8));
  size_t previous = 0;
  for (int64_t frame = 0; frame < 300; ++frame) {
    const size_t k = window_of_frame(windows, frame);
    EXPECT_TRUE(windows[k].contains(frame)) << frame;
    EXPECT_GE(k, previous);  // interiors are in order
    previous = k;
    if (k > 0) {  // the frame is in the later half of the overlap with window k - 1, or past it
      EXPECT_GE(frame, (windows[k].first + windows[k - 1].end) / 2);
    }
  }
  EXPECT_EQ(window_of_frame(windows, 299), windows.size() - 1);
}

Track track_with_confidence(int64_t first, const std::vector<float>& p_occluded) {
  Track track;
  track.first_frame = first;
  for (size_t i = 0; i < p_occluded.size(); ++i) {
    TrackPoint p = truth(0, first + static_cast<int64_t>(i));
    p.p_occluded = p_occluded[i];
    p.p_far = 0.0f;
    p.visible = visible_from_probabilities(p.p_occluded, p.p_far);
    track.points.push_back(p);
  }
  return track;
}

TEST(WindowHandOff, TheLastConfidentEstimateOfTheOverlapBecomesTheNextQuery) {
  // Frames 100..107 shared; the first three quarters (100..105) are searched, from the end.
  const FrameWindow shared{100, 108};
  Track track = track_with_confidence(96, {0, 0, 0, 0, 0.1f, 0.1f, 0.5f, 0.1f, 0.9f, 0.9f, 0.0f, 0.0f});
  Query q = forward_handoff(track, shared, 0.8f);
  EXPECT_EQ(q.frame, 103);  // 104 and 105 are occluded (p = 0.9); 106, 107 lie in the last quarter
  EXPECT_FLOAT_EQ(static_cast<float>(q.x_px), truth(0, 103).x_px);
  EXPECT_FLOAT_EQ(static_cast<float>(q.y_px), truth(0, 103).y_px);
  // Backward: the first confident estimate of the last three quarters (102..107).
  Query back = backward_handoff(track, shared, 0.8f);
  EXPECT_EQ(back.frame, 103);  // 102 has confidence 0.5
  // Nothing confident: the most confident frame of the whole overlap.
  Track doubtful = track_with_confidence(100, {0.6f, 0.6f, 0.6f, 0.45f, 0.6f, 0.6f, 0.6f, 0.3f});
  EXPECT_EQ(forward_handoff(doubtful, shared, 0.8f).frame, 107);
  EXPECT_EQ(backward_handoff(doubtful, shared, 0.8f).frame, 107);
  EXPECT_FLOAT_EQ(estimate_confidence(doubtful.at(107)), 0.7f);
}

TEST(WindowHandOff, TheOverlapIsBlendedTowardsTheWindowTakingOver) {
  const FrameWindow shared{10, 14};
  EXPECT_FLOAT_EQ(later_window_weight(shared, 10), 0.2f);
  EXPECT_FLOAT_EQ(later_window_weight(shared, 13), 0.8f);
  for (int64_t f = 10; f < 13; ++f) EXPECT_LT(later_window_weight(shared, f), later_window_weight(shared, f + 1));
}

TEST(WindowedTracking, TracksAreHandedThroughEveryWindowBothWays) {
  TruthTracker fake;
  fake.windows = layout_windows(0, 300, options(64, 8));
  ASSERT_EQ(fake.windows.size(), 6u);
  TrackRequest request;
  request.queries = {{0, truth(0, 0).x_px, truth(0, 0).y_px},
                     {150, truth(1, 150).x_px, truth(1, 150).y_px},
                     {290, truth(2, 290).x_px, truth(2, 290).y_px}};
  Recorder recorder;
  Expected<TrackSet> result = track_windowed(
      request, 300, options(64, 8),
      [&](const TrackRequest& w, TrackObserver& o, std::stop_token s) { return fake(w, o, s); }, recorder, {});
  ASSERT_TRUE(result) << result.status().message();
  ASSERT_EQ(result->tracks.size(), 3u);
  EXPECT_EQ(result->frame_count, 300);
  // Every frame of every track is on its trajectory: each hand-off picked up the same point.
  for (size_t p = 0; p < 3; ++p) {
    EXPECT_EQ(result->tracks[p].query, request.queries[p]);
    for (int64_t f = 0; f < 300; ++f) {
      EXPECT_NEAR(result->tracks[p].at(f).x_px, truth(p, f).x_px, 1e-3) << p << " " << f;
      EXPECT_NEAR(result->tracks[p].at(f).y_px, truth(p, f).y_px, 1e-3) << p << " " << f;
      EXPECT_TRUE(result->tracks[p].at(f).visible);
    }
  }
  // Forward runs of windows 0..5, then backward runs of windows 4..0 for the points that start later.
  ASSERT_EQ(fake.calls.size(), 6u + 5u);
  for (size_t run = 0; run < fake.calls.size(); ++run) {
    const size_t k = run < 6 ? run : 10 - run;
    const TrackRequest& w = fake.calls[run].request;
    EXPECT_EQ(w.first_frame, fake.windows[k].first) << run;
    EXPECT_EQ(w.end_frame, fake.windows[k].end) << run;
    for (size_t i = 0; i < fake.calls[run].points.size(); ++i) {
      const Query& q = w.queries[i];
      const size_t p = fake.calls[run].points[i];
      if (q == request.queries[p]) continue;  // the point's own query
      // A hand-off: on the trajectory, in the shared frames of this window and its neighbour.
      const bool forward = run < 6;
      const FrameWindow shared = forward ? FrameWindow{fake.windows[k].first, fake.windows[k - 1].end}
                                         : FrameWindow{fake.windows[k + 1].first, fake.windows[k].end};
      EXPECT_TRUE(shared.contains(q.frame)) << run << " " << q.frame;
      // Every estimate is confident: forward takes the last of the first three quarters, backward the first of
      // the last three quarters.
      EXPECT_EQ(q.frame, forward ? shared.first + 5 : shared.end - 6) << run;
      EXPECT_NEAR(q.x_px, truth(p, q.frame).x_px, 1e-3);
    }
  }
  // Window 0 runs only point 0 forward; the backward run of window 0 carries points 1 and 2.
  EXPECT_EQ(fake.calls[0].points, (std::vector<size_t>{0}));
  EXPECT_EQ(fake.calls.back().points, (std::vector<size_t>{1, 2}));
  // Progress: monotonic, window by window, ending at 1; one partial result with every track.
  double last = 0.0;
  for (const TrackProgress& p : recorder.progress) {
    EXPECT_GE(p.fraction, last - 1e-12);
    last = p.fraction;
  }
  EXPECT_DOUBLE_EQ(recorder.progress.back().fraction, 1.0);
  EXPECT_NE(recorder.progress.front().phase.find("window 1/11"), std::string::npos) << recorder.progress.front().phase;
  EXPECT_EQ(recorder.partials, (std::vector<size_t>{3}));
  EXPECT_EQ(recorder.stages.size(), fake.calls.size());
}

TEST(WindowedTracking, HandOffsAvoidOccludedFramesAndOverlapsAreBlended) {
  TruthTracker fake;
  fake.points = 1;
  fake.windows = layout_windows(0, 120, options(64, 8));  // [0, 64), [56, 120)
  ASSERT_EQ(fake.windows.size(), 2u);
  fake.hidden = {60, 61, 62, 63};  // the overlap's first three quarters are 56..61
  fake.shift_per_window = 2.0f;    // window 1 answers 2 px to the right of window 0
  TrackRequest request;
  request.queries = {{0, truth(0, 0).x_px, truth(0, 0).y_px}};
  Recorder recorder;
  Expected<TrackSet> result = track_windowed(
      request, 120, options(64, 8),
      [&](const TrackRequest& w, TrackObserver& o, std::stop_token s) { return fake(w, o, s); }, recorder, {});
  ASSERT_TRUE(result) << result.status().message();
  ASSERT_EQ(fake.calls.size(), 2u);
  EXPECT_EQ(fake.calls[1].request.queries[0].frame, 59);  // the last confident frame before the occlusion
  const Track& track = result->tracks[0];
  const FrameWindow shared{56, 64};
  for (int64_t f = 0; f < 120; ++f) {
    const float shift = f < 56 ? 0.0f : f >= 64 ? 2.0f : 2.0f * later_window_weight(shared, f);
    EXPECT_NEAR(track.at(f).x_px, truth(0, f).x_px + shift, 1e-4) << f;
  }
  // Blended probabilities decide visibility: both windows call 60..63 occluded.
  EXPECT_FALSE(track.at(61).visible);
  EXPECT_TRUE(track.at(59).visible);
}

TEST(WindowedTracking, CancellationStopsBetweenWindowsAndErrorsPropagate) {
  TruthTracker fake;
  fake.points = 1;
  std::stop_source stop;
  fake.after_run = [&] { stop.request_stop(); };
  TrackRequest request;
  request.queries = {{0, truth(0, 0).x_px, truth(0, 0).y_px}};
  Recorder recorder;
  auto run = [&](const TrackRequest& w, TrackObserver& o, std::stop_token s) { return fake(w, o, s); };
  Expected<TrackSet> cancelled_run = track_windowed(request, 300, options(64, 8), run, recorder, stop.get_token());
  ASSERT_FALSE(cancelled_run);
  EXPECT_EQ(cancelled_run.status().code(), StatusCode::cancelled);
  EXPECT_EQ(fake.calls.size(), 1u);
  EXPECT_TRUE(recorder.partials.empty());

  TruthTracker failing;
  failing.points = 1;
  failing.fail_on_run = 2;
  Expected<TrackSet> failed = track_windowed(
      request, 300, options(64, 8),
      [&](const TrackRequest& w, TrackObserver& o, std::stop_token s) { return failing(w, o, s); }, recorder, {});
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.status().code(), StatusCode::io_error);
  EXPECT_EQ(failing.calls.size(), 2u);

  EXPECT_EQ(track_windowed(request, 300, options(8, 2), run, recorder, {}).status().code(),
            StatusCode::invalid_argument);
  TrackRequest outside;
  outside.queries = {{300, 1.0, 1.0}};
  EXPECT_EQ(track_windowed(outside, 300, options(64, 8), run, recorder, {}).status().code(),
            StatusCode::invalid_argument);
}

// A video of numbered 4x4 frames that counts its decodes.
class CountingVideo final : public VideoSource {
 public:
  CountingVideo() {
    info_.width = 4;
    info_.height = 4;
    info_.frame_count = 100;
    info_.frame_rate = {25, 1};
  }
  const VideoInfo& info() const override { return info_; }
  Expected<FramePtr> read_frame(int64_t index, FrameSize) override {
    ++decodes;
    auto frame = std::make_shared<Frame>();
    frame->index = index;
    frame->width = 4;
    frame->height = 4;
    frame->rgb.assign(48, static_cast<uint8_t>(index));
    return FramePtr(frame);
  }
  double last_decode_ms() const override { return 1.0; }
  int decodes = 0;

 private:
  VideoInfo info_;
};

TEST(RecentFramesVideo, TheOverlapIsNotDecodedTwice) {
  CountingVideo video;
  RecentFramesVideo recent(video, 48 * 8);  // eight frames
  for (int64_t f = 0; f < 64; ++f) ASSERT_TRUE(recent.read_frame(f));
  for (int64_t f = 56; f < 70; ++f) {  // the next window starts 8 frames back
    Expected<FramePtr> frame = recent.read_frame(f);
    ASSERT_TRUE(frame);
    EXPECT_EQ((*frame)->rgb[0], static_cast<uint8_t>(f));
  }
  EXPECT_EQ(video.decodes, 70);
  EXPECT_EQ(recent.hits(), 8);
  ASSERT_TRUE(recent.read_frame(0));  // evicted long ago
  EXPECT_EQ(video.decodes, 71);
  EXPECT_EQ(&recent.info(), &video.info());
  // Only frames from keep_from() on are kept.
  recent.keep_from(95);
  for (int64_t f = 80; f < 100; ++f) ASSERT_TRUE(recent.read_frame(f));
  EXPECT_EQ(video.decodes, 91);
  for (int64_t f = 94; f < 100; ++f) ASSERT_TRUE(recent.read_frame(f));
  EXPECT_EQ(video.decodes, 92);  // 94 was not kept
  EXPECT_EQ(recent.hits(), 13);
}

}  // namespace
}  // namespace trackscope::core
