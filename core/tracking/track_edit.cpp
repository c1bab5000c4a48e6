#include "core/tracking/track_edit.h"

#include <algorithm>

#include "core/status.h"

namespace trackscope::core {
namespace {

void add_keyframe(std::vector<int64_t>& keyframes, int64_t frame) {
  auto position = std::lower_bound(keyframes.begin(), keyframes.end(), frame);
  if (position == keyframes.end() || *position != frame) keyframes.insert(position, frame);
}

// Extends `track` to cover [first, end) (a superset of its range), filling new frames with gap estimates that
// lean on the nearest existing estimate (there is nothing on the far side to interpolate towards).
void extend_to(Track& track, int64_t first, int64_t end) {
  if (track.points.empty()) {
    track.first_frame = first;
    track.points.assign(
        static_cast<size_t>(end - first),
        TrackPoint{static_cast<float>(track.query.x_px), static_cast<float>(track.query.y_px), false, 1.0f, 1.0f});
    return;
  }
  if (first < track.first_frame) {
    const TrackPoint edge = track.points.front();
    track.points.insert(track.points.begin(), static_cast<size_t>(track.first_frame - first),
                        gap_estimate(edge, edge, 0.0));
    track.first_frame = first;
  }
  if (end > track.end_frame()) {
    const TrackPoint edge = track.points.back();
    track.points.resize(static_cast<size_t>(end - track.first_frame), gap_estimate(edge, edge, 0.0));
  }
}

}  // namespace

const char* to_string(RetrackDirection direction) {
  switch (direction) {
    case RetrackDirection::forward: return "forward";
    case RetrackDirection::backward: return "backward";
    case RetrackDirection::both: return "both";
  }
  return "?";
}

const char* to_string(MergePolicy policy) {
  switch (policy) {
    case MergePolicy::overwrite: return "overwrite";
    case MergePolicy::fill_missing: return "fill_missing";
  }
  return "?";
}

FrameRange retrack_range(RetrackDirection direction, int64_t keyframe, int64_t frame_count) {
  TRACKSCOPE_CHECK(keyframe >= 0 && keyframe < frame_count, "the keyframe must lie inside the clip");
  switch (direction) {
    case RetrackDirection::forward: return {keyframe, frame_count};
    case RetrackDirection::backward: return {0, keyframe + 1};
    case RetrackDirection::both: return {0, frame_count};
  }
  return {0, frame_count};
}

std::optional<Query> keyframe_query(const PointTrack& track, int64_t frame) {
  if (frame == track.track.query.frame) return track.track.query;
  if (!track.track.covers(frame)) return std::nullopt;
  const TrackPoint& point = track.track.at(frame);
  return Query{frame, point.x_px, point.y_px};
}

TrackPoint gap_estimate(const TrackPoint& before, const TrackPoint& after, double fraction) {
  TrackPoint point;
  point.x_px = static_cast<float>(before.x_px + (after.x_px - before.x_px) * fraction);
  point.y_px = static_cast<float>(before.y_px + (after.y_px - before.y_px) * fraction);
  point.p_occluded = 1.0f;
  point.p_far = 1.0f;
  point.visible = false;
  return point;
}

PointTrack with_correction(const PointTrack& track, int64_t frame, double x_px, double y_px) {
  TRACKSCOPE_CHECK(frame >= 0, "frame must be >= 0");
  PointTrack result = track;
  extend_to(result.track, std::min(frame, result.track.points.empty() ? frame : result.track.first_frame),
            std::max(frame + 1, result.track.points.empty() ? frame + 1 : result.track.end_frame()));
  result.track.at(frame) = TrackPoint{static_cast<float>(x_px), static_cast<float>(y_px), true, 0.0f, 0.0f};
  if (frame == result.track.query.frame) {
    result.track.query.x_px = x_px;
    result.track.query.y_px = y_px;
  } else {
    add_keyframe(result.keyframes, frame);
  }
  return result;
}

std::optional<PointTrack> with_visibility(const PointTrack& track, int64_t frame, bool visible) {
  if (!track.track.covers(frame)) return std::nullopt;
  PointTrack result = track;
  TrackPoint& point = result.track.at(frame);
  point.p_occluded = visible ? 0.0f : 1.0f;
  point.p_far = 0.0f;
  point.visible = visible;
  if (frame != result.track.query.frame) add_keyframe(result.keyframes, frame);
  return result;
}

PointTrack merge_retracked(const std::optional<PointTrack>& existing, const Track& retracked, MergePolicy policy,
                           const TrackProvenance& provenance) {
  if (!existing || existing->track.points.empty()) {
    PointTrack result;
    result.track = retracked;
    result.provenance = provenance;
    if (existing) {
      result.track.query = existing->track.query;
    }
    return result;
  }
  if (retracked.points.empty()) {
    PointTrack result = *existing;
    result.provenance = provenance;
    return result;
  }
  const Track& old = existing->track;
  PointTrack result;
  result.track.query = old.query;
  result.keyframes = existing->keyframes;
  result.provenance = provenance;
  const int64_t first = std::min(old.first_frame, retracked.first_frame);
  const int64_t end = std::max(old.end_frame(), retracked.end_frame());
  result.track.first_frame = first;
  result.track.points.resize(static_cast<size_t>(end - first));
  for (int64_t frame = first; frame < end; ++frame) {
    const bool in_old = old.covers(frame);
    const bool in_new = retracked.covers(frame);
    TrackPoint& out = result.track.at(frame);
    if (in_old && (!in_new || existing->is_keyframe(frame) || policy == MergePolicy::fill_missing)) {
      out = old.at(frame);
    } else if (in_new) {
      out = retracked.at(frame);
    } else {
      // Between two ranges that do not touch: occluded estimates between their facing ends.
      const bool old_first = old.end_frame() <= frame;
      const int64_t left_frame = old_first ? old.end_frame() - 1 : retracked.end_frame() - 1;
      const int64_t right_frame = old_first ? retracked.first_frame : old.first_frame;
      const TrackPoint& left = old_first ? old.at(left_frame) : retracked.at(left_frame);
      const TrackPoint& right = old_first ? retracked.at(right_frame) : old.at(right_frame);
      out = gap_estimate(left, right,
                         static_cast<double>(frame - left_frame) / static_cast<double>(right_frame - left_frame));
    }
  }
  return result;
}

std::optional<PointTrack> without_frames_after(const PointTrack& track, int64_t frame) {
  if (frame < track.track.first_frame) return std::nullopt;
  PointTrack result = track;
  if (frame + 1 < result.track.end_frame())
    result.track.points.resize(static_cast<size_t>(frame + 1 - result.track.first_frame));
  std::erase_if(result.keyframes, [&](int64_t keyframe) { return keyframe > frame; });
  return result;
}

std::optional<PointTrack> without_frames_before(const PointTrack& track, int64_t frame) {
  if (frame >= track.track.end_frame()) return std::nullopt;
  PointTrack result = track;
  if (frame > result.track.first_frame) {
    result.track.points.erase(
        result.track.points.begin(),
        result.track.points.begin() + static_cast<std::ptrdiff_t>(frame - result.track.first_frame));
    result.track.first_frame = frame;
  }
  std::erase_if(result.keyframes, [&](int64_t keyframe) { return keyframe < frame; });
  return result;
}

}  // namespace trackscope::core
