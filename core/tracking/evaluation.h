#pragma once
// Tracker evaluation: BADJA PCK on a real clip with sparse joint annotations, and TAP-Vid metrics over clips
// with dense ground truth (the seeded synthetic validation set), each next to the "point does not move"
// baseline scored by the same code (metrics.h). Torch-free: any PointTracker does the tracking, so tests use
// fakes and `trackscope-cli eval` the LocoTrack tracker.
//
//   Expected<BadjaAnnotations> gt = load_badja_csv(csv);                       // or load_badja_json + masks:
//   TRACKSCOPE_RETURN_IF_ERROR(set_badja_thresholds_from_masks(*gt, masks_dir));  // (JSON has no thresholds)
//   Expected<BadjaEvaluation> badja = evaluate_badja(tracker, video, *gt, {}, observer);
//   badja->pck.pck, badja->stationary.pck
//
//   std::vector<TapVidClip> clips = ...;                                        // frames + ground truth
//   Expected<TapVidEvaluation> tapvid = evaluate_tapvid(tracker, clips, observer);
//   tapvid->model.average_jaccard, tapvid->stationary.average_jaccard
//
// Coordinates: raster pixels (pixel (i, j) covers [j, j+1) x [i, i+1)). BADJA annotations are mapped to the
// video's size by plain scaling; TAP-Vid positions are scaled to 256x256 before scoring (the thresholds
// {1, 2, 4, 8, 16} px of the benchmark are defined there).
// Threads: the functions block and call the tracker (and the observer) on the calling thread; the tracker and
// the video are used by that thread only for the duration of the call.

#include <cstdint>
#include <filesystem>
#include <stop_token>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tracking/metrics.h"
#include "core/tracking/point_tracker.h"
#include "core/tracking/tracks.h"
#include "core/video/video_source.h"

namespace trackscope::core {

// ---- Calibration ---------------------------------------------------------------------------------------------

/// Bins of the reliability diagrams and the error that makes an estimate "far" (the expected-distance head's
/// training target: more than 6 px from the ground truth at 256x256).
inline constexpr int kCalibrationBins = 10;
inline constexpr double kFarThresholdPx256 = 6.0;
/// The observed error rate from which an estimate counts as suspicious: the quality strip's calibrated
/// thresholds are where the reliability curve reaches it (calibrated_threshold in metrics.h).
inline constexpr double kSuspiciousErrorRate = 0.5;

/// Calibration of a tracker's two probabilities against ground truth, over the scored (track, frame) pairs:
/// p_occluded against "occluded in the ground truth" (all pairs), p_far against "farther than
/// kFarThresholdPx256 px (positions scaled to 256x256) from the ground truth" (pairs visible in the ground truth).
struct TrackCalibration {
  CalibrationAccumulator occluded{kCalibrationBins};
  CalibrationAccumulator far{kCalibrationBins};
};

// ---- BADJA ---------------------------------------------------------------------------------------------------

/// Sets each annotated frame's PCK threshold to 0.2 * sqrt(foreground area), the area counted on the mask of
/// that frame in `masks_dir` (an image whose file stem is the frame number, e.g. 00026.png; a pixel is
/// foreground when any channel is non-zero), converted to the annotation's pixels by sqrt(sx * sy) when the
/// masks have another size. not_found names a missing mask; corrupt_data an unreadable one.
Status set_badja_thresholds_from_masks(BadjaAnnotations& annotations, const std::filesystem::path& masks_dir);

/// The annotations of `path` by its name (the rule of core/io/file_names.h): a ".json" file as BADJA JSON
/// (load_badja_json), anything else as the derived CSV (load_badja_csv); then, when `masks_dir` is not empty,
/// thresholds from the masks. The readers' errors unchanged.
Expected<BadjaAnnotations> load_badja_annotations(const std::filesystem::path& path,
                                                  const std::filesystem::path& masks_dir = {});

struct BadjaEvaluationOptions {
  /// Frames [0, end_frame) of the video are tracked; -1 = the whole clip. Annotated frames at or after
  /// end_frame are not scored (a quick check on the first frames of a clip).
  int64_t end_frame = -1;

