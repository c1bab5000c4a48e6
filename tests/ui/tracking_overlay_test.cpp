// Track overlays on the canvas, checked in the rendered pixels: every tracked point is drawn where its track is on
// several frames (a solid disc of its colour when visible, a hollow ring of its colour over the video when
// occluded), the occluded toggle hides the rings, the trail lengths change what is drawn, the point list shows
// each track's state on the current frame, and a screenshot of tracks with trails is saved.
#include <QAction>
#include <QImage>
#include <QSpinBox>
#include <QTableView>

#include "core/video/frame_server.h"
#include "core/video/sample_clip.h"
#include "tracking_bench.h"
#include "ui/point_colours.h"
#include "ui/point_list_panel.h"
#include "ui/settings.h"
#include "ui/tracking/tracking_widgets.h"
#include "ui/workbench_actions.h"

using namespace std::chrono_literals;
using namespace trackscope;
using testing::colour_distance;
using testing::fake_estimate;
using testing::FakeTrackerConfig;
using testing::kClipHeight;
using testing::kClipWidth;
using testing::TrackingBench;

namespace {

// Three points whose occlusion phases differ: point 0 is occluded on frames 8-12, point 1 on 1-4 and 24-28,
// point 2 on 16-20 and 40-44 (fake_estimate).
const std::vector<QPointF> kThreePoints = {{40.5, 60.5}, {120.5, 100.5}, {200.5, 40.5}};

QPointF position(const core::TrackPoint& point) { return {point.x_px, point.y_px}; }

// Tracks the points on frame 0 and waits for the result.
bool track_all(TrackingBench& bench, const std::vector<QPointF>& points) {
  if (!bench.open()) return false;
  bench.add_points(points);
  bench.window->actions().track->trigger();
  return bench.wait_idle() && bench.tracked_points() == static_cast<int>(points.size());
}

ui::TrackOverlayOptions trails(int before, int after) {
  ui::TrackOverlayOptions options;
  options.trail_before_frames = before;
  options.trail_after_frames = after;
  return options;
}

}  // namespace

class TrackingOverlayTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void overlays_are_drawn_where_the_tracks_are() {
    FakeTrackerConfig config;
    config.query_chunk = 4;
    config.chunk_delay = 0ms;
    TrackingBench bench(config, "cpu");
    QVERIFY(track_all(bench, kThreePoints));
    bench.tracking()->set_track_overlay(trails(0, 0));
    const double ring_offset = ui::VideoCanvas::point_radius_widget_px - 1.0;

    int visible_checked = 0, occluded_checked = 0;
    for (int64_t frame : {3, 10, 18, 22}) {
      QVERIFY(bench.show_frame(frame));
      const QImage shot = bench.canvas()->grab().toImage();
      for (const core::QueryPoint& point : bench.annotation()) {
        const core::TrackPoint estimate = fake_estimate(point.query, frame, kClipWidth, kClipHeight);
        const QPoint centre = bench.widget_pixel(position(estimate));
        const QColor colour = ui::point_colour(point.colour_index);
        const QString where = QStringLiteral("point %1 frame %2").arg(point.id).arg(frame);
        if (estimate.visible) {
          QVERIFY2(QColor(shot.pixel(centre)) == colour, qPrintable(where));
          ++visible_checked;
        } else {
          // Hollow: the video shows through the middle, the ring has the point's colour.
          QVERIFY2(colour_distance(shot.pixel(centre), bench.video_colour(centre, frame)) <= 2, qPrintable(where));
          const QPoint ring = bench.widget_pixel(position(estimate)) + QPoint(static_cast<int>(ring_offset), 0);
          QVERIFY2(colour_distance(shot.pixel(ring), colour) < 60, qPrintable(where));
          QVERIFY2(colour_distance(shot.pixel(ring), bench.video_colour(ring, frame)) > 60, qPrintable(where));
          ++occluded_checked;
        }
      }
    }
    QCOMPARE(occluded_checked, 3);  // each point is occluded on one of the frames
    QCOMPARE(visible_checked, 9);

