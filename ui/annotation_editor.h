#pragma once
// AnnotationEditor: the one way the UI edits the annotation (the query points) and the point selection.
// Widgets never modify core::Annotation directly; they call the editor, so that the undo stack of issue 6
// can turn each call into an undoable command in one place (a drag is move_point() calls closed by
// finish_move(), which becomes one merged command).
//
//   AnnotationEditor editor(parent);
//   core::PointId id = editor.add_point({frame, x_px, y_px});   // adds and selects
//   editor.move_point(id, {frame, x2, y2});                       // during a drag: many calls ...
//   editor.finish_move(id);                                       // ... closed by one
//   editor.remove_selected_point();
//
// Widgets that draw or list points observe editor.annotation() (core::AnnotationObserver) and keep the
// shared_ptr from observable_annotation(), so the model outlives them whatever order Qt destroys siblings in.
// Threads: GUI thread only.

#include <QObject>

#include <memory>
#include <optional>

#include "core/tracking/annotation.h"

namespace trackscope::ui {

class AnnotationEditor : public QObject {
  Q_OBJECT
 public:
  explicit AnnotationEditor(QObject* parent);

  const core::Annotation& annotation() const { return *annotation_; }
  /// For observers only (registration needs a mutable model): they keep this pointer so the model outlives
  /// them, and call nothing but add_observer/remove_observer and the const methods on it.
  std::shared_ptr<core::Annotation> observable_annotation() const { return annotation_; }

  /// Adds a query point and selects it. Returns its id.
  core::PointId add_point(const core::Query& query);
  /// Moves a point (a drag calls this for every mouse move). Returns false for an unknown id.
  bool move_point(core::PointId id, const core::Query& query);
  /// Ends a drag of point `id` (the seam for merging a drag into one undo step).
  void finish_move(core::PointId id);
  /// Removes a point; clears the selection if it was selected. Returns false for an unknown id.
  bool remove_point(core::PointId id);
  /// Removes the selected point; false if nothing is selected.
  bool remove_selected_point();
  /// Removes every point (a new video was opened).
  void clear();

  /// Attaches a tracker's result to point `id` (replacing its track). The tracking service calls this for
  /// partial and final results. Returns false for an unknown id.
  bool set_track(core::PointId id, core::Track track, core::TrackProvenance provenance);
  /// Detaches the track of point `id`. Returns false if it had none.
  bool clear_track(core::PointId id);

  /// Selects a point (nullopt: none). Ignores unknown ids. Emits selection_changed when it changes.
  void select_point(std::optional<core::PointId> id);
  std::optional<core::PointId> selected_point() const { return selected_; }

 Q_SIGNALS:
  /// The selected point's id, or -1 when nothing is selected.
  void selection_changed(int id);

 private:
  std::shared_ptr<core::Annotation> annotation_;
  std::optional<core::PointId> selected_;
};

}  // namespace trackscope::ui
