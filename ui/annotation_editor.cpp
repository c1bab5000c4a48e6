#include "ui/annotation_editor.h"

namespace trackscope::ui {

AnnotationEditor::AnnotationEditor(QObject* parent)
    : QObject(parent), annotation_(std::make_shared<core::Annotation>()) {}

core::PointId AnnotationEditor::add_point(const core::Query& query) {
  const core::PointId id = annotation_->add(query);
  select_point(id);
  return id;
}

bool AnnotationEditor::move_point(core::PointId id, const core::Query& query) { return annotation_->move(id, query); }

void AnnotationEditor::finish_move(core::PointId /*id*/) {}

bool AnnotationEditor::remove_point(core::PointId id) {
  if (selected_ == id) select_point(std::nullopt);
  return annotation_->remove(id);
}

bool AnnotationEditor::remove_selected_point() { return selected_ && remove_point(*selected_); }

void AnnotationEditor::clear() {
  select_point(std::nullopt);
  annotation_->clear();
}

bool AnnotationEditor::set_track(core::PointId id, core::Track track, core::TrackProvenance provenance) {
  return annotation_->set_track(id, std::move(track), std::move(provenance));
}

bool AnnotationEditor::clear_track(core::PointId id) { return annotation_->clear_track(id); }

void AnnotationEditor::select_point(std::optional<core::PointId> id) {
  if (id && annotation_->find(*id) == nullptr) return;
  if (id == selected_) return;
  selected_ = id;
  Q_EMIT selection_changed(id.value_or(-1));
}

}  // namespace trackscope::ui