    // Hiding occluded estimates removes the ring of point 0 on frame 10 and keeps the visible discs.
    bench.window->actions().show_occluded->trigger();
    QVERIFY(!bench.tracking()->track_overlay().show_occluded);
    QVERIFY(bench.show_frame(10));
    QImage shot = bench.canvas()->grab().toImage();
    const core::QueryPoint& hidden = bench.annotation().points()[0];
    const core::TrackPoint occluded = fake_estimate(hidden.query, 10, kClipWidth, kClipHeight);
    QVERIFY(!occluded.visible);
    const QPoint ring = bench.widget_pixel(position(occluded)) + QPoint(static_cast<int>(ring_offset), 0);
    QVERIFY(colour_distance(shot.pixel(ring), bench.video_colour(ring, 10)) <= 2);
    const core::QueryPoint& shown = bench.annotation().points()[1];
    const QPoint disc = bench.widget_pixel(position(fake_estimate(shown.query, 10, kClipWidth, kClipHeight)));
    QCOMPARE(QColor(shot.pixel(disc)), ui::point_colour(shown.colour_index));

    // Show Tracks off: no estimate at all; the query points stay (on their own frame).
    bench.window->actions().show_tracks->trigger();
    shot = bench.canvas()->grab().toImage();
    QVERIFY(colour_distance(shot.pixel(disc), bench.video_colour(disc, 10)) <= 2);
    QVERIFY(bench.show_frame(0));
    shot = bench.canvas()->grab().toImage();
    const QPoint query = bench.widget_pixel({shown.query.x_px, shown.query.y_px});
    QCOMPARE(QColor(shot.pixel(query)), ui::point_colour(shown.colour_index));
  }

  void trail_length_changes_what_is_drawn() {
    FakeTrackerConfig config;
    config.chunk_delay = 0ms;
    TrackingBench bench(config, "cpu");
    QVERIFY(track_all(bench, {{40.5, 60.5}}));  // visible from frame 13 to 31
    const core::QueryPoint& point = bench.annotation().points()[0];
    const QColor colour = ui::point_colour(point.colour_index);
    auto between = [&](int64_t a, int64_t b, double t) {
      const QPointF from = position(fake_estimate(point.query, a, kClipWidth, kClipHeight));
      const QPointF to = position(fake_estimate(point.query, b, kClipWidth, kClipHeight));
      return bench.widget_pixel(from + (to - from) * t);
    };
    bench.tracking()->set_track_overlay(trails(0, 0));
    QVERIFY(bench.show_frame(24));
    QImage shot = bench.canvas()->grab().toImage();
    const QPoint past = between(18, 19, 0.5);
    QVERIFY(colour_distance(shot.pixel(past), bench.video_colour(past, 24)) <= 2);

    // Ten frames back, typed into the toolbar's spin box: the past trail appears, the menu's editor follows.
    ui::TrackingToolbar* toolbar = bench.tracking()->toolbar();
    toolbar->trail_editor()->before()->setValue(10);
    QCOMPARE(bench.canvas()->track_overlay().trail_before_frames, 10);
    QCOMPARE(bench.tracking()->menu_trail_editor()->before()->value(), 10);
    QCOMPARE(bench.window->settings().track_overlay_options().trail_before_frames, 10);
    shot = bench.canvas()->grab().toImage();
    QVERIFY2(colour_distance(shot.pixel(past), bench.video_colour(past, 24)) > 60,
             qPrintable(QColor(shot.pixel(past)).name()));
    QVERIFY(colour_distance(shot.pixel(past), colour) <
            colour_distance(shot.pixel(past), bench.video_colour(past, 24)));
    // Beyond the trail's reach nothing is drawn.
    const QPoint too_old = between(12, 13, 0.5);
    QVERIFY(colour_distance(shot.pixel(too_old), bench.video_colour(too_old, 24)) <= 2);

    // The future part (dashed) through the View menu's editor.
    auto future_drawn = [&](const QImage& image) {
      int coloured = 0;
      for (double t = 0.1; t < 1.0; t += 0.1) {
        const QPoint p = between(27, 28, t);
        coloured += colour_distance(image.pixel(p), bench.video_colour(p, 24)) > 40 ? 1 : 0;
      }
      return coloured;
    };
    QCOMPARE(future_drawn(bench.canvas()->grab().toImage()), 0);
    bench.tracking()->menu_trail_editor()->after()->setValue(6);
    QCOMPARE(toolbar->trail_editor()->after()->value(), 6);
    QVERIFY(future_drawn(bench.canvas()->grab().toImage()) >= 3);
  }

  void the_point_list_shows_each_tracks_state() {
    FakeTrackerConfig config;
    config.chunk_delay = 0ms;
    TrackingBench bench(config, "cpu");
    QVERIFY(track_all(bench, kThreePoints));
    ui::PointTableModel* model = bench.window->point_list()->model();
    auto cell = [&](int row, int column) { return model->data(model->index(row, column), Qt::DisplayRole).toString(); };
    QCOMPARE(cell(0, ui::PointTableModel::track_column), QStringLiteral("visible"));
    QCOMPARE(cell(0, ui::PointTableModel::p_occluded_column), QStringLiteral("0.10"));
    QVERIFY(bench.show_frame(10));
    QCOMPARE(model->current_frame(), int64_t{10});
    QCOMPARE(cell(0, ui::PointTableModel::track_column), QStringLiteral("occluded"));
    QCOMPARE(cell(0, ui::PointTableModel::p_occluded_column), QStringLiteral("0.90"));
    QCOMPARE(cell(1, ui::PointTableModel::track_column), QStringLiteral("visible"));
    const QString tip = model->data(model->index(0, ui::PointTableModel::track_column), Qt::ToolTipRole).toString();
    QVERIFY(tip.contains(QStringLiteral("Fake LocoTrack (default)")));
    bench.add_points({{300.5, 200.5}});
    QCOMPARE(cell(3, ui::PointTableModel::track_column), QStringLiteral("not tracked"));
    QCOMPARE(cell(3, ui::PointTableModel::p_occluded_column), QString());
  }

  void tracks_on_the_bundled_sample_clip_with_the_real_decoders() {
    // The real path of the app: FrameServer for display, core::open_video_file on the tracking thread (the
    // default opener), the sample clip rendered by the build; only the tracker is the fake.
    QTemporaryDir settings_dir;
    auto log = std::make_shared<testing::FakeTrackerLog>();
    FakeTrackerConfig config;
    config.chunk_delay = 0ms;
    QStringList errors;
    ui::MainWindowOptions options;
    options.frame_server_factory = [](const std::filesystem::path& path, const core::FrameServerOptions& server) {
      return core::FrameServer::open(path, server);
    };
    options.error_presenter = [&errors](QWidget*, const QString& title, const QString& message) {
      errors << title + ": " + message;
    };
    options.settings_file = settings_dir.filePath(QStringLiteral("trackscope.ini"));
    options.tracker_factory = std::make_unique<testing::FakeTrackerFactory>(config, log);
    options.tracker_options.device = "cpu";
    ui::MainWindow window(std::move(options));
    window.resize(1000, 700);
    window.show();
    QSignalSpy opened(&window, &ui::MainWindow::video_opened);
    window.open_video(QStringLiteral(TRACKSCOPE_SAMPLE_CLIP));
    QVERIFY(opened.wait(10000));
    QTRY_COMPARE_WITH_TIMEOUT(window.canvas()->frame_index(), int64_t{0}, 10000);
    const core::SampleClipOptions clip;
    for (const core::SampleTrack& truth : core::sample_clip_ground_truth(clip)) {
      window.editor()->add_point({0, truth.points[0].x_px, truth.points[0].y_px});
    }
    window.actions().track->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(window.tracking()->service()->state() == ui::TrackingState::idle &&
                                 window.editor()->annotation().track(0) != nullptr,
                             10000);
    QVERIFY2(errors.isEmpty(), qPrintable(errors.join('\n')));
    window.tracking()->set_track_overlay(trails(0, 0));
    const int64_t frame = 30;
    window.seek(frame);
    QTRY_COMPARE_WITH_TIMEOUT(window.canvas()->frame_index(), frame, 10000);
    const QImage shot = window.canvas()->grab().toImage();
    int checked = 0;
    for (const core::QueryPoint& point : window.editor()->annotation()) {
      const core::PointTrack* attached = window.editor()->annotation().track(point.id);
      QVERIFY(attached != nullptr);
      QCOMPARE(attached->track.points.size(), static_cast<size_t>(clip.frame_count));  // read from the real file
      const core::TrackPoint estimate = fake_estimate(point.query, frame, clip.width, clip.height);
      QCOMPARE(attached->track.at(frame), estimate);
      if (!estimate.visible) continue;
      const QPointF in_widget = window.canvas()->widget_from_image(position(estimate));
      const QPoint pixel(static_cast<int>(std::floor(in_widget.x())), static_cast<int>(std::floor(in_widget.y())));
      QCOMPARE(QColor(shot.pixel(pixel)), ui::point_colour(point.colour_index));
      ++checked;
    }
    QVERIFY(checked >= 2);
  }

  void screenshot_shows_tracks_with_trails() {
    FakeTrackerConfig config;
    config.chunk_delay = 0ms;
    TrackingBench bench(config, "cuda:0");
    bench.window->resize(1400, 1050);
    bench.dock()->show();
    bench.window->resizeDocks({bench.dock()}, {380}, Qt::Vertical);
    // The canvas geometry (and so the sub-pixel placement checked below) as this test was written for: without
    // the quality strip of issue 6 (the annotation screenshot shows that).
    bench.window->actions().show_quality_strip->setChecked(false);
    const std::vector<QPointF> points = {{30.5, 40.5},   {80.5, 150.5},  {120.5, 60.5},
                                         {150.5, 190.5}, {200.5, 110.5}, {60.5, 100.5}};
    QVERIFY(track_all(bench, points));
    bench.tracking()->set_track_overlay(trails(14, 4));
    QVERIFY(bench.show_frame(20));
    bench.window->editor()->select_point(2);
    bench.dock()->poll_providers();
    QTest::qWait(150);  // the dock's telemetry poll and the point list layout, as before a real paint

    const QImage shot = bench.window->grab().toImage();
    const QString file = testing::test_output_dir() + QStringLiteral("/ui_tracking.png");
    QVERIFY(shot.save(file));
    qInfo("screenshot: %s", qPrintable(file));
    int hollow = 0;
    for (const core::QueryPoint& point : bench.annotation()) {
      const core::TrackPoint estimate = fake_estimate(point.query, 20, kClipWidth, kClipHeight);
      const QPoint centre = bench.widget_pixel(position(estimate));
      const QPoint in_window = bench.canvas()->mapTo(bench.window.get(), centre);
      if (estimate.visible) {
        QCOMPARE(QColor(shot.pixel(in_window)), ui::point_colour(point.colour_index));
      } else {
        // Hollow: the trail runs through the middle (direction (2, 1)); beside it the video shows through.
        const QPoint beside = centre + QPoint(1, -2);
        const QPoint beside_in_window = bench.canvas()->mapTo(bench.window.get(), beside);
        QVERIFY2(colour_distance(shot.pixel(beside_in_window), bench.video_colour(beside, 20)) <= 2,
                 qPrintable(QColor(shot.pixel(beside_in_window)).name()));
        ++hollow;
      }
    }
    QCOMPARE(hollow, 1);  // point 4 is occluded on frame 20
  }
};

QTEST_MAIN(TrackingOverlayTest)
#include "tracking_overlay_test.moc"
