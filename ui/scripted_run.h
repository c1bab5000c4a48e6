#pragma once
// ScriptedRun: a tracking session in the GUI without a user, for scripts and for proving the live performance
// view on a real run (`trackscope VIDEO --queries Q.csv --track --track-devices cuda:0,cpu,cuda:0
// --screenshot-after-track shot.png --dock-tab stages`, app/gui/main.cpp).
//
//   ScriptedRunOptions options;
//   options.queries = *core::parse_query_spec("grid:8x8@frame0");
//   options.devices = {core::DeviceId::cuda(0), core::DeviceId::cpu(), core::DeviceId::cuda(0)};
//   options.screenshot_png = "shot.png";                  // shot.png, shot-2.png, shot-3.png
//   auto* run = new ScriptedRun({window.editor(), window.session(), window.tracking(), &window}, options, &window);
//   connect(run, &ScriptedRun::finished, ...);            // (exit_code, summary)
//   window.open_video(path);                              // the run starts when the video is open
//
// What it does, once VideoSession::video_opened arrives (the first time only): adds the queries as points (the
// grid on the opened video's size, or the CSV's rows), then (with `track`) one tracking job per device in order,
// switching the tracker service's device before each (the same switch as the performance dock's device selector: a
// loaded model is reused from the service's cache); after each job it waits `settle` (the performance dock pulls stage
// samples and telemetry at 10 Hz) and saves a screenshot of the window. It never asks a question and never blocks the
// event loop; the window stays usable.
// Ends with finished(): exit code 0 when every job completed and every screenshot was written, 1 when a job
// failed (the error also went to the window's error path) or a screenshot could not be written (the remaining
// jobs still run), 2 when the queries could not be resolved (no job runs).
// Threads: GUI thread only.

#include <QObject>
#include <QWidget>
#include <QString>
#include <QStringList>

#include <chrono>
#include <optional>
#include <vector>

#include "core/tracking/device.h"
#include "core/tracking/query_spec.h"

namespace trackscope::ui {

class AnnotationEditor;
class TrackingController;
class VideoSession;

/// What a scripted run works with: the window's parts (it never includes the window itself; ui/'s layering).
struct ScriptedRunParts {
  AnnotationEditor* editor = nullptr;      // receives the query points
  VideoSession* session = nullptr;         // video_opened starts the run; its info() sizes a grid
  TrackingController* tracking = nullptr;  // the tracker service and the performance dock
  QWidget* window = nullptr;               // what the screenshots show
};

struct ScriptedRunOptions {
  std::optional<core::QuerySpec> queries;  // the points to add; none: the points already there
  bool track = true;                       // false: add the queries only
  std::vector<core::DeviceId> devices;     // with `track`, one job per entry; empty: one job on the selected device
  QString screenshot_png;                  // empty: no screenshots
  QStringList dock_tabs;                   // the performance dock's tabs to show, one screenshot each (empty: as it is)
  std::chrono::milliseconds settle{1500};
};

/// The screenshot path of job `job` (1-based): `png` itself for the first, "NAME-N.png" after it; with a dock
/// `tab` named, "NAME-TAB.png" / "NAME-N-TAB.png".
QString scripted_screenshot_path(const QString& png, int job, const QString& tab = {});

class ScriptedRun : public QObject {
  Q_OBJECT
 public:
  ScriptedRun(ScriptedRunParts parts, ScriptedRunOptions options, QObject* parent);

  /// Screenshots written so far, in order.
  const QStringList& screenshots() const { return screenshots_; }

 Q_SIGNALS:
  /// Every job ended (or none could start). `summary` is one line per job ("job 2 on cpu: completed").
  void finished(int exit_code, const QString& summary);

 private:
  void on_video_opened();
  void start_next_job();
  void on_job_finished(bool completed, const QString& message);
  /// Shows the dock tabs one by one (`tab_index` onwards), a screenshot of each, then starts the next job.
  void take_screenshots(int tab_index);
  void take_screenshot(const QString& tab);
  void finish(int exit_code);

  ScriptedRunParts parts_;
  ScriptedRunOptions options_;
  bool started_ = false;
  bool job_running_ = false;
  size_t next_job_ = 0;
  int exit_code_ = 0;
  QStringList screenshots_;
  QStringList summary_;
};

}  // namespace trackscope::ui
