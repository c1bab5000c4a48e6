#include "core/tracking/annotation_history.h"

#include <algorithm>

namespace trackscope::core {

PointSnapshot snapshot_point(const Annotation& annotation, PointId id) {
  PointSnapshot snapshot;
  if (const QueryPoint* point = annotation.find(id)) snapshot.point = *point;
  if (const PointTrack* track = annotation.track(id)) snapshot.track = *track;
  return snapshot;
}

void restore_point(Annotation& annotation, PointId id, const PointSnapshot& snapshot) {
  const QueryPoint* current = annotation.find(id);
  if (!snapshot.point) {
    if (current != nullptr) (void)annotation.remove(id);
    return;
  }
  TRACKSCOPE_CHECK(snapshot.point->id == id, "a snapshot restores the point it was taken of");
  if (current == nullptr) {
    annotation.insert(*snapshot.point);
  } else if (current->colour_index != snapshot.point->colour_index) {
    // Colours never change through edits; a different colour means another point took this id's place.
    (void)annotation.remove(id);
    annotation.insert(*snapshot.point);
  } else if (!(current->query == snapshot.point->query)) {
    (void)annotation.move(id, snapshot.point->query);
  }
  const PointTrack* track = annotation.track(id);
  if (snapshot.track) {
    if (track == nullptr || !(*track == *snapshot.track)) (void)annotation.set_track(id, *snapshot.track);
  } else if (track != nullptr) {
    (void)annotation.clear_track(id);
  }
}

Status HistoryOptions::check() const {
  if (max_steps == 0) return invalid_argument("the undo history needs room for at least one step");
  return {};
}

AnnotationHistory::AnnotationHistory(Annotation& annotation, HistoryOptions options)
    : annotation_(annotation), options_(options) {
  const Status valid = options_.check();
  TRACKSCOPE_CHECK(valid.ok(), valid.message());
}

bool AnnotationHistory::apply(const std::string& label, const std::vector<PointId>& touched,
                              const std::function<void(Annotation&)>& mutate, const std::string& merge_key) {
  Step step;
  step.label = label;
  step.merge_key = merge_key;
  for (PointId id : touched) step.changes.emplace(id, std::make_pair(snapshot_point(annotation_, id), PointSnapshot{}));
  mutate(annotation_);
  for (auto it = step.changes.begin(); it != step.changes.end();) {
    it->second.second = snapshot_point(annotation_, it->first);
    it = it->second.first == it->second.second ? step.changes.erase(it) : std::next(it);
  }
  if (step.changes.empty()) return false;
  ++revision_;

  const bool merge = merge_open_ && !merge_key.empty() && position_ == steps_.size() && position_ > 0 &&
                     steps_.back().merge_key == merge_key && clean_position_ != position_;
  if (merge) {
    Step& top = steps_.back();
    bytes_ -= top.bytes;
    for (auto& [id, change] : step.changes) {
      auto existing = top.changes.find(id);
      if (existing == top.changes.end()) {
        top.changes.emplace(id, std::move(change));
      } else {
        existing->second.second = std::move(change.second);
      }
    }
    std::erase_if(top.changes, [](const auto& entry) { return entry.second.first == entry.second.second; });
    if (top.changes.empty()) {  // the merged edits cancelled out (a drag back to where it started)
      steps_.pop_back();
      --position_;
      merge_open_ = false;
      return true;
    }
    top.bytes = estimate_bytes(top);
    bytes_ += top.bytes;
    trim();
    return true;
  }

  // A new step drops the redo steps (and a clean state among them).
  for (size_t i = position_; i < steps_.size(); ++i) bytes_ -= steps_[i].bytes;
  steps_.resize(position_);
  if (clean_position_ && *clean_position_ > position_) clean_position_.reset();
  step.bytes = estimate_bytes(step);
  bytes_ += step.bytes;
  steps_.push_back(std::move(step));
  position_ = steps_.size();
  merge_open_ = !merge_key.empty();
  trim();
  return true;
}

std::string AnnotationHistory::undo_label() const { return can_undo() ? steps_[position_ - 1].label : std::string(); }

std::string AnnotationHistory::redo_label() const { return can_redo() ? steps_[position_].label : std::string(); }

bool AnnotationHistory::undo() {
  if (!can_undo()) return false;
  merge_open_ = false;
  const Step& step = steps_[--position_];
  for (const auto& [id, change] : step.changes) restore_point(annotation_, id, change.first);
  ++revision_;
  return true;
}

bool AnnotationHistory::redo() {
  if (!can_redo()) return false;
  merge_open_ = false;
  const Step& step = steps_[position_++];
  for (const auto& [id, change] : step.changes) restore_point(annotation_, id, change.second);
  ++revision_;
  return true;
}

void AnnotationHistory::clear() {
  steps_.clear();
  position_ = 0;
  clean_position_ = 0;
  merge_open_ = false;
  bytes_ = 0;
  ++revision_;
}

void AnnotationHistory::mark_clean() {
  clean_position_ = position_;
  merge_open_ = false;  // an edit after a save must not fold into a step from before it
}

size_t AnnotationHistory::estimate_bytes(const Step& step) {
  size_t bytes = sizeof(Step) + step.label.size() + step.merge_key.size();
  for (const auto& [id, change] : step.changes) {
    for (const PointSnapshot* snapshot : {&change.first, &change.second}) {
      bytes += sizeof(PointSnapshot);
      if (snapshot->track) {
        bytes += snapshot->track->track.points.size() * sizeof(TrackPoint) +
                 snapshot->track->keyframes.size() * sizeof(int64_t) + snapshot->track->provenance.model.size();
      }
    }
  }
  return bytes;
}

void AnnotationHistory::trim() {
  // Drop the oldest steps, but never the one just done (position_ - 1).
  size_t drop = 0;
  size_t bytes = bytes_;
  while (drop + 1 < position_ && (steps_.size() - drop > options_.max_steps || bytes > options_.max_bytes)) {
    bytes -= steps_[drop].bytes;
    ++drop;
  }
  if (drop == 0) return;
  steps_.erase(steps_.begin(), steps_.begin() + static_cast<std::ptrdiff_t>(drop));
  position_ -= drop;
  bytes_ = bytes;
  if (clean_position_) {
    if (*clean_position_ < drop) {
      clean_position_.reset();
    } else {
      *clean_position_ -= drop;
    }
  }
}

}  // namespace trackscope::core
