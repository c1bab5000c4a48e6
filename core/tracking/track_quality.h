#pragma once
// Quality cues of a track, per frame, for the quality strip and the "next suspicious frame" navigation:
//  * the model's own probabilities (p_occluded, p_far) are in the track itself;
//  * uncertain: a visible estimate whose p_far (probability of an error above 6 px at 256x256) is at least
//    QualityOptions::uncertain_p_far, or whose p_occluded is at least uncertain_p_occluded. A model's manifest
//    can hold thresholds calibrated on its validation data (quality_options_for_weights): where the observed
//    error rate of its estimates reaches kSuspiciousErrorRate (evaluation.h);
//  * velocity outlier: the second difference |p[t+1] - 2 p[t] + p[t-1]| (px per frame^2, on three consecutive
//    visible frames) exceeds max(outlier_min_px, outlier_factor * its median over the track): a jump or a
//    one-frame glitch, which real motion at video rates rarely makes;
//  * inconsistent: the forward-backward check, run on demand: the track is tracked again from its own estimate
//    at the visible frame farthest from the query (consistency_anchor()), over the whole clip; a frame whose two
//    estimates lie more than consistency_threshold_px apart is inconsistent (consistency_error()).
// Keyframes (set by the user) are never flagged.
//
//   TrackQuality quality = assess_track(point_track, options, consistency_errors /* or {} */);
//   if (quality.flagged(frame)) ...
//   std::optional<int64_t> next = next_flagged_frame(quality, current_frame);
//
// Threads: pure functions.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tracking/annotation.h"
#include "core/tracking/tracks.h"

namespace trackscope::core {

struct QualityOptions {
  float uncertain_p_far = 0.35f;          // visible with p_far >= this: uncertain (the uncalibrated fallback)
  float uncertain_p_occluded = 1.0f;      // visible with p_occluded >= this: uncertain (1 = never: a visible
                                          // estimate has p_occluded <= 0.5; calibrated models set it)
  double outlier_factor = 8.0;            // times the median second difference
  double outlier_min_px = 4.0;            // a second difference below this is never an outlier
  double consistency_threshold_px = 4.0;  // forward-backward distance above this: inconsistent

  Status check() const;
};

enum QualityFlag : uint8_t {
  quality_uncertain = 1,
  quality_velocity_outlier = 2,
  quality_inconsistent = 4,
};

/// Flags per frame of a track, over the track's frames.
struct TrackQuality {
  int64_t first_frame = 0;
  std::vector<uint8_t> flags;               // QualityFlag bits per frame
  std::vector<float> consistency_error_px;  // per frame, NaN where unknown; empty when never checked

  bool covers(int64_t frame) const {
    return frame >= first_frame && frame < first_frame + static_cast<int64_t>(flags.size());
  }
  uint8_t flags_at(int64_t frame) const { return covers(frame) ? flags[static_cast<size_t>(frame - first_frame)] : 0; }
  bool flagged(int64_t frame) const { return flags_at(frame) != 0; }
  int64_t flagged_count() const;
};

/// Quality options for the tracks of a model, and where their thresholds came from.
struct CalibratedQualityOptions {
  QualityOptions options;
  std::string source;  // the manifest's path, or "defaults (...why...)"
  bool calibrated = false;
};

/// The quality options for tracks made with the weights at `weights_path`: `fallback` with the suspicious
/// thresholds of the model's manifest when it has them. The manifest is `<stem>.json` beside the weights (for
/// a shard set `stem-0.safetensors`, also `stem.json`), format "trackscope.model-manifest", with
/// "calibration": {"suspicious_thresholds": {"p_far": x, "p_occluded": y}} (each optional, in (0, 1]). It is
/// ignored (fallback) when its "sha256" is given and differs from `weights_sha256` (other weights under that
/// name), or when it is missing or unreadable. Reads one small file; never fails.
CalibratedQualityOptions quality_options_for_weights(const std::filesystem::path& weights_path,
                                                     std::string_view weights_sha256,
                                                     const QualityOptions& fallback = {});

/// The cues of `track` (see the header comment). `consistency_error_px`, when not empty, holds one distance per
/// frame of the track (NaN: unknown), as consistency_error() returns it.
TrackQuality assess_track(const PointTrack& track, const QualityOptions& options,
                          const std::vector<float>& consistency_error_px = {});

/// Where the forward-backward check queries the tracker: the track's estimate at the visible frame farthest
/// from its query frame (a keyframe preferred at equal distance is not needed: any visible frame works).
/// nullopt when no frame other than the query frame is visible.
std::optional<Query> consistency_anchor(const Track& track);

/// Distance per frame of `track` between it and `reverse` (the re-tracked result from the anchor); NaN where
/// `reverse` does not cover the frame or either estimate is occluded.
std::vector<float> consistency_error(const Track& track, const Track& reverse);

/// The first flagged frame after `frame` (strictly), or before it when `backward`; nullopt when none.
std::optional<int64_t> next_flagged_frame(const TrackQuality& quality, int64_t frame, bool backward = false);

/// The first keyframe of `track` (its query frame included) after `frame`, or before it when `backward`.
std::optional<int64_t> next_keyframe(const PointTrack& track, int64_t frame, bool backward = false);

}  // namespace trackscope::core
