#pragma once
// Edits of one point's track: corrections (keyframes), re-tracking ranges and merging a re-tracked result into
// the existing track, deleting a track's future or past, marking a frame occluded or visible by hand. Pure
// functions on values (no Annotation, no notifications): the UI's AnnotationEditor applies their results through
// the undo history (annotation_history.h).
//
//   // The user dragged point 3 to (120.5, 64.0) on frame 20:
//   PointTrack corrected = with_correction(*annotation.track(3), 20, 120.5, 64.0);
//   // Re-track forward from that keyframe: ask the tracker for one query over the range ...
//   FrameRange range = retrack_range(RetrackDirection::forward, 20, frame_count);   // [20, frame_count)
//   TrackRequest request{{keyframe_query(corrected, 20)}, range.first_frame, range.end_frame};
//   // ... and merge its single track back:
//   PointTrack merged = merge_retracked(corrected, result.tracks[0], MergePolicy::overwrite, provenance);
//
// Conventions: frames are 0-based video frame indices; positions are raster pixels of the original video
// (tracks.h). A PointTrack's track covers one contiguous range of frames [first_frame, end_frame()).
// Keyframes (annotation.h) are frames the user fixed: every function here keeps their estimates exactly.

#include <cstdint>
#include <optional>

#include "core/tracking/annotation.h"
#include "core/tracking/tracks.h"

namespace trackscope::core {

enum class RetrackDirection {
  forward,   // from the keyframe to the end of the clip: [keyframe, frame_count)
  backward,  // from the start of the clip to the keyframe: [0, keyframe + 1)
  both,      // the whole clip, queried at the keyframe: [0, frame_count)
};
const char* to_string(RetrackDirection direction);

enum class MergePolicy {
  overwrite,     // every re-tracked frame replaces the existing estimate (keyframes excepted)
  fill_missing,  // re-tracked frames only fill frames the existing track does not cover
};
const char* to_string(MergePolicy policy);

/// Frames [first_frame, end_frame).
struct FrameRange {
  int64_t first_frame = 0;
  int64_t end_frame = 0;
  bool operator==(const FrameRange&) const = default;
};

/// The frames a re-track from `keyframe` in `direction` asks the tracker for (see RetrackDirection).
/// `keyframe` must lie in [0, frame_count) (InvariantError).
FrameRange retrack_range(RetrackDirection direction, int64_t keyframe, int64_t frame_count);

/// The query a re-track from `frame` uses: the track's estimate there (for a keyframe: the user's position).
/// nullopt when the track does not cover the frame.
std::optional<Query> keyframe_query(const PointTrack& track, int64_t frame);

/// The user's correction: the estimate on `frame` becomes (x_px, y_px), visible with p_occluded = p_far = 0,
/// and `frame` becomes a keyframe. A frame outside the track extends it (frames in between are filled as in
/// merge_retracked). On the query frame the query itself moves as well.
PointTrack with_correction(const PointTrack& track, int64_t frame, double x_px, double y_px);

/// Marks the estimate on `frame` occluded (p_occluded = 1) or visible (p_occluded = 0) by hand, with p_far = 0,
/// keeping its position; `frame` becomes a keyframe. nullopt when the track does not cover the frame.
std::optional<PointTrack> with_visibility(const PointTrack& track, int64_t frame, bool visible);

/// Merges `retracked` (a tracker's result for one query, over its own frame range) into `existing`:
///  * frames covered by `retracked`: keyframes of `existing` (and its query frame) keep their estimate; other
///    frames take the re-tracked estimate (overwrite) or only when `existing` does not cover them (fill_missing);
///  * frames covered only by `existing` are kept;
///  * frames between the two ranges (when they do not touch) are filled with occluded estimates
///    (p_occluded = p_far = 1) interpolated linearly between the nearest estimates on either side.
/// The query and keyframes of `existing` are kept; the provenance becomes `provenance`. With no existing track
/// the result is `retracked` itself (its query frame being its query).
PointTrack merge_retracked(const std::optional<PointTrack>& existing, const Track& retracked, MergePolicy policy,
                           const TrackProvenance& provenance);

/// The track without the frames after `frame` (frame itself kept), and without their keyframes. nullopt when
/// nothing would be left.
std::optional<PointTrack> without_frames_after(const PointTrack& track, int64_t frame);
/// The track without the frames before `frame` (frame itself kept). nullopt when nothing would be left.
std::optional<PointTrack> without_frames_before(const PointTrack& track, int64_t frame);

/// The estimate for a frame between two known ones: interpolated position, occluded, p_occluded = p_far = 1.
TrackPoint gap_estimate(const TrackPoint& before, const TrackPoint& after, double fraction);

}  // namespace trackscope::core
