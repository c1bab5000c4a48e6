#include "ui/scripted_run.h"

#include <QFileInfo>
#include <QTabWidget>
#include <QTimer>

#include "core/log.h"
#include "ui/annotation_editor.h"
#include "ui/image_file.h"
#include "ui/perf/performance_dock.h"
#include "ui/tracking/tracker_service.h"
#include "ui/tracking/tracking_controller.h"
#include "ui/video_session.h"

namespace trackscope::ui {

namespace {

constexpr std::chrono::milliseconds kTabSettle{300};

}  // namespace

QString scripted_screenshot_path(const QString& png, int job, const QString& tab) {
  if (job <= 1 && tab.isEmpty()) return png;
  const QFileInfo info(png);
  const QString suffix = info.suffix().isEmpty() ? QString() : QStringLiteral(".") + info.suffix();
  QString name = info.completeBaseName();
  if (job > 1) name += QStringLiteral("-%1").arg(job);
  if (!tab.isEmpty()) name += QLatin1Char('-') + tab.toLower();
  name += suffix;
  // "shot.png" -> "shot-2.png" (not "./shot-2.png"); "out/shot.png" -> "out/shot-2.png".
  const bool bare = info.path() == QStringLiteral(".") && !png.startsWith(QStringLiteral("./"));
  return bare ? name : info.path() + QLatin1Char('/') + name;
}

ScriptedRun::ScriptedRun(ScriptedRunParts parts, ScriptedRunOptions options, QObject* parent)
    : QObject(parent), parts_(parts), options_(std::move(options)) {
  if (!options_.track) {
    options_.devices.clear();
  } else if (options_.devices.empty()) {
    options_.devices.push_back(core::DeviceId::automatic());
  }
  // Queued: the window's own video_opened handling (which hands the video to the tracker service) runs first,
  // whatever the order of the connections.
  connect(parts_.session, &VideoSession::video_opened, this, &ScriptedRun::on_video_opened, Qt::QueuedConnection);
  connect(parts_.tracking->service(), &TrackerService::job_finished, this, &ScriptedRun::on_job_finished);
}

void ScriptedRun::on_video_opened() {
  if (started_) return;
  started_ = true;
  if (!options_.queries) {
    start_next_job();
    return;
  }
  const core::Expected<std::vector<core::Query>> queries =
      core::resolve_queries(*options_.queries, parts_.session->info());
  if (!queries) {
    summary_ << tr("queries %1: %2")
                    .arg(QString::fromStdString(options_.queries->to_string()),
                         QString::fromStdString(queries.status().message()));
    finish(2);
    return;
  }
  for (const core::Query& query : *queries) parts_.editor->add_point(query);
  start_next_job();
}

void ScriptedRun::start_next_job() {
  if (next_job_ >= options_.devices.size()) {
    finish(exit_code_);
    return;
  }
  TrackerService* service = parts_.tracking->service();
  const core::DeviceId& device = options_.devices[next_job_];
  ++next_job_;
  if (!device.is_automatic()) service->set_device(device);
  core::log::info("scripted run: job {} of {} on {}", next_job_, options_.devices.size(), service->selection().device);
  job_running_ = service->track({});
  if (!job_running_) {
    summary_ << tr("job %1 on %2: not started").arg(next_job_).arg(QString::fromStdString(service->selection().device));
    exit_code_ = 1;
    QTimer::singleShot(0, this, &ScriptedRun::start_next_job);
  }
}

void ScriptedRun::on_job_finished(bool completed, const QString& message) {
  if (!job_running_) return;  // a job the user started, not this run's
  job_running_ = false;
  const QString device = QString::fromStdString(parts_.tracking->service()->selection().device);
  summary_ << tr("job %1 on %2: %3").arg(next_job_).arg(device, completed ? tr("completed") : message);
  if (!completed) exit_code_ = 1;
  if (options_.screenshot_png.isEmpty()) {
    QTimer::singleShot(0, this, &ScriptedRun::start_next_job);
    return;
  }
  // The dock pulls the run's stage samples and the telemetry on its own 10 Hz timer: give it time to draw.
  QTimer::singleShot(options_.settle, this, [this] { take_screenshots(0); });
}

void ScriptedRun::take_screenshots(int tab_index) {
  if (options_.dock_tabs.isEmpty()) {
    take_screenshot({});
    start_next_job();
    return;
  }
  if (tab_index >= options_.dock_tabs.size()) {
    start_next_job();
    return;
  }
  const QString& tab = options_.dock_tabs[tab_index];
  QTabWidget* tabs = parts_.tracking->performance_dock()->tabs();
  for (int i = 0; i < tabs->count(); ++i) {
    if (tabs->tabText(i).compare(tab, Qt::CaseInsensitive) == 0) tabs->setCurrentIndex(i);
  }
  parts_.tracking->performance_dock()->show();
  // A moment for the newly shown charts to lay out and paint.
  QTimer::singleShot(kTabSettle, this, [this, tab_index, tab] {
    take_screenshot(tab);
    take_screenshots(tab_index + 1);
  });
}

void ScriptedRun::take_screenshot(const QString& tab) {
  const QString path = scripted_screenshot_path(options_.screenshot_png, static_cast<int>(next_job_), tab);
  const core::Status saved = save_image_atomically(parts_.window->grab().toImage(), path);
  if (!saved) {
    core::log::error("could not write the screenshot: {}", saved.message());
    summary_ << tr("screenshot %1: %2").arg(path, QString::fromStdString(saved.message()));
    exit_code_ = 1;
    return;
  }
  screenshots_ << path;
}

void ScriptedRun::finish(int exit_code) {
  const QString summary = summary_.join(QLatin1Char('\n'));
  core::log::info("scripted run finished ({}):\n{}", exit_code, summary.toStdString());
  Q_EMIT finished(exit_code, summary);
}

}  // namespace trackscope::ui
