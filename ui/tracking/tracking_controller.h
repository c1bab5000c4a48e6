#pragma once
// TrackingController: everything about tracking in the workbench window, wired in one place so that
// MainWindow stays a window. It owns the TrackerService (tracker cache, the job), the TelemetryMonitor of the
// active device, and creates the tracking widgets: the tracking toolbar (Track, Cancel, model chooser, trail
// lengths, occluded toggle) and the performance dock (live stage charts, history, telemetry, device and
// precision selectors, comparison), which the window places, and the status-bar progress with Cancel and
// View > Tracks, which it adds to the status bar and the menu itself. It works with the window's parts
// (ui/workbench_parts.h), never with the window.
//
//   TrackingOptions options;                        // from MainWindowOptions (app/ injects the factories)
//   options.tracker_factory = gpu-side factory;     // may be null: Track then explains there is no tracker
//   auto* tracking = new TrackingController(parts, std::move(options), window);
//   window->addToolBar(tracking->toolbar());  window->addDockWidget(area, tracking->performance_dock());
//   connect(window, &MainWindow::video_opened, tracking, &TrackingController::on_video_opened);
//   connect(tracking, &TrackingController::error, window, &MainWindow::report_error);
//   ...
//   tracking->shutdown();                           // ~MainWindow: before any widget is destroyed
//
// Flow: Track -> service job (worker thread) -> partial and final tracks attached to the points through the
// AnnotationEditor -> canvas and point list repaint; the dock pulls the live stage samples and the telemetry
// snapshot with its 10 Hz timer; each finished run becomes a Profile entry of the dock (history, comparison).
// Device and precision requests of the dock go to the service (which cancels a running job first); errors go
// out through error().
// Threads: GUI thread only.

#include <QObject>

#include <chrono>
#include <memory>

#include "core/perf/telemetry.h"
#include "core/tracking/point_tracker.h"
#include "ui/tracking/telemetry_monitor.h"
#include "ui/tracking/track_overlay.h"
#include "ui/tracking/tracker_service.h"
#include "ui/workbench_parts.h"

class QWidgetAction;

namespace trackscope::ui {

class PerformanceDock;
class TrackingStatusWidget;
class TrackingToolbar;
class TrailLengthEditor;

struct TrackingOptions {
  std::unique_ptr<core::TrackerFactory> tracker_factory;  // null: no tracker in this build
  TelemetrySourceFactory telemetry_factory;               // empty: CPU telemetry only
  VideoOpenerFactory video_opener;                        // empty: core::open_video_file
  core::TrackerOptions tracker;                           // initial model / device / precision
  std::chrono::milliseconds apply_slice{15};              // TrackerServiceOptions::apply_slice
};

class TrackingController : public QObject {
  Q_OBJECT
 public:
  TrackingController(const WorkbenchParts& parts, TrackingOptions options, QObject* parent);
  ~TrackingController() override;

  /// Cancels and joins the job, stops telemetry and detaches the dock's providers. Idempotent.
  void shutdown();

  /// Tracks every point / the selected point (the Track actions).
  void track_all();
  void track_selected();
  /// The window opened the video at `path` (the session knows its frame count): the next job tracks over it.
  void on_video_opened(const QString& path);

  /// Changes how tracks are drawn: canvas, controls and settings follow.
  void set_track_overlay(const TrackOverlayOptions& options);
  const TrackOverlayOptions& track_overlay() const { return overlay_; }

  TrackerService* service() const { return service_; }
  TelemetryMonitor& telemetry() const { return *telemetry_; }
  PerformanceDock* performance_dock() const { return dock_; }
  TrackingToolbar* toolbar() const { return toolbar_; }
  TrackingStatusWidget* status_widget() const { return status_; }
  /// The trail editor inside View > Tracks.
  TrailLengthEditor* menu_trail_editor() const { return menu_trail_; }

 Q_SIGNALS:
  /// A tracking error for the user (the window's one error path).
  void error(const QString& title, const QString& message);

 private:
  void build_widgets();
  void connect_service();
  void connect_dock();
  void connect_parts();
  void show_message(const QString& text, int timeout_ms);
  void on_state_changed();
  void on_selection_changed();
  void on_run_completed(const CompletedRun& run);

  WorkbenchParts parts_;
  TrackerService* service_ = nullptr;
  std::unique_ptr<TelemetryMonitor> telemetry_;
  PerformanceDock* dock_ = nullptr;
  TrackingToolbar* toolbar_ = nullptr;
  TrackingStatusWidget* status_ = nullptr;
  TrailLengthEditor* menu_trail_ = nullptr;
  QWidgetAction* menu_trail_action_ = nullptr;
  TrackOverlayOptions overlay_;
  core::HostInfo host_;
  double run_start_s_ = 0.0;  // telemetry clock at the start of the running job
  bool shut_down_ = false;
};

}  // namespace trackscope::ui
