#pragma once
// The fixture of the tracking UI tests: a main window on a fake 320x240, 48-frame clip, with the fake tracker
// factory, the fake tracking-thread decoder and fake telemetry injected, errors recorded instead of shown.

#include <QApplication>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <functional>
#include <memory>

#include "fake_frame_server.h"
#include "fake_tracker.h"
#include "ui/annotation_editor.h"
#include "ui/main_window.h"
#include "ui/perf/performance_dock.h"
#include "ui/tracking/tracker_service.h"
#include "ui/tracking/tracking_controller.h"
#include "ui/video_canvas.h"
#include "ui/video_session.h"

namespace trackscope::testing {

inline const QString kTrackingClip = QStringLiteral("/videos/tracking.mp4");  // 320x240, 48 frames, 25 fps
inline constexpr int kClipWidth = 320;
inline constexpr int kClipHeight = 240;
inline constexpr int64_t kClipFrames = 48;

inline QString test_output_dir() {
  const QByteArray env = qgetenv("TRACKSCOPE_TEST_OUTPUT_DIR");
  const QString dir = env.isEmpty() ? QString(TRACKSCOPE_TEST_OUTPUT_DIR) : QString::fromLocal8Bit(env);
  QDir().mkpath(dir);
  return dir;
}

struct TrackingBench {
  QTemporaryDir settings_dir;
  FakeVideoLibrary library;
  std::shared_ptr<FakeTrackerLog> log = std::make_shared<FakeTrackerLog>();
  QStringList errors;  // "title: message" of every reported error
  std::unique_ptr<ui::MainWindow> window;

  /// `customise` may change the window's options last (project options, extra videos in `library`).
  explicit TrackingBench(FakeTrackerConfig config = {}, std::string device = "auto",
                         const std::function<void(TrackingBench&, ui::MainWindowOptions&)>& customise = {}) {
    FakeVideo video;
    video.width = kClipWidth;
    video.height = kClipHeight;
    video.frame_count = kClipFrames;
    library.add_video(kTrackingClip.toStdString(), video);
    ui::MainWindowOptions options;
    options.frame_server_factory = library.factory();
    options.error_presenter = [this](QWidget*, const QString& title, const QString& message) {
      errors << title + QStringLiteral(": ") + message;
    };
    options.settings_file = settings_dir.filePath(QStringLiteral("trackscope.ini"));
    options.tracker_factory = std::make_unique<FakeTrackerFactory>(config, log);
    options.telemetry_factory = fake_telemetry_factory();
    options.video_opener = fake_video_opener(library);
    options.tracker_options.device = std::move(device);
    // No modal dialog may block a test: questions are answered here (tests that care set their own).
    options.project.prompts.unsaved_changes = [](QWidget*, const QString&) { return ui::UnsavedChoice::discard; };
    options.project.prompts.offer_recovery = [](QWidget*, const QString&) { return ui::RecoveryChoice::later; };
    options.project.prompts.locate_video = [](QWidget*, const QString&) { return QString(); };
    options.project.prompts.confirm = [](QWidget*, const QString&, const QString&) { return false; };
    if (customise) customise(*this, options);
    window = std::make_unique<ui::MainWindow>(std::move(options));
    window->resize(1000, 700);
    window->show();
  }

  ui::VideoCanvas* canvas() const { return window->canvas(); }
  ui::TrackingController* tracking() const { return window->tracking(); }
  ui::TrackerService* service() const { return window->tracking()->service(); }
  ui::PerformanceDock* dock() const { return window->tracking()->performance_dock(); }
  const core::Annotation& annotation() const { return window->editor()->annotation(); }

  /// Opens the clip (or another video of `library`) and waits for its first frame.
  bool open(const QString& path = kTrackingClip) {
    QSignalSpy opened(window.get(), &ui::MainWindow::video_opened);
    window->open_video(path);
    if (!opened.wait(5000)) return false;
    return QTest::qWaitFor([&] { return canvas()->frame_index() == 0 && !window->session()->frame_pending(); }, 5000);
  }

  /// Seeks and waits until the frame is on screen.
  bool show_frame(int64_t index) {
    window->seek(index);
    return QTest::qWaitFor([&] { return canvas()->frame_index() == index; }, 5000);
  }

  /// Adds query points on the shown frame through the editor (the canvas tests cover the mouse path).
  void add_points(const std::vector<QPointF>& points_in_image) {
    for (const QPointF& p : points_in_image) window->editor()->add_point({canvas()->frame_index(), p.x(), p.y()});
  }

  /// Waits until the service is idle again (job finished, cancelled or failed).
  bool wait_idle(int timeout_ms = 10000) {
    return QTest::qWaitFor([&] { return service()->state() == ui::TrackingState::idle; }, timeout_ms);
  }

  int tracked_points() const {
    int count = 0;
    for (const core::QueryPoint& point : annotation()) count += annotation().track(point.id) != nullptr ? 1 : 0;
    return count;
  }

  /// Presses a key on the focused widget, as a keyboard would.
  void key(Qt::Key key, Qt::KeyboardModifiers modifiers = Qt::NoModifier) {
    QWidget* target = QApplication::focusWidget() ? QApplication::focusWidget() : window.get();
    QTest::keyClick(target, key, modifiers);
  }

  /// The widget pixel (integer) whose centre is nearest to image point `point_in_image`.
  QPoint widget_pixel(QPointF point_in_image) const {
    const QPointF in_widget = canvas()->widget_from_image(point_in_image);
    return {static_cast<int>(std::floor(in_widget.x())), static_cast<int>(std::floor(in_widget.y()))};
  }

  /// The colour the fake video has under widget pixel `pixel` on frame `frame` (the canvas magnifies without
  /// smoothing, so a widget pixel shows exactly one image pixel).
  QColor video_colour(QPoint pixel, int64_t frame) const {
    const QPointF in_image = canvas()->image_from_widget(QPointF(pixel) + QPointF(0.5, 0.5));
    return QColor(static_cast<int>(std::floor(in_image.x())) % 256, static_cast<int>(std::floor(in_image.y())) % 256,
                  blue_of_frame(frame));
  }
};

/// Largest per-channel difference.
inline int colour_distance(const QColor& a, const QColor& b) {
  return std::max({std::abs(a.red() - b.red()), std::abs(a.green() - b.green()), std::abs(a.blue() - b.blue())});
}

}  // namespace trackscope::testing
