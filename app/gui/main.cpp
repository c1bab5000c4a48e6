// trackscope: the GUI.   trackscope [--model M] [--device D] [--precision P] [--compare A.json,B.json]
//                                   [--dock-tab NAME] [--screenshot PNG] [VIDEO | PROJECT.trackscope]
//                                   [--queries Q.csv|grid:CxR@frameN] [--track [--track-devices cuda:0,cpu,...]
//                                    [--screenshot-after-track PNG]]   (a scripted run: ui/scripted_run.h; --queries
//                                    alone adds the points)
// Wiring only: command line, log sinks (stderr; Qt's own messages are routed into the log), and the real
// frame server factory, tracker factory and device telemetry handed to the main window. Without a VIDEO it
// opens the bundled sample clip, with the "default" model selected.
#include <QApplication>
#include <QCommandLineParser>
#include <QTabWidget>
#include <QTimer>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>

#include <csignal>
#include <cstdio>
#include <string>

#include "app/gui/tracker_wiring.h"
#include "core/log.h"
#include "core/perf/report.h"
#include "core/tracking/tracking_job.h"
#include "core/video/frame_server.h"
#include "ui/image_file.h"
#include "ui/main_window.h"
#include "ui/perf/performance_dock.h"
#include "ui/scripted_run.h"
#include "ui/tracking/tracking_controller.h"

namespace {

namespace log = trackscope::core::log;

void write_to_stderr(log::Level level, std::string_view text) {
  const std::string time = QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss.zzz")).toStdString();
  std::fprintf(stderr, "%s [%s] %.*s\n", time.c_str(), log::to_string(level), static_cast<int>(text.size()),
               text.data());
}

void route_qt_message(QtMsgType type, const QMessageLogContext& /*context*/, const QString& message) {
  const std::string text = "Qt: " + message.toStdString();
  switch (type) {
    case QtDebugMsg: log::debug("{}", text); break;
    case QtInfoMsg: log::info("{}", text); break;
    case QtWarningMsg: log::warn("{}", text); break;
    case QtCriticalMsg:
    case QtFatalMsg: log::error("{}", text); break;
  }
}

// The bundled sample clip: the installed copy (share/trackscope/ beside the binary's bin/), else the one the
// build rendered (resources/CMakeLists.txt). Empty when neither exists.
QString bundled_sample_clip() {
  const QString candidates[] = {
      QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral(TRACKSCOPE_SAMPLE_CLIP_FROM_BINDIR)),
      QStringLiteral(TRACKSCOPE_SAMPLE_CLIP_IN_BUILD_TREE)};
  for (const QString& candidate : candidates) {
    if (QFileInfo(candidate).isFile()) return QFileInfo(candidate).absoluteFilePath();
  }
  log::warn("the bundled sample clip is missing (looked at {} and {}); open a video with File > Open",
            candidates[0].toStdString(), candidates[1].toStdString());
  return {};
}

// --track-devices "cuda:0,cpu,cuda:0" -> the devices; invalid_argument naming the bad entry.
trackscope::core::Expected<std::vector<trackscope::core::DeviceId>> parse_device_list(const QString& text) {
  std::vector<trackscope::core::DeviceId> devices;
  for (const QString& entry : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
    auto device = trackscope::core::DeviceId::parse(entry.trimmed().toStdString());
    if (!device) return device.status();
    devices.push_back(*device);
  }
  if (devices.empty()) return trackscope::core::invalid_argument("--track-devices names no device");
  return devices;
}

}  // namespace

