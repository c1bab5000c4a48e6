// TAP-Vid metrics and BADJA PCK on hand-computed cases and on the real BADJA annotation files.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "core/tracking/metrics.h"

namespace trackscope::core {
namespace {

const std::filesystem::path kShared = TRACKSCOPE_SHARED_DIR;

// Two tracks over four frames (worked out by hand in the comments of the tests below).
//   track 0: query on frame 0; ground truth visible at (10, 10) on every frame; predictions at distance
//            0.5 (visible), 3 (visible), 20 (predicted occluded) on frames 1..3.
//   track 1: query on frame 1; ground truth occluded on frames 0 and 2, visible at (50, 50) on 1 and 3;
//            predicted visible everywhere, 1.5 px off on frame 3.
TapVidVideo two_track_video() {
  TapVidVideo v;
  v.track_count = 2;
  v.frame_count = 4;
  v.query_frames = {0.0, 1.0};
  v.gt_occluded = {0, 0, 0, 0, /**/ 1, 0, 1, 0};
  v.gt_tracks_xy = {10, 10, 10, 10, 10, 10, 10, 10, /**/ 0, 0, 50, 50, 0, 0, 50, 50};
  v.pred_occluded = {0, 0, 0, 1, /**/ 0, 0, 0, 0};
  v.pred_tracks_xy = {10, 10, 10.5f, 10, 13, 10, 30, 10, /**/ 5, 5, 50, 50, 7, 7, 51.5f, 50};
  return v;
}

TEST(TapVidMetrics, QueryFirstScoresOnlyFramesAfterTheQuery) {
  Expected<TapVidMetrics> m = compute_tapvid_metrics(two_track_video(), QueryMode::first);
  ASSERT_TRUE(m) << m.status().message();
  // Scored: track 0 frames 1-3, track 1 frames 2-3. Occlusion right on t0f1, t0f2, t1f3.
  EXPECT_EQ(m->counts.evaluated_points, 5);
  EXPECT_DOUBLE_EQ(m->occlusion_accuracy, 3.0 / 5.0);
  // Visible in the ground truth: t0f1 (0.5 px), t0f2 (3 px), t0f3 (20 px), t1f3 (1.5 px).
  EXPECT_EQ(m->counts.gt_visible, 4);
  const std::array<double, 5> within = {1.0 / 4, 2.0 / 4, 3.0 / 4, 3.0 / 4, 3.0 / 4};
  // False positives (predicted visible, occluded or too far): t1f2 always; t0f2 at 1 and 2 px; t1f3 at 1 px.
  const std::array<double, 5> jaccard = {1.0 / 7, 2.0 / 6, 3.0 / 5, 3.0 / 5, 3.0 / 5};
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_DOUBLE_EQ(m->pts_within[k], within[k]) << "threshold " << kTapVidThresholdsPx[k];
    EXPECT_DOUBLE_EQ(m->jaccard[k], jaccard[k]) << "threshold " << kTapVidThresholdsPx[k];
  }
  EXPECT_NEAR(m->average_pts_within, 0.6, 1e-12);
  EXPECT_NEAR(m->average_jaccard, (1.0 / 7 + 1.0 / 3 + 1.8) / 5.0, 1e-12);
}

TEST(TapVidMetrics, StridedScoresEveryFrameButTheQuery) {
  Expected<TapVidMetrics> m = compute_tapvid_metrics(two_track_video(), QueryMode::strided);
  ASSERT_TRUE(m) << m.status().message();
  // Adds t1f0: occluded in the ground truth, predicted visible: wrong occlusion and a false positive everywhere.
  EXPECT_EQ(m->counts.evaluated_points, 6);
  EXPECT_DOUBLE_EQ(m->occlusion_accuracy, 0.5);
  const std::array<double, 5> jaccard = {1.0 / 8, 2.0 / 7, 0.5, 0.5, 0.5};
  for (size_t k = 0; k < 5; ++k) EXPECT_DOUBLE_EQ(m->jaccard[k], jaccard[k]) << "threshold " << kTapVidThresholdsPx[k];
  EXPECT_DOUBLE_EQ(m->pts_within[0], 0.25);
}

TEST(TapVidMetrics, ThresholdIsStrictAndQueryFrameRoundsHalfToEven) {
  TapVidVideo v;
  v.track_count = 1;
  v.frame_count = 4;
  v.query_frames = {2.5};  // numpy.round -> 2: only frame 3 is scored in query-first mode
  v.gt_occluded = {0, 0, 0, 0};
  v.gt_tracks_xy = {0, 0, 0, 0, 0, 0, 0, 0};
  v.pred_occluded = {1, 1, 1, 0};
  v.pred_tracks_xy = {0, 0, 0, 0, 0, 0, 2, 0};  // exactly 2 px: not within 2 px, within 4 px
  Expected<TapVidMetrics> m = compute_tapvid_metrics(v, QueryMode::first);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->counts.evaluated_points, 1);
  EXPECT_DOUBLE_EQ(m->occlusion_accuracy, 1.0);
  EXPECT_DOUBLE_EQ(m->pts_within[1], 0.0);
  EXPECT_DOUBLE_EQ(m->pts_within[2], 1.0);
  v.query_frames = {1.5};  // -> 2 as well
  EXPECT_EQ(compute_tapvid_metrics(v, QueryMode::first)->counts.evaluated_points, 1);
  v.query_frames = {0.5};  // -> 0: frames 1..3
  EXPECT_EQ(compute_tapvid_metrics(v, QueryMode::first)->counts.evaluated_points, 3);
}

