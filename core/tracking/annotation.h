#pragma once
// Annotation: the query points a user places in the workbench. Each point has a stable integer id (never
// reused while the Annotation lives), a Query (frame index, x, y in raster pixels of the ORIGINAL upright
// video, see tracks.h) and a stable colour index that the UI maps to a palette entry. Points are kept in id
// order. A point may carry a track (PointTrack: the per-frame estimates, the frames the user fixed by hand
// (keyframes) and the tracker that produced it). Edits of tracks are in track_edit.h, undo in
// annotation_history.h; this stays a small value model.
//
//   Annotation annotation;
//   PointId id = annotation.add({.frame = 12, .x_px = 100.5, .y_px = 40.5});
//   (void)annotation.move(id, {.frame = 12, .x_px = 101.0, .y_px = 41.0});
//   if (std::optional<PointId> hit = annotation.find_nearest(12, 100.0, 40.0, 6.0)) (void)annotation.remove(*hit);
//   for (const QueryPoint& point : annotation) draw(point);          // id order
//
// Change notifications: observers registered with add_observer() are told about every change synchronously,
// after the change is applied, on the thread that made the change. An observer must not modify the
// annotation or (un)register observers from inside a notification (checked: throws InvariantError).
// Ownership: observers are not owned; an observer must remove itself before it is destroyed.
// Threads: not thread-safe; one thread (the GUI thread) uses an Annotation and its observers.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/tracking/tracks.h"

namespace trackscope::core {

using PointId = int;

/// One query point of the annotation.
struct QueryPoint {
  PointId id = 0;
  Query query;           // frame and position in original-video raster pixels
  int colour_index = 0;  // stable colour slot; the UI picks palette[colour_index % palette size]
  bool operator==(const QueryPoint&) const = default;
};

/// Where a track came from: the tracker that produced it (shown to the user, saved in projects).
struct TrackProvenance {
  std::string model;      // e.g. "LocoTrack-S (bundled default)"
  std::string device;     // e.g. "cuda:0"
  std::string precision;  // e.g. "fp32"
  bool operator==(const TrackProvenance&) const = default;
};

/// The track attached to a query point.
/// Keyframes are the frames whose estimate the user set by hand (a dragged correction, a point marked occluded
/// or visible): sorted, unique, each covered by `track`. Re-tracking and merging keep them exactly. The query
/// frame is a keyframe by nature and is not listed (see is_keyframe()).
struct PointTrack {
  Track track;
  TrackProvenance provenance;
  std::vector<int64_t> keyframes;

  /// True for a listed keyframe or the track's query frame.
  bool is_keyframe(int64_t frame) const;
  bool operator==(const PointTrack&) const = default;
};

enum class AnnotationChangeKind {
  added,          // `after` is the new point
  moved,          // `before` and `after` are the point before and after the move (same id)
  removed,        // `before` is the removed point (its track, if any, is gone too)
  cleared,        // every point (and track) was removed or replaced at once (clear(), replace_all()): observers
                  // rebuild from the annotation; neither field is meaningful
  track_changed,  // the track of `after` was set, replaced or cleared (`before` == `after`)
};

struct AnnotationChange {
  AnnotationChangeKind kind = AnnotationChangeKind::added;
  QueryPoint before;
  QueryPoint after;
};

class Annotation;

class AnnotationObserver {
 public:
  virtual ~AnnotationObserver() = default;
  virtual void on_annotation_changed(const Annotation& annotation, const AnnotationChange& change) = 0;
};

class Annotation {
 public:
  Annotation() = default;
  // An Annotation has identity (its observers and id counter); copy its points() when a snapshot is needed.
  Annotation(const Annotation&) = delete;
  Annotation& operator=(const Annotation&) = delete;

  /// Adds a point and returns its new id (ids start at 0 and increase; removed ids are not reused).
  /// The query must have frame >= 0 and finite coordinates (an invariant: throws InvariantError).
  PointId add(const Query& query);

  /// Re-inserts a point with its own id and colour (undo of a removal, import). Throws InvariantError if the
  /// id is negative or already present. Later add() calls return ids above every id inserted so far.
  void insert(const QueryPoint& point);

  /// Moves point `id` to `query` (frame included). Returns false, changing nothing, if there is no such point.
  [[nodiscard]] bool move(PointId id, const Query& query);

  /// Removes point `id`. Returns false if there is no such point.
  [[nodiscard]] bool remove(PointId id);

  /// Removes every point (ids are still not reused).
  void clear();

  /// Replaces every point and track at once (a project being opened), with ONE `cleared` notification, so that
  /// observers rebuild once: linear in the number of points, where inserting them one by one notifies (and
  /// lets every observer rescan) per point. `points` may come in any order; ids must be unique and >= 0, each
  /// track's id must be one of `points` and its keyframes sorted, unique and covered (InvariantError
  /// otherwise, nothing changed). Later add() calls return ids >= max(next_id, every id + 1).
  void replace_all(std::vector<QueryPoint> points, std::map<PointId, PointTrack> tracks, PointId next_id = 0);

  /// Attaches `track` to point `id`, replacing any previous one. Returns false if there is no such point.
  /// move() keeps a point's track: callers that want a moved query to invalidate it call clear_track().
  [[nodiscard]] bool set_track(PointId id, Track track, TrackProvenance provenance = {});
  /// The same with keyframes (undo, projects). Keyframes must be sorted, unique and covered (InvariantError).
  [[nodiscard]] bool set_track(PointId id, PointTrack track);
  /// Detaches the track of point `id`. Returns false if the point has no track.
  [[nodiscard]] bool clear_track(PointId id);
  /// The track of point `id`, or null. The pointer is valid until the next modification.
  const PointTrack* track(PointId id) const;

  /// The point with that id, or null. The pointer is valid until the next modification.
  const QueryPoint* find(PointId id) const;

  /// The point on `frame` nearest to (x_px, y_px) within `radius_px` (Euclidean, inclusive), ties broken by
  /// the lower id; nullopt if none.
  std::optional<PointId> find_nearest(int64_t frame, double x_px, double y_px, double radius_px) const;

  /// Every point in id order.
  const std::vector<QueryPoint>& points() const { return points_; }
  std::vector<QueryPoint>::const_iterator begin() const { return points_.begin(); }
  std::vector<QueryPoint>::const_iterator end() const { return points_.end(); }
  size_t size() const { return points_.size(); }
  bool empty() const { return points_.empty(); }

  /// The queries in id order (what a tracker is given).
  std::vector<Query> queries() const;

  /// The id the next add() will return.
  PointId next_id() const { return next_id_; }
  /// Makes later add() calls return ids >= `next_id` (a project restores its id counter, so the ids of
  /// removed points stay unused). Never lowers the counter.
  void reserve_ids_below(PointId next_id);

  void add_observer(AnnotationObserver* observer);
  void remove_observer(AnnotationObserver* observer);

 private:
  std::vector<QueryPoint>::iterator locate(PointId id);
  void notify(const AnnotationChange& change);
  void check_not_notifying() const;

  std::vector<QueryPoint> points_;  // sorted by id
  std::map<PointId, PointTrack> tracks_;
  PointId next_id_ = 0;
  int next_colour_index_ = 0;
  std::vector<AnnotationObserver*> observers_;
  bool notifying_ = false;
};

}  // namespace trackscope::core
