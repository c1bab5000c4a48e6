// A helper process for ui/project: it opens a project, edits it (a correction on frame 20, frame 5 marked
// occluded by hand), autosaves, then saves, and stops dead in the middle of writing the project file: the save
// hook, after half of the bytes reached the temporary file, writes "<dir>/saving" and waits forever. The test
// kills it there with SIGKILL.
//
//   test_ui_save_crash_helper DIR VIDEO PROJECT
//
// Exit status 2..5: a step before the save failed (the test reports it).
#include <QApplication>
#include <QFile>
#include <QThread>

#include <cstdio>

#include <unistd.h>

#include "project_support.h"

namespace {

constexpr double kCorrectedX = 123.25;
constexpr double kCorrectedY = 77.5;

}  // namespace

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication application(argc, argv);
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s DIR VIDEO PROJECT\n", argv[0]);
    return 2;
  }
  const QString dir = QString::fromLocal8Bit(argv[1]);
  const QString video = QString::fromLocal8Bit(argv[2]);
  const QString project = QString::fromLocal8Bit(argv[3]);
  trackscope::ui::ProjectOptions options;
  options.autosave_interval_ms = 0;  // autosave exactly once, below
  options.save_options.chunk_bytes = 256;
  options.save_options.after_chunk = [dir](size_t written, size_t total) {
    if (written < total / 2) return;
    QFile marker(dir + "/saving");
    marker.open(QIODevice::WriteOnly);
    marker.write(QByteArray::number(static_cast<qulonglong>(written)));
    marker.close();
    for (;;) ::pause();  // killed here, in the middle of the save
  };
  trackscope::testing::ProjectBench bench({video}, dir + "/recovery", std::move(options));
  if (!bench.open_project(project)) return 3;
  trackscope::ui::AnnotationEditor* editor = bench.window()->editor();
  if (!editor->move_estimate(0, 20, kCorrectedX, kCorrectedY)) return 4;
  editor->finish_move(0);
  if (!editor->set_visibility(0, 5, false)) return 4;
  if (!bench.projects()->autosave_now()) return 5;
  std::fprintf(stderr, "helper: autosaved to %s; saving %s\n", qPrintable(bench.projects()->recovery_file()),
               qPrintable(project));
  bench.projects()->save();
  return 6;  // never reached: the save hook waits until the test kills this process
}