TEST(TapVidMetrics, RejectsMismatchedArrays) {
  TapVidVideo v = two_track_video();
  v.pred_tracks_xy.pop_back();
  EXPECT_EQ(compute_tapvid_metrics(v, QueryMode::first).status().code(), StatusCode::invalid_argument);
  v = two_track_video();
  v.query_frames[1] = 4.0;
  EXPECT_EQ(compute_tapvid_metrics(v, QueryMode::first).status().code(), StatusCode::invalid_argument);
}

TEST(TapVidMetrics, AverageOverVideosSkipsUndefinedVideos) {
  TapVidMetrics a = *compute_tapvid_metrics(two_track_video(), QueryMode::first);
  TapVidVideo all_occluded = two_track_video();
  all_occluded.gt_occluded.assign(8, 1);
  TapVidMetrics b = *compute_tapvid_metrics(all_occluded, QueryMode::first);
  EXPECT_TRUE(std::isnan(b.average_pts_within));  // nothing visible to score
  EXPECT_DOUBLE_EQ(b.average_jaccard, 0.0);       // 0 true positives over the false positives
  TapVidMetrics mean = average_over_videos({a, b});
  EXPECT_EQ(mean.videos, 2);
  EXPECT_DOUBLE_EQ(mean.average_pts_within, a.average_pts_within);
  EXPECT_DOUBLE_EQ(mean.average_jaccard, a.average_jaccard / 2.0);
  EXPECT_DOUBLE_EQ(mean.occlusion_accuracy, (a.occlusion_accuracy + b.occlusion_accuracy) / 2.0);
  EXPECT_EQ(mean.counts.evaluated_points, 10);
}

// ---- BADJA ---------------------------------------------------------------------------------------------------

BadjaAnnotations small_badja() {
  BadjaAnnotations a;
  a.width = 100;
  a.height = 50;
  a.frames = {
      {0, 10.0, {{1, 10, 10, true}, {2, 20, 20, true}, {3, -1, -1, false}}},
      {4, 5.0, {{1, 14, 10, true}, {2, 20, 20, false}, {3, 30, 30, true}}},
      {9, 2.0, {{1, 14, 12, true}, {2, 25, 20, true}, {3, 30, 30, true}}},
  };
  return a;
}

