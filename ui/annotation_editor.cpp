#include "ui/annotation_editor.h"

namespace trackscope::ui {

AnnotationEditor::AnnotationEditor(QObject* parent)
    : QObject(parent),
      annotation_(std::make_shared<core::Annotation>()),
      history_(std::make_unique<core::AnnotationHistory>(*annotation_)) {}

AnnotationEditor::~AnnotationEditor() = default;

bool AnnotationEditor::edit(const QString& label, core::PointId id,
                            const std::function<void(core::Annotation&)>& mutate, const std::string& merge_key) {
  const bool changed = history_->apply(label.toStdString(), {id}, mutate, merge_key);
  if (changed) Q_EMIT history_changed();
  return changed;
}

bool AnnotationEditor::edit_track(
    const QString& label, core::PointId id,
    const std::function<std::optional<core::PointTrack>(const core::PointTrack&)>& change) {
  const core::PointTrack* track = annotation_->track(id);
  if (track == nullptr) return false;
  const std::optional<core::PointTrack> changed = change(*track);
  return edit(label, id, [&](core::Annotation& a) {
    if (changed) {
      (void)a.set_track(id, *changed);
    } else {
      (void)a.clear_track(id);
    }
  });
}

std::string AnnotationEditor::drag_key() const { return "drag-" + std::to_string(drag_counter_); }

core::PointId AnnotationEditor::add_point(const core::Query& query, bool starts_drag) {
  const core::PointId id = annotation_->next_id();
  edit(
      tr("Add point %1").arg(id), id, [&](core::Annotation& a) { (void)a.add(query); },
      starts_drag ? drag_key() : std::string());
  select_point(id);
  return id;
}

bool AnnotationEditor::move_point(core::PointId id, const core::Query& query) {
  const core::QueryPoint* point = annotation_->find(id);
  if (point == nullptr) return false;
  edit(
      tr("Move point %1").arg(id), id,
      [&](core::Annotation& a) {
        // The query frame is a keyframe of the point's track: its estimate there follows the query (when the track
        // still covers that frame; a track whose past was deleted only learns the new query).
        std::optional<core::PointTrack> corrected;
        if (const core::PointTrack* track = a.track(id); track != nullptr && query.frame == track->track.query.frame) {
          if (track->track.covers(query.frame)) {
            corrected = core::with_correction(*track, query.frame, query.x_px, query.y_px);
          } else {
            corrected = *track;
            corrected->track.query = query;
          }
        }
        (void)a.move(id, query);
        if (corrected) (void)a.set_track(id, *corrected);
      },
      drag_key());
  return true;
}

bool AnnotationEditor::move_estimate(core::PointId id, int64_t frame, double x_px, double y_px) {
  const core::PointTrack* track = annotation_->track(id);
  if (track == nullptr) return false;
  const core::QueryPoint* point = annotation_->find(id);
  if (frame == point->query.frame) return move_point(id, {frame, x_px, y_px});
  edit(
      tr("Correct point %1 on frame %2").arg(id).arg(frame), id,
      [&](core::Annotation& a) { (void)a.set_track(id, core::with_correction(*a.track(id), frame, x_px, y_px)); },
      drag_key());
  return true;
}

void AnnotationEditor::finish_move(core::PointId /*id*/) {
  history_->close_merge();
  ++drag_counter_;
}

bool AnnotationEditor::remove_point(core::PointId id) {
  if (annotation_->find(id) == nullptr) return false;
  if (selected_ == id) select_point(std::nullopt);
  return edit(tr("Delete point %1").arg(id), id, [&](core::Annotation& a) { (void)a.remove(id); });
}

bool AnnotationEditor::remove_selected_point() { return selected_ && remove_point(*selected_); }

void AnnotationEditor::clear() {
  select_point(std::nullopt);
  annotation_->clear();
  history_->clear();
  Q_EMIT history_changed();
}

bool AnnotationEditor::set_track(core::PointId id, core::Track track, core::TrackProvenance provenance,
                                 const QString& label, const QString& merge_key) {
  if (annotation_->find(id) == nullptr) return false;
  const QString name = label.isEmpty() ? tr("Track point %1").arg(id) : label;
  edit(
      name, id,
      [&](core::Annotation& a) {
        const core::PointTrack* existing = a.track(id);
        (void)a.set_track(id, core::merge_retracked(existing ? std::optional(*existing) : std::nullopt, track,
                                                    core::MergePolicy::overwrite, provenance));
      },
      merge_key.toStdString());
  return true;
}

bool AnnotationEditor::apply_retracked(core::PointId id, const core::Track& retracked, core::MergePolicy policy,
                                       const core::TrackProvenance& provenance, const QString& label) {
  if (annotation_->find(id) == nullptr) return false;
  edit(label, id, [&](core::Annotation& a) {
    const core::PointTrack* existing = a.track(id);
    (void)a.set_track(
        id, core::merge_retracked(existing ? std::optional(*existing) : std::nullopt, retracked, policy, provenance));
  });
  return true;
}

bool AnnotationEditor::clear_track(core::PointId id) {
  if (annotation_->track(id) == nullptr) return false;
  return edit(tr("Delete the track of point %1").arg(id), id, [&](core::Annotation& a) { (void)a.clear_track(id); });
}

bool AnnotationEditor::set_visibility(core::PointId id, int64_t frame, bool visible) {
  const core::PointTrack* track = annotation_->track(id);
  if (track == nullptr || !track->track.covers(frame)) return false;
  const QString label = visible ? tr("Mark point %1 visible on frame %2") : tr("Mark point %1 occluded on frame %2");
  return edit_track(label.arg(id).arg(frame), id,
                    [&](const core::PointTrack& t) { return core::with_visibility(t, frame, visible); });
}

bool AnnotationEditor::delete_track_after(core::PointId id, int64_t frame) {
  return edit_track(tr("Delete the track of point %1 after frame %2").arg(id).arg(frame), id,
                    [&](const core::PointTrack& t) { return core::without_frames_after(t, frame); });
}

bool AnnotationEditor::delete_track_before(core::PointId id, int64_t frame) {
  return edit_track(tr("Delete the track of point %1 before frame %2").arg(id).arg(frame), id,
                    [&](const core::PointTrack& t) { return core::without_frames_before(t, frame); });
}

int AnnotationEditor::import_tracks(const core::io::TrackTable& table, const QString& label) {
  std::vector<core::PointId> ids;
  for (size_t i = 0; i < table.tracks.size(); ++i)
    ids.push_back(annotation_->next_id() + static_cast<core::PointId>(i));
  int added = 0;
  const bool changed = history_->apply(label.toStdString(), ids, [&](core::Annotation& a) {
    for (const core::io::TableTrack& entry : table.tracks) {
      const core::PointId id = a.add(entry.query);
      core::PointTrack track = entry.track;
      track.track.query = entry.query;
      std::erase(track.keyframes, entry.query.frame);
      (void)a.set_track(id, std::move(track));
      ++added;
    }
  });
  if (changed) Q_EMIT history_changed();
  return added;
}

void AnnotationEditor::load(const core::io::Project& project, bool clean) {
  select_point(std::nullopt);
  core::io::load_into(project, *annotation_);
  history_->clear();
  ++load_count_;
  if (!clean) history_->mark_unsaved();  // recovered edits: unsaved until the next save
  Q_EMIT history_changed();
  if (project.view.selected_point) select_point(*project.view.selected_point);
}

bool AnnotationEditor::undo() {
  if (!history_->undo()) return false;
  after_history_move();
  return true;
}

bool AnnotationEditor::redo() {
  if (!history_->redo()) return false;
  after_history_move();
  return true;
}

void AnnotationEditor::after_history_move() {
  if (selected_ && annotation_->find(*selected_) == nullptr) select_point(std::nullopt);
  Q_EMIT history_changed();
}

QString AnnotationEditor::undo_label() const { return QString::fromStdString(history_->undo_label()); }
QString AnnotationEditor::redo_label() const { return QString::fromStdString(history_->redo_label()); }

void AnnotationEditor::mark_clean() {
  history_->mark_clean();
  Q_EMIT history_changed();
}

void AnnotationEditor::select_point(std::optional<core::PointId> id) {
  if (id && annotation_->find(*id) == nullptr) return;
  if (id == selected_) return;
  selected_ = id;
  Q_EMIT selection_changed(id.value_or(-1));
}

}  // namespace trackscope::ui
