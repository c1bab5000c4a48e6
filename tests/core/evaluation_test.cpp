// Tracker evaluation (core/tracking/evaluation.h) with fake trackers whose answers are known: the ground truth
// (PCK / AJ 1), the query position (must equal the stationary baseline), offsets with a known score, a tracker
// that finds a dot in the frames (the frames reach it), and the error paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/tracking/evaluation.h"
#include "core/video/memory_video.h"

namespace trackscope::core {
namespace {

const std::filesystem::path kShared = TRACKSCOPE_SHARED_DIR;
const std::filesystem::path kBadjaCsv = kShared / "testdata/derived_badja_horsejump-high_854x480.csv";
const std::filesystem::path kBadjaJson = kShared / "testdata/badja_horsejump-high.json";
const std::filesystem::path kBadjaMasks = kShared / "testdata/horsejump-high_480p/masks";

// A video without pixels (the BADJA fakes never read frames).
class BlankVideo final : public VideoSource {
 public:
  BlankVideo(int width, int height, int64_t frames, std::string name = "blank") {
    info_.path = std::move(name);
    info_.width = width;
    info_.height = height;
    info_.frame_count = frames;
    info_.frame_rate = {25, 1};
  }
  const VideoInfo& info() const override { return info_; }
  Expected<FramePtr> read_frame(int64_t, FrameSize) override { return internal_error("BlankVideo has no pixels"); }
  double last_decode_ms() const override { return 0.0; }

 private:
  VideoInfo info_;
};

// Answers every (query, frame) with `answer`; records each request. Progress at half-way and at the end.
class FakeTracker final : public PointTracker {
 public:
  using Answer = std::function<TrackPoint(VideoSource& video, size_t query_index, const Query& query, int64_t frame)>;
  explicit FakeTracker(Answer answer) : answer_(std::move(answer)) { description_.model_name = "fake"; }

  const TrackerDescription& description() const override { return description_; }
  Expected<TrackSet> track(VideoSource& video, const TrackRequest& request, TrackObserver& observer,
                           std::stop_token) override {
    requests.push_back(request);
    videos.push_back(video.info().path.string());
    if (failure) return *failure;
    const int64_t end = request.end_frame == -1 ? video.info().frame_count : request.end_frame;
    TrackSet set;
    set.first_frame = request.first_frame;
    set.frame_count = end - request.first_frame;
    for (size_t q = 0; q < request.queries.size(); ++q) {
      Track track;
      track.query = request.queries[q];
      track.first_frame = request.first_frame;
      for (int64_t t = request.first_frame; t < end; ++t) track.points.push_back(answer_(video, q, track.query, t));
      set.tracks.push_back(std::move(track));
    }
    observer.on_progress({0.5, 0, 1, "half"});
    observer.on_progress({1.0, 1, 1, "done"});
    return set;
  }

  std::vector<TrackRequest> requests;
  std::vector<std::string> videos;
  std::optional<Status> failure;

