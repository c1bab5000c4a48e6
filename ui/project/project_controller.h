#pragma once
// ProjectController: project files in the workbench. Open (File > Open Project, a ".trackscope" file dropped or
// given on the command line), Save / Save As (atomic: core/io/project.h), unsaved-changes questions, autosave to
// a recovery file and recovery after a crash.
//
//   ProjectOptions options;                          // MainWindowOptions::project
//   options.autosave_interval_ms = 60000;            // once a minute, when something changed
//   auto* projects = new ProjectController(parts, tracking, annotations, std::move(options), window);
//   connect(window, &MainWindow::video_opened, projects, &ProjectController::on_video_opened);
//   connect(projects, &ProjectController::video_open_requested, window, &MainWindow::open_video_now);
//   projects->open_project("bees.trackscope");       // returns at once: the video opens, then the points appear
//   projects->save_as("bees.trackscope");
//
// It works with the window's parts (ui/workbench_parts.h) and the tracking and annotation controllers (the view
// settings a project saves), never with the window: opening a video, seeking and errors go out as signals.
//
// Opening: the file is read and validated first, on a loader thread (a project of 100,000 points takes seconds
// to parse; the window stays responsive and the status bar shows a busy bar and the elapsed time); a corrupt,
// truncated or newer project is reported and nothing changes. Then, on the GUI thread, the video is looked for
// at its saved path, then relative to the project; if it moved, the user is
// asked where it is, and the fingerprint of the chosen file is checked (a different file needs a confirmation).
// The points replace the current ones only once that video has opened; a failure leaves everything as it was.
// Recovery: each window session holds a lock file and writes "<session>.trackscope-recovery" (a project with a
// "recovery" object) in the recovery folder when the annotation changed since the last autosave and is not
// saved. A clean shutdown deletes both. At start, recovery files whose session lock is stale (its process died)
// are offered: Recover opens them as unsaved edits of their project, Discard deletes them, Later keeps them.
// A recovery file that cannot be read (damaged, truncated, absurd values) is renamed beside itself to
// "<name>.unreadable" and reported once (non-modal): it never stops the app from starting.
// Threads: GUI thread only. Saving runs on the GUI thread (a project of 100 tracks x 10,000 frames is ~30 MB of
// JSON, well under a second).

#include <QElapsedTimer>
#include <QLockFile>
#include <QObject>
#include <QPointer>
#include <QProgressBar>
#include <QString>
#include <QTimer>

#include <memory>
#include <optional>
#include <thread>

#include "core/io/project.h"
#include "ui/project/project_prompts.h"
#include "ui/thread_mailbox.h"
#include "ui/workbench_parts.h"

namespace trackscope::ui {

class AnnotationController;
class TrackingController;

struct ProjectOptions {
  QString recovery_folder;                    // empty: "recovery" beside the settings file
  int autosave_interval_ms = 60000;           // 0: no timer (autosave_now() still works)
  bool check_recovery_on_start = true;        // look for recovery files once the event loop runs
  core::io::AtomicWriteOptions save_options;  // tests pause a save in the middle through its hook
  ProjectPrompts prompts;                     // empty members: Qt dialogs
};

class ProjectController : public QObject {
  Q_OBJECT
 public:
  ProjectController(const WorkbenchParts& parts, TrackingController* tracking, AnnotationController* annotations,
                    ProjectOptions options, QObject* parent);
  ~ProjectController() override;

  /// Starts opening a project (see the header comment) and returns at once: project_opened or
  /// project_open_failed follows. False when it was refused at once (another project is still being read).
  bool open_project(const QString& path);
  /// Saves to the current project file, or asks for one. False when it failed or was cancelled.
  bool save();
  /// Saves to `path` (".trackscope" is appended when missing) and makes it the current project file.
  bool save_as(const QString& path);
  /// Asks for a file name, then save_as().
  bool choose_and_save_as();
  /// Asks for a project file, then open_project().
  void choose_and_open();

  /// Before the annotation is replaced or the window closes: asks about unsaved changes. True to go on.
  bool confirm_discard(const QString& what);

  QString project_path() const { return project_path_; }
  /// Unsaved changes exist (the annotation differs from the last save or open).
  bool dirty() const;
  /// True while a project file is read or waits for its video to open.
  bool opening() const { return loader_.joinable() || pending_.has_value(); }

  /// Writes the recovery file now if the annotation changed since the last autosave and is unsaved; deletes
  /// it when everything is saved. Returns false when writing failed.
  bool autosave_now();
  QString recovery_file() const { return recovery_file_; }
  QString recovery_folder() const { return recovery_folder_; }
  /// Looks for recovery files of crashed sessions and offers each (see the header comment).
  void check_recovery();

  /// The current state as a project (for saving, autosave and tests). Needs an open video.
  std::optional<core::io::Project> current_project() const;

  /// The window opened the video at `path`: a project waiting for it is applied, any other video ends the
  /// project (its annotation was cleared).
  void on_video_opened(const QString& path);

 Q_SIGNALS:
  /// A project (or a recovery file) was applied: its points are in the editor.
  void project_opened(const QString& path);
  /// Opening `path` stopped: unreadable or invalid (reported), or cancelled at a prompt. Nothing was changed.
  void project_open_failed(const QString& path, const QString& message);
  /// The loader thread is still reading `path`: `elapsed_ms` since the open started (about 4 times a second).
  void open_progress(const QString& path, qint64 elapsed_ms);
  void project_saved(const QString& path);
  /// The title-relevant state changed (project path or dirty flag).
  void state_changed();
  /// A project's video should open (the window opens it as a video, never as a project).
  void video_open_requested(const QString& path);
  /// Show frame `index` (a project's saved frame).
  void seek_requested(qint64 index);
  /// An error for the user (the window's one error path).
  void error(const QString& title, const QString& message);

 private:
  struct Pending {
    core::io::Project project;
    QString project_path;  // the project the points belong to ("" for an unsaved recovered one)
    QString video_path;
    bool clean = true;        // false for recovered edits
    QString recovery_source;  // the recovery file to delete once applied
  };
  bool start_open(core::io::Project project, const QString& project_path, const QString& source, bool clean,
                  const QString& recovery_source);
  void on_project_read(const QString& path, core::Expected<core::io::Project> project);
  void show_load_progress();
  void stop_loader();
  std::optional<QString> resolve_video(const core::io::Project& project, const QString& project_path);
  void apply(const Pending& pending);
  core::io::ProjectVideo video_description() const;
  core::io::ProjectView view_description() const;
  bool write_project(const QString& path);
  void remove_recovery_file();

  WorkbenchParts parts_;
  TrackingController* tracking_ = nullptr;
  AnnotationController* annotations_ = nullptr;
  ProjectOptions options_;
  ThreadMailbox mailbox_;  // the loader's post; before it, so destroyed after it
  std::jthread loader_;    // reads and validates a project file off the GUI thread
  QString loading_path_;   // the file loader_ reads
  QElapsedTimer load_clock_;
  QTimer load_ticker_;               // status bar updates while loader_ runs
  QPointer<QProgressBar> load_bar_;  // busy bar in the status bar (owned by it; may go first at shutdown)
  QString project_path_;
  std::optional<Pending> pending_;
  QString recovery_folder_;
  QString recovery_file_;
  std::unique_ptr<QLockFile> session_lock_;
  QTimer autosave_timer_;
  uint64_t autosaved_revision_ = 0;
  mutable std::optional<std::pair<QString, core::io::VideoFingerprint>> fingerprint_cache_;
};

}  // namespace trackscope::ui
