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
#include <optional>
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

struct GuiOptions {
  QCommandLineOption model{QStringLiteral("model"),
                           QStringLiteral("Tracker model: default (bundled), small, base, or a weights file."),
                           QStringLiteral("model"), QStringLiteral("default")};
  QCommandLineOption device{QStringLiteral("device"), QStringLiteral("Tracker device: auto, cpu, cuda or cuda:N."),
                            QStringLiteral("device"), QStringLiteral("auto")};
  QCommandLineOption precision{QStringLiteral("precision"),
                               QStringLiteral("Tracker precision: fp32, tf32, bf16 or fp16."),
                               QStringLiteral("precision"), QStringLiteral("fp32")};
  QCommandLineOption compare{
      QStringLiteral("compare"),
      QStringLiteral("Open two bench profiles (trackscope-cli bench --json) in the performance dock and compare "
                     "them: A.json,B.json; FILE:N picks case N (default 0)."),
      QStringLiteral("profiles")};
  QCommandLineOption tab{QStringLiteral("dock-tab"),
                         QStringLiteral("Show this tab of the performance dock: stages, roofline, "
                                        "compare or telemetry. With --screenshot-after-track a list "
                                        "(stages,telemetry): one screenshot per tab."),
                         QStringLiteral("tab")};
  QCommandLineOption screenshot{
      QStringLiteral("screenshot"),
      QStringLiteral("Save a screenshot of the window to this PNG once the video is shown, then quit."),
      QStringLiteral("png")};
  QCommandLineOption queries{QStringLiteral("queries"),
                             QStringLiteral("Add these query points once the video is open: a CSV with a frame,x,y "
                                            "header, or grid:COLSxROWS@frameN."),
                             QStringLiteral("queries")};
  QCommandLineOption track{QStringLiteral("track"),
                           QStringLiteral("Track every point once the video is open (a scripted run).")};
  QCommandLineOption track_devices{
      QStringLiteral("track-devices"),
      QStringLiteral("With --track: one job per device, in this order, in the same process (e.g. cuda:0,cpu,cuda:0)."),
      QStringLiteral("devices")};
  QCommandLineOption after_track{
      QStringLiteral("screenshot-after-track"),
      QStringLiteral("With --track: save a screenshot after each job (PNG; the second job's as NAME-2.png, ...), "
                     "then quit; exit status 1 if a job failed."),
      QStringLiteral("png")};

  void add_to(QCommandLineParser& parser) const {
    parser.addOptions({model, device, precision, compare, tab, screenshot, queries, track, track_devices, after_track});
  }
};

// What the command line asks for, checked.
struct LaunchRequest {
  trackscope::core::TrackerOptions tracker;
  trackscope::ui::ScriptedRunOptions script;  // script.track: --track
  bool add_queries = false;                   // --queries (with or without --track)
  QString screenshot_png;                     // --screenshot
  std::optional<QString> compare;             // --compare A.json,B.json
  std::optional<QString> dock_tab;            // the first --dock-tab name, lower case
  QStringList videos;
};

// invalid_argument naming the bad option (exit status 2).
trackscope::core::Expected<LaunchRequest> read_request(const QCommandLineParser& parser, const GuiOptions& o) {
  namespace core = trackscope::core;
  LaunchRequest request;
  request.tracker.model = parser.value(o.model).toStdString();
  request.tracker.device = parser.value(o.device).toStdString();
  const core::Expected<core::Precision> precision = core::parse_precision(parser.value(o.precision).toStdString());
  if (!precision) return precision.status();
  request.tracker.precision = *precision;
  if (core::Status valid = request.tracker.check(); !valid) return valid;
  request.add_queries = parser.isSet(o.queries);
  if (request.add_queries) {
    const core::Expected<core::QuerySpec> spec = core::parse_query_spec(parser.value(o.queries).toStdString());
    if (!spec) return spec.status();
    request.script.queries = *spec;
  }
  if (parser.isSet(o.track_devices)) {
    core::Expected<std::vector<core::DeviceId>> devices = parse_device_list(parser.value(o.track_devices));
    if (!devices) return devices.status();
    request.script.devices = std::move(*devices);
  }
  request.script.screenshot_png = parser.value(o.after_track);
  if (parser.isSet(o.after_track) && parser.isSet(o.tab)) {
    request.script.dock_tabs = parser.value(o.tab).split(QLatin1Char(','), Qt::SkipEmptyParts);
  }
  request.script.track = parser.isSet(o.track);
  if (!request.script.track && (parser.isSet(o.track_devices) || parser.isSet(o.after_track))) {
    return core::invalid_argument("--track-devices and --screenshot-after-track need --track");
  }
  if (request.script.track && parser.isSet(o.screenshot)) {
    return core::invalid_argument(
        "--screenshot is taken when the video is shown; with --track use --screenshot-after-track");
  }
  request.screenshot_png = parser.value(o.screenshot);
  if (parser.isSet(o.compare)) request.compare = parser.value(o.compare);
  if (parser.isSet(o.tab)) request.dock_tab = parser.value(o.tab).toLower().section(QLatin1Char(','), 0, 0);
  request.videos = parser.positionalArguments();
  return request;
}

