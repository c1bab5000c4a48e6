#pragma once
// AnnotationController: the correction loop and the reading aids of the workbench, wired in one place so that
// MainWindow stays a window. It owns the TrackQualityModel and the QualityStrip (which the window puts under the
// timeline; the controller keeps it aligned with the timeline's slider), and connects the actions:
//   Edit:      Undo / Redo (every edit through the editor's history), mark occluded / visible here, delete the
//              selected track's future / past;
//   Playback:  next / previous keyframe, next / previous suspicious frame (selected track, else every track);
//   Tracking:  re-track the selected point forward / backward / both ways from the keyframe on the shown frame,
//              merged by the chosen policy (Settings), and the forward-backward consistency check;
//   View:      the quality strip on or off.
//
//   auto* annotation = new AnnotationController(parts, tracking->service(), window);   // after the TrackingController
//   window->add_below_timeline(annotation->quality_strip());
//   connect(window, &MainWindow::video_opened, annotation, &AnnotationController::on_video_opened);
//   connect(annotation, &AnnotationController::seek_requested, window, &MainWindow::seek);
//
// It works with the window's parts (ui/workbench_parts.h), never with the window: seeking (a keyframe, a
// suspicious frame, a click in the strip) pauses the timeline and asks the window through seek_requested().
// "The shown frame" is the canvas's frame (the one the user sees and drags on). Messages go to the status bar.
// Threads: GUI thread only.

#include <QObject>
#include <QPointer>

#include <optional>

#include "core/tracking/track_edit.h"
#include "ui/workbench_parts.h"

namespace trackscope::ui {

class QualityStrip;
class TrackerService;
class TrackQualityModel;

class AnnotationController : public QObject {
  Q_OBJECT
 public:
  /// `service` may be null (a workbench without tracking): re-track and the consistency check then do nothing.
  AnnotationController(const WorkbenchParts& parts, TrackerService* service, QObject* parent);
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

  /// The window opened a video: the strip covers its frames.
  void on_video_opened();

 Q_SIGNALS:
  /// Show frame `index` (the timeline is paused already).
  void seek_requested(qint64 index);

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
  void seek(int64_t frame);

  WorkbenchParts parts_;
  // The watched slider, compared by identity in eventFilter: no part may be used there, since Qt still delivers
  // events to the filter while the MainWindow (and its parts) is being destroyed (UBSan saw it).
  // QObject pointers, cast with qobject_cast when used: a QPointer<QSlider> would downcast an object that is
  // already half destroyed.
  QPointer<QObject> watched_slider_;
  QPointer<QObject> timeline_widget_;
  QPointer<TrackerService> service_;
  TrackQualityModel* quality_ = nullptr;
  QualityStrip* strip_ = nullptr;
};

}  // namespace trackscope::ui
