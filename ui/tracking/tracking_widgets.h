#pragma once
// The tracking controls of the workbench window:
//  * TrailLengthEditor: two spin boxes, frames of trail before and after the shown frame (in the tracking
//    toolbar and in View > Tracks);
//  * TrackingToolbar: Track, Track Selected and Cancel (the window's actions), the model chooser (default /
//    small / base / a weights file...), the trail lengths and the occluded-estimates toggle;
//  * TrackingStatusWidget: the status-bar progress of a running job (phase, progress bar, Cancel).
// They only show state and emit requests; TrackingController connects them to the TrackerService.
// Threads: GUI thread only.

#include <QToolBar>
#include <QWidget>

#include "ui/tracking/track_overlay.h"

class QAction;
class QComboBox;
class QLabel;
class QProgressBar;
class QSpinBox;
class QToolButton;

namespace trackscope::ui {

class TrailLengthEditor : public QWidget {
  Q_OBJECT
 public:
  explicit TrailLengthEditor(QWidget* parent);
  /// Shows the lengths without emitting trail_changed.
  void set_lengths(int before_frames, int after_frames);
  QSpinBox* before() const { return before_; }
  QSpinBox* after() const { return after_; }

 Q_SIGNALS:
  void trail_changed(int before_frames, int after_frames);

 private:
  QSpinBox* before_ = nullptr;
  QSpinBox* after_ = nullptr;
};

class TrackingToolbar : public QToolBar {
  Q_OBJECT
 public:
  /// The actions are the window's (their shortcuts stay window-wide); `show_occluded` is a checkable toggle.
  TrackingToolbar(QAction* track, QAction* track_selected, QAction* cancel, QAction* show_occluded, QWidget* parent);

  /// Selects `model` in the chooser ("default", "small", "base" or a file path, added if new) without a signal.
  void set_model(const QString& model);
  QString model() const;
  QComboBox* model_chooser() const { return models_; }
  TrailLengthEditor* trail_editor() const { return trail_; }

 Q_SIGNALS:
  /// The user chose a model: "default", "small", "base" or a weights file path.
  void model_requested(const QString& model);

 private:
  void on_model_activated(int index);
  QComboBox* models_ = nullptr;
  TrailLengthEditor* trail_ = nullptr;
  QString shown_model_;
};

class TrackingStatusWidget : public QWidget {
  Q_OBJECT
 public:
  TrackingStatusWidget(QAction* cancel, QWidget* parent);
  /// Shows a running job (fraction < 0: busy indicator, e.g. while the model loads).
  void show_progress(double fraction, const QString& phase);
  void finish();
  QProgressBar* progress_bar() const { return progress_; }

 private:
  QLabel* phase_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QToolButton* cancel_ = nullptr;
};

}  // namespace trackscope::ui
