#include "core/tracking/tracking_plan.h"

#include <algorithm>

#include "core/tracking/track_quality.h"

namespace trackscope::core {
namespace {

bool wanted(const std::vector<PointId>& ids, PointId id) {
  return ids.empty() || std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

const char* to_string(TrackingState state) {
  switch (state) {
    case TrackingState::idle: return "idle";
    case TrackingState::loading_model: return "loading_model";
    case TrackingState::tracking: return "tracking";
    case TrackingState::cancelling: return "cancelling";
  }
  return "?";
}

bool has_points_to_track(const Annotation& annotation, const std::vector<PointId>& ids) {
  if (ids.empty()) return !annotation.empty();
  return std::any_of(ids.begin(), ids.end(), [&](PointId id) { return annotation.find(id) != nullptr; });
}

size_t requested_point_count(const Annotation& annotation, const std::vector<PointId>& ids) {
  return ids.empty() ? annotation.size() : ids.size();
}

RetrackCheck check_retrack(const Annotation& annotation, const RetrackRequest& request, int64_t frame_count) {
  const QueryPoint* point = annotation.find(request.id);
  if (point == nullptr) return RetrackCheck::no_point;
  const PointTrack* track = annotation.track(request.id);
  const bool is_keyframe =
      request.keyframe == point->query.frame || (track != nullptr && track->is_keyframe(request.keyframe));
  if (!is_keyframe) return RetrackCheck::not_keyframe;
  if (frame_count > 0 && (request.keyframe < 0 || request.keyframe >= frame_count)) return RetrackCheck::outside_video;
  return RetrackCheck::ok;
}

std::optional<Query> retrack_query(const Annotation& annotation, PointId id, int64_t keyframe) {
  const QueryPoint* point = annotation.find(id);
  if (point == nullptr) return std::nullopt;
  if (keyframe == point->query.frame) return point->query;
  const PointTrack* track = annotation.track(id);
  return track != nullptr ? keyframe_query(*track, keyframe) : std::nullopt;
}

std::vector<PointId> consistency_candidates(const Annotation& annotation, const std::vector<PointId>& ids) {
  std::vector<PointId> candidates;
  for (const QueryPoint& point : annotation) {
    if (!wanted(ids, point.id)) continue;
    const PointTrack* track = annotation.track(point.id);
    if (track != nullptr && consistency_anchor(track->track)) candidates.push_back(point.id);
  }
  return candidates;
}

TrackRequest TrackingPlan::request() const {
  TrackRequest request;
  request.queries = queries;
  if (kind == TrackingJobKind::retrack) {
    request.first_frame = range.first_frame;
    request.end_frame = range.end_frame;
  }
  return request;
}

std::optional<TrackingPlan> plan_tracking_job(const Annotation& annotation, const JobRequest& job,
                                              int64_t frame_count) {
  TrackingPlan plan;
  plan.kind = job.kind;
  plan.range = {0, frame_count};
  switch (job.kind) {
    case TrackingJobKind::track:
      for (const QueryPoint& point : annotation) {
        if (!wanted(job.ids, point.id)) continue;
        plan.ids.push_back(point.id);
        plan.queries.push_back(point.query);
      }
      break;
    case TrackingJobKind::retrack: {
      const std::optional<Query> query = retrack_query(annotation, job.retrack.id, job.retrack.keyframe);
      if (!query) break;
      plan.retrack = job.retrack;
      plan.range = retrack_range(job.retrack.direction, job.retrack.keyframe, frame_count);
      plan.ids.push_back(job.retrack.id);
      plan.queries.push_back(*query);
      break;
    }
    case TrackingJobKind::consistency:
      for (PointId id : job.ids) {
        const PointTrack* track = annotation.track(id);
        const std::optional<Query> anchor = track != nullptr ? consistency_anchor(track->track) : std::nullopt;
        if (!anchor) continue;
        plan.ids.push_back(id);
        plan.queries.push_back(*anchor);
      }
      break;
  }
  if (plan.ids.empty()) return std::nullopt;
  return plan;
}

ResultStaleness result_staleness(const Annotation& annotation, const TrackingPlan& plan, size_t index) {
  const PointId id = plan.ids.at(index);
  const QueryPoint* point = annotation.find(id);
  if (point == nullptr) return ResultStaleness::point_removed;
  switch (plan.kind) {
    case TrackingJobKind::track:
      return point->query == plan.queries.at(index) ? ResultStaleness::current : ResultStaleness::query_changed;
    case TrackingJobKind::retrack: {
      // The keyframe must still be where it was when the job started, or the result answers an old question.
      const std::optional<Query> now = retrack_query(annotation, id, plan.retrack.keyframe);
      return now && *now == plan.queries.at(index) ? ResultStaleness::current : ResultStaleness::query_changed;
    }
    case TrackingJobKind::consistency:
      return annotation.track(id) != nullptr ? ResultStaleness::current : ResultStaleness::track_removed;
  }
  return ResultStaleness::current;
}

}  // namespace trackscope::core