TEST(BadjaPck, HandComputedCase) {
  const BadjaAnnotations gt = small_badja();
  const std::vector<BadjaQuery> queries = badja_queries(gt);
  ASSERT_EQ(queries.size(), 2u);  // joint 3 is not visible on the first annotated frame
  EXPECT_EQ(queries[0].joint_id, 1);
  EXPECT_EQ(queries[1].query, (Query{0, 20.0, 20.0}));
  // Does not move: frame 4 scores joint 1 only (4 px < 5: correct); frame 9 scores joints 1 (4.5 px) and
  // 2 (5 px), both over its 2 px threshold.
  std::vector<Query> starts;
  for (const BadjaQuery& q : queries) starts.push_back(q.query);
  Expected<PckResult> still = compute_badja_pck(gt, make_stationary_tracks(starts, 0, 10));
  ASSERT_TRUE(still) << still.status().message();
  EXPECT_EQ(still->evaluated, 3);
  EXPECT_EQ(still->correct, 1);
  EXPECT_DOUBLE_EQ(still->pck, 1.0 / 3.0);
  ASSERT_EQ(still->per_frame.size(), 2u);
  EXPECT_EQ(still->per_frame[0].frame, 4);
  EXPECT_EQ(still->per_frame[1].evaluated, 2);
  // Per joint: joint 1 is correct on frame 4 (4 px), missed on frame 9 (4.47 px); joint 2 only scores on frame
  // 9 (5 px, missed).
  ASSERT_EQ(still->per_joint.size(), 2u);
  const PckJoint& first = still->per_joint[0];
  EXPECT_EQ(first.joint_id, 1);
  EXPECT_EQ(first.evaluated, 2);
  EXPECT_EQ(first.correct, 1);
  EXPECT_NEAR(first.mean_error_px, (4.0 + std::hypot(4.0, 2.0)) / 2.0, 1e-9);
  EXPECT_EQ(first.first_miss_frame, 9);
  const PckJoint& second = still->per_joint[1];
  EXPECT_EQ(second.joint_id, 2);
  EXPECT_EQ(second.evaluated, 1);
  EXPECT_EQ(second.correct, 0);
  EXPECT_NEAR(second.mean_error_px, 5.0, 1e-9);
  EXPECT_EQ(second.first_miss_frame, 9);
  // A tracker that follows joint 1 exactly never misses it.
  TrackSet following = make_stationary_tracks(starts, 0, 10);
  for (int64_t f = 4; f < 10; ++f) {
    TrackPoint& p = following.tracks[0].points[static_cast<size_t>(f)];
    p.x_px = 14.0;
    p.y_px = f < 9 ? 10.0 : 12.0;
  }
  Expected<PckResult> followed = compute_badja_pck(gt, following);
  ASSERT_TRUE(followed);
  EXPECT_EQ(followed->per_joint[0].first_miss_frame, -1);
  EXPECT_DOUBLE_EQ(followed->per_joint[0].mean_error_px, 0.0);

  TrackSet short_tracks = make_stationary_tracks(starts, 0, 5);  // ends before frame 9
  EXPECT_EQ(compute_badja_pck(gt, short_tracks).status().code(), StatusCode::invalid_argument);
  starts.pop_back();
  EXPECT_EQ(compute_badja_pck(gt, make_stationary_tracks(starts, 0, 10)).status().code(), StatusCode::invalid_argument);
}

// Raw rows of the derived CSV, read independently of the loader.
struct CsvRow {
  int64_t frame;
  int joint;
  double x, y;
  bool visible;
  double threshold;
};
std::vector<CsvRow> read_rows(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<CsvRow> rows;
  while (std::getline(in, line)) {
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream fields(line);
    CsvRow r{};
    int visible = 0;
    fields >> r.frame >> r.joint >> r.x >> r.y >> visible >> r.threshold;
    r.visible = visible == 1;
    rows.push_back(r);
  }
  return rows;
}

