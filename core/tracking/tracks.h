#pragma once
// Queries and tracks. All positions are raster pixel coordinates of the ORIGINAL (upright) video: pixel (i, j)
// covers [j, j+1) x [i, i+1), its centre is (j + 0.5, i + 0.5). Frame indices are 0-based.

#include <cstdint>
#include <vector>

namespace trackscope::core {

/// A point to track: where it is on one frame.
struct Query {
  int64_t frame = 0;
  double x_px = 0.0;
  double y_px = 0.0;
  bool operator==(const Query&) const = default;
};

/// The estimate of one track on one frame.
struct TrackPoint {
  float x_px = 0.0f;
  float y_px = 0.0f;
  bool visible = false;     // (1 - p_occluded) * (1 - p_far) >= 0.5, the model's own rule
  float p_occluded = 1.0f;  // sigmoid of the occlusion logit
  float p_far = 1.0f;       // sigmoid of the expected-distance logit: P(error > 6 px at 256x256)
  bool operator==(const TrackPoint&) const = default;
};

/// Visibility from the two probabilities, exactly as the official post-processing decides it.
inline bool visible_from_probabilities(float p_occluded, float p_far) {
  return !(1.0f - (1.0f - p_occluded) * (1.0f - p_far) > 0.5f);
}

/// One query's trajectory over the frames [first_frame, first_frame + points.size()).
struct Track {
  Query query;
  int64_t first_frame = 0;
  std::vector<TrackPoint> points;

  bool covers(int64_t frame) const {
    return frame >= first_frame && frame < first_frame + static_cast<int64_t>(points.size());
  }
  const TrackPoint& at(int64_t frame) const { return points.at(static_cast<size_t>(frame - first_frame)); }
  TrackPoint& at(int64_t frame) { return points.at(static_cast<size_t>(frame - first_frame)); }
  /// One past the last covered frame.
  int64_t end_frame() const { return first_frame + static_cast<int64_t>(points.size()); }
  bool operator==(const Track&) const = default;
};

/// The result of one tracking run: one Track per query, in query order.
struct TrackSet {
  int64_t first_frame = 0;
  int64_t frame_count = 0;
  std::vector<Track> tracks;
};

}  // namespace trackscope::core