  Status check() const;
};

struct BadjaEvaluation {
  BadjaAnnotations annotations;     // scaled to the video's size; only the frames inside the tracked range
  std::vector<BadjaQuery> queries;  // one per visible joint of the first annotated frame
  int64_t first_frame = 0;          // tracked range [first_frame, end_frame) of the video
  int64_t end_frame = 0;
  TrackSet tracks;             // the tracker's tracks of `queries`, video pixels
  PckResult pck;               // the tracker
  PckResult stationary;        // "the point does not move": every track stays at its query
  double track_seconds = 0.0;  // wall time of the tracker's track() call
  /// Over the PCK's (frame, joint) pairs: p_far against the annotated visible joints, p_occluded against the
  /// annotated visibility of every started joint (few pairs: 147 on horsejump-high, so coarse).
  TrackCalibration calibration;
};

/// The BADJA protocol (../shared/testdata/SOURCES.md): one query at each visible joint of the first annotated
/// frame, tracked through the clip (frames [0, end)), PCK over every later annotated frame inside the range.
/// `annotations` may be in any pixel size (they are scaled to the video) but need thresholds (CSV, or JSON +
/// set_badja_thresholds_from_masks). invalid_argument: no thresholds, no visible joint on the first frame, no
/// scored frame after it, an annotated frame past the video's end, tracks that do not match the queries.
/// Errors of the tracker (cancelled, out_of_memory, ...) come back unchanged.
Expected<BadjaEvaluation> evaluate_badja(PointTracker& tracker, VideoSource& video, const BadjaAnnotations& annotations,
                                         const BadjaEvaluationOptions& options, TrackObserver& observer,
                                         std::stop_token stop = {});

// ---- TAP-Vid ---------------------------------------------------------------------------------------------------

/// One clip with dense ground truth, in its own pixel coordinates. Arrays are row-major over [track][frame].
/// The protocol is query-first: each query lies on the first frame where its track is visible.
struct TapVidClip {
  std::string name;  // for messages and per-clip results
  int width = 0;     // px
  int height = 0;
  Rational frame_rate{24, 1};
  std::vector<std::vector<uint8_t>> frames_rgb;  // [T] packed RGB24, width * height * 3 bytes each
  std::vector<Query> queries;                    // [N]
  std::vector<float> gt_tracks_xy;               // [N*T*2] (x, y) px, also where occluded
  std::vector<uint8_t> gt_occluded;              // [N*T] 1 = occluded (or outside the image)

  int64_t frame_count() const { return static_cast<int64_t>(frames_rgb.size()); }
  int64_t track_count() const { return static_cast<int64_t>(queries.size()); }
  /// invalid_argument for sizes that do not match, a query outside the clip, or a query that is not its
  /// track's first visible point (query-first).
  Status check() const;
};

/// The TAP-Vid inputs of `clip` with `predicted` as the prediction (one track per query, covering every frame;
/// predicted occluded = !visible), positions scaled to 256x256. invalid_argument when they do not match.
Expected<TapVidVideo> make_tapvid_video(const TapVidClip& clip, const TrackSet& predicted);

/// Adds the (track, frame) pairs the query-first protocol scores (frames after each query) of `predicted`
/// against `clip`'s ground truth to `calibration`. invalid_argument when they do not match.
Status add_tapvid_calibration(const TapVidClip& clip, const TrackSet& predicted, TrackCalibration& calibration);

struct TapVidClipResult {
  std::string name;
  TapVidMetrics model;
  TapVidMetrics stationary;
  double track_seconds = 0.0;
};

struct TapVidEvaluation {
  std::vector<TapVidClipResult> clips;
  TapVidMetrics model;       // average_over_videos of the clips' metrics (query-first)
  TapVidMetrics stationary;  // the same for "the point does not move" (predicted visible at the query)
  double track_seconds = 0.0;
  TrackCalibration calibration;  // over every clip's scored pairs
};

/// Tracks every clip's queries through the whole clip (an in-memory video) and scores them with
/// compute_tapvid_metrics(QueryMode::first). The observer sees the progress over all clips (phase prefixed
/// with "clip k/n"). invalid_argument for an empty list or a bad clip; tracker errors come back unchanged.
Expected<TapVidEvaluation> evaluate_tapvid(PointTracker& tracker, const std::vector<TapVidClip>& clips,
                                           TrackObserver& observer, std::stop_token stop = {});

}  // namespace trackscope::core