TEST(BadjaPck, RealAnnotationsPerfectAndOffsetTracks) {
  const std::filesystem::path csv = kShared / "testdata/derived_badja_horsejump-high_854x480.csv";
  Expected<BadjaAnnotations> gt = load_badja_csv(csv);
  ASSERT_TRUE(gt) << gt.status().message();
  EXPECT_EQ(gt->width, 854);
  EXPECT_EQ(gt->height, 480);
  const std::vector<CsvRow> rows = read_rows(csv);
  std::set<int64_t> frames;
  std::set<int> started;
  for (const CsvRow& r : rows) {
    frames.insert(r.frame);
    if (r.frame == 0 && r.visible) started.insert(r.joint);
  }
  ASSERT_EQ(gt->frames.size(), frames.size());
  EXPECT_EQ(gt->frames.front().frame, 0);
  EXPECT_EQ(gt->frames.back().frame, 49);
  const std::vector<BadjaQuery> queries = badja_queries(*gt);
  ASSERT_EQ(queries.size(), started.size());
  int64_t expected_evaluated = 0;
  for (const CsvRow& r : rows) expected_evaluated += (r.frame > 0 && r.visible && started.count(r.joint)) ? 1 : 0;

  // Tracks that hit the ground truth, displaced by a fraction of each frame's threshold.
  auto displaced_tracks = [&](double fraction) {
    std::vector<Query> starts;
    for (const BadjaQuery& q : queries) starts.push_back(q.query);
    TrackSet set = make_stationary_tracks(starts, 0, 50);
    for (const CsvRow& r : rows) {
      if (!r.visible || !started.count(r.joint)) continue;
      const size_t q = static_cast<size_t>(std::distance(started.begin(), started.find(r.joint)));
      TrackPoint& p = set.tracks[q].points[static_cast<size_t>(r.frame)];
      p.x_px = static_cast<float>(r.x + fraction * r.threshold * 0.6);
      p.y_px = static_cast<float>(r.y + fraction * r.threshold * 0.8);
    }
    return set;
  };
  Expected<PckResult> perfect = compute_badja_pck(*gt, displaced_tracks(0.0));
  ASSERT_TRUE(perfect) << perfect.status().message();
  EXPECT_EQ(perfect->evaluated, expected_evaluated);
  EXPECT_DOUBLE_EQ(perfect->pck, 1.0);
  EXPECT_DOUBLE_EQ(compute_badja_pck(*gt, displaced_tracks(0.98))->pck, 1.0);
  EXPECT_DOUBLE_EQ(compute_badja_pck(*gt, displaced_tracks(1.02))->pck, 0.0);
}

TEST(BadjaPck, JsonMatchesTheDerivedCsv) {
  Expected<BadjaAnnotations> csv = load_badja_csv(kShared / "testdata/derived_badja_horsejump-high_854x480.csv");
  Expected<BadjaAnnotations> json = load_badja_json(kShared / "testdata/badja_horsejump-high.json");
  ASSERT_TRUE(csv && json) << json.status().message();
  const BadjaAnnotations scaled = json->scaled_to(854, 480);
  ASSERT_EQ(scaled.frames.size(), csv->frames.size());
  int compared = 0;
  for (size_t f = 0; f < csv->frames.size(); ++f) {
    EXPECT_EQ(scaled.frames[f].frame, csv->frames[f].frame);
    EXPECT_TRUE(std::isnan(scaled.frames[f].pck_threshold_px));
    for (const BadjaJoint& joint : csv->frames[f].joints) {
      const BadjaJoint& other = scaled.frames[f].joints.at(static_cast<size_t>(joint.joint_id));
      EXPECT_EQ(other.visible, joint.visible) << "frame " << csv->frames[f].frame << " joint " << joint.joint_id;
      if (!joint.visible) continue;
      EXPECT_NEAR(other.x_px, joint.x_px, 0.006);
      EXPECT_NEAR(other.y_px, joint.y_px, 0.006);
      ++compared;
    }
  }
  EXPECT_EQ(compared, 178);  // SOURCES.md: 178 visible points
  EXPECT_EQ(badja_queries(scaled).size(), badja_queries(*csv).size());
}

