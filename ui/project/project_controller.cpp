#include "ui/project/project_controller.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QMetaObject>
#include <QProgressBar>
#include <QStatusBar>

#include <fmt/format.h>

#include "core/log.h"
#include "ui/annotation_controller.h"
#include "ui/annotation_editor.h"
#include "ui/frame_server_factory.h"
#include "ui/settings.h"
#include "ui/tracking/tracking_controller.h"
#include "ui/video_canvas.h"
#include "ui/video_session.h"
#include "ui/workbench_actions.h"

namespace trackscope::ui {
namespace {

const char* const kProjectFilter = "Trackscope projects (*.trackscope);;All files (*)";
const QString kRecoverySuffix = QStringLiteral(".trackscope-recovery");

QString absolute(const QString& path) { return QFileInfo(path).absoluteFilePath(); }

// A recovery file is read at every start: whatever it holds, reading it must not throw into the event loop.
core::Expected<core::io::Project> load_recovery_file(const QString& path) {
  try {
    return core::io::load_project(path_from_qstring(path));
  } catch (const std::exception& error) {
    return core::corrupt_data(fmt::format("{} could not be read: {}", path.toStdString(), error.what()));
  }
}

// Renames an unreadable recovery file to "<name>.unreadable" (or "<name>.unreadable-<time>" when that exists)
// beside itself: it is kept for the user, and no longer matches the recovery files looked for at start.
// Returns the new path, "" when the rename failed.
QString move_aside(const QString& path) {
  QString target = path + QStringLiteral(".unreadable");
  if (QFileInfo::exists(target))
    target += QDateTime::currentDateTimeUtc().toString(QStringLiteral("-yyyyMMdd-HHmmss-zzz"));
  if (!QFile::rename(path, target)) {
    core::log::warn("could not move the unreadable recovery file {} aside", path.toStdString());
    return {};
  }
  core::log::warn("moved the unreadable recovery file {} aside to {}", path.toStdString(), target.toStdString());
  return target;
}

}  // namespace

ProjectController::ProjectController(const WorkbenchParts& parts, TrackingController* tracking,
                                     AnnotationController* annotations, ProjectOptions options, QObject* parent)
    : QObject(parent), parts_(parts), tracking_(tracking), annotations_(annotations), options_(std::move(options)) {
  options_.prompts = complete_prompts(std::move(options_.prompts));
  recovery_folder_ = options_.recovery_folder;
  if (recovery_folder_.isEmpty())
    recovery_folder_ = QFileInfo(parts_.settings->location()).absolutePath() + "/recovery";
  QDir().mkpath(recovery_folder_);
  // One session = one lock + one recovery file; the lock tells a later start whether this session still runs.
  const QString session =
      QStringLiteral("session-%1-%2").arg(QCoreApplication::applicationPid()).arg(QDateTime::currentMSecsSinceEpoch());
  session_lock_ = std::make_unique<QLockFile>(QDir(recovery_folder_).filePath(session + ".lock"));
  session_lock_->setStaleLockTime(0);
  if (!session_lock_->tryLock(0)) core::log::warn("could not lock the recovery session {}", session.toStdString());
  recovery_file_ = QDir(recovery_folder_).filePath(session + kRecoverySuffix);

  connect(parts_.session, &VideoSession::open_failed, this, [this](const QString&, const QString& message) {
    if (!pending_) return;
    const QString source = pending_->project_path.isEmpty() ? pending_->recovery_source : pending_->project_path;
    pending_.reset();
    Q_EMIT project_open_failed(source, message);
  });
  connect(parts_.editor, &AnnotationEditor::history_changed, this, &ProjectController::state_changed);
  connect(&autosave_timer_, &QTimer::timeout, this, [this] { (void)autosave_now(); });
  load_ticker_.setInterval(250);
  connect(&load_ticker_, &QTimer::timeout, this, &ProjectController::show_load_progress);
  if (options_.autosave_interval_ms > 0) {
    autosave_timer_.setInterval(options_.autosave_interval_ms);
    autosave_timer_.start();
  }
  if (options_.check_recovery_on_start) QTimer::singleShot(0, this, &ProjectController::check_recovery);
}

ProjectController::~ProjectController() {
  stop_loader();
  // A clean shutdown: nothing to recover next time.
  remove_recovery_file();
  session_lock_->unlock();
}

bool ProjectController::dirty() const { return !parts_.editor->is_clean(); }

bool ProjectController::confirm_discard(const QString& what) {
  if (!dirty()) return true;
  const QString name = project_path_.isEmpty() ? tr("the unsaved project") : QFileInfo(project_path_).fileName();
  switch (options_.prompts.unsaved_changes(parts_.dialog_parent,
                                           tr("%1 has unsaved changes. Save them before %2?").arg(name, what))) {
    case UnsavedChoice::save: return save();
    case UnsavedChoice::discard: return true;
    case UnsavedChoice::cancel: return false;
  }
  return false;
}

void ProjectController::choose_and_open() {
  if (!confirm_discard(tr("opening another project"))) return;
  const QString path = options_.prompts.open_path(parts_.dialog_parent, tr("Open Project"),
                                                  parts_.settings->last_open_folder(), tr(kProjectFilter));
  if (!path.isEmpty()) open_project(path);
}

bool ProjectController::open_project(const QString& path) {
  if (loader_.joinable()) {
    parts_.status_bar->showMessage(
        tr("Still reading %1: open %2 when it is done").arg(QFileInfo(loading_path_).fileName(), path),
        kStatusMessageMs);
    return false;
  }
  loading_path_ = path;
  load_clock_.start();
  const std::filesystem::path file = path_from_qstring(path);
  loader_ = std::jthread([this, path, file] {
    // load_project() itself (not a copy of its steps), so that every check it makes applies here too.
    auto project = std::make_shared<core::Expected<core::io::Project>>(core::io::load_project(file));
    mailbox_.post([this, path, project] { on_project_read(path, std::move(*project)); });
  });
  show_load_progress();
  load_ticker_.start();
  return true;
}

void ProjectController::show_load_progress() {
  if (!loader_.joinable()) return;
  if (!load_bar_) {
    load_bar_ = new QProgressBar(parts_.status_bar);
    load_bar_->setRange(0, 0);  // busy: the parser is one call without intermediate progress
    load_bar_->setMaximumWidth(120);
    parts_.status_bar->addPermanentWidget(load_bar_);
  }
  load_bar_->show();
  const qint64 elapsed_ms = load_clock_.elapsed();
  parts_.status_bar->showMessage(tr("Reading project %1 ... %2 s")
                                     .arg(QDir::toNativeSeparators(loading_path_))
                                     .arg(static_cast<double>(elapsed_ms) / 1000.0, 0, 'f', 1));
  Q_EMIT open_progress(loading_path_, elapsed_ms);
}

void ProjectController::stop_loader() {
  load_ticker_.stop();
  // The parser cannot be interrupted; a shutdown waits for it (seconds at most for the largest projects) and
  // its queued result is dropped with this object.
  if (loader_.joinable()) loader_.join();
  if (load_bar_) load_bar_->hide();
}

void ProjectController::on_project_read(const QString& path, core::Expected<core::io::Project> project) {
  stop_loader();
  core::log::info("read project {} in {} ms", path.toStdString(), load_clock_.elapsed());
  if (!project) {
    const QString message = QString::fromStdString(project.status().message());
    Q_EMIT error(tr("Could not open project"), tr("%1\n\nNothing was changed.").arg(message));
    Q_EMIT project_open_failed(path, message);
    return;
  }
  if (!start_open(std::move(*project), absolute(path), path, true, {})) {
    Q_EMIT project_open_failed(path, tr("Opening %1 was cancelled; nothing was changed").arg(path));
  }
}

bool ProjectController::start_open(core::io::Project project, const QString& project_path, const QString& source,
                                   bool clean, const QString& recovery_source) {
  const std::optional<QString> video = resolve_video(project, project_path.isEmpty() ? source : project_path);
  if (!video) {
    parts_.status_bar->showMessage(
        tr("Opening %1 was cancelled; nothing was changed").arg(QFileInfo(source).fileName()), kStatusMessageMs);
    return false;
  }
  pending_ = Pending{std::move(project), project_path, absolute(*video), clean, recovery_source};
  parts_.status_bar->showMessage(tr("Opening project %1 ...").arg(QDir::toNativeSeparators(source)));
  Q_EMIT video_open_requested(*video);
  return true;
}

std::optional<QString> ProjectController::resolve_video(const core::io::Project& project, const QString& project_path) {
  QString candidate;
  if (const auto found = core::io::locate_project_video(project, path_from_qstring(project_path))) {
    candidate = qstring_from_path(*found);
  } else {
    candidate = options_.prompts.locate_video(parts_.dialog_parent, QString::fromStdString(project.video.path));
    if (candidate.isEmpty()) return std::nullopt;
  }
  if (project.video.fingerprint.sha256.empty()) return candidate;  // saved without one: nothing to compare
  const core::Status same = core::io::check_project_video(project, path_from_qstring(candidate));
  if (same) return candidate;
  if (same.code() != core::StatusCode::corrupt_data) {
    Q_EMIT error(tr("Could not open project"),
                 tr("%1\n\nNothing was changed.").arg(QString::fromStdString(same.message())));
    return std::nullopt;
  }
  const bool use_anyway = options_.prompts.confirm(
      parts_.dialog_parent, tr("A different video?"),
      tr("%1\n\nThe tracks may not fit this file. Use it anyway?").arg(QString::fromStdString(same.message())));
  if (!use_anyway) return std::nullopt;
  return candidate;
}

void ProjectController::on_video_opened(const QString& path) {
  std::optional<Pending> pending = std::move(pending_);
  pending_.reset();
  if (pending && absolute(path) == pending->video_path) {
    apply(*pending);
    return;
  }
  // Another video replaced the annotation: it no longer belongs to a project file.
  project_path_.clear();
  autosaved_revision_ = parts_.editor->revision();
  Q_EMIT state_changed();
}

void ProjectController::apply(const Pending& pending) {
  const core::io::Project& project = pending.project;
  parts_.editor->load(project, pending.clean);
  project_path_ = pending.project_path;
  const core::io::ProjectView& view = project.view;
  TrackOverlayOptions overlay = tracking_->track_overlay();
  overlay.show_tracks = view.show_tracks;
  overlay.show_occluded = view.show_occluded;
  overlay.trail_before_frames = view.trail_before_frames;
  overlay.trail_after_frames = view.trail_after_frames;
  overlay.colouring = parse_track_colouring(QString::fromStdString(view.colouring)).value_or(overlay.colouring);
  tracking_->set_track_overlay(overlay);
  annotations_->set_quality_strip_visible(view.show_quality_strip);
  Q_EMIT seek_requested(view.current_frame);
  if (project.video.frame_count > 0 && project.video.frame_count != parts_.session->frame_count()) {
    parts_.status_bar->showMessage(tr("Warning: the project was made for %1 frames, this video has %2")
                                       .arg(project.video.frame_count)
                                       .arg(parts_.session->frame_count()),
                                   15000);
  }
  if (!pending.recovery_source.isEmpty()) {
    // The edits live in this session now: write them to our own recovery file before dropping the old one.
    autosaved_revision_ = 0;
    (void)autosave_now();
    QFile::remove(pending.recovery_source);
    QFile::remove(pending.recovery_source.left(pending.recovery_source.size() - kRecoverySuffix.size()) + ".lock");
  } else {
    autosaved_revision_ = parts_.editor->revision();
    remove_recovery_file();
  }
  if (!pending.project_path.isEmpty()) {
    parts_.settings->add_recent_file(pending.project_path);
    parts_.settings->set_last_open_folder(QFileInfo(pending.project_path).absolutePath());
  }
  Q_EMIT state_changed();
  Q_EMIT project_opened(pending.project_path);
}

core::io::ProjectVideo ProjectController::video_description() const {
  const VideoSession* session = parts_.session;
  core::io::ProjectVideo video =
      core::io::describe_video(path_from_qstring(absolute(session->path())).string(), session->info());
  if (fingerprint_cache_ && fingerprint_cache_->first == session->path()) {
    video.fingerprint = fingerprint_cache_->second;
  } else if (auto fingerprint = core::io::fingerprint_video(video.path)) {
    video.fingerprint = *fingerprint;
    fingerprint_cache_ = {session->path(), *fingerprint};
  } else {
    core::log::warn("no fingerprint for {}: {}", video.path, fingerprint.status().message());
  }
  return video;
}

core::io::ProjectView ProjectController::view_description() const {
  core::io::ProjectView view;
  view.current_frame = std::max<int64_t>(0, parts_.session->requested_frame());
  view.selected_point = parts_.editor->selected_point();
  const TrackOverlayOptions& overlay = tracking_->track_overlay();
  view.show_tracks = overlay.show_tracks;
  view.show_occluded = overlay.show_occluded;
  view.trail_before_frames = overlay.trail_before_frames;
  view.trail_after_frames = overlay.trail_after_frames;
  view.colouring = to_string(overlay.colouring);
  view.show_quality_strip = parts_.actions->show_quality_strip->isChecked();
  return view;
}

std::optional<core::io::Project> ProjectController::current_project() const {
  if (!parts_.session->has_video()) return std::nullopt;
  return core::io::make_project(parts_.editor->annotation(), video_description(), view_description());
}

bool ProjectController::save() {
  if (project_path_.isEmpty()) return choose_and_save_as();
  return write_project(project_path_);
}

bool ProjectController::choose_and_save_as() {
  if (!parts_.session->has_video()) {
    parts_.status_bar->showMessage(tr("Open a video first: a project belongs to a video"), kStatusMessageMs);
    return false;
  }
  QString start = project_path_;
  if (start.isEmpty()) start = QFileInfo(parts_.session->path()).completeBaseName() + ".trackscope";
  if (QFileInfo(start).isRelative()) start = QDir(parts_.settings->last_open_folder()).filePath(start);
  const QString path = options_.prompts.save_path(parts_.dialog_parent, tr("Save Project"), start, tr(kProjectFilter));
  return !path.isEmpty() && save_as(path);
}

bool ProjectController::save_as(const QString& path) {
  QString target = absolute(path);
  if (!core::io::is_project_path(path_from_qstring(target))) target += QLatin1String(core::io::kProjectExtension);
  if (!write_project(target)) return false;
  project_path_ = target;
  parts_.settings->add_recent_file(target);
  Q_EMIT state_changed();
  return true;
}

bool ProjectController::write_project(const QString& path) {
  const std::optional<core::io::Project> project = current_project();
  if (!project) {
    parts_.status_bar->showMessage(tr("Open a video first: a project belongs to a video"), kStatusMessageMs);
    return false;
  }
  const core::Status saved = core::io::save_project(path_from_qstring(path), *project, options_.save_options);
  if (!saved) {
    Q_EMIT error(tr("Could not save project"),
                 tr("%1\n\nYour edits are still here (and in the recovery file); try another folder.")
                     .arg(QString::fromStdString(saved.message())));
    return false;
  }
  parts_.editor->mark_clean();
  autosaved_revision_ = parts_.editor->revision();
  remove_recovery_file();
  parts_.status_bar->showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(path)), kStatusMessageMs);
  Q_EMIT project_saved(path);
  Q_EMIT state_changed();
  return true;
}