int main(int argc, char** argv) {
  // A write past `ulimit -f` then fails with EFBIG and is reported (the previous file kept) instead of killing
  // the process with SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  const log::SinkHandle stderr_sink = log::add_sink(write_to_stderr, log::Level::info);
  qInstallMessageHandler(route_qt_message);

  QApplication application(argc, argv);
  QApplication::setApplicationName("Trackscope");
  QApplication::setOrganizationName("Trackscope");
  QApplication::setOrganizationDomain("trackscope.org");
  QApplication::setApplicationVersion(QStringLiteral(TRACKSCOPE_VERSION));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Track points through video with a learned point tracker."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("video"),
                               QStringLiteral("Video file or image-sequence folder to open (optional)."),
                               QStringLiteral("[VIDEO]"));
  const QCommandLineOption model_option(
      QStringLiteral("model"), QStringLiteral("Tracker model: default (bundled), small, base, or a weights file."),
      QStringLiteral("model"), QStringLiteral("default"));
  const QCommandLineOption device_option(QStringLiteral("device"),
                                         QStringLiteral("Tracker device: auto, cpu, cuda or cuda:N."),
                                         QStringLiteral("device"), QStringLiteral("auto"));
  const QCommandLineOption precision_option(QStringLiteral("precision"),
                                            QStringLiteral("Tracker precision: fp32, tf32, bf16 or fp16."),
                                            QStringLiteral("precision"), QStringLiteral("fp32"));
  const QCommandLineOption compare_option(
      QStringLiteral("compare"),
      QStringLiteral("Open two bench profiles (trackscope-cli bench --json) in the performance dock and compare "
                     "them: A.json,B.json; FILE:N picks case N (default 0)."),
      QStringLiteral("profiles"));
  const QCommandLineOption tab_option(QStringLiteral("dock-tab"),
                                      QStringLiteral("Show this tab of the performance dock: stages, roofline, "
                                                     "compare or telemetry. With --screenshot-after-track a list "
                                                     "(stages,telemetry): one screenshot per tab."),
                                      QStringLiteral("tab"));
  const QCommandLineOption screenshot_option(
      QStringLiteral("screenshot"),
      QStringLiteral("Save a screenshot of the window to this PNG once the video is shown, then quit."),
      QStringLiteral("png"));
  const QCommandLineOption queries_option(
      QStringLiteral("queries"),
      QStringLiteral("Add these query points once the video is open: a CSV with a frame,x,y header, or "
                     "grid:COLSxROWS@frameN."),
      QStringLiteral("queries"));
  const QCommandLineOption track_option(QStringLiteral("track"),
                                        QStringLiteral("Track every point once the video is open (a scripted run)."));
  const QCommandLineOption track_devices_option(
      QStringLiteral("track-devices"),
      QStringLiteral("With --track: one job per device, in this order, in the same process (e.g. cuda:0,cpu,cuda:0)."),
      QStringLiteral("devices"));
  const QCommandLineOption after_track_option(
      QStringLiteral("screenshot-after-track"),
      QStringLiteral("With --track: save a screenshot after each job (PNG; the second job's as NAME-2.png, ...), "
                     "then quit; exit status 1 if a job failed."),
      QStringLiteral("png"));
  parser.addOptions({model_option, device_option, precision_option, compare_option, tab_option, screenshot_option,
                     queries_option, track_option, track_devices_option, after_track_option});
  parser.process(application);

  namespace core = trackscope::core;
  core::TrackerOptions tracker;
  tracker.model = parser.value(model_option).toStdString();
  tracker.device = parser.value(device_option).toStdString();
  core::Expected<core::Precision> precision = core::parse_precision(parser.value(precision_option).toStdString());
  core::Status valid = precision ? core::Status() : precision.status();
  if (precision) {
    tracker.precision = *precision;
    valid = tracker.check();
  }
  trackscope::ui::ScriptedRunOptions script;
  if (valid && parser.isSet(queries_option)) {
    const core::Expected<core::QuerySpec> spec = core::parse_query_spec(parser.value(queries_option).toStdString());
    if (spec) script.queries = *spec;
    valid = spec ? core::Status() : spec.status();
  }
  if (valid && parser.isSet(track_devices_option)) {
    core::Expected<std::vector<core::DeviceId>> devices = parse_device_list(parser.value(track_devices_option));
    if (devices) script.devices = std::move(*devices);
    valid = devices ? core::Status() : devices.status();
  }
  script.screenshot_png = parser.value(after_track_option);
  if (parser.isSet(after_track_option) && parser.isSet(tab_option)) {
    script.dock_tabs = parser.value(tab_option).split(QLatin1Char(','), Qt::SkipEmptyParts);
  }
  const bool scripted = parser.isSet(track_option);
  if (valid && !scripted && (parser.isSet(track_devices_option) || parser.isSet(after_track_option))) {
    valid = core::invalid_argument("--track-devices and --screenshot-after-track need --track");
  }
  if (valid && scripted && parser.isSet(screenshot_option)) {
    valid = core::invalid_argument(
        "--screenshot is taken when the video is shown; with --track use "
        "--screenshot-after-track");
  }
  if (!valid) {
    std::fprintf(stderr, "trackscope: %s\n", valid.message().c_str());
    return 2;
  }

  trackscope::ui::MainWindowOptions options;
  options.frame_server_factory = [](const std::filesystem::path& path, const core::FrameServerOptions& server_options) {
    return core::FrameServer::open(path, server_options);
  };
  options.tracker_factory = trackscope::app::make_gui_tracker_factory();
  options.telemetry_factory = trackscope::app::make_gui_telemetry_factory();
  options.video_opener = [](const std::filesystem::path& path) { return core::open_video_file(path); };
  options.tracker_options = tracker;
  // --screenshot runs unattended: no dialog may wait for an answer (a missing or replaced video, a recovery
  // file); each prompt takes its logged default or cancel answer (ui::headless_project_prompts()).
  options.headless = parser.isSet(screenshot_option) || parser.isSet(after_track_option);
  trackscope::ui::MainWindow window(std::move(options));
  window.show();
  QStringList videos = parser.positionalArguments();
  if (videos.size() > 1) log::warn("opening only the first of {} videos given", videos.size());
  if (parser.isSet(screenshot_option)) {
    const QString png = parser.value(screenshot_option);
    window.resize(1600, 1000);
    // The delay lets the decode thread and the charts draw. exit(), not quit(): quit() first asks every window
    // to close, which a window may refuse.
    QTimer::singleShot(2500, &window, [&window, png] {
      const core::Status saved = trackscope::ui::save_image_atomically(window.grab().toImage(), png);
      if (!saved) log::error("could not write the screenshot: {}", saved.message());
      QCoreApplication::exit(saved ? 0 : 1);
    });
  }
  script.track = scripted;
  if (scripted || parser.isSet(queries_option)) {
    window.resize(1600, 1000);
    auto* run = new trackscope::ui::ScriptedRun({window.editor(), window.session(), window.tracking(), &window}, script,
                                                &window);
    const bool quit_after = !script.screenshot_png.isEmpty();
    QObject::connect(run, &trackscope::ui::ScriptedRun::finished, &window,
                     [quit_after](int exit_code, const QString& /*summary: logged by the run*/) {
                       if (quit_after) QCoreApplication::exit(exit_code);
                     });
  }
  const QString video = videos.isEmpty() ? bundled_sample_clip() : videos.front();
  if (!video.isEmpty()) window.open_video(video);
  trackscope::ui::PerformanceDock* dock = window.tracking()->performance_dock();
  if (parser.isSet(compare_option)) {
    const QStringList profiles = parser.value(compare_option).split(QLatin1Char(','));
    if (profiles.size() != 2) {
      std::fprintf(stderr, "trackscope: --compare takes two profiles, A.json,B.json\n");
      return 2;
    }
    std::vector<int> picked;
    for (const QString& spec : profiles) {
      const core::Expected<core::ProfileChoice> choice = core::parse_profile_choice(spec.toStdString());
      if (!choice) {
        std::fprintf(stderr, "trackscope: --compare: %s\n", choice.status().message().c_str());
        return 2;
      }
      const QString path = QString::fromStdString(choice->path);
      const int first = static_cast<int>(dock->entries().size());
      if (core::Status opened = dock->open_profile_file(path); !opened) {
        std::fprintf(stderr, "trackscope: %s\n", opened.message().c_str());
        return 1;
      }
      if (choice->case_index >= static_cast<int>(dock->entries().size()) - first) {
        std::fprintf(stderr, "trackscope: %s has no case %d\n", qPrintable(path), choice->case_index);
        return 1;
      }
      picked.push_back(first + choice->case_index);
    }
    dock->compare(picked[0], picked[1]);
    // A also becomes the dock's current run, so that its Stages and Roofline tabs show it.
    const trackscope::ui::ProfileEntry a = dock->entries().at(static_cast<size_t>(picked[0]));
    dock->add_run(*a.profile, a.case_index, a.label);
    dock->show();
  }
  if (parser.isSet(tab_option)) {
    const QString wanted = parser.value(tab_option).toLower().section(QLatin1Char(','), 0, 0);
    for (int i = 0; i < dock->tabs()->count(); ++i) {
      if (dock->tabs()->tabText(i).toLower() == wanted) dock->tabs()->setCurrentIndex(i);
    }
    dock->show();
  }
  const int result = QApplication::exec();
  qInstallMessageHandler(nullptr);
  return result;
}