TEST(BadjaPck, BadFilesGiveClearErrors) {
  const std::filesystem::path dir = std::filesystem::path(TRACKSCOPE_TEST_OUTPUT_DIR) / "badja";
  std::filesystem::create_directories(dir);
  EXPECT_EQ(load_badja_csv(dir / "missing.csv").status().code(), StatusCode::not_found);
  std::ofstream(dir / "bad_header.csv") << "a,b,c\n1,2,3\n";
  EXPECT_EQ(load_badja_csv(dir / "bad_header.csv").status().code(), StatusCode::corrupt_data);
  std::ofstream(dir / "bad_row.csv") << "frame,joint_id,x_10x10,y_10x10,visible,pck\n0,1,2.0,3.0,1,4\n0,2,x,3,1,4\n";
  Expected<BadjaAnnotations> bad_row = load_badja_csv(dir / "bad_row.csv");
  EXPECT_EQ(bad_row.status().code(), StatusCode::corrupt_data);
  EXPECT_NE(bad_row.status().message().find("line 3"), std::string::npos) << bad_row.status().message();
  std::ofstream(dir / "truncated.json") << R"([{"image_path": "a/00001.jpg", "joints": [[1, 2)";
  EXPECT_EQ(load_badja_json(dir / "truncated.json").status().code(), StatusCode::corrupt_data);
  std::ofstream(dir / "wrong.json") << R"([{"image_path": "a/00001.jpg", "joints": [[1, 2]], "visibility": []}])";
  EXPECT_EQ(load_badja_json(dir / "wrong.json").status().code(), StatusCode::corrupt_data);
}

// ---- Calibration ---------------------------------------------------------------------------------------------

TEST(Calibration, ExpectedCalibrationErrorOfKnownBins) {
  CalibrationAccumulator c(10);
  // Bin [0.1, 0.2): 10 predictions of 0.15, 1 positive (observed 0.1, gap 0.05).
  for (int i = 0; i < 10; ++i) c.add(0.15, i == 0);
  // Bin [0.9, 1]: 29 predictions of 0.95 (15 positive) and one of 1.0 (negative): observed 0.5.
  for (int i = 0; i < 29; ++i) c.add(0.95, i < 15);
  c.add(1.0, false);
  c.add(std::nan(""), true);  // ignored
  const Calibration r = c.result();
  ASSERT_EQ(r.bins.size(), 10u);
  EXPECT_EQ(r.count, 40);
  EXPECT_EQ(r.bins[1].count, 10);
  EXPECT_DOUBLE_EQ(r.bins[1].observed_frequency, 0.1);
  EXPECT_EQ(r.bins[9].count, 30);
  EXPECT_NEAR(r.bins[9].mean_predicted, (29 * 0.95 + 1.0) / 30.0, 1e-12);
  EXPECT_DOUBLE_EQ(r.bins[9].observed_frequency, 0.5);
  EXPECT_TRUE(std::isnan(r.bins[5].mean_predicted));
  const double gap9 = (29 * 0.95 + 1.0) / 30.0 - 0.5;
  EXPECT_NEAR(r.expected_calibration_error, 10.0 / 40.0 * 0.05 + 30.0 / 40.0 * gap9, 1e-12);
  EXPECT_NEAR(r.max_calibration_error, gap9, 1e-12);
  EXPECT_NEAR(r.base_rate, 16.0 / 40.0, 1e-12);
  // Brier: 9 x 0.15^2 + 0.85^2 + 15 x 0.05^2 + 14 x 0.95^2 + 1
  EXPECT_NEAR(r.brier_score, (9 * 0.0225 + 0.7225 + 15 * 0.0025 + 14 * 0.9025 + 1.0) / 40.0, 1e-12);
  // A perfectly calibrated predictor has ECE 0; an empty one NaN; merging adds the pairs.
  CalibrationAccumulator perfect(4);
  for (int i = 0; i < 8; ++i) perfect.add(0.625, i < 5);
  EXPECT_NEAR(perfect.result().expected_calibration_error, 0.0, 1e-12);
  EXPECT_TRUE(std::isnan(CalibrationAccumulator(4).result().expected_calibration_error));
  CalibrationAccumulator merged(10);
  ASSERT_TRUE(merged.merge(c).ok());
  ASSERT_TRUE(merged.merge(c).ok());
  EXPECT_EQ(merged.result().count, 80);
  EXPECT_NEAR(merged.result().expected_calibration_error, r.expected_calibration_error, 1e-12);
  EXPECT_EQ(merged.merge(perfect).code(), StatusCode::invalid_argument);
}

