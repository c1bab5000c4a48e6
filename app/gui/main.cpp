// trackscope: the GUI.   trackscope [VIDEO]
// Wiring only: command line, log sinks (stderr; Qt's own messages are routed into the log), and the real
// frame server factory handed to the main window.
#include <QApplication>
#include <QCommandLineParser>
#include <QDateTime>

#include <cstdio>
#include <string>

#include "core/log.h"
#include "core/video/frame_server.h"
#include "ui/main_window.h"

namespace {

namespace log = trackscope::core::log;

void write_to_stderr(log::Level level, std::string_view text) {
  const std::string time = QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss.zzz")).toStdString();
  std::fprintf(stderr, "%s [%s] %.*s\n", time.c_str(), log::to_string(level), static_cast<int>(text.size()), text.data());
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

}  // namespace

int main(int argc, char** argv) {
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
  parser.process(application);

  trackscope::ui::MainWindowOptions options;
  options.frame_server_factory = [](const std::filesystem::path& path, const trackscope::core::FrameServerOptions& server_options) {
    return trackscope::core::FrameServer::open(path, server_options);
  };
  trackscope::ui::MainWindow window(std::move(options));
  window.show();
  if (const QStringList videos = parser.positionalArguments(); !videos.isEmpty()) {
    if (videos.size() > 1) log::warn("opening only the first of {} videos given", videos.size());
    window.open_video(videos.front());
  }
  const int result = QApplication::exec();
  qInstallMessageHandler(nullptr);
  return result;
}
