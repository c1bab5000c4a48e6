#pragma once
// ExportController: File > Export (tracks as CSV, JSON, TAP-Vid .npz, DeepLabCut CSV, COCO keypoints; an
// annotated H.264 video) and File > Import Tracks (CSV, JSON, TAP-Vid .npz, as new points: one undo step).
// Formats and conventions: core/io/track_formats.h and docs/annotation.md.
//
//   auto* exports = new ExportController(parts, projects, tracking, prompts, video_opener, window);
//   connect(exports, &ExportController::error, window, &MainWindow::report_error);
//   exports->export_tracks(core::io::TrackFormat::csv, "/tmp/tracks.csv");      // synchronous
//   exports->import_tracks("/tmp/other.npz");
//   exports->export_video("/tmp/annotated.mp4");      // returns at once; video_export_finished follows
//
// The annotated video is rendered on a worker thread from a snapshot of the annotation, through its own
// decoder (the injected VideoOpenerFactory, as the tracker's), with progress in the status bar; closing the
// window cancels and joins it. Errors go out through error() and change nothing. It works with the window's parts
// (ui/workbench_parts.h), the project controller (the annotation's snapshot) and the tracking controller (how
// tracks are drawn), never with the window.
// Threads: GUI thread only (the video worker posts back through a ThreadMailbox).

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <thread>

#include "core/io/track_formats.h"
#include "ui/project/project_prompts.h"
#include "ui/thread_mailbox.h"
#include "ui/tracking/tracker_service.h"
#include "ui/workbench_parts.h"

namespace trackscope::ui {

class ProjectController;
class TrackingController;

class ExportController : public QObject {
  Q_OBJECT
 public:
  ExportController(const WorkbenchParts& parts, ProjectController* projects, TrackingController* tracking,
                   ProjectPrompts prompts, VideoOpenerFactory video_opener, QObject* parent);
  ~ExportController() override;

  /// Writes the tracks of every tracked point. False (reported) when there is nothing to export or it failed.
  bool export_tracks(core::io::TrackFormat format, const QString& path);
  /// Reads tracks (format from the suffix: .csv, .json, .npz) and adds them as new points. Returns the number
  /// of tracks added, 0 when it failed (reported).
  int import_tracks(const QString& path);
  /// Starts rendering the annotated video. False when one is running or there is no video.
  bool export_video(const QString& path);
  /// Cancels and joins the video export.
  void shutdown();

  /// Asks for a file, then exports / imports.
  void choose_and_export(core::io::TrackFormat format);
  void choose_and_export_video();
  void choose_and_import();

 Q_SIGNALS:
  void video_export_finished(bool ok, const QString& message);
  /// An error for the user (the window's one error path).
  void error(const QString& title, const QString& message);

 private:
  core::io::TrackVideo track_video() const;
  void on_video_progress(int64_t done, int64_t total);
  void on_video_finished(const core::Status& status, const QString& path);

  WorkbenchParts parts_;
  ProjectController* projects_ = nullptr;
  TrackingController* tracking_ = nullptr;
  ProjectPrompts prompts_;
  VideoOpenerFactory video_opener_;
  ThreadMailbox mailbox_;  // the worker's posts; before it, so destroyed after it
  std::jthread worker_;
  std::shared_ptr<std::atomic<bool>> progress_posted_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace trackscope::ui