TEST(Calibration, ThresholdWhereTheMonotoneCurveReachesTheTarget) {
  // Observed frequency per bin (100 predictions each at the bin centre): 0.1, 0.3, 0.2 (a dip), 0.6, 0.9.
  CalibrationAccumulator c(5);
  const std::array<double, 5> observed = {0.1, 0.3, 0.2, 0.6, 0.9};
  for (int b = 0; b < 5; ++b) {
    for (int i = 0; i < 100; ++i) c.add(0.1 + 0.2 * b, i < static_cast<int>(observed[static_cast<size_t>(b)] * 100));
  }
  // Pooled: 0.1, 0.25, 0.25, 0.6, 0.9 -> 0.5 is crossed between 0.5 (0.25) and 0.7 (0.6): 0.5 + 0.2 * 0.25 / 0.35.
  const std::optional<double> t = calibrated_threshold(c.result(), 0.5);
  ASSERT_TRUE(t);
  EXPECT_NEAR(*t, 0.5 + 0.2 * 0.25 / 0.35, 1e-9);
  EXPECT_NEAR(*calibrated_threshold(c.result(), 0.05), 0.1, 1e-12);  // every bin reaches it: the lowest
  EXPECT_FALSE(calibrated_threshold(c.result(), 0.95));              // none does
  EXPECT_FALSE(calibrated_threshold(c.result(), 0.5, 101));          // every bin too small
  EXPECT_FALSE(calibrated_threshold(CalibrationAccumulator(5).result(), 0.5));
}

// ---- Track change ----------------------------------------------------------------------------------------------

TEST(TrackChange, DistancesOverAllAndVisiblePairsWithoutTheQueryFrame) {
  EXPECT_DOUBLE_EQ(percentile({1.0, 2.0, 3.0, 4.0}, 50.0), 2.5);
  EXPECT_DOUBLE_EQ(percentile({5.0, 1.0, 3.0}, 100.0), 5.0);
  EXPECT_NEAR(percentile({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99.0), 9.9, 1e-12);  // numpy.percentile
  EXPECT_TRUE(std::isnan(percentile({}, 50.0)));

  const std::vector<Query> queries = {{1, 10.0, 10.0}, {0, 50.0, 20.0}};
  const TrackSet reference = make_stationary_tracks(queries, 0, 4);
  TrackSet other = reference;
  // Track 0: 3 px off on frames 0, 2, 3 (frame 1 is its query frame: not compared even if it differed).
  for (int64_t t : {0, 1, 2, 3}) other.tracks[0].at(t).x_px += 3.0f;
  // Track 1: 4 px off on frame 3, where the reference is occluded, and its visibility flips there.
  other.tracks[1].at(3).y_px += 4.0f;
  TrackSet occluded_reference = reference;
  occluded_reference.tracks[1].at(3).visible = false;
  Expected<TrackChange> change = compute_track_change(occluded_reference, other);
  ASSERT_TRUE(change) << change.status().message();
  EXPECT_EQ(change->pairs, 6);          // 3 + 3 (query frames left out)
  EXPECT_EQ(change->visible_pairs, 5);  // track 1 frame 3 is occluded in the reference
  EXPECT_NEAR(change->mean_px, (3.0 * 3 + 4.0) / 6.0, 1e-6);
  EXPECT_NEAR(change->visible_mean_px, 9.0 / 5.0, 1e-6);
  EXPECT_NEAR(change->max_px, 4.0, 1e-6);
  EXPECT_NEAR(change->visible_max_px, 3.0, 1e-6);
  EXPECT_NEAR(change->p99_px, percentile({3, 3, 3, 0, 0, 4}, 99.0), 1e-6);
  EXPECT_NEAR(change->visibility_agreement, 5.0 / 6.0, 1e-12);
  // Identical sets: no change at all.
  Expected<TrackChange> none = compute_track_change(reference, reference);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->max_px, 0.0);
  EXPECT_EQ(none->visibility_agreement, 1.0);
  // Sets of other queries cannot be compared.
  EXPECT_EQ(compute_track_change(reference, make_stationary_tracks({queries[0]}, 0, 4)).status().code(),
            StatusCode::invalid_argument);
  EXPECT_EQ(compute_track_change(reference, make_stationary_tracks({queries[1], queries[0]}, 0, 4)).status().code(),
            StatusCode::invalid_argument);
}

}  // namespace
}  // namespace trackscope::core
