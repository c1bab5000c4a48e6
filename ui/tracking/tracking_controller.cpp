#include "ui/tracking/tracking_controller.h"

#include <QAction>
#include <QMenu>
#include <QSignalBlocker>
#include <QStatusBar>
#include <QWidgetAction>

#include "core/log.h"
#include "ui/annotation_editor.h"
#include "ui/frame_server_factory.h"
#include "ui/perf/device_selector.h"
#include "ui/perf/performance_dock.h"
#include "ui/point_list_panel.h"
#include "ui/settings.h"
#include "ui/timeline.h"
#include "ui/tracking/tracking_widgets.h"
#include "ui/video_canvas.h"
#include "ui/video_session.h"
#include "ui/workbench_actions.h"

namespace trackscope::ui {

namespace {

QString qstring(const std::string& text) { return QString::fromStdString(text); }

}  // namespace

TrackingController::TrackingController(const WorkbenchParts& parts, TrackingOptions options, QObject* parent)
    : QObject(parent),
      parts_(parts),
      telemetry_(std::make_unique<TelemetryMonitor>(std::move(options.telemetry_factory))),
      host_(core::probe_host_info()) {
  TrackerServiceOptions service_options;
  service_options.tracker = options.tracker;
  service_options.video_opener = std::move(options.video_opener);
  service_options.apply_slice = options.apply_slice;
  service_ = new TrackerService(std::move(options.tracker_factory), parts_.editor, std::move(service_options), this);
  telemetry_->set_device(service_->selection().device);
  build_widgets();
  connect_service();
  connect_dock();
  connect_parts();
  overlay_ = parts_.settings->track_overlay_options();
  set_track_overlay(overlay_);
  on_selection_changed();
  on_state_changed();
}

TrackingController::~TrackingController() { shutdown(); }

void TrackingController::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  service_->shutdown();
  telemetry_->stop();
  // The dock's timer must not pull from a controller that is going away.
  dock_->set_telemetry_provider({});
  dock_->set_live_run_provider({});
}

void TrackingController::build_widgets() {
  const WorkbenchActions& actions = *parts_.actions;
  // The toolbar and the dock are placed by the window (addToolBar, addDockWidget); they are the window's children
  // from the start, so that nothing leaks where a caller does not place them.
  toolbar_ = new TrackingToolbar(actions.track, actions.track_selected, actions.cancel_tracking, actions.show_occluded,
                                 parts_.dialog_parent);

  menu_trail_ = new TrailLengthEditor(nullptr);
  menu_trail_->setObjectName("menu_trail_editor");
  menu_trail_action_ = new QWidgetAction(this);
  menu_trail_action_->setDefaultWidget(menu_trail_);  // owns it
  actions.tracks_menu->addAction(menu_trail_action_);

  // A permanent widget: temporary status messages would hide a normal one.
  status_ = new TrackingStatusWidget(actions.cancel_tracking, parts_.status_bar);
  parts_.status_bar->insertPermanentWidget(0, status_);

  dock_ = new PerformanceDock(parts_.dialog_parent);
  actions.panels_menu->addAction(toolbar_->toggleViewAction());
  actions.panels_menu->addAction(dock_->toggleViewAction());
}

void TrackingController::connect_service() {
  connect(service_, &TrackerService::state_changed, this, &TrackingController::on_state_changed);
  connect(service_, &TrackerService::selection_changed, this, &TrackingController::on_selection_changed);
  connect(service_, &TrackerService::run_completed, this, &TrackingController::on_run_completed);
  connect(service_, &TrackerService::damaged_frames_found, this, [this](const QList<qint64>& indices) {
    parts_.timeline->add_damaged_frames(std::vector<int64_t>(indices.begin(), indices.end()));
  });
  connect(service_, &TrackerService::job_started, this, [this](int points, qint64 /*frames*/) {
    run_start_s_ = telemetry_->now_s();
    status_->show_progress(0.0, tr("Tracking %n point(s)", nullptr, points));
  });
  connect(service_, &TrackerService::progress_changed, this, [this](double fraction, const QString& phase) {
    if (service_->state() == TrackingState::tracking)
      status_->show_progress(fraction, phase.isEmpty() ? tr("Tracking") : phase);
  });
  connect(service_, &TrackerService::tracks_applied, this, [this](int done, int total) {
    show_message(tr("%1 of %2 tracks done").arg(done).arg(total), kStatusMessageMs);
  });
  connect(service_, &TrackerService::job_finished, this, [this](bool /*completed*/, const QString& message) {
    if (service_->state() == TrackingState::idle) status_->finish();
    show_message(message, kStatusMessageMs);
  });
  connect(service_, &TrackerService::tracker_ready, this, [this](const QString& description) {
    show_message(tr("Model ready: %1").arg(description), kStatusMessageMs);
  });
  connect(service_, &TrackerService::message, this,
          [this](const QString& text) { show_message(text, kStatusMessageMs); });
  // The mode stays in the tracking status's tooltip while the job runs; the status bar shows it for a while.
  connect(service_, &TrackerService::plan_chosen, this, [this](const QString& headline) {
    status_->setToolTip(headline);
    show_message(tr("Tracking mode: %1").arg(headline), 4 * kStatusMessageMs);
  });
  connect(service_, &TrackerService::error, this, &TrackingController::error);
}

