#include "ui/tracking/track_quality_model.h"

namespace trackscope::ui {

TrackQualityModel::TrackQualityModel(std::shared_ptr<core::Annotation> annotation, core::QualityOptions options,
                                     QObject* parent)
    : QObject(parent), annotation_(std::move(annotation)), fallback_(options), options_(options) {
  annotation_->add_observer(this);
}

TrackQualityModel::~TrackQualityModel() { annotation_->remove_observer(this); }

void TrackQualityModel::set_options(const core::QualityOptions& options, std::string source) {
  options_source_ = std::move(source);
  const core::QualityOptions& o = options_;
  if (o.uncertain_p_far == options.uncertain_p_far && o.uncertain_p_occluded == options.uncertain_p_occluded &&
      o.outlier_factor == options.outlier_factor && o.outlier_min_px == options.outlier_min_px &&
      o.consistency_threshold_px == options.consistency_threshold_px) {
    return;
  }
  options_ = options;
  cache_.clear();
  Q_EMIT changed();
}

void TrackQualityModel::use_model(const core::TrackerDescription& tracker) {
  core::CalibratedQualityOptions calibrated =
      core::quality_options_for_weights(tracker.weights_path, tracker.weights_sha256, fallback_);
  set_options(calibrated.options, std::move(calibrated.source));
}

const core::TrackQuality* TrackQualityModel::quality(core::PointId id) const {
  const core::PointTrack* track = annotation_->track(id);
  if (track == nullptr) return nullptr;
  auto cached = cache_.find(id);
  if (cached == cache_.end()) {
    auto distances = consistency_.find(id);
    cached =
        cache_
            .emplace(id, core::assess_track(*track, options_,
                                            distances == consistency_.end() ? std::vector<float>() : distances->second))
            .first;
  }
  return &cached->second;
}

std::vector<core::PointId> TrackQualityModel::selected_ids(const std::vector<core::PointId>& ids) const {
  if (!ids.empty()) return ids;
  std::vector<core::PointId> all;
  for (const core::QueryPoint& point : *annotation_) all.push_back(point.id);
  return all;
}

std::optional<int64_t> TrackQualityModel::next_suspicious_frame(const std::vector<core::PointId>& ids, int64_t frame,
                                                                bool backward) const {
  std::optional<int64_t> best;
  for (core::PointId id : selected_ids(ids)) {
    const core::TrackQuality* cues = quality(id);
    if (cues == nullptr) continue;
    const std::optional<int64_t> next = core::next_flagged_frame(*cues, frame, backward);
    if (next && (!best || (backward ? *next > *best : *next < *best))) best = next;
  }
  return best;
}

std::optional<int64_t> TrackQualityModel::next_keyframe(const std::vector<core::PointId>& ids, int64_t frame,
                                                        bool backward) const {
  std::optional<int64_t> best;
  for (core::PointId id : selected_ids(ids)) {
    const core::QueryPoint* point = annotation_->find(id);
    if (point == nullptr) continue;
    core::PointTrack track;
    if (const core::PointTrack* attached = annotation_->track(id)) track = *attached;
    track.track.query = point->query;  // an untracked point's query frame is its one keyframe
    const std::optional<int64_t> next = core::next_keyframe(track, frame, backward);
    if (next && (!best || (backward ? *next > *best : *next < *best))) best = next;
  }
  return best;
}

void TrackQualityModel::on_annotation_changed(const core::Annotation& /*annotation*/,
                                              const core::AnnotationChange& change) {
  switch (change.kind) {
    case core::AnnotationChangeKind::cleared:
      cache_.clear();
      consistency_.clear();
      break;
    case core::AnnotationChangeKind::removed:
      cache_.erase(change.before.id);
      consistency_.erase(change.before.id);
      break;
    case core::AnnotationChangeKind::added: cache_.erase(change.after.id); break;
    case core::AnnotationChangeKind::moved:
    case core::AnnotationChangeKind::track_changed:
      cache_.erase(change.after.id);
      consistency_.erase(change.after.id);  // measured on the old track
      break;
  }
  Q_EMIT changed();
}

void TrackQualityModel::set_consistency(int id, const QList<float>& distance_px) {
  const core::PointTrack* track = annotation_->track(id);
  if (track == nullptr || static_cast<size_t>(distance_px.size()) != track->track.points.size()) return;
  consistency_[id] = std::vector<float>(distance_px.begin(), distance_px.end());
  cache_.erase(id);
  Q_EMIT changed();
}

}  // namespace trackscope::ui
