#pragma once
// Shared by the project tests and the save-crash helper: a workbench (TrackingBench) whose video is a real file
// on disk (so that projects can fingerprint it) served by the fake frame server, with a recovery folder of its
// own and every project prompt answered in code and recorded.
//
//   ProjectBench bench(dir, video_path);                 // the fake 320x240, 48-frame clip at video_path
//   bench.answers.recovery = ui::RecoveryChoice::recover;
//   QVERIFY(bench.open(video_path));

#include <QFile>
#include <QStringList>

#include <fstream>
#include <random>

#include "tracking_bench.h"
#include "ui/project/project_controller.h"

namespace trackscope::testing {

/// Writes `bytes` pseudo-random bytes (a stand-in for a video file: the fake server does the decoding).
inline void write_fake_video_file(const QString& path, size_t bytes, unsigned seed) {
  std::mt19937 random(seed);
  std::string data(bytes, '\0');
  for (char& c : data) c = static_cast<char>(random() & 0xFF);
  std::ofstream(path.toStdString(), std::ios::binary) << data;
}

/// What the prompts answer, and what they were asked.
struct PromptAnswers {
  ui::RecoveryChoice recovery = ui::RecoveryChoice::later;
  ui::UnsavedChoice unsaved = ui::UnsavedChoice::discard;
  QString located_video;  // the answer to "where is the video now?" ("" = cancel)
  bool confirm = false;
  QString save_path;  // the answer to file choosers
  QStringList asked;  // "kind: text" of every question, in order
};

struct ProjectBench {
  std::shared_ptr<PromptAnswers> answers = std::make_shared<PromptAnswers>();
  TrackingBench bench;

  /// `videos`: real files to serve as fake 320x240, 48-frame clips. `recovery_folder`: "" = beside the settings.
  ProjectBench(const QStringList& videos, const QString& recovery_folder, ui::ProjectOptions project = {})
      : bench({}, "cpu", [&](TrackingBench& self, ui::MainWindowOptions& options) {
          FakeVideo video;
          video.width = kClipWidth;
          video.height = kClipHeight;
          video.frame_count = kClipFrames;
          for (const QString& path : videos) self.library.add_video(path.toStdString(), video);
          options.video_opener = fake_video_opener(self.library);
          project.recovery_folder = recovery_folder;
          auto a = answers;
          project.prompts.offer_recovery = [a](QWidget*, const QString& text) {
            a->asked << "recovery: " + text;
            return a->recovery;
          };
          project.prompts.unsaved_changes = [a](QWidget*, const QString& text) {
            a->asked << "unsaved: " + text;
            return a->unsaved;
          };
          project.prompts.locate_video = [a](QWidget*, const QString& missing) {
            a->asked << "locate: " + missing;
            return a->located_video;
          };
          project.prompts.confirm = [a](QWidget*, const QString& title, const QString& text) {
            a->asked << "confirm: " + title + ": " + text;
            return a->confirm;
          };
          project.prompts.save_path = [a](QWidget*, const QString&, const QString&, const QString&) {
            return a->save_path;
          };
          project.prompts.open_path = [a](QWidget*, const QString&, const QString&, const QString&) {
            return a->save_path;
          };
          options.project = std::move(project);
        }) {}

  ui::MainWindow* window() const { return bench.window.get(); }
  ui::ProjectController* projects() const { return bench.window->projects(); }
  const core::Annotation& annotation() const { return bench.annotation(); }

  bool open(const QString& video) { return bench.open(video); }

  /// Opens a project and waits until its points are applied (true) or opening stopped (false).
  bool open_project(const QString& path) {
    QSignalSpy opened(projects(), &ui::ProjectController::project_opened);
    QSignalSpy failed(projects(), &ui::ProjectController::project_open_failed);
    if (!projects()->open_project(path)) return false;
    QElapsedTimer clock;
    clock.start();
    while (opened.isEmpty() && failed.isEmpty() && clock.elapsed() < 20000) QTest::qWait(5);
    return !opened.isEmpty();
  }

  /// Adds a point at (x, y) on frame 0 and tracks it.
  bool add_and_track(double x_px, double y_px) {
    bench.window->editor()->add_point({0, x_px, y_px});
    bench.window->actions().track->trigger();
    return bench.wait_idle();
  }
};

}  // namespace trackscope::testing
