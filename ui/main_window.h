#pragma once
// The main window of the workbench: video canvas, timeline and quality strip in the centre, the point list
// docked at the right, menus, status bar (resolution, fps, frame, decode time, zoom). Tracking (Track/Cancel,
// model, device and precision, overlays, progress, the performance dock) is wired by its TrackingController; the
// correction loop, undo and the quality cues by its AnnotationController; project files, autosave and recovery
// by its ProjectController; export and import by its ExportController.
//
//   MainWindowOptions options;
//   options.frame_server_factory = [](auto& path, auto& o) { return core::FrameServer::open(path, o); };   // app/
//   options.tracker_factory = ...;                                  // app/: the gpu tracker (null: no tracking)
//   MainWindow window(std::move(options));
//   window.show();
//   window.open_video("clip.mp4");   // returns at once; video_opened or an error report follows
//
// Videos open through the injected factory (tests inject a fake server). Opening a video replaces the
// current one only once it has opened successfully, and then clears the points (they belong to the old
// video). Any failure (missing file, not a video, unsupported codec, undecodable frame) goes through
// report_error() and leaves the current video, frame and points as they were. A ".trackscope" path opens as a
// project. Opening by a user gesture (menu, drop, recent file) or closing the window first asks about unsaved
// changes; the programmatic open_video() does not.
// Threads: GUI thread only. Shutdown: the destructor stops and joins the tracking job (and model loading, and
// telemetry), stops playback and destroys the video session (joining the decode thread) before any widget is
// destroyed.

#include <QMainWindow>
#include <QString>

#include <chrono>
#include <cstdint>
#include <memory>

#include "ui/error_presenter.h"
#include "core/tracking/point_tracker.h"
#include "ui/frame_server_factory.h"
#include "ui/project/project_controller.h"
#include "ui/tracking/telemetry_monitor.h"
#include "ui/tracking/tracker_service.h"
#include "ui/workbench_actions.h"

class QLabel;
class QVBoxLayout;

namespace trackscope::ui {

class AnnotationController;
class AnnotationEditor;
class ExportController;
class PointListPanel;
class Settings;
class Timeline;
class TrackingController;
class VideoCanvas;
class VideoSession;

struct MainWindowOptions {
  FrameServerFactory frame_server_factory;                // required: how videos are opened
  ErrorPresenter error_presenter;                         // empty: show_error_message_box
  QString settings_file;                                  // empty: the platform's default settings location
  std::unique_ptr<core::TrackerFactory> tracker_factory;  // null: Track explains that there is no tracker
  TelemetrySourceFactory telemetry_factory;               // device telemetry; empty: CPU only (/proc/stat)
  VideoOpenerFactory video_opener;                        // the tracking thread's decoder; empty: core::open_video_file
  core::TrackerOptions tracker_options;                   // initial model ("default"), device ("auto"), precision
  std::chrono::milliseconds track_apply_slice{15};        // GUI time per event-loop turn for finished tracks
  ProjectOptions project;  // recovery folder, autosave interval, prompts (tests answer them)
  /// No modal dialog ever (--screenshot and other unattended runs): prompts not set in `project.prompts` take
  /// headless_project_prompts()' logged default or cancel answers instead of opening dialogs.
  bool headless = false;
};

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(MainWindowOptions options, QWidget* parent = nullptr);
  ~MainWindow() override;

  /// Opens a video file or image-sequence folder (asynchronously; see the header comment), or a project.
  void open_video(const QString& path);
  /// Opens a video file or folder, never as a project (the project controller opens a project's video so).
  void open_video_now(const QString& path);
  /// Opens a project file (ProjectController::open_project).
  bool open_project(const QString& path);
  /// Puts `widget` into the centre column, under the timeline.
  void add_below_timeline(QWidget* widget);
  /// Logs the error, shows it in the status bar and through the error presenter. The one error path of the UI.
  void report_error(const QString& title, const QString& message);

  /// Moves to frame `index` (clamped); the picture follows when decoded.
  void seek(int64_t index);
  /// Moves by `delta` frames from the playhead and pauses playback.
  void step(int64_t delta);

  VideoCanvas* canvas() const { return canvas_; }
  Timeline* timeline() const { return timeline_; }
  PointListPanel* point_list() const { return point_list_; }
  AnnotationEditor* editor() const { return editor_; }
  VideoSession* session() const { return session_; }
  TrackingController* tracking() const { return tracking_; }
  AnnotationController* annotations() const { return annotations_; }
  ProjectController* projects() const { return projects_; }
  ExportController* exports() const { return exports_; }
  /// The prompts with defaults filled in (file choosers for export and import use them too).
  const ProjectPrompts& project_prompts() const { return prompts_; }
  const WorkbenchActions& actions() const { return actions_; }
  Settings& settings() const { return *settings_; }
  /// The permanent status bar fields joined with " | " (resolution, fps, frame, decode, zoom).
  QString status_fields() const;

 Q_SIGNALS:
  /// A video was opened and replaced the previous one.
  void video_opened(const QString& path);
  void error_reported(const QString& title, const QString& message);

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void closeEvent(QCloseEvent* event) override;

 private:
  void build_widgets();
  /// Creates the tracking, annotation, project and export controllers with the parts they use and wires their
  /// signals to the window.
  void create_controllers();
  void connect_actions();
  void connect_session();
  void choose_and_open_video();
  void choose_and_open_image_folder();
  /// A user's open (menu, drop, recent file): asks about unsaved changes first.
  void open_interactively(const QString& path);
  void rebuild_recent_menu();
  void on_video_opened();
  void on_open_failed(const QString& path, const QString& message);
  void on_frame_ready();
  void on_frame_failed(qint64 index, const QString& message);
  void on_point_activated(int id);
  void update_status_fields();
  void update_window_title();

  MainWindowOptions options_;
  std::unique_ptr<Settings> settings_;
  WorkbenchActions actions_;
  AnnotationEditor* editor_ = nullptr;
  VideoSession* session_ = nullptr;
  VideoCanvas* canvas_ = nullptr;
  Timeline* timeline_ = nullptr;
  PointListPanel* point_list_ = nullptr;
  TrackingController* tracking_ = nullptr;
  AnnotationController* annotations_ = nullptr;
  ProjectController* projects_ = nullptr;
  ExportController* exports_ = nullptr;
  ProjectPrompts prompts_;
  QVBoxLayout* centre_layout_ = nullptr;
  QLabel* resolution_label_ = nullptr;
  QLabel* fps_label_ = nullptr;
  QLabel* frame_label_ = nullptr;
  QLabel* decode_label_ = nullptr;
  QLabel* zoom_label_ = nullptr;
  bool frame_error_reported_ = false;  // one dialog per video for undecodable frames; the rest go to the status bar
};

}  // namespace trackscope::ui