// --compare A.json[:N],B.json[:N]: both profiles into the dock, compared, A its current run. Returns the exit status
// to stop with (2: a bad argument, 1: a profile that cannot be used), nullopt to go on.
std::optional<int> open_comparison(trackscope::ui::PerformanceDock& dock, const QString& text) {
  namespace core = trackscope::core;
  const QStringList profiles = text.split(QLatin1Char(','));
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
    const int first = static_cast<int>(dock.entries().size());
    if (core::Status opened = dock.open_profile_file(path); !opened) {
      std::fprintf(stderr, "trackscope: %s\n", opened.message().c_str());
      return 1;
    }
    if (choice->case_index >= static_cast<int>(dock.entries().size()) - first) {
      std::fprintf(stderr, "trackscope: %s has no case %d\n", qPrintable(path), choice->case_index);
      return 1;
    }
    picked.push_back(first + choice->case_index);
  }
  dock.compare(picked[0], picked[1]);
  // A also becomes the dock's current run, so that its Stages and Roofline tabs show it.
  const trackscope::ui::ProfileEntry a = dock.entries().at(static_cast<size_t>(picked[0]));
  dock.add_run(*a.profile, a.case_index, a.label);
  dock.show();
  return std::nullopt;
}

void show_dock_tab(trackscope::ui::PerformanceDock& dock, const QString& wanted) {
  for (int i = 0; i < dock.tabs()->count(); ++i) {
    if (dock.tabs()->tabText(i).toLower() == wanted) dock.tabs()->setCurrentIndex(i);
  }
  dock.show();
}

// --screenshot: the window once the video is shown, then quit.
void schedule_screenshot(QWidget& window, const QString& png) {
  window.resize(1600, 1000);
  // The delay lets the decode thread and the charts draw. exit(), not quit(): quit() first asks every window
  // to close, which a window may refuse.
  QTimer::singleShot(2500, &window, [&window, png] {
    const trackscope::core::Status saved = trackscope::ui::save_image_atomically(window.grab().toImage(), png);
    if (!saved) log::error("could not write the screenshot: {}", saved.message());
    QCoreApplication::exit(saved ? 0 : 1);
  });
}

// --queries / --track: a scripted run on the main window (ui/scripted_run.h); with --screenshot-after-track the
// application quits with the run's exit status.
void start_scripted_run(trackscope::ui::MainWindow& window, const trackscope::ui::ScriptedRunOptions& script) {
  window.resize(1600, 1000);
  auto* run =
      new trackscope::ui::ScriptedRun({window.editor(), window.session(), window.tracking(), &window}, script, &window);
  const bool quit_after = !script.screenshot_png.isEmpty();
  QObject::connect(run, &trackscope::ui::ScriptedRun::finished, &window,
                   [quit_after](int exit_code, const QString& /*summary: logged by the run*/) {
                     if (quit_after) QCoreApplication::exit(exit_code);
                   });
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
  const GuiOptions gui_options;
  gui_options.add_to(parser);
  parser.process(application);
  trackscope::core::Expected<LaunchRequest> request = read_request(parser, gui_options);
  if (!request) {
    std::fprintf(stderr, "trackscope: %s\n", request.status().message().c_str());
    return 2;
  }

  namespace core = trackscope::core;
  trackscope::ui::MainWindowOptions options;
  options.frame_server_factory = [](const std::filesystem::path& path, const core::FrameServerOptions& server_options) {
    return core::FrameServer::open(path, server_options);
  };
  options.tracker_factory = trackscope::app::make_gui_tracker_factory();
  options.telemetry_factory = trackscope::app::make_gui_telemetry_factory();
  options.video_opener = [](const std::filesystem::path& path) { return core::open_video_file(path); };
  options.tracker_options = request->tracker;
  // An unattended run: no dialog may wait for an answer (a missing or replaced video, a recovery file); each prompt
  // takes its logged default or cancel answer (ui::headless_project_prompts()).
  options.headless = !request->screenshot_png.isEmpty() || !request->script.screenshot_png.isEmpty();
  trackscope::ui::MainWindow window(std::move(options));
  window.show();
  if (request->videos.size() > 1) log::warn("opening only the first of {} videos given", request->videos.size());
  if (!request->screenshot_png.isEmpty()) schedule_screenshot(window, request->screenshot_png);
  if (request->script.track || request->add_queries) start_scripted_run(window, request->script);
  const QString video = request->videos.isEmpty() ? bundled_sample_clip() : request->videos.front();
  if (!video.isEmpty()) window.open_video(video);
  trackscope::ui::PerformanceDock* dock = window.tracking()->performance_dock();
  if (request->compare) {
    if (const std::optional<int> stop = open_comparison(*dock, *request->compare)) return *stop;
  }
  if (request->dock_tab) show_dock_tab(*dock, *request->dock_tab);
  const int result = QApplication::exec();
  qInstallMessageHandler(nullptr);
  return result;
}
