#pragma once
// AnnotationController: the correction loop and the reading aids of the workbench, wired in one place so that
// MainWindow stays a window. It owns the TrackQualityModel, puts the QualityStrip under the timeline (aligned with
// its slider), and connects the actions:
//   Edit:      Undo / Redo (every edit through the editor's history), mark occluded / visible here, delete the
//              selected track's future / past;
//   Playback:  next / previous keyframe, next / previous suspicious frame (selected track, else every track);
//   Tracking:  re-track the selected point forward / backward / both ways from the keyframe on the shown frame,
//              merged by the chosen policy (Settings), and the forward-backward consistency check;
//   View:      the quality strip on or off.
//
//   auto* annotation = new AnnotationController(window, tracking->service());   // after the TrackingController
//   annotation->quality_strip()->rows();
//
// "The shown frame" is the canvas's frame (the one the user sees and drags on). Messages go to the status bar.
// Threads: GUI thread only.

#include <QObject>
#include <QPointer>

#include <optional>

#include "core/tracking/track_edit.h"

namespace trackscope::ui {

class MainWindow;
class QualityStrip;
class TrackerService;
class TrackQualityModel;

class AnnotationController : public QObject {
  Q_OBJECT
 public:
  AnnotationController(MainWindow* window, TrackerService* service);
  ~AnnotationController() override;

  TrackQualityModel* quality() const { return quality_; }
  QualityStrip* quality_strip() const { return strip_; }

  /// Re-tracks the selected point from the shown frame (which must be one of its keyframes).
  bool retrack(core::RetrackDirection direction);
  core::MergePolicy merge_policy() const;
  void set_merge_policy(core::MergePolicy policy);
  void set_quality_strip_visible(bool visible);

  /// Seeks to the next (or previous) keyframe / suspicious frame of the selected track, or of every track when
  /// none is selected. Returns the frame, nullopt (with a status message) when there is none.
  std::optional<int64_t> go_to_keyframe(bool backward);
  std::optional<int64_t> go_to_suspicious(bool backward);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void connect_actions();
  void update_history_actions();
  void align_strip();
  void toggle_occluded();
  void delete_track(bool after);
  void message(const QString& text);
  int64_t shown_frame() const;

  MainWindow* window_ = nullptr;
  // The watched slider, compared by identity in eventFilter: the window's accessors must not be called there,
  // since Qt still delivers events to the filter while the MainWindow is being destroyed (UBSan saw it).
  // QObject pointers, cast with qobject_cast when used: a QPointer<QSlider> would downcast an object that is
  // already half destroyed.
  QPointer<QObject> watched_slider_;
  QPointer<QObject> timeline_widget_;
  QPointer<TrackerService> service_;
  TrackQualityModel* quality_ = nullptr;
  QualityStrip* strip_ = nullptr;
};

}  // namespace trackscope::ui
