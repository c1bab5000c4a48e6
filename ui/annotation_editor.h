#pragma once
// AnnotationEditor: the one way the UI edits the annotation (query points and their tracks) and the point
// selection. Widgets never modify core::Annotation directly; they call the editor, and every edit becomes a step
// of its undo history (core::AnnotationHistory: exact snapshots of the touched points), tracker results and
// re-tracking included. A drag is many move calls closed by finish_move(): one step.
//
//   AnnotationEditor editor(parent);
//   core::PointId id = editor.add_point({frame, x_px, y_px});   // adds and selects ("Add point 0")
//   editor.move_point(id, {frame, x2, y2});                       // during a drag: many calls ...
//   editor.finish_move(id);                                       // ... closed by one: one undo step
//   editor.move_estimate(id, 20, x3, y3);  editor.finish_move(id); // a correction on frame 20: a keyframe
//   editor.apply_retracked(id, result_track, core::MergePolicy::overwrite, provenance, "Re-track point 0 forward");
//   editor.undo();  editor.redo();
//
// Corrections: dragging a point on its query frame moves the query (and its track's estimate there); dragging
// its track's estimate on any other frame sets that estimate (visible, p = 0) and makes the frame a keyframe
// (core/tracking/track_edit.h). Tracker results are merged so that keyframes are kept exactly.
//
// Widgets that draw or list points observe editor.annotation() (core::AnnotationObserver) and keep the
// shared_ptr from observable_annotation(), so the model outlives them whatever order Qt destroys siblings in.
// Threads: GUI thread only.

#include <QObject>
#include <QString>

#include <memory>
#include <optional>

#include "core/io/project.h"
#include "core/io/track_formats.h"
#include "core/tracking/annotation.h"
#include "core/tracking/annotation_history.h"
#include "core/tracking/track_edit.h"

namespace trackscope::ui {

class AnnotationEditor : public QObject {
  Q_OBJECT
 public:
  explicit AnnotationEditor(QObject* parent);
  ~AnnotationEditor() override;

  const core::Annotation& annotation() const { return *annotation_; }
  /// For observers only (registration needs a mutable model): they keep this pointer so the model outlives
  /// them, and call nothing but add_observer/remove_observer and the const methods on it.
  std::shared_ptr<core::Annotation> observable_annotation() const { return annotation_; }
  const core::AnnotationHistory& history() const { return *history_; }

  /// Adds a query point and selects it. Returns its id. With `starts_drag` the add and the moves up to the
  /// next finish_move() are one undo step (click, then drag to adjust).
  core::PointId add_point(const core::Query& query, bool starts_drag = false);
  /// Moves a point's query (a drag calls this for every mouse move); its track's estimate on the query frame
  /// follows. Returns false for an unknown id.
  bool move_point(core::PointId id, const core::Query& query);
  /// Corrects the track of point `id` on `frame` (not its query frame) to (x_px, y_px): a keyframe. Part of the
  /// drag in progress. Returns false for an unknown id or a point without a track.
  bool move_estimate(core::PointId id, int64_t frame, double x_px, double y_px);
  /// Ends a drag of point `id`: the drag's moves become one undo step.
  void finish_move(core::PointId id);
  /// Removes a point; clears the selection if it was selected. Returns false for an unknown id.
  bool remove_point(core::PointId id);
  /// Removes the selected point; false if nothing is selected.
  bool remove_selected_point();
  /// Removes every point and forgets the undo history (a new video was opened).
  void clear();

  /// Attaches a tracker's result to point `id`: merged with its track (keyframes kept, MergePolicy::overwrite).
  /// Calls with the same non-empty `merge_key` (the partial results of one job) make one undo step.
  bool set_track(core::PointId id, core::Track track, core::TrackProvenance provenance, const QString& label = {},
                 const QString& merge_key = {});
  /// Merges a re-tracked result into point `id`'s track by `policy` (track_edit.h merge_retracked): one step.
  bool apply_retracked(core::PointId id, const core::Track& retracked, core::MergePolicy policy,
                       const core::TrackProvenance& provenance, const QString& label);
  /// Detaches the track of point `id`. Returns false if it had none.
  bool clear_track(core::PointId id);
  /// Marks point `id`'s estimate on `frame` occluded or visible by hand (a keyframe). False when not covered.
  bool set_visibility(core::PointId id, int64_t frame, bool visible);
  /// Deletes point `id`'s track after / before `frame` (frame kept). The whole track goes when nothing is left.
  bool delete_track_after(core::PointId id, int64_t frame);
  bool delete_track_before(core::PointId id, int64_t frame);
  /// Adds every track of `table` as a new point (new ids, the file's ids are not reused): one step. Returns the
  /// number of points added.
  int import_tracks(const core::io::TrackTable& table, const QString& label);

  /// Replaces everything with the project's points (ids, colours, tracks) and forgets the history; the state
  /// is clean when `clean` (an opened project), unsaved otherwise (a recovered one).
  void load(const core::io::Project& project, bool clean);

  bool undo();
  bool redo();
  bool can_undo() const { return history_->can_undo(); }
  bool can_redo() const { return history_->can_redo(); }
  QString undo_label() const;
  QString redo_label() const;
  /// The current state is the saved one.
  void mark_clean();
  bool is_clean() const { return history_->is_clean(); }
  /// Changes whenever the annotation changes through the editor (autosave compares it).
  uint64_t revision() const { return history_->revision() + load_count_; }

  /// Selects a point (nullopt: none). Ignores unknown ids. Emits selection_changed when it changes.
  void select_point(std::optional<core::PointId> id);
  std::optional<core::PointId> selected_point() const { return selected_; }

 Q_SIGNALS:
  /// The selected point's id, or -1 when nothing is selected.
  void selection_changed(int id);
  /// The undo/redo availability, their labels or the clean state may have changed.
  void history_changed();

 private:
  bool edit(const QString& label, core::PointId id, const std::function<void(core::Annotation&)>& mutate,
            const std::string& merge_key = {});
  bool edit_track(const QString& label, core::PointId id,
                  const std::function<std::optional<core::PointTrack>(const core::PointTrack&)>& change);
  std::string drag_key() const;
  void after_history_move();

  std::shared_ptr<core::Annotation> annotation_;
  std::unique_ptr<core::AnnotationHistory> history_;
  std::optional<core::PointId> selected_;
  uint64_t drag_counter_ = 0;
  uint64_t load_count_ = 0;
};

}  // namespace trackscope::ui
