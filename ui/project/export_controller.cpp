#include "ui/project/export_controller.h"

#include <QDir>
#include <QFileInfo>
#include <QMetaObject>
#include <QStatusBar>

#include "core/io/atomic_file.h"
#include "core/log.h"
#include "ui/annotation_editor.h"
#include "ui/frame_server_factory.h"
#include "ui/project/annotated_video.h"
#include "ui/project/project_controller.h"
#include "ui/settings.h"
#include "ui/tracking/tracking_controller.h"
#include "ui/video_session.h"
#include "ui/workbench_actions.h"

namespace trackscope::ui {

namespace {

QString filter_for(core::io::TrackFormat format) {
  switch (format) {
    case core::io::TrackFormat::csv: return QObject::tr("CSV tracks (*.csv)");
    case core::io::TrackFormat::json: return QObject::tr("JSON tracks (*.json)");
    case core::io::TrackFormat::tapvid_npz: return QObject::tr("TAP-Vid NumPy archive (*.npz)");
    case core::io::TrackFormat::deeplabcut_csv: return QObject::tr("DeepLabCut CSV (*.csv)");
    case core::io::TrackFormat::coco_json: return QObject::tr("COCO keypoints (*.json)");
  }
  return {};
}

}  // namespace

ExportController::ExportController(const WorkbenchParts& parts, ProjectController* projects,
                                   TrackingController* tracking, ProjectPrompts prompts,
                                   VideoOpenerFactory video_opener, QObject* parent)
    : QObject(parent),
      parts_(parts),
      projects_(projects),
      tracking_(tracking),
      prompts_(std::move(prompts)),
      video_opener_(std::move(video_opener)) {
  if (!video_opener_) video_opener_ = [](const std::filesystem::path& path) { return core::open_video_file(path); };
  const WorkbenchActions& actions = *parts_.actions;
  connect(actions.export_csv, &QAction::triggered, this, [this] { choose_and_export(core::io::TrackFormat::csv); });
  connect(actions.export_json, &QAction::triggered, this, [this] { choose_and_export(core::io::TrackFormat::json); });
  connect(actions.export_npz, &QAction::triggered, this,
          [this] { choose_and_export(core::io::TrackFormat::tapvid_npz); });
  connect(actions.export_deeplabcut, &QAction::triggered, this,
          [this] { choose_and_export(core::io::TrackFormat::deeplabcut_csv); });
  connect(actions.export_coco, &QAction::triggered, this,
          [this] { choose_and_export(core::io::TrackFormat::coco_json); });
  connect(actions.export_video, &QAction::triggered, this, &ExportController::choose_and_export_video);
  connect(actions.import_tracks, &QAction::triggered, this, &ExportController::choose_and_import);
}

ExportController::~ExportController() { shutdown(); }

void ExportController::shutdown() {
  if (worker_.joinable()) {
    worker_.request_stop();
    worker_.join();
  }
}

core::io::TrackVideo ExportController::track_video() const {
  const VideoSession* session = parts_.session;
  const core::VideoInfo& info = session->info();
  return {path_from_qstring(session->path()).string(), info.width, info.height, info.frame_count,
          info.frame_rate.to_double()};
}

bool ExportController::export_tracks(core::io::TrackFormat format, const QString& path) {
  if (!parts_.session->has_video()) {
    parts_.status_bar->showMessage(tr("Open a video first"), kStatusMessageMs);
    return false;
  }
  const core::io::TrackTable table = core::io::track_table(parts_.editor->annotation(), track_video());
  if (table.tracks.empty()) {
    parts_.status_bar->showMessage(tr("Nothing to export: track some points first"), kStatusMessageMs);
    return false;
  }
  const core::Status written = core::io::write_tracks(path_from_qstring(path), table, format);
  if (!written) {
    Q_EMIT error(tr("Could not export tracks"), QString::fromStdString(written.message()));
    return false;
  }
  parts_.status_bar->showMessage(tr("Exported %n track(s) to %1", nullptr, static_cast<int>(table.tracks.size()))
                                     .arg(QDir::toNativeSeparators(path)),
                                 kStatusMessageMs);
  return true;
}

int ExportController::import_tracks(const QString& path) {
  const std::optional<core::io::TrackFormat> format = core::io::track_format_from_path(path_from_qstring(path));
  if (!format || !core::io::can_read(*format)) {
    Q_EMIT error(tr("Could not import tracks"), tr("%1: import reads .csv, .json and .npz (TAP-Vid) files").arg(path));
    return 0;
  }
  if (!parts_.session->has_video()) {
    parts_.status_bar->showMessage(tr("Open the tracks' video first"), kStatusMessageMs);
    return 0;
  }
  core::io::TrackImportOptions options;
  options.width = parts_.session->info().width;
  options.height = parts_.session->info().height;
  options.frame_count = parts_.session->info().frame_count;  // tracks longer than the video are refused
  core::Expected<core::io::TrackTable> table = core::io::read_tracks(path_from_qstring(path), *format, options);
  if (!table) {
    Q_EMIT error(tr("Could not import tracks"),
                 tr("%1\n\nNothing was changed.").arg(QString::fromStdString(table.status().message())));
    return 0;
  }
  const int added =
      parts_.editor->import_tracks(*table, tr("Import %n track(s)", nullptr, static_cast<int>(table->tracks.size())));
  parts_.status_bar->showMessage(tr("Imported %n track(s) from %1", nullptr, added).arg(QFileInfo(path).fileName()),
                                 kStatusMessageMs);
  return added;
}

bool ExportController::export_video(const QString& path) {
  if (worker_.joinable() || !parts_.session->has_video()) return false;
  const std::optional<core::io::Project> snapshot = projects_->current_project();
  if (!snapshot) return false;
  AnnotatedVideoOptions options;
  options.overlay = tracking_->track_overlay();
  const core::VideoOpener open = video_opener_(path_from_qstring(parts_.session->path()));
  const std::filesystem::path target = path_from_qstring(path);
  // Checked now, not after minutes of encoding: the folder must take a new file.
  if (const core::Status writable = core::io::check_writable(target); !writable) {
    Q_EMIT error(tr("Could not export the annotated video"), QString::fromStdString(writable.message()));
    return false;
  }
  progress_posted_->store(false);
  auto progress = std::make_shared<std::pair<std::atomic<int64_t>, std::atomic<int64_t>>>();
  worker_ = std::jthread([this, open, snapshot = *snapshot, target, options, progress, posted = progress_posted_,
                          path](std::stop_token stop) {
    core::Status status;
    if (core::Expected<std::unique_ptr<core::VideoSource>> video = open(); !video) {
      status = video.status();
    } else {
      status = render_annotated_video(
          **video, snapshot, target, options,
          [&](int64_t done, int64_t total) {
            progress->first = done;
            progress->second = total;
            if (!posted->exchange(true)) {
              mailbox_.post([this, progress, posted] {
                posted->store(false);
                on_video_progress(progress->first, progress->second);
              });
            }
          },
          stop);
    }
    mailbox_.post([this, status, path] { on_video_finished(status, path); });
  });
  parts_.status_bar->showMessage(tr("Exporting the annotated video to %1 ...").arg(QDir::toNativeSeparators(path)));
  return true;
}

void ExportController::on_video_progress(int64_t done, int64_t total) {
  parts_.status_bar->showMessage(tr("Exporting the annotated video: frame %1 of %2").arg(done).arg(total));
}

void ExportController::on_video_finished(const core::Status& status, const QString& path) {
  if (worker_.joinable()) worker_.join();
  if (!status) {
    if (status.code() != core::StatusCode::cancelled) {
      Q_EMIT error(tr("Could not export the annotated video"), QString::fromStdString(status.message()));
    }
    Q_EMIT video_export_finished(false, QString::fromStdString(status.message()));
    return;
  }
  const QString message = tr("Exported the annotated video to %1").arg(QDir::toNativeSeparators(path));
  parts_.status_bar->showMessage(message, kStatusMessageMs);
  Q_EMIT video_export_finished(true, message);
}

void ExportController::choose_and_export(core::io::TrackFormat format) {
  if (!parts_.session->has_video()) return;
  const QString base =
      QFileInfo(parts_.session->path()).completeBaseName() + QString::fromLatin1(core::io::default_suffix(format));
  const QString start = QDir(parts_.settings->last_open_folder()).filePath(base);
  const QString path = prompts_.save_path(parts_.dialog_parent, tr("Export Tracks"), start, filter_for(format));
  if (!path.isEmpty()) export_tracks(format, path);
}

void ExportController::choose_and_export_video() {
  if (!parts_.session->has_video()) return;
  const QString start = QDir(parts_.settings->last_open_folder())
                            .filePath(QFileInfo(parts_.session->path()).completeBaseName() + "_tracks.mp4");
  const QString path =
      prompts_.save_path(parts_.dialog_parent, tr("Export Annotated Video"), start, tr("MP4 video (*.mp4)"));
  if (!path.isEmpty()) export_video(path);
}

void ExportController::choose_and_import() {
  const QString path =
      prompts_.open_path(parts_.dialog_parent, tr("Import Tracks"), parts_.settings->last_open_folder(),
                         tr("Tracks (*.csv *.json *.npz);;All files (*)"));
  if (!path.isEmpty()) import_tracks(path);
}

}  // namespace trackscope::ui