 private:
  Answer answer_;
  TrackerDescription description_;
};

TrackPoint visible_at(double x_px, double y_px) {
  return {static_cast<float>(x_px), static_cast<float>(y_px), true, 0.0f, 0.0f};
}

TrackPoint at_query(VideoSource&, size_t, const Query& query, int64_t) { return visible_at(query.x_px, query.y_px); }

class ProgressLog final : public TrackObserver {
 public:
  void on_progress(const TrackProgress& progress) override { seen.push_back(progress); }
  std::vector<TrackProgress> seen;
};

void expect_same_pck(const PckResult& a, const PckResult& b) {
  EXPECT_EQ(a.correct, b.correct);
  EXPECT_EQ(a.evaluated, b.evaluated);
  ASSERT_EQ(a.per_frame.size(), b.per_frame.size());
  for (size_t f = 0; f < a.per_frame.size(); ++f) {
    EXPECT_EQ(a.per_frame[f].frame, b.per_frame[f].frame);
    EXPECT_EQ(a.per_frame[f].correct, b.per_frame[f].correct) << "frame " << a.per_frame[f].frame;
    EXPECT_EQ(a.per_frame[f].evaluated, b.per_frame[f].evaluated) << "frame " << a.per_frame[f].frame;
  }
}

// ---- BADJA ---------------------------------------------------------------------------------------------------

// The ground truth of `annotations` (already in the video's pixels) for the joint that query q started on,
// the query position where the joint is not annotated; displaced by (dx, dy) px.
FakeTracker::Answer badja_oracle(const BadjaAnnotations& annotations, double dx_px = 0.0, double dy_px = 0.0) {
  const std::vector<BadjaQuery> queries = badja_queries(annotations);
  return [annotations, queries, dx_px, dy_px](VideoSource&, size_t q, const Query& query, int64_t frame) {
    for (const BadjaFrame& f : annotations.frames) {
      if (f.frame != frame) continue;
      for (const BadjaJoint& j : f.joints) {
        if (j.joint_id == queries.at(q).joint_id && j.visible) return visible_at(j.x_px + dx_px, j.y_px + dy_px);
      }
    }
    return visible_at(query.x_px, query.y_px);
  };
}

// Visible started joints on the annotated frames after the first, counted from the annotations directly.
std::map<int64_t, int64_t> scored_joints(const BadjaAnnotations& annotations, int64_t end_frame = 1 << 30) {
  std::set<int> started;
  for (const BadjaJoint& j : annotations.frames.front().joints) {
    if (j.visible) started.insert(j.joint_id);
  }
  std::map<int64_t, int64_t> counts;
  for (size_t f = 1; f < annotations.frames.size(); ++f) {
    if (annotations.frames[f].frame >= end_frame) continue;
    int64_t& count = counts[annotations.frames[f].frame];
    for (const BadjaJoint& j : annotations.frames[f].joints) count += (j.visible && started.count(j.joint_id)) ? 1 : 0;
  }
  return counts;
}

TEST(BadjaEvaluation, GroundTruthTrackerScoresOneOnTheWholeClip) {
  Expected<BadjaAnnotations> gt = load_badja_csv(kBadjaCsv);
  ASSERT_TRUE(gt) << gt.status().message();
  BlankVideo video(854, 480, 50);
  FakeTracker tracker(badja_oracle(*gt));
  ProgressLog progress;
  Expected<BadjaEvaluation> result = evaluate_badja(tracker, video, *gt, {}, progress);
  ASSERT_TRUE(result) << result.status().message();

  // One request over the whole clip with a query per visible joint of frame 0, at the joint.
  ASSERT_EQ(tracker.requests.size(), 1u);
  const TrackRequest& request = tracker.requests.front();
  EXPECT_EQ(request.first_frame, 0);
  EXPECT_EQ(request.end_frame, 50);
  ASSERT_EQ(request.queries.size(),
            static_cast<size_t>(std::count_if(gt->frames.front().joints.begin(), gt->frames.front().joints.end(),
                                              [](const BadjaJoint& j) { return j.visible; })));
  for (const Query& q : request.queries) EXPECT_EQ(q.frame, 0);
  EXPECT_EQ(progress.seen.size(), 2u);

  const std::map<int64_t, int64_t> expected = scored_joints(*gt);
  EXPECT_DOUBLE_EQ(result->pck.pck, 1.0);
  ASSERT_EQ(result->pck.per_frame.size(), expected.size());
  int64_t total = 0;
  for (const PckFrame& f : result->pck.per_frame) {
    EXPECT_EQ(f.evaluated, expected.at(f.frame)) << "frame " << f.frame;
    EXPECT_EQ(f.correct, f.evaluated);
    total += f.evaluated;
  }
  EXPECT_EQ(result->pck.evaluated, total);
  // The horse jumps: not moving is wrong on most later frames.
  EXPECT_LT(result->stationary.pck, 0.5);
  EXPECT_EQ(result->stationary.evaluated, total);
}

TEST(BadjaEvaluation, CalibrationCountsEveryStartedJointOnLaterAnnotatedFrames) {
  Expected<BadjaAnnotations> gt = load_badja_csv(kBadjaCsv);
  ASSERT_TRUE(gt) << gt.status().message();
  BlankVideo video(854, 480, 50);
  // The ground truth (the query where a joint is not annotated), p_occluded and p_far 0 everywhere.
  FakeTracker tracker(badja_oracle(*gt));
  ProgressLog progress;
  Expected<BadjaEvaluation> result = evaluate_badja(tracker, video, *gt, {}, progress);
  ASSERT_TRUE(result) << result.status().message();
  const Calibration occluded = result->calibration.occluded.result();
  const Calibration far = result->calibration.far.result();
  const auto started = static_cast<int64_t>(result->queries.size());
  const auto later_frames = static_cast<int64_t>(result->annotations.frames.size()) - 1;
  EXPECT_EQ(occluded.count, started * later_frames);  // 19 x 9 on horsejump-high
  EXPECT_EQ(far.count, result->pck.evaluated);        // the visible ones: 147
  // Predicting 0 for both: p_far is right (no error), p_occluded misses the annotated-invisible joints.
  EXPECT_DOUBLE_EQ(far.expected_calibration_error, 0.0);
  const double invisible = static_cast<double>(occluded.count - far.count) / static_cast<double>(occluded.count);
  EXPECT_NEAR(occluded.expected_calibration_error, invisible, 1e-12);
  EXPECT_NEAR(occluded.base_rate, invisible, 1e-12);
}

TEST(BadjaEvaluation, QueryPositionTrackerEqualsTheStationaryBaseline) {
  Expected<BadjaAnnotations> gt = load_badja_csv(kBadjaCsv);
  ASSERT_TRUE(gt) << gt.status().message();
  BlankVideo video(854, 480, 50);
  FakeTracker tracker(at_query);
  ProgressLog progress;
  Expected<BadjaEvaluation> result = evaluate_badja(tracker, video, *gt, {}, progress);
  ASSERT_TRUE(result) << result.status().message();
  expect_same_pck(result->pck, result->stationary);
  EXPECT_GT(result->stationary.correct, 0);
  EXPECT_LT(result->stationary.correct, result->stationary.evaluated);
}

TEST(BadjaEvaluation, OffsetScoresOnlyFramesWhoseThresholdIsLarger) {
  Expected<BadjaAnnotations> gt = load_badja_csv(kBadjaCsv);
  ASSERT_TRUE(gt) << gt.status().message();
  constexpr double kOffsetPx = 25.0;  // between the smallest (19.4) and largest (31.6) threshold of the clip
  BlankVideo video(854, 480, 50);
  FakeTracker tracker(badja_oracle(*gt, kOffsetPx * 0.6, kOffsetPx * 0.8));
  ProgressLog progress;
  Expected<BadjaEvaluation> full = evaluate_badja(tracker, video, *gt, {}, progress);
  ASSERT_TRUE(full) << full.status().message();
  int64_t correct = 0;
  for (const PckFrame& f : full->pck.per_frame) {
    const auto frame =
        std::find_if(gt->frames.begin(), gt->frames.end(), [&](const BadjaFrame& a) { return a.frame == f.frame; });
    ASSERT_NE(frame, gt->frames.end());
    EXPECT_EQ(f.correct, frame->pck_threshold_px > kOffsetPx ? f.evaluated : 0) << "frame " << f.frame;
    correct += f.correct;
  }
  EXPECT_GT(correct, 0);
  EXPECT_LT(correct, full->pck.evaluated);

  // The same clip at half the size: annotations and thresholds scale with the video, so half the offset
  // gives the same per-frame result.
  BlankVideo half_video(427, 240, 50);
  FakeTracker half_tracker(badja_oracle(gt->scaled_to(427, 240), kOffsetPx * 0.3, kOffsetPx * 0.4));
  Expected<BadjaEvaluation> half = evaluate_badja(half_tracker, half_video, *gt, {}, progress);
  ASSERT_TRUE(half) << half.status().message();
  EXPECT_EQ(half->annotations.width, 427);
  expect_same_pck(half->pck, full->pck);
  EXPECT_NEAR(half_tracker.requests.front().queries.front().x_px, tracker.requests.front().queries.front().x_px / 2,
              1e-9);
}

TEST(BadjaEvaluation, EndFrameLimitsTrackingAndScoring) {
  Expected<BadjaAnnotations> gt = load_badja_csv(kBadjaCsv);
  ASSERT_TRUE(gt) << gt.status().message();
  BlankVideo video(854, 480, 50);
  FakeTracker tracker(badja_oracle(*gt));
  ProgressLog progress;
  BadjaEvaluationOptions options;
  options.end_frame = 8;
  Expected<BadjaEvaluation> result = evaluate_badja(tracker, video, *gt, options, progress);
  ASSERT_TRUE(result) << result.status().message();
  EXPECT_EQ(tracker.requests.front().end_frame, 8);
  EXPECT_EQ(result->end_frame, 8);
  ASSERT_EQ(result->pck.per_frame.size(), 2u);  // frames 2 and 7 (8 is at the end, outside)
  EXPECT_EQ(result->pck.per_frame[0].frame, 2);
  EXPECT_EQ(result->pck.per_frame[1].frame, 7);
  const std::map<int64_t, int64_t> expected = scored_joints(*gt, 8);
  EXPECT_EQ(result->pck.evaluated, expected.at(2) + expected.at(7));
  ASSERT_EQ(result->tracks.tracks.front().points.size(), 8u);
  EXPECT_EQ(result->stationary.evaluated, result->pck.evaluated);
}

TEST(BadjaEvaluation, JsonWithMasksGivesTheThresholdsOfTheDerivedCsv) {
  Expected<BadjaAnnotations> csv = load_badja_csv(kBadjaCsv);
  Expected<BadjaAnnotations> json = load_badja_json(kBadjaJson);
  ASSERT_TRUE(csv && json) << json.status().message();
  ASSERT_TRUE(set_badja_thresholds_from_masks(*json, kBadjaMasks));
  ASSERT_EQ(json->frames.size(), csv->frames.size());
  for (size_t f = 0; f < csv->frames.size(); ++f) {
    // 1920x1080 annotation pixels; the CSV's thresholds are at 854x480, rounded to 0.01 px.
    const double at_854 = json->frames[f].pck_threshold_px * std::sqrt(854.0 / 1920.0 * 480.0 / 1080.0);
    EXPECT_NEAR(at_854, csv->frames[f].pck_threshold_px, 0.0051) << "frame " << csv->frames[f].frame;
  }
  // The same evaluation from either file.
  BlankVideo video(854, 480, 50);
  FakeTracker tracker(at_query);
  ProgressLog progress;
  Expected<BadjaEvaluation> from_csv = evaluate_badja(tracker, video, *csv, {}, progress);
  Expected<BadjaEvaluation> from_json = evaluate_badja(tracker, video, *json, {}, progress);
  ASSERT_TRUE(from_csv && from_json) << from_json.status().message();
  expect_same_pck(from_json->stationary, from_csv->stationary);
}

TEST(BadjaEvaluation, ErrorsSayWhatToDo) {
  Expected<BadjaAnnotations> csv = load_badja_csv(kBadjaCsv);
  Expected<BadjaAnnotations> json = load_badja_json(kBadjaJson);
  ASSERT_TRUE(csv && json);
  FakeTracker tracker(at_query);
  ProgressLog progress;
  BlankVideo video(854, 480, 50);

  Expected<BadjaEvaluation> no_thresholds = evaluate_badja(tracker, video, *json, {}, progress);
  EXPECT_EQ(no_thresholds.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(no_thresholds.status().message().find("--masks"), std::string::npos) << no_thresholds.status().message();
  BadjaAnnotations copy = *json;
  EXPECT_EQ(set_badja_thresholds_from_masks(copy, kShared / "testdata/no_such_masks").code(), StatusCode::not_found);
  // The video folder has JPEG frames, not masks named by frame: not found for the first annotated frame.
  Status wrong_masks = set_badja_thresholds_from_masks(copy, std::filesystem::path(TRACKSCOPE_SOURCE_DIR) / "core");
  EXPECT_EQ(wrong_masks.code(), StatusCode::not_found);
  EXPECT_NE(wrong_masks.message().find("frame 0"), std::string::npos) << wrong_masks.message();

  BlankVideo short_video(854, 480, 30);
  Expected<BadjaEvaluation> too_short = evaluate_badja(tracker, short_video, *csv, {}, progress);
  EXPECT_EQ(too_short.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(too_short.status().message().find("49"), std::string::npos) << too_short.status().message();

  BadjaEvaluationOptions one_frame;
  one_frame.end_frame = 1;
  EXPECT_EQ(evaluate_badja(tracker, video, *csv, one_frame, progress).status().code(), StatusCode::invalid_argument);
  BadjaEvaluationOptions zero;
  zero.end_frame = 0;
  EXPECT_EQ(evaluate_badja(tracker, video, *csv, zero, progress).status().code(), StatusCode::invalid_argument);
  EXPECT_TRUE(tracker.requests.empty());  // every error above came before tracking

  tracker.failure = cancelled("stopped by the user");
  EXPECT_EQ(evaluate_badja(tracker, video, *csv, {}, progress).status().code(), StatusCode::cancelled);
}

// ---- TAP-Vid ---------------------------------------------------------------------------------------------------

// A 64x48 clip of 6 frames, 3 tracks (query-first):
//   track 0: from (10.5, 10.5) on frame 0, +2 px in x per frame, always visible;
//   track 1: from (30.5, 20.5) on frame 0, +1 px in y per frame, occluded on frames 2 and 3;
//   track 2: occluded on frames 0-1, queried on frame 2 at (50.5, 40.5), -3 px in x per frame.
// Each visible point is drawn as one pixel of its own colour on black.
constexpr int kWidth = 64, kHeight = 48, kFrames = 6;
const uint8_t kColours[3][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}};

TapVidClip three_track_clip(std::string name = "three") {
  TapVidClip clip;
  clip.name = std::move(name);
  clip.width = kWidth;
  clip.height = kHeight;
  clip.frames_rgb.assign(kFrames, std::vector<uint8_t>(kWidth * kHeight * 3, 0));
  const double start[3][2] = {{10.5, 10.5}, {30.5, 20.5}, {50.5, 40.5}};
  const double velocity[3][2] = {{2, 0}, {0, 1}, {-3, 0}};
  const int64_t query_frame[3] = {0, 0, 2};
  for (int n = 0; n < 3; ++n) {
    clip.queries.push_back({query_frame[n], start[n][0], start[n][1]});
    for (int t = 0; t < kFrames; ++t) {
      const double dt = static_cast<double>(t - query_frame[n]);
      const float x = static_cast<float>(start[n][0] + velocity[n][0] * dt);
      const float y = static_cast<float>(start[n][1] + velocity[n][1] * dt);
      const bool occluded = (n == 1 && (t == 2 || t == 3)) || (n == 2 && t < 2);
      clip.gt_tracks_xy.push_back(x);
      clip.gt_tracks_xy.push_back(y);
      clip.gt_occluded.push_back(occluded ? 1 : 0);
      if (occluded) continue;
      uint8_t* pixel = clip.frames_rgb[static_cast<size_t>(t)].data() +
                       (static_cast<size_t>(y) * kWidth + static_cast<size_t>(x)) * 3;
      std::copy(kColours[n], kColours[n] + 3, pixel);
    }
  }
  return clip;
}

// The clip's ground truth, visible where it is; displaced by (dx, dy) px of the clip.
FakeTracker::Answer tapvid_oracle(const TapVidClip& clip, double dx_px = 0.0, double dy_px = 0.0) {
  return [clip, dx_px, dy_px](VideoSource&, size_t q, const Query&, int64_t t) {
    const size_t i = q * static_cast<size_t>(clip.frame_count()) + static_cast<size_t>(t);
    TrackPoint p = visible_at(clip.gt_tracks_xy[2 * i] + dx_px, clip.gt_tracks_xy[2 * i + 1] + dy_px);
    p.visible = clip.gt_occluded[i] == 0;
    p.p_occluded = p.visible ? 0.0f : 1.0f;
    return p;
  };
}

void expect_same_metrics(const TapVidMetrics& a, const TapVidMetrics& b) {
  EXPECT_DOUBLE_EQ(a.occlusion_accuracy, b.occlusion_accuracy);
  EXPECT_DOUBLE_EQ(a.average_jaccard, b.average_jaccard);
  EXPECT_DOUBLE_EQ(a.average_pts_within, b.average_pts_within);
  EXPECT_EQ(a.counts.evaluated_points, b.counts.evaluated_points);
  EXPECT_EQ(a.counts.occlusion_correct, b.counts.occlusion_correct);
  for (size_t k = 0; k < kTapVidThresholdsPx.size(); ++k) {
    EXPECT_DOUBLE_EQ(a.pts_within[k], b.pts_within[k]) << "threshold " << kTapVidThresholdsPx[k];
    EXPECT_DOUBLE_EQ(a.jaccard[k], b.jaccard[k]) << "threshold " << kTapVidThresholdsPx[k];
  }
}

TEST(TapVidEvaluation, GroundTruthTrackerScoresOne) {
  const TapVidClip clip = three_track_clip();
  ASSERT_TRUE(clip.check()) << clip.check().message();
  FakeTracker tracker(tapvid_oracle(clip));
  ProgressLog progress;
  Expected<TapVidEvaluation> result = evaluate_tapvid(tracker, {clip}, progress);
  ASSERT_TRUE(result) << result.status().message();
  ASSERT_EQ(tracker.requests.size(), 1u);
  EXPECT_EQ(tracker.requests.front().queries, clip.queries);
  EXPECT_EQ(tracker.requests.front().end_frame, kFrames);
  EXPECT_DOUBLE_EQ(result->model.average_jaccard, 1.0);
  EXPECT_DOUBLE_EQ(result->model.average_pts_within, 1.0);
  EXPECT_DOUBLE_EQ(result->model.occlusion_accuracy, 1.0);
  // Query-first: frames after each query (5 + 5 + 3).
  EXPECT_EQ(result->model.counts.evaluated_points, 13);
  EXPECT_EQ(result->model.videos, 1);
  ASSERT_EQ(result->clips.size(), 1u);
  EXPECT_EQ(result->clips.front().name, "three");
  // Not moving loses every moving frame (tracks 0 and 2 move >= 2 px per frame at 64 px = 8 px at 256).
  EXPECT_LT(result->stationary.average_jaccard, 0.6);
}

TEST(TapVidEvaluation, QueryPositionTrackerEqualsTheStationaryBaseline) {
  const TapVidClip clip = three_track_clip();
  FakeTracker tracker(at_query);
  ProgressLog progress;
  Expected<TapVidEvaluation> result = evaluate_tapvid(tracker, {clip}, progress);
  ASSERT_TRUE(result) << result.status().message();
  expect_same_metrics(result->model, result->stationary);
  EXPECT_GT(result->stationary.average_jaccard, 0.0);
  EXPECT_LT(result->stationary.average_jaccard, 1.0);
  // Predicted visible everywhere: wrong exactly on the two occluded frames after a query (track 1, frames 2-3).
  EXPECT_EQ(result->stationary.counts.evaluated_points - result->stationary.counts.occlusion_correct, 2);
}

TEST(TapVidEvaluation, ThresholdsApplyAt256Pixels) {
  // 0.75 px in x of a 64 px wide clip is 3 px at 256: within 4, 8 and 16 px, not within 1 and 2.
  const TapVidClip clip = three_track_clip();
  FakeTracker tracker(tapvid_oracle(clip, 0.75, 0.0));
  ProgressLog progress;
  Expected<TapVidEvaluation> result = evaluate_tapvid(tracker, {clip}, progress);
  ASSERT_TRUE(result) << result.status().message();
  const std::array<double, 5> expected = {0.0, 0.0, 1.0, 1.0, 1.0};
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_DOUBLE_EQ(result->model.pts_within[k], expected[k]) << "threshold " << kTapVidThresholdsPx[k];
    EXPECT_DOUBLE_EQ(result->model.jaccard[k], expected[k]) << "threshold " << kTapVidThresholdsPx[k];
  }
  EXPECT_DOUBLE_EQ(result->model.average_pts_within, 0.6);
  EXPECT_DOUBLE_EQ(result->model.occlusion_accuracy, 1.0);
}

TEST(TapVidEvaluation, CalibrationOfBothProbabilities) {
  // 2 px in x of a 64 px clip is 8 px at 256: every visible estimate is "far"; the tracker says p_far 0.25.
  const TapVidClip clip = three_track_clip();
  FakeTracker::Answer oracle = tapvid_oracle(clip, 2.0, 0.0);
  FakeTracker tracker([&](VideoSource& video, size_t q, const Query& query, int64_t t) {
    TrackPoint p = oracle(video, q, query, t);
    p.p_far = 0.25f;
    return p;
  });
  ProgressLog progress;
  Expected<TapVidEvaluation> result = evaluate_tapvid(tracker, {clip, clip}, progress);
  ASSERT_TRUE(result) << result.status().message();
  const Calibration occluded = result->calibration.occluded.result();
  const Calibration far = result->calibration.far.result();
  EXPECT_EQ(occluded.count, 2 * 13);                           // the scored pairs of both clips
  EXPECT_EQ(far.count, 2 * 11);                                // ... that are visible in the ground truth
  EXPECT_DOUBLE_EQ(occluded.expected_calibration_error, 0.0);  // 0 / 1, exactly right
  EXPECT_NEAR(far.expected_calibration_error, 0.75, 1e-6);     // said 0.25, always far
  EXPECT_EQ(far.bins[2].count, 22);
  EXPECT_DOUBLE_EQ(far.bins[2].observed_frequency, 1.0);
  // The same pairs through add_tapvid_calibration directly; a track set of other queries is refused.
  TrackCalibration direct;
  TrackSet tracks = *tracker.track(**MemoryVideoSource::from_rgb(kWidth, kHeight, clip.frames_rgb, {24, 1}),
                                   {clip.queries, 0, -1}, progress, {});
  ASSERT_TRUE(add_tapvid_calibration(clip, tracks, direct).ok());
  EXPECT_EQ(direct.far.count(), 11);
  tracks.tracks.pop_back();
  EXPECT_EQ(add_tapvid_calibration(clip, tracks, direct).code(), StatusCode::invalid_argument);
}

TEST(TapVidEvaluation, FramesReachTheTrackerInOrder) {
  // Finds each track's coloured pixel in the frame it is asked about; where it is hidden, says occluded.
  const TapVidClip clip = three_track_clip();
  auto find_dot = [](VideoSource& video, size_t q, const Query& query, int64_t t) {
    Expected<FramePtr> frame = video.read_frame(t);
    if (!frame) return TrackPoint{};
    for (int y = 0; y < (*frame)->height; ++y) {
      for (int x = 0; x < (*frame)->width; ++x) {
        if (std::equal(kColours[q], kColours[q] + 3, (*frame)->pixel(x, y))) return visible_at(x + 0.5, y + 0.5);
      }
    }
    TrackPoint hidden = visible_at(query.x_px, query.y_px);
    hidden.visible = false;
    hidden.p_occluded = 1.0f;
    return hidden;
  };
  FakeTracker tracker(find_dot);
  ProgressLog progress;
  Expected<TapVidEvaluation> result = evaluate_tapvid(tracker, {clip}, progress);
  ASSERT_TRUE(result) << result.status().message();
  EXPECT_EQ(tracker.videos.front(), "three");
  EXPECT_DOUBLE_EQ(result->model.occlusion_accuracy, 1.0);
  EXPECT_DOUBLE_EQ(result->model.pts_within[0], 1.0);  // pixel centres = ground truth
}

TEST(TapVidEvaluation, AveragesOverClipsAndReportsProgressOverAll) {
  // Perfect on clip "a", not moving on clip "b": the mean of both, clip by clip.
  const TapVidClip a = three_track_clip("a");
  const TapVidClip b = three_track_clip("b");
  FakeTracker::Answer oracle = tapvid_oracle(a);
  FakeTracker tracker([&](VideoSource& video, size_t q, const Query& query, int64_t t) {
    return video.info().path == "a" ? oracle(video, q, query, t) : at_query(video, q, query, t);
  });
  ProgressLog progress;
  Expected<TapVidEvaluation> result = evaluate_tapvid(tracker, {a, b}, progress);
  ASSERT_TRUE(result) << result.status().message();
  ASSERT_EQ(result->clips.size(), 2u);
  EXPECT_DOUBLE_EQ(result->clips[0].model.average_jaccard, 1.0);
  expect_same_metrics(result->clips[1].model, result->clips[1].stationary);
  EXPECT_DOUBLE_EQ(result->model.average_jaccard, (1.0 + result->clips[1].stationary.average_jaccard) / 2.0);
  EXPECT_DOUBLE_EQ(result->model.occlusion_accuracy, (1.0 + result->clips[1].stationary.occlusion_accuracy) / 2.0);
  EXPECT_EQ(result->model.videos, 2);
  EXPECT_EQ(result->model.counts.evaluated_points, 26);
  ASSERT_EQ(progress.seen.size(), 4u);
  EXPECT_DOUBLE_EQ(progress.seen[0].fraction, 0.25);
  EXPECT_DOUBLE_EQ(progress.seen[3].fraction, 1.0);
  EXPECT_EQ(progress.seen[2].phase, "clip 2/2: half");
}

TEST(TapVidEvaluation, RejectsBadClipsAndPassesTrackerErrors) {
  FakeTracker tracker(at_query);
  ProgressLog progress;
  EXPECT_EQ(evaluate_tapvid(tracker, {}, progress).status().code(), StatusCode::invalid_argument);

  TapVidClip late_query = three_track_clip();
  late_query.queries[0].frame = 1;  // track 0 is visible on frame 0: not query-first
  Status late = late_query.check();
  EXPECT_EQ(late.code(), StatusCode::invalid_argument);
  EXPECT_NE(late.message().find("query-first"), std::string::npos) << late.message();
  TapVidClip hidden_query = three_track_clip();
  hidden_query.queries[1].frame = 2;  // occluded there
  EXPECT_EQ(hidden_query.check().code(), StatusCode::invalid_argument);
  TapVidClip short_truth = three_track_clip();
  short_truth.gt_occluded.pop_back();
  EXPECT_EQ(evaluate_tapvid(tracker, {short_truth}, progress).status().code(), StatusCode::invalid_argument);
  EXPECT_TRUE(tracker.requests.empty());

  tracker.failure = out_of_memory("out of memory (fake)");
  EXPECT_EQ(evaluate_tapvid(tracker, {three_track_clip()}, progress).status().code(), StatusCode::out_of_memory);

  // A tracker that drops a track is caught, not scored.
  const TapVidClip clip = three_track_clip();
  TrackSet two = make_stationary_tracks({clip.queries[0], clip.queries[1]}, 0, kFrames);
  EXPECT_EQ(make_tapvid_video(clip, two).status().code(), StatusCode::invalid_argument);
}

}  // namespace
}  // namespace trackscope::core
