#pragma once
// AnnotationHistory: the undo/redo stack of an Annotation. Every step records, for each point it touched, the
// point's complete state before and after (the query point and its track, with keyframes and provenance), so
// undo and redo restore exactly what was there, bit for bit, whatever kind of edit it was (add, move, remove,
// correction, re-track merge, deletion of a track's future, import ...).
//
//   AnnotationHistory history(annotation);
//   history.apply("Move point 3", {3}, [&](Annotation& a) { (void)a.move(3, query); }, "drag-17");
//   history.apply(...same merge key...);     // folds into the step above (one undo for a whole drag)
//   history.close_merge();                   // the drag ended: the next edit starts a new step
//   history.undo();  history.redo();
//   bool unsaved = !history.is_clean();      // mark_clean() after a save
//
// Why here and not a QUndoStack in ui/: snapshots of core values make undo exact and testable without Qt,
// and one generic step type serves every edit (no command class per edit kind).
// Memory: a step holds copies of the touched tracks; the oldest steps are dropped beyond max_steps or
// max_bytes (HistoryOptions). A new step after undo drops the redo steps.
// Threads: not thread-safe; the thread that owns the Annotation (the GUI thread) uses its history.
// Ownership: the history refers to the annotation, which must outlive it. Changes made to the annotation
// behind the history's back are not undoable; undoing across them restores the recorded states of the
// touched points only.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tracking/annotation.h"

namespace trackscope::core {

/// A point's complete state; `point` empty = the point does not exist.
struct PointSnapshot {
  std::optional<QueryPoint> point;
  std::optional<PointTrack> track;
  bool operator==(const PointSnapshot&) const = default;
};

/// The state of point `id` in `annotation` now.
PointSnapshot snapshot_point(const Annotation& annotation, PointId id);
/// Makes point `id` look like `snapshot` (inserting, moving, removing, setting or clearing its track as needed).
void restore_point(Annotation& annotation, PointId id, const PointSnapshot& snapshot);

struct HistoryOptions {
  size_t max_steps = 500;
  size_t max_bytes = size_t{512} << 20;  // approximate bytes held by all steps

  Status check() const;
};

class AnnotationHistory {
 public:
  explicit AnnotationHistory(Annotation& annotation, HistoryOptions options = {});
  AnnotationHistory(const AnnotationHistory&) = delete;
  AnnotationHistory& operator=(const AnnotationHistory&) = delete;

  /// Runs `mutate` on the annotation as one undoable step named `label`. `touched` lists every point id the
  /// mutation may add, change or remove (an id about to be added is annotation.next_id()). Steps with an equal,
  /// non-empty `merge_key` that follow each other (no undo, redo or close_merge() in between) fold into one.
  /// A step that changed nothing is not recorded. Returns true when something changed.
  bool apply(const std::string& label, const std::vector<PointId>& touched,
             const std::function<void(Annotation&)>& mutate, const std::string& merge_key = {});

  /// Ends merging: the next apply() starts a new step even with the same merge key.
  void close_merge() { merge_open_ = false; }

  bool can_undo() const { return position_ > 0; }
  bool can_redo() const { return position_ < steps_.size(); }
  /// Label of the step undo() / redo() would revert / repeat ("" when none).
  std::string undo_label() const;
  std::string redo_label() const;
  /// Reverts the last step. Returns false when there is none.
  bool undo();
  /// Repeats the step undone last. Returns false when there is none.
  bool redo();

  /// Number of steps that can be undone / redone.
  size_t undo_count() const { return position_; }
  size_t redo_count() const { return steps_.size() - position_; }

  /// Forgets every step (a new video or project replaced the annotation); the state becomes clean.
  void clear();
  /// The current state is the saved one.
  void mark_clean();
  /// The current state is not the saved one although no step leads away from it (recovered edits).
  void mark_unsaved() { clean_position_.reset(); }
  /// True when the annotation is in the state of the last mark_clean() (or clear()).
  bool is_clean() const { return clean_position_ == position_; }
  /// Counts every change of the annotation's state through the history (apply, undo, redo); autosave
  /// compares it with the value it saved at.
  uint64_t revision() const { return revision_; }

  /// Approximate bytes held by the steps.
  size_t bytes() const { return bytes_; }

 private:
  struct Step {
    std::string label;
    std::string merge_key;
    std::map<PointId, std::pair<PointSnapshot, PointSnapshot>> changes;  // before, after
    size_t bytes = 0;
  };
  static size_t estimate_bytes(const Step& step);
  void trim();

  Annotation& annotation_;
  HistoryOptions options_;
  std::vector<Step> steps_;
  size_t position_ = 0;                       // steps_[0, position_) are done
  std::optional<size_t> clean_position_ = 0;  // empty: the clean state was dropped from the history
  bool merge_open_ = false;
  size_t bytes_ = 0;
  uint64_t revision_ = 0;
};

}  // namespace trackscope::core