void TrackingController::connect_dock() {
  const TrackerKey& selection = service_->selection();
  dock_->set_devices(service_->devices(), service_->runtime(), selection.device);
  dock_->set_current_precision(selection.precision);
  // Pulled by the dock's one 10 Hz timer: copies of mutex-protected snapshots, never a wait on the tracker.
  dock_->set_telemetry_provider([this] { return telemetry_->snapshot(); });
  dock_->set_live_run_provider([this] { return service_->live_snapshot(); });
  DeviceSelector* selector = dock_->device_selector();
  connect(selector, &DeviceSelector::device_requested, this,
          [this](const core::DeviceId& id) { service_->set_device(id); });
  connect(selector, &DeviceSelector::precision_requested, this,
          [this](core::Precision precision) { service_->set_precision(precision); });
}

void TrackingController::connect_parts() {
  const WorkbenchActions& actions = *parts_.actions;
  connect(actions.track, &QAction::triggered, this, &TrackingController::track_all);
  connect(actions.track_selected, &QAction::triggered, this, &TrackingController::track_selected);
  connect(actions.cancel_tracking, &QAction::triggered, service_, &TrackerService::cancel);
  connect(actions.show_tracks, &QAction::toggled, this, [this](bool on) {
    TrackOverlayOptions options = overlay_;
    options.show_tracks = on;
    set_track_overlay(options);
  });
  connect(actions.show_occluded, &QAction::toggled, this, [this](bool on) {
    TrackOverlayOptions options = overlay_;
    options.show_occluded = on;
    set_track_overlay(options);
  });
  connect(actions.colour_by_direction, &QAction::toggled, this, [this](bool on) {
    TrackOverlayOptions options = overlay_;
    options.colouring = on ? TrackColouring::motion_direction : TrackColouring::per_track;
    set_track_overlay(options);
  });
  auto trail_changed = [this](int before_frames, int after_frames) {
    TrackOverlayOptions options = overlay_;
    options.trail_before_frames = before_frames;
    options.trail_after_frames = after_frames;
    set_track_overlay(options);
  };
  connect(toolbar_->trail_editor(), &TrailLengthEditor::trail_changed, this, trail_changed);
  connect(menu_trail_, &TrailLengthEditor::trail_changed, this, trail_changed);
  connect(toolbar_, &TrackingToolbar::model_requested, service_, &TrackerService::set_model);

  connect(parts_.session, &VideoSession::frame_ready, this, [this](const core::FramePtr& frame) {
    if (frame) parts_.point_list->model()->set_current_frame(frame->index);
  });
}

void TrackingController::on_video_opened(const QString& path) {
  service_->set_video(path_from_qstring(path), parts_.session->frame_count());
}

void TrackingController::show_message(const QString& text, int timeout_ms) {
  parts_.status_bar->showMessage(text, timeout_ms);
}

void TrackingController::track_all() { service_->track({}); }

void TrackingController::track_selected() {
  const std::optional<core::PointId> selected = parts_.editor->selected_point();
  if (!selected) {
    show_message(tr("Select a point first (click it, or pick it in the point list)"), kStatusMessageMs);
    return;
  }
  service_->track({*selected});
}

void TrackingController::set_track_overlay(const TrackOverlayOptions& options) {
  overlay_ = options.clamped();
  parts_.canvas->set_track_overlay(overlay_);
  const WorkbenchActions& actions = *parts_.actions;
  {
    const QSignalBlocker block_tracks(actions.show_tracks);
    const QSignalBlocker block_occluded(actions.show_occluded);
    const QSignalBlocker block_colouring(actions.colour_by_direction);
    actions.show_tracks->setChecked(overlay_.show_tracks);
    actions.show_occluded->setChecked(overlay_.show_occluded);
    actions.colour_by_direction->setChecked(overlay_.colouring == TrackColouring::motion_direction);
  }
  toolbar_->trail_editor()->set_lengths(overlay_.trail_before_frames, overlay_.trail_after_frames);
  menu_trail_->set_lengths(overlay_.trail_before_frames, overlay_.trail_after_frames);
  parts_.settings->set_track_overlay_options(overlay_);
}

void TrackingController::on_state_changed() {
  const TrackingState state = service_->state();
  const WorkbenchActions& actions = *parts_.actions;
  const bool job_running = state == TrackingState::tracking || state == TrackingState::cancelling;
  actions.track->setEnabled(!job_running);
  actions.track_selected->setEnabled(!job_running);
  actions.cancel_tracking->setEnabled(state != TrackingState::idle);
  switch (state) {
    case TrackingState::idle: status_->finish(); break;
    case TrackingState::loading_model: status_->show_progress(-1.0, tr("Loading the model")); break;
    case TrackingState::tracking: break;  // progress_changed shows the fraction
    case TrackingState::cancelling: status_->show_progress(-1.0, tr("Cancelling")); break;
  }
}

void TrackingController::on_selection_changed() {
  const TrackerKey& selection = service_->selection();
  dock_->set_current_device(selection.device);
  dock_->set_current_precision(selection.precision);
  toolbar_->set_model(qstring(selection.model));
  telemetry_->set_device(selection.device);
}

void TrackingController::on_run_completed(const CompletedRun& run) {
  const core::Profile profile = make_live_run_profile(run, host_, telemetry_->summary_since(run_start_s_));
  dock_->add_run(profile);
}

}  // namespace trackscope::ui
