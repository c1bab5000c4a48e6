// Track edits (corrections, re-track ranges, merge policies, deleting a future or past, hand-marked occlusion),
// the undo history over them, and the quality cues.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/io/sha256.h"
#include "core/tracking/annotation_history.h"
#include "core/tracking/track_edit.h"
#include "core/tracking/track_quality.h"

namespace trackscope::core {
namespace {

// A straight track: frame f at (10 + 2 f, 20 + f), visible, p = 0.1 / 0.05.
Track line_track(int64_t first, int64_t end, double offset_px = 0.0, int64_t query_frame = -1) {
  Track track;
  track.first_frame = first;
  for (int64_t f = first; f < end; ++f) {
    track.points.push_back(
        {static_cast<float>(10 + 2 * f + offset_px), static_cast<float>(20 + f + offset_px), true, 0.1f, 0.05f});
  }
  const int64_t q = query_frame >= 0 ? query_frame : first;
  track.query = {q, 10 + 2.0 * q + offset_px, 20 + 1.0 * q + offset_px};
  return track;
}

PointTrack point_track(Track track, std::vector<int64_t> keyframes = {}) {
  return PointTrack{std::move(track), {"model A", "cpu", "fp32"}, std::move(keyframes)};
}

TEST(TrackEdit, RetrackRangesFollowTheDirection) {
  EXPECT_EQ(retrack_range(RetrackDirection::forward, 20, 48), (FrameRange{20, 48}));
  EXPECT_EQ(retrack_range(RetrackDirection::backward, 20, 48), (FrameRange{0, 21}));
  EXPECT_EQ(retrack_range(RetrackDirection::both, 20, 48), (FrameRange{0, 48}));
  EXPECT_THROW((void)retrack_range(RetrackDirection::forward, 48, 48), InvariantError);
}

TEST(TrackEdit, CorrectionMakesAKeyframeAndMovesTheQueryOnItsFrame) {
  const PointTrack original = point_track(line_track(0, 48, 0.0, 5));
  const PointTrack corrected = with_correction(original, 20, 100.25, 64.5);
  EXPECT_EQ(corrected.keyframes, (std::vector<int64_t>{20}));
  EXPECT_EQ(corrected.track.at(20), (TrackPoint{100.25f, 64.5f, true, 0.0f, 0.0f}));
  EXPECT_EQ(corrected.track.at(19), original.track.at(19));
  EXPECT_EQ(keyframe_query(corrected, 20), (Query{20, 100.25, 64.5}));
  EXPECT_TRUE(corrected.is_keyframe(5));  // the query frame
  EXPECT_FALSE(corrected.is_keyframe(6));

  const PointTrack moved_query = with_correction(corrected, 5, 1.5, 2.5);
  EXPECT_EQ(moved_query.track.query, (Query{5, 1.5, 2.5}));
  EXPECT_EQ(moved_query.keyframes, (std::vector<int64_t>{20}));  // the query frame is not listed
}

TEST(TrackEdit, OverwriteReplacesFromTheKeyframeOnButKeepsEveryKeyframe) {
  PointTrack existing = with_correction(point_track(line_track(0, 48)), 20, 100.0, 60.0);
  existing = with_correction(existing, 30, 7.0, 8.0);
  // The tracker's answer from keyframe 20 forward: a line offset by 50 px.
  Track retracked = line_track(20, 48, 50.0, 20);
  const PointTrack merged = merge_retracked(existing, retracked, MergePolicy::overwrite, {"model B", "cuda:0", "bf16"});
  ASSERT_EQ(merged.track.first_frame, 0);
  ASSERT_EQ(merged.track.points.size(), 48u);
  for (int64_t f = 0; f < 20; ++f) EXPECT_EQ(merged.track.at(f), existing.track.at(f)) << f;
  EXPECT_EQ(merged.track.at(20), existing.track.at(20));  // the keyframe itself
  EXPECT_EQ(merged.track.at(30), existing.track.at(30));  // a later keyframe survives the overwrite
  for (int64_t f : {21, 29, 31, 47}) EXPECT_EQ(merged.track.at(f), retracked.at(f)) << f;
  EXPECT_EQ(merged.keyframes, existing.keyframes);
  EXPECT_EQ(merged.provenance.model, "model B");
  EXPECT_EQ(merged.track.query, existing.track.query);
}

TEST(TrackEdit, FillMissingOnlyAddsUncoveredFramesAndBridgesGaps) {
  // The track lost its past (frames < 20); re-tracking backward from keyframe 25 fills it back in.
  PointTrack existing = with_correction(point_track(line_track(20, 48, 0.0, 20)), 25, 90.0, 50.0);
  const Track retracked = line_track(0, 26, 30.0, 25);
  const PointTrack merged = merge_retracked(existing, retracked, MergePolicy::fill_missing, {});
  ASSERT_EQ(merged.track.first_frame, 0);
  ASSERT_EQ(merged.track.end_frame(), 48);
  for (int64_t f = 0; f < 20; ++f) EXPECT_EQ(merged.track.at(f), retracked.at(f)) << f;
  for (int64_t f = 20; f < 48; ++f) EXPECT_EQ(merged.track.at(f), existing.track.at(f)) << f;

  // Ranges that do not touch: the frames between become occluded, interpolated estimates.
  const PointTrack late = point_track(line_track(30, 40, 0.0, 30));
  const Track early = line_track(0, 10, 0.0, 0);
  const PointTrack bridged = merge_retracked(late, early, MergePolicy::overwrite, {});
  ASSERT_EQ(bridged.track.first_frame, 0);
  ASSERT_EQ(bridged.track.end_frame(), 40);
  const TrackPoint& middle = bridged.track.at(20);
  EXPECT_FALSE(middle.visible);
  EXPECT_EQ(middle.p_occluded, 1.0f);
  // Halfway between frame 9 (28, 29) and frame 30 (70, 50) is 11/21 of the way.
  EXPECT_NEAR(middle.x_px, 28.0 + (70.0 - 28.0) * 11.0 / 21.0, 1e-4);
}

TEST(TrackEdit, DeleteFutureOrPastDropsFramesAndTheirKeyframes) {
  PointTrack track = with_correction(with_correction(point_track(line_track(0, 48)), 10, 1, 1), 30, 2, 2);
  const std::optional<PointTrack> past_only = without_frames_after(track, 20);
  ASSERT_TRUE(past_only);
  EXPECT_EQ(past_only->track.end_frame(), 21);
  EXPECT_EQ(past_only->keyframes, (std::vector<int64_t>{10}));
  const std::optional<PointTrack> future_only = without_frames_before(track, 20);
  ASSERT_TRUE(future_only);
  EXPECT_EQ(future_only->track.first_frame, 20);
  EXPECT_EQ(future_only->track.at(20), track.track.at(20));
  EXPECT_EQ(future_only->keyframes, (std::vector<int64_t>{30}));
  EXPECT_FALSE(without_frames_before(track, 48));
  EXPECT_FALSE(without_frames_after(*future_only, 19));
}

TEST(TrackEdit, HandMarkedVisibilityIsAKeyframe) {
  const PointTrack track = point_track(line_track(0, 48));
  const std::optional<PointTrack> occluded = with_visibility(track, 12, false);
  ASSERT_TRUE(occluded);
  EXPECT_FALSE(occluded->track.at(12).visible);
  EXPECT_EQ(occluded->track.at(12).p_occluded, 1.0f);
  EXPECT_EQ(occluded->track.at(12).x_px, track.track.at(12).x_px);
  EXPECT_EQ(occluded->keyframes, (std::vector<int64_t>{12}));
  EXPECT_TRUE(with_visibility(*occluded, 12, true)->track.at(12).visible);
  EXPECT_FALSE(with_visibility(track, 60, true));
}

TEST(AnnotationHistory, UndoAndRedoRestoreEveryKindOfEditExactly) {
  Annotation annotation;
  AnnotationHistory history(annotation);
  const PointId id = annotation.next_id();
  history.apply("Add", {id}, [&](Annotation& a) { a.add({0, 10.0, 20.0}); });
  history.apply("Track", {id}, [&](Annotation& a) { (void)a.set_track(id, point_track(line_track(0, 48))); });
  const PointTrack tracked = *annotation.track(id);
  history.apply("Correct", {id},
                [&](Annotation& a) { (void)a.set_track(id, with_correction(*a.track(id), 20, 99.0, 77.0)); });
  const PointTrack corrected = *annotation.track(id);
  history.apply("Delete future", {id},
                [&](Annotation& a) { (void)a.set_track(id, *without_frames_after(*a.track(id), 25)); });
  EXPECT_EQ(annotation.track(id)->track.end_frame(), 26);
  EXPECT_EQ(history.undo_label(), "Delete future");

  ASSERT_TRUE(history.undo());
  EXPECT_EQ(*annotation.track(id), corrected);
  ASSERT_TRUE(history.undo());
  EXPECT_EQ(*annotation.track(id), tracked);
  ASSERT_TRUE(history.redo());
  EXPECT_EQ(*annotation.track(id), corrected);
  history.apply("Remove", {id}, [&](Annotation& a) { (void)a.remove(id); });
  EXPECT_FALSE(history.can_redo());  // a new step drops the redo steps
  EXPECT_EQ(annotation.find(id), nullptr);
  ASSERT_TRUE(history.undo());
  ASSERT_NE(annotation.find(id), nullptr);
  EXPECT_EQ(*annotation.track(id), corrected);
  ASSERT_TRUE(history.undo());
  ASSERT_TRUE(history.undo());
  ASSERT_TRUE(history.undo());
  EXPECT_TRUE(annotation.empty());
  EXPECT_FALSE(history.undo());
}

TEST(AnnotationHistory, MergedStepsAndTheCleanState) {
  Annotation annotation;
  AnnotationHistory history(annotation);
  const PointId id = annotation.add({0, 1.0, 1.0});
  history.mark_clean();
  EXPECT_TRUE(history.is_clean());
  for (int i = 1; i <= 5; ++i) {
    history.apply(
        "Move", {id},
        [&](Annotation& a) {
          (void)a.move(id, {0, 1.0 + i, 1.0});
        },
        "drag-1");
  }
  EXPECT_EQ(history.undo_count(), 1u);  // one drag, one step
  EXPECT_FALSE(history.is_clean());
  history.close_merge();
  history.apply(
      "Move", {id},
      [&](Annotation& a) {
        (void)a.move(id, {0, 50.0, 1.0});
      },
      "drag-1");
  EXPECT_EQ(history.undo_count(), 2u);
  ASSERT_TRUE(history.undo());
  EXPECT_EQ(annotation.find(id)->query.x_px, 6.0);
  ASSERT_TRUE(history.undo());
  EXPECT_EQ(annotation.find(id)->query.x_px, 1.0);
  EXPECT_TRUE(history.is_clean());
  // A step that changes nothing is not recorded.
  EXPECT_FALSE(history.apply("Nothing", {id}, [](Annotation&) {}));
  EXPECT_EQ(history.undo_count(), 0u);
}

TEST(AnnotationHistory, OldestStepsAreDroppedBeyondTheLimit) {
  Annotation annotation;
  HistoryOptions options;
  options.max_steps = 3;
  AnnotationHistory history(annotation, options);
  const PointId id = annotation.add({0, 0.0, 0.0});
  for (int i = 1; i <= 5; ++i) history.apply("Move", {id}, [&](Annotation& a) { (void)a.move(id, {0, 1.0 * i, 0.0}); });
  EXPECT_EQ(history.undo_count(), 3u);
  while (history.undo()) {}
  EXPECT_EQ(annotation.find(id)->query.x_px, 2.0);
  EXPECT_FALSE(history.is_clean());  // the clean state (x = 0) was dropped
}

TEST(TrackQuality, VelocityOutliersUncertaintyAndConsistency) {
  PointTrack track = point_track(line_track(0, 48));
  track.track.at(30).x_px += 25.0f;  // a one-frame glitch
  track.track.at(10).p_far = 0.4f;   // uncertain but visible
  QualityOptions options;
  TrackQuality quality = assess_track(track, options);
  EXPECT_TRUE(quality.flags_at(30) & quality_velocity_outlier);
  EXPECT_TRUE(quality.flags_at(29) & quality_velocity_outlier);
  EXPECT_TRUE(quality.flags_at(31) & quality_velocity_outlier);
  EXPECT_FALSE(quality.flags_at(20) & quality_velocity_outlier);
  EXPECT_EQ(quality.flags_at(10), quality_uncertain);
  EXPECT_EQ(next_flagged_frame(quality, 10), 29);
  EXPECT_EQ(next_flagged_frame(quality, 29, true), 10);
  EXPECT_EQ(next_flagged_frame(quality, 31), std::nullopt);

  // A keyframe is the user's word: never flagged.
  const PointTrack corrected = with_correction(track, 30, track.track.at(30).x_px, track.track.at(30).y_px);
  EXPECT_EQ(assess_track(corrected, options).flags_at(30), 0);

  // Forward-backward: the anchor is the visible frame farthest from the query; a reverse track that drifts by
  // 1 px per frame before frame 40 is inconsistent once the drift exceeds the threshold.
  const std::optional<Query> anchor = consistency_anchor(track.track);
  ASSERT_TRUE(anchor);
  EXPECT_EQ(anchor->frame, 47);
  Track reverse = track.track;
  for (int64_t f = 0; f < 40; ++f) reverse.at(f).y_px += static_cast<float>(40 - f);
  const std::vector<float> errors = consistency_error(track.track, reverse);
  EXPECT_NEAR(errors[35], 5.0f, 1e-4);
  EXPECT_EQ(errors[45], 0.0f);
  const TrackQuality checked = assess_track(track, options, errors);
  EXPECT_TRUE(checked.flags_at(35) & quality_inconsistent);
  EXPECT_FALSE(checked.flags_at(37) & quality_inconsistent);  // 3 px: under the 4 px threshold
  EXPECT_EQ(next_keyframe(corrected, 0), 30);
  EXPECT_EQ(next_keyframe(corrected, 30, true), 0);  // the query frame
}

TEST(TrackQuality, CalibratedThresholdsComeFromTheModelManifest) {
  const std::filesystem::path dir = std::filesystem::path(TRACKSCOPE_TEST_OUTPUT_DIR) / "quality_manifest";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; };
  const std::string calibrated = R"({"format": "trackscope.model-manifest", "sha256": "abc",
      "calibration": {"suspicious_thresholds": {"p_far": 0.6, "p_occluded": 0.3}}})";
  write("model.json", calibrated);
  QualityOptions fallback;
  fallback.outlier_factor = 5.0;
  CalibratedQualityOptions found = quality_options_for_weights(dir / "model.safetensors", "abc", fallback);
  EXPECT_TRUE(found.calibrated);
  EXPECT_FLOAT_EQ(found.options.uncertain_p_far, 0.6f);
  EXPECT_FLOAT_EQ(found.options.uncertain_p_occluded, 0.3f);
  EXPECT_EQ(found.options.outlier_factor, 5.0);  // the rest from the fallback
  EXPECT_EQ(found.source, (dir / "model.json").string());
  // A shard set's first file finds stem.json; an unknown hash is accepted (nothing to compare).
  EXPECT_TRUE(quality_options_for_weights(dir / "model-0.safetensors", "", fallback).calibrated);
  // Other weights under the same name, no manifest, no calibration, bad values: the fallback.
  CalibratedQualityOptions other = quality_options_for_weights(dir / "model.safetensors", "def", fallback);
  EXPECT_FALSE(other.calibrated);
  EXPECT_FLOAT_EQ(other.options.uncertain_p_far, fallback.uncertain_p_far);
  EXPECT_NE(other.source.find("other weights"), std::string::npos);
  EXPECT_FALSE(quality_options_for_weights(dir / "missing.safetensors", "", fallback).calibrated);
  write("plain.json", R"({"format": "trackscope.model-manifest", "sha256": "abc"})");
  EXPECT_FALSE(quality_options_for_weights(dir / "plain.safetensors", "abc", fallback).calibrated);
  write("bad.json",
        R"({"format": "trackscope.model-manifest", "calibration": {"suspicious_thresholds": {"p_far": 7}}})");
  EXPECT_FALSE(quality_options_for_weights(dir / "bad.safetensors", "", fallback).calibrated);
  write("broken.json", "{not json");
  EXPECT_FALSE(quality_options_for_weights(dir / "broken.safetensors", "", fallback).calibrated);

  // The calibrated p_occluded threshold flags a visible estimate that is probably hidden.
  PointTrack track = point_track(line_track(0, 12));
  track.track.at(5).p_occluded = 0.35f;
  EXPECT_EQ(assess_track(track, fallback).flags_at(5), 0);
  EXPECT_EQ(assess_track(track, found.options).flags_at(5), quality_uncertain);
  // And the calibrated p_far threshold (0.6) no longer flags 0.4, which the default 0.35 flags.
  track.track.at(8).p_far = 0.4f;
  EXPECT_EQ(assess_track(track, fallback).flags_at(8), quality_uncertain);
  EXPECT_EQ(assess_track(track, found.options).flags_at(8), 0);
}

// The bundled default model's manifest matches its weights and carries thresholds the GUI will use.
TEST(TrackQuality, BundledManifestCalibratesTheDefaultModel) {
  const std::filesystem::path weights =
      std::filesystem::path(TRACKSCOPE_SOURCE_DIR) / "resources/models/locotrack_small_default.safetensors";
  Expected<std::string> sha256 = io::sha256_file_hex(weights);
  ASSERT_TRUE(sha256) << sha256.status().message();
  const CalibratedQualityOptions options = quality_options_for_weights(weights, *sha256);
  EXPECT_TRUE(options.calibrated) << options.source;
  EXPECT_GT(options.options.uncertain_p_far, 0.0f);
  EXPECT_LT(options.options.uncertain_p_far, 1.0f);
  EXPECT_LT(options.options.uncertain_p_occluded, 1.0f);
}

}  // namespace
}  // namespace trackscope::core
