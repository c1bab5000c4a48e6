#pragma once
// Stability of a tracker: how far its tracks move when the input or the arithmetic changes by an amount no user
// would notice. The same queries are tracked again (a) after a uniform grey-level shift of the frames (+-2 levels
// by default), (b) after a JPEG round trip of every frame (quality 90, libjpeg with PIL's settings), (c) at other
// precisions of the same model (fp16, bf16), and compared with the reference tracks (the model on the original
// frames at the evaluation's precision, fp32 by default) by compute_track_change (metrics.h): mean, 99th
// percentile and maximum distance over all (track, frame) pairs and over the pairs the reference calls visible,
// and the share of pairs whose visibility flag is unchanged.
//
//   StabilityOptions options;                                    // +-2 levels, JPEG q90, fp16 and bf16
//   Expected<StabilityEvaluation> s = evaluate_stability(factory, tracker_options, *tracker, video, request,
//                                                        reference_tracks, options, observer);
//   for (const StabilityRow& row : s->rows) row.name, row.change->visible_mean_px, row.skipped ...
//
// A precision the device cannot run (fp16 on the CPU with LibTorch 1.13) is a row with `skipped` set to the
// factory's reason, not an error. Distances are in the video's pixels. Threads: blocks and calls the trackers
// and the observer on the calling thread.

#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tracking/evaluation_perturbation.h"
#include "core/tracking/metrics.h"
#include "core/tracking/point_tracker.h"
#include "core/video/video_source.h"

namespace trackscope::core {

struct StabilityOptions {
  std::vector<int> brightness_levels = {+2, -2};                           // one row per shift (grey levels)
  std::vector<int> jpeg_qualities = {90};                                  // one row per quality
  std::vector<Precision> precisions = {Precision::fp16, Precision::bf16};  // the same model at these precisions

  /// invalid_argument for a shift of 0 or outside [-255, 255], a quality outside [1, 100], or nothing to do.
  Status check() const;
};

struct StabilityRow {
  std::string name;                   // "brightness +2", "jpeg q90", "fp16"
  std::string kind;                   // "input" or "precision"
  std::optional<TrackChange> change;  // nullopt when skipped
  std::string skipped;                // why the row was not run (empty when it ran)
  double track_seconds = 0.0;
};

struct StabilityEvaluation {
  std::string reference;  // "fp32 on the original frames"
  int64_t tracks = 0;
  int64_t first_frame = 0;
  int64_t end_frame = 0;
  std::vector<StabilityRow> rows;
};

/// Tracks `request` again under every perturbation of `options` and compares with `reference` (the tracks
/// `reference_tracker` gave for `request` on `video`). Input rows use `reference_tracker`; precision rows create
/// a tracker from `factory` with `tracker_options` at that precision (rows for the reference's own precision are
/// left out). invalid_argument for bad options or a reference that does not answer the request; tracker errors
/// other than an unsupported precision come back unchanged (cancelled included).
Expected<StabilityEvaluation> evaluate_stability(TrackerFactory& factory, const TrackerOptions& tracker_options,
                                                 PointTracker& reference_tracker, VideoSource& video,
                                                 const TrackRequest& request, const TrackSet& reference,
                                                 const StabilityOptions& options, TrackObserver& observer,
                                                 std::stop_token stop = {});

}  // namespace trackscope::core