bool ProjectController::autosave_now() {
  const uint64_t revision = parts_.editor->revision();
  if (!dirty()) {
    remove_recovery_file();
    autosaved_revision_ = revision;
    return true;
  }
  if (revision == autosaved_revision_ && QFileInfo::exists(recovery_file_)) return true;
  std::optional<core::io::Project> project = current_project();
  if (!project) return true;
  project->recovery = core::io::RecoveryInfo{path_from_qstring(project_path_).string(),
                                             QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString()};
  const core::Status written =
      core::io::write_file_atomically(path_from_qstring(recovery_file_), core::io::project_to_json(*project));
  if (!written) {
    core::log::warn("autosave failed: {}", written.message());
    parts_.status_bar->showMessage(tr("Autosave failed: %1").arg(QString::fromStdString(written.message())),
                                   kStatusMessageMs);
    return false;
  }
  autosaved_revision_ = revision;
  return true;
}

void ProjectController::remove_recovery_file() {
  if (!recovery_file_.isEmpty()) QFile::remove(recovery_file_);
}

void ProjectController::check_recovery() {
  const QDir folder(recovery_folder_);
  const QFileInfoList files = folder.entryInfoList({"*" + kRecoverySuffix}, QDir::Files, QDir::Time);
  for (const QFileInfo& file : files) {
    if (file.absoluteFilePath() == absolute(recovery_file_)) continue;
    const QString stem = file.absoluteFilePath().left(file.absoluteFilePath().size() - kRecoverySuffix.size());
    QLockFile lock(stem + ".lock");
    lock.setStaleLockTime(0);
    // A live session holds its lock; a crashed one left a stale lock (or none), which tryLock takes over.
    if (!lock.tryLock(0)) continue;
    core::Expected<core::io::Project> project = load_recovery_file(file.absoluteFilePath());
    if (!project) {
      // Moved aside, so that a damaged file is reported once and never stands between the user and the app.
      const QString aside = move_aside(file.absoluteFilePath());
      Q_EMIT error(
          tr("Could not read a recovery file"),
          aside.isEmpty()
              ? tr("%1\n\nThe file is kept at %2; delete it to stop this message.")
                    .arg(QString::fromStdString(project.status().message()),
                         QDir::toNativeSeparators(file.absoluteFilePath()))
              : tr("%1\n\nIt was moved aside to %2 and will not be offered again. Trackscope started normally.")
                    .arg(QString::fromStdString(project.status().message()), QDir::toNativeSeparators(aside)));
      continue;
    }
    const QString belongs_to = project->recovery ? QString::fromStdString(project->recovery->project_path) : QString();
    const QString when =
        project->recovery ? QString::fromStdString(project->recovery->written_at_utc) : file.lastModified().toString();
    const QString text =
        tr("Trackscope did not shut down properly. Unsaved work of %1 (%n point(s), autosaved %2) "
           "can be recovered.",
           nullptr, static_cast<int>(project->points.size()))
            .arg(belongs_to.isEmpty() ? tr("an unsaved project") : QFileInfo(belongs_to).fileName(), when);
    const RecoveryChoice choice = options_.prompts.offer_recovery(parts_.dialog_parent, text);
    if (choice == RecoveryChoice::discard) {
      QFile::remove(file.absoluteFilePath());
    } else if (choice == RecoveryChoice::recover) {
      lock.unlock();
      project->recovery.reset();
      if (start_open(std::move(*project), belongs_to, file.absoluteFilePath(), false, file.absoluteFilePath())) return;
    }
  }
}

}  // namespace trackscope::ui
