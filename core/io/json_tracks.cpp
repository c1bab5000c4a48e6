#include "core/io/json_tracks.h"

#include <cmath>
#include <limits>
#include <vector>

namespace trackscope::core::io::json_detail {

json track_to_json(const PointTrack& point_track) {
  const Track& track = point_track.track;
  std::vector<float> x, y, p_occluded, p_far;
  std::vector<int> visible;
  x.reserve(track.points.size());
  y.reserve(track.points.size());
  for (const TrackPoint& point : track.points) {
    x.push_back(point.x_px);
    y.push_back(point.y_px);
    visible.push_back(point.visible ? 1 : 0);
    p_occluded.push_back(point.p_occluded);
    p_far.push_back(point.p_far);
  }
  return {{"first_frame", track.first_frame},
          {"query", query_to_json(track.query)},
          {"keyframes", point_track.keyframes},
          {"provenance",
           {{"model", point_track.provenance.model},
            {"device", point_track.provenance.device},
            {"precision", point_track.provenance.precision}}},
          {"x", x},
          {"y", y},
          {"visible", visible},
          {"p_occluded", p_occluded},
          {"p_far", p_far}};
}

namespace {

// Values are checked as doubles before they become floats: a double beyond float's range does not convert.
std::vector<float> float_array(const json& object, const char* key, const std::string& where) {
  const json& array = field(object, key, where);
  const std::string here = where + "." + key;
  if (!array.is_array()) fail(here, "expected an array");
  std::vector<float> values;
  values.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i) {
    const double v = number(array[i], fmt::format("{}[{}]", here, i));
    if (std::abs(v) > static_cast<double>(std::numeric_limits<float>::max()))
      fail(fmt::format("{}[{}]", here, i), fmt::format("{} is outside the range of a 32-bit float", v));
    values.push_back(static_cast<float>(v));
  }
  return values;
}

int64_t frame_limit(const VideoBounds& bounds) { return bounds.frame_count > 0 ? bounds.frame_count : kMaxFrameIndex; }

std::string frame_limit_text(const VideoBounds& bounds) {
  return bounds.frame_count > 0 ? fmt::format("the video has {} frames", bounds.frame_count)
                                : fmt::format("frames must be below {}", kMaxFrameIndex);
}

}  // namespace

Query query_from_json(const json& value, const std::string& where, const VideoBounds& bounds) {
  Query query;
  query.frame = integer(field(value, "frame", where), where + ".frame");
  query.x_px = number(field(value, "x", where), where + ".x");
  query.y_px = number(field(value, "y", where), where + ".y");
  if (query.frame < 0) fail(where + ".frame", "must be >= 0");
  if (query.frame >= frame_limit(bounds))
    fail(where + ".frame", fmt::format("frame {} is past the end: {}", query.frame, frame_limit_text(bounds)));
  if (!plausible_position(query.x_px, query.y_px, bounds.width, bounds.height)) {
    fail(where, fmt::format("the position ({}, {}) is not plausible: {}", query.x_px, query.y_px,
                            position_bounds_text(bounds.width, bounds.height)));
  }
  return query;
}

PointTrack track_from_json(const json& value, const std::string& where, const VideoBounds& bounds) {
  PointTrack result;
  Track& track = result.track;
  track.first_frame = integer(field(value, "first_frame", where), where + ".first_frame");
  if (track.first_frame < 0) fail(where + ".first_frame", "must be >= 0");
  if (track.first_frame >= frame_limit(bounds)) {
    fail(where + ".first_frame",
         fmt::format("frame {} is past the end: {}", track.first_frame, frame_limit_text(bounds)));
  }
  track.query = query_from_json(field(value, "query", where), where + ".query", bounds);
  if (auto it = value.find("provenance"); it != value.end()) {
    const std::string here = where + ".provenance";
    result.provenance.model = text(field(*it, "model", here), here + ".model");
    result.provenance.device = text(field(*it, "device", here), here + ".device");
    result.provenance.precision = text(field(*it, "precision", here), here + ".precision");
  }
  const std::vector<float> x = float_array(value, "x", where);
  const std::vector<float> y = float_array(value, "y", where);
  const std::vector<float> p_occluded = float_array(value, "p_occluded", where);
  const std::vector<float> p_far = float_array(value, "p_far", where);
  const json& visible = field(value, "visible", where);
  if (!visible.is_array()) fail(where + ".visible", "expected an array");
  const size_t n = x.size();
  if (y.size() != n || p_occluded.size() != n || p_far.size() != n || visible.size() != n) {
    fail(where,
         fmt::format("x, y, visible, p_occluded and p_far must have one entry per frame (got {}, {}, {}, {}, {})", n,
                     y.size(), visible.size(), p_occluded.size(), p_far.size()));
  }
  if (static_cast<int64_t>(n) > frame_limit(bounds) - track.first_frame) {
    fail(where, fmt::format("the track covers frames [{}, {}) but {}: the file does not belong to this video, or "
                            "it was damaged",
                            track.first_frame, track.first_frame + static_cast<int64_t>(n), frame_limit_text(bounds)));
  }
  track.points.resize(n);
  for (size_t i = 0; i < n; ++i) {
    TrackPoint& point = track.points[i];
    point.x_px = x[i];
    point.y_px = y[i];
    point.visible = boolean(visible[i], fmt::format("{}.visible[{}]", where, i));
    point.p_occluded = p_occluded[i];
    point.p_far = p_far[i];
    if (!(point.p_occluded >= 0.0f && point.p_occluded <= 1.0f && point.p_far >= 0.0f && point.p_far <= 1.0f)) {
      fail(fmt::format("{} frame {}", where, track.first_frame + static_cast<int64_t>(i)),
           "probabilities must lie in [0, 1]");
    }
    if (!plausible_position(point.x_px, point.y_px, bounds.width, bounds.height)) {
      fail(fmt::format("{} frame {}", where, track.first_frame + static_cast<int64_t>(i)),
           fmt::format("the position ({}, {}) is not plausible: {}", point.x_px, point.y_px,
                       position_bounds_text(bounds.width, bounds.height)));
    }
  }
  if (auto it = value.find("keyframes"); it != value.end()) {
    if (!it->is_array()) fail(where + ".keyframes", "expected an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string here = fmt::format("{}.keyframes[{}]", where, i);
      const int64_t frame = integer((*it)[i], here);
      if (!track.covers(frame)) fail(here, fmt::format("frame {} is not covered by the track", frame));
      if (!result.keyframes.empty() && result.keyframes.back() >= frame)
        fail(here, "keyframes must be sorted and unique");
      result.keyframes.push_back(frame);
    }
  }
  return result;
}

}  // namespace trackscope::core::io::json_detail
