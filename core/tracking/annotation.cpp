#include "core/tracking/annotation.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/status.h"

namespace trackscope::core {
namespace {

void check_query(const Query& query) {
  TRACKSCOPE_CHECK(query.frame >= 0, "query frame must be >= 0");
  TRACKSCOPE_CHECK(std::isfinite(query.x_px) && std::isfinite(query.y_px), "query coordinates must be finite");
}

}  // namespace

PointId Annotation::add(const Query& query) {
  check_not_notifying();
  check_query(query);
  TRACKSCOPE_CHECK(next_id_ < std::numeric_limits<PointId>::max(), "point ids exhausted");
  QueryPoint point{next_id_++, query, next_colour_index_++};
  points_.push_back(point);  // ids only grow, so appending keeps id order
  notify({AnnotationChangeKind::added, {}, point});
  return point.id;
}

void Annotation::insert(const QueryPoint& point) {
  check_not_notifying();
  check_query(point.query);
  TRACKSCOPE_CHECK(point.id >= 0, "point id must be >= 0");
  auto position = std::lower_bound(points_.begin(), points_.end(), point.id,
                                   [](const QueryPoint& p, PointId id) { return p.id < id; });
  TRACKSCOPE_CHECK(position == points_.end() || position->id != point.id, "point id already present");
  points_.insert(position, point);
  next_id_ = std::max(next_id_, point.id + 1);
  next_colour_index_ = std::max(next_colour_index_, point.colour_index + 1);
  notify({AnnotationChangeKind::added, {}, point});
}

bool Annotation::move(PointId id, const Query& query) {
  check_not_notifying();
  check_query(query);
  auto it = locate(id);
  if (it == points_.end()) return false;
  const QueryPoint before = *it;
  it->query = query;
  notify({AnnotationChangeKind::moved, before, *it});
  return true;
}

bool Annotation::remove(PointId id) {
  check_not_notifying();
  auto it = locate(id);
  if (it == points_.end()) return false;
  const QueryPoint before = *it;
  points_.erase(it);
  tracks_.erase(id);
  notify({AnnotationChangeKind::removed, before, {}});
  return true;
}

void Annotation::clear() {
  check_not_notifying();
  points_.clear();
  tracks_.clear();
  notify({AnnotationChangeKind::cleared, {}, {}});
}

void Annotation::replace_all(std::vector<QueryPoint> points, std::map<PointId, PointTrack> tracks, PointId next_id) {
  check_not_notifying();
  std::sort(points.begin(), points.end(), [](const QueryPoint& a, const QueryPoint& b) { return a.id < b.id; });
  PointId next = std::max(next_id, next_id_);
  int next_colour = next_colour_index_;
  for (size_t i = 0; i < points.size(); ++i) {
    check_query(points[i].query);
    TRACKSCOPE_CHECK(points[i].id >= 0, "point id must be >= 0");
    TRACKSCOPE_CHECK(i == 0 || points[i - 1].id != points[i].id, "point id already present");
    TRACKSCOPE_CHECK(points[i].id < std::numeric_limits<PointId>::max(), "point ids exhausted");
    next = std::max(next, points[i].id + 1);
    next_colour = std::max(next_colour, points[i].colour_index + 1);
  }
  auto point = points.begin();
  for (const auto& [id, track] : tracks) {  // both in id order: one merge-like walk
    while (point != points.end() && point->id < id) ++point;
    TRACKSCOPE_CHECK(point != points.end() && point->id == id, "a track must belong to a point");
    for (size_t i = 0; i < track.keyframes.size(); ++i) {
      TRACKSCOPE_CHECK(track.track.covers(track.keyframes[i]), "a keyframe must be covered by its track");
      TRACKSCOPE_CHECK(i == 0 || track.keyframes[i - 1] < track.keyframes[i], "keyframes must be sorted and unique");
    }
  }
  points_ = std::move(points);
  tracks_ = std::move(tracks);
  next_id_ = next;
  next_colour_index_ = next_colour;
  notify({AnnotationChangeKind::cleared, {}, {}});
}

bool PointTrack::is_keyframe(int64_t frame) const {
  return frame == track.query.frame || std::binary_search(keyframes.begin(), keyframes.end(), frame);
}

bool Annotation::set_track(PointId id, Track track, TrackProvenance provenance) {
  return set_track(id, PointTrack{std::move(track), std::move(provenance), {}});
}

bool Annotation::set_track(PointId id, PointTrack track) {
  check_not_notifying();
  for (size_t i = 0; i < track.keyframes.size(); ++i) {
    TRACKSCOPE_CHECK(track.track.covers(track.keyframes[i]), "a keyframe must be covered by its track");
    TRACKSCOPE_CHECK(i == 0 || track.keyframes[i - 1] < track.keyframes[i], "keyframes must be sorted and unique");
  }
  const QueryPoint* point = find(id);
  if (point == nullptr) return false;
  tracks_[id] = std::move(track);
  notify({AnnotationChangeKind::track_changed, *point, *point});
  return true;
}

bool Annotation::clear_track(PointId id) {
  check_not_notifying();
  const QueryPoint* point = find(id);
  if (point == nullptr || tracks_.erase(id) == 0) return false;
  notify({AnnotationChangeKind::track_changed, *point, *point});
  return true;
}

const PointTrack* Annotation::track(PointId id) const {
  auto it = tracks_.find(id);
  return it == tracks_.end() ? nullptr : &it->second;
}

const QueryPoint* Annotation::find(PointId id) const {
  auto it = std::lower_bound(points_.begin(), points_.end(), id,
                             [](const QueryPoint& p, PointId value) { return p.id < value; });
  return it != points_.end() && it->id == id ? &*it : nullptr;
}

std::optional<PointId> Annotation::find_nearest(int64_t frame, double x_px, double y_px, double radius_px) const {
  std::optional<PointId> best;
  double best_distance_squared = radius_px * radius_px;
  for (const QueryPoint& point : points_) {
    if (point.query.frame != frame) continue;
    const double dx = point.query.x_px - x_px;
    const double dy = point.query.y_px - y_px;
    const double distance_squared = dx * dx + dy * dy;
    // Strictly nearer wins, so among equal distances the first (lowest) id stays.
    if (distance_squared < best_distance_squared || (!best && distance_squared <= best_distance_squared)) {
      best = point.id;
      best_distance_squared = distance_squared;
    }
  }
  return best;
}

void Annotation::reserve_ids_below(PointId next_id) {
  check_not_notifying();
  next_id_ = std::max(next_id_, next_id);
}

std::vector<Query> Annotation::queries() const {
  std::vector<Query> result;
  result.reserve(points_.size());
  for (const QueryPoint& point : points_) result.push_back(point.query);
  return result;
}

void Annotation::add_observer(AnnotationObserver* observer) {
  check_not_notifying();
  TRACKSCOPE_CHECK(observer != nullptr, "observer must not be null");
  if (std::find(observers_.begin(), observers_.end(), observer) == observers_.end()) observers_.push_back(observer);
}

void Annotation::remove_observer(AnnotationObserver* observer) {
  check_not_notifying();
  std::erase(observers_, observer);
}

std::vector<QueryPoint>::iterator Annotation::locate(PointId id) {
  auto it = std::lower_bound(points_.begin(), points_.end(), id,
                             [](const QueryPoint& p, PointId value) { return p.id < value; });
  return it != points_.end() && it->id == id ? it : points_.end();
}

void Annotation::notify(const AnnotationChange& change) {
  notifying_ = true;
  // Reset the flag even if an observer throws, so the model stays usable.
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{notifying_};
  for (AnnotationObserver* observer : observers_) observer->on_annotation_changed(*this, change);
}

void Annotation::check_not_notifying() const {
  TRACKSCOPE_CHECK(!notifying_, "an AnnotationObserver must not modify the annotation or its observers");
}

}  // namespace trackscope::core
