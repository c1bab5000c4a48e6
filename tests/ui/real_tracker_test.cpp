// The workbench with the real tracker: gpu's LocoTrack factory (random fixture weights, on the CPU) tracking
// points on a short clip rendered like the bundled sample, through the same path as the app (FrameServer for
// display, a decoder on the tracking thread). Asserts that the tracks arrive for every frame, carry the
// tracker's provenance, and that the overlay is drawn where the tracks are.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <filesystem>

#include "core/tracking/tracking_job.h"
#include "core/video/frame_server.h"
#include "core/video/sample_clip.h"
#include "gpu/cpu_runtime.h"
#include "gpu/tracker_factory.h"
#include "ui/annotation_editor.h"
#include "ui/main_window.h"
#include "ui/point_colours.h"
#include "ui/tracking/track_overlay.h"
#include "ui/tracking/tracker_service.h"
#include "ui/tracking/tracking_controller.h"
#include "ui/video_canvas.h"
#include "ui/workbench_actions.h"

using namespace trackscope;

namespace {

const std::filesystem::path kFixtureWeights =
    std::filesystem::path(TRACKSCOPE_SHARED_DIR) / "fixtures/locotrack/locotrack_small_random_bf16.safetensors";

// Pixels of `colour` within `radius` widget pixels of `centre` (the marker: a disc, or a ring when occluded).
int pixels_of_colour_near(const QImage& shot, QPoint centre, int radius, const QColor& colour) {
  int count = 0;
  for (int dy = -radius; dy <= radius; ++dy) {
    for (int dx = -radius; dx <= radius; ++dx) {
      const QPoint p = centre + QPoint(dx, dy);
      if (shot.rect().contains(p) && QColor(shot.pixel(p)) == colour) ++count;
    }
  }
  return count;
}

}  // namespace

class RealTrackerTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void tracks_a_clip_with_the_locotrack_factory_and_draws_the_overlay() {
    gpu::set_cpu_threads(1);
    QTemporaryDir dir;
    core::SampleClipOptions clip;
    clip.width = 320;
    clip.height = 180;
    clip.frame_count = 12;
    const std::filesystem::path video = std::filesystem::path(dir.path().toStdString()) / "clip.mp4";
    QVERIFY(core::write_sample_clip(video, clip).ok());

    QStringList errors;
    ui::MainWindowOptions options;
    options.frame_server_factory = [](const std::filesystem::path& path, const core::FrameServerOptions& server) {
      return core::FrameServer::open(path, server);
    };
    options.error_presenter = [&errors](QWidget*, const QString& title, const QString& message) {
      errors << title + ": " + message;
    };
    options.settings_file = dir.filePath(QStringLiteral("trackscope.ini"));
    options.tracker_factory = gpu::make_tracker_factory({});
    options.tracker_options.device = "cpu";
    options.tracker_options.model = kFixtureWeights.string();
    ui::MainWindow window(std::move(options));
    window.resize(1000, 700);
    window.show();
    QSignalSpy opened(&window, &ui::MainWindow::video_opened);
    window.open_video(QString::fromStdString(video.string()));
    QVERIFY(opened.wait(10000));
    QTRY_COMPARE_WITH_TIMEOUT(window.canvas()->frame_index(), int64_t{0}, 10000);
    const std::vector<core::SampleTrack> truth = core::sample_clip_ground_truth(clip);
    for (const core::SampleTrack& t : truth) window.editor()->add_point({0, t.points[0].x_px, t.points[0].y_px});

    window.actions().track->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(window.tracking()->service()->state() == ui::TrackingState::idle &&
                                 window.editor()->annotation().track(0) != nullptr,
                             120000);
    QVERIFY2(errors.isEmpty(), qPrintable(errors.join('\n')));

    ui::TrackOverlayOptions overlay;
    overlay.trail_before_frames = 0;
    overlay.trail_after_frames = 0;
    window.tracking()->set_track_overlay(overlay);
    const int64_t frame = 7;
    window.seek(frame);
    QTRY_COMPARE_WITH_TIMEOUT(window.canvas()->frame_index(), frame, 10000);
    QTest::qWait(100);
    const QImage shot = window.canvas()->grab().toImage();
    int drawn = 0;
    for (const core::QueryPoint& point : window.editor()->annotation()) {
      const core::PointTrack* attached = window.editor()->annotation().track(point.id);
      QVERIFY(attached != nullptr);
      QCOMPARE(attached->track.points.size(), static_cast<size_t>(clip.frame_count));
      QVERIFY2(attached->provenance.model.find("LocoTrack-S") != std::string::npos, attached->provenance.model.c_str());
      QCOMPARE(attached->provenance.device, std::string("cpu"));
      // On its query frame the tracker starts at the query (the initialisation pins it; the refinement may
      // move it, by little).
      const core::TrackPoint& start = attached->track.at(0);
      QVERIFY(std::hypot(start.x_px - point.query.x_px, start.y_px - point.query.y_px) < 30.0);
      const core::TrackPoint& estimate = attached->track.at(frame);
      QVERIFY(std::isfinite(estimate.x_px) && std::isfinite(estimate.y_px));
      const QPointF at = window.canvas()->widget_from_image({estimate.x_px, estimate.y_px});
      if (!window.canvas()->rect().contains(at.toPoint())) continue;
      const QPoint pixel(static_cast<int>(std::floor(at.x())), static_cast<int>(std::floor(at.y())));
      const QColor colour = ui::point_colour(point.colour_index);
      const int near = pixels_of_colour_near(shot, pixel, 8, colour);
      QVERIFY2(near >= 8, qPrintable(QStringLiteral("point %1: %2 marker pixels near (%3, %4)")
                                         .arg(point.id)
                                         .arg(near)
                                         .arg(pixel.x())
                                         .arg(pixel.y())));
      ++drawn;
    }
    QVERIFY(drawn >= 2);
  }
};

QTEST_MAIN(RealTrackerTest)
#include "real_tracker_test.moc"
