// Export and import from the workbench: every track format written through the ExportController and read back as
// new points (one undo step); the annotated H.264 video decoded again with the real decoders and checked pixel by
// pixel; and the screenshot of a corrected track with trails and the quality strip for docs/annotation.md.
#include <QDir>
#include <QTemporaryDir>

#include "core/io/track_formats.h"
#include "core/video/video_source.h"
#include "core/video/video_writer.h"
#include "tracking_bench.h"
#include "ui/annotation_controller.h"
#include "ui/point_colours.h"
#include "ui/project/export_controller.h"
#include "ui/tracking/quality_strip.h"
#include "ui/tracking/track_quality_model.h"
#include "ui/tracking/tracking_controller.h"
#include "ui/workbench_actions.h"

using namespace trackscope;
using testing::TrackingBench;

namespace {

bool track_points(TrackingBench& bench, const std::vector<QPointF>& points) {
  if (!bench.open()) return false;
  bench.add_points(points);
  bench.window->actions().track->trigger();
  return bench.wait_idle() && bench.tracked_points() == static_cast<int>(points.size());
}

}  // namespace

class ExportTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void every_format_exports_and_the_readable_ones_import_back() {
    QTemporaryDir dir;
    TrackingBench bench({}, "cpu");
    QVERIFY(track_points(bench, {{40.5, 60.5}, {150.25, 100.75}}));
    ui::AnnotationEditor* editor = bench.window->editor();
    QVERIFY(bench.show_frame(20));
    editor->move_estimate(1, 20, 170.5, 90.5);
    editor->finish_move(1);
    QVERIFY(editor->delete_track_after(0, 40));
    ui::ExportController* exports = bench.window->exports();

    struct Case {
      core::io::TrackFormat format;
      QString file;
      double tolerance_px;
    };
    for (const Case& c : std::vector<Case>{{core::io::TrackFormat::csv, "t.csv", 0.0},
                                           {core::io::TrackFormat::json, "t.json", 0.0},
                                           {core::io::TrackFormat::tapvid_npz, "t.npz", 1e-3}}) {
      const QString path = dir.filePath(c.file);
      QVERIFY(exports->export_tracks(c.format, path));
      const size_t steps = editor->history().undo_count();
      const core::PointId first_new = bench.annotation().next_id();  // imports get new ids (never reused)
      QCOMPARE(exports->import_tracks(path), 2);
      QCOMPARE(editor->history().undo_count(), steps + 1);  // one step for the whole import
      QCOMPARE(bench.annotation().size(), size_t{4});
      for (core::PointId original : {0, 1}) {
        const core::PointTrack& a = *bench.annotation().track(original);
        QVERIFY(bench.annotation().track(first_new + original) != nullptr);
        const core::PointTrack& b = *bench.annotation().track(first_new + original);
        QCOMPARE(bench.annotation().find(first_new + original)->query, bench.annotation().find(original)->query);
        QCOMPARE(b.keyframes, a.keyframes);
        QCOMPARE(b.track.first_frame, a.track.first_frame);
        QCOMPARE(b.track.points.size(), a.track.points.size());
        for (size_t f = 0; f < a.track.points.size(); ++f) {
          QVERIFY(std::abs(b.track.points[f].x_px - a.track.points[f].x_px) <= c.tolerance_px);
          QVERIFY(std::abs(b.track.points[f].y_px - a.track.points[f].y_px) <= c.tolerance_px);
          QCOMPARE(b.track.points[f].visible, a.track.points[f].visible);
          QCOMPARE(b.track.points[f].p_occluded, a.track.points[f].p_occluded);
        }
      }
      QCOMPARE(bench.annotation().track(1)->keyframes, std::vector<int64_t>{20});
      QVERIFY(editor->undo());
      QCOMPARE(bench.annotation().size(), size_t{2});
    }
    // The export-only formats are written (their content is checked by tests/core/track_formats_test.cpp).
    QVERIFY(exports->export_tracks(core::io::TrackFormat::deeplabcut_csv, dir.filePath("t_dlc.csv")));
    QVERIFY(exports->export_tracks(core::io::TrackFormat::coco_json, dir.filePath("t_coco.json")));
    QVERIFY(QFileInfo(dir.filePath("t_coco.json")).size() > 0);
    // Bad input: reported, nothing added.
    QFile bad(dir.filePath("bad.csv"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("track_id,frame,x,y\n1,2,oops,4\n");
    bad.close();
    QCOMPARE(exports->import_tracks(dir.filePath("bad.csv")), 0);
    QCOMPARE(bench.errors.size(), 1);
    QVERIFY(bench.errors[0].contains(QStringLiteral("line 2: x is not a valid number")));
    QCOMPARE(bench.annotation().size(), size_t{2});
  }

  void the_annotated_video_has_the_overlays_burnt_in() {
    if (!core::video_encoder_available(core::VideoCodec::h264)) QSKIP("this FFmpeg build has no H.264 encoder");
    QTemporaryDir dir;
    TrackingBench bench({}, "cpu");
    const std::vector<QPointF> points = {{40.5, 60.5}, {150.5, 100.5}, {220.5, 30.5}};
    QVERIFY(track_points(bench, points));
    const QString path = dir.filePath("annotated.mp4");
    QSignalSpy finished(bench.window->exports(), &ui::ExportController::video_export_finished);
    QVERIFY(bench.window->exports()->export_video(path));
    QVERIFY(finished.wait(60000));
    QVERIFY2(finished.first().at(0).toBool(), qPrintable(finished.first().at(1).toString()));

    auto video = core::VideoSource::open(path.toStdString());
    QVERIFY2(video, video ? "" : video.status().message().c_str());
    QCOMPARE((*video)->info().frame_count, testing::kClipFrames);
    QCOMPARE((*video)->info().width, testing::kClipWidth);
    const int64_t frame = 20;
    auto decoded = (*video)->read_frame(frame);
    QVERIFY(decoded);
    auto pixel = [&](int x, int y) {
      const uint8_t* p = (*decoded)->pixel(x, y);
      return QColor(p[0], p[1], p[2]);
    };
    int markers = 0;
    for (const core::QueryPoint& point : bench.annotation()) {
      const core::TrackPoint& estimate = bench.annotation().track(point.id)->track.at(frame);
      if (!estimate.visible) continue;
      const QColor expected = ui::point_colour(point.colour_index);
      const QColor got = pixel(static_cast<int>(estimate.x_px), static_cast<int>(estimate.y_px));
      QVERIFY2(testing::colour_distance(got, expected) <= 48, qPrintable(got.name() + " vs " + expected.name()));
      ++markers;
    }
    QVERIFY(markers >= 2);
    // Far from every track the video itself shows (x mod 256, y mod 256, blue of the frame).
    const QColor background = pixel(300, 230);
    QVERIFY2(testing::colour_distance(background, QColor(300 % 256, 230, testing::blue_of_frame(frame))) <= 24,
             qPrintable(background.name()));
  }

  void screenshot_of_a_corrected_track_with_trails_and_the_quality_strip() {
    TrackingBench bench({}, "cpu");
    bench.window->resize(1180, 760);
    QVERIFY(track_points(bench, {{30.5, 40.5}, {60.5, 150.5}, {120.5, 60.5}, {160.5, 120.5}}));
    ui::AnnotationEditor* editor = bench.window->editor();
    // Point 2 drifted: correct it on frame 20 and re-track forward from there.
    const core::PointId corrected = 2;
    QVERIFY(bench.show_frame(20));
    const core::TrackPoint before = bench.annotation().track(corrected)->track.at(20);
    editor->move_estimate(corrected, 20, before.x_px - 4.0, before.y_px + 18.0);
    editor->finish_move(corrected);
    editor->select_point(corrected);
    QVERIFY(bench.window->annotations()->retrack(core::RetrackDirection::forward));
    QVERIFY(bench.wait_idle());
    bench.window->actions().check_consistency->trigger();  // the selected track
    QVERIFY(bench.wait_idle());
    editor->set_visibility(3, 24, false);  // an occlusion marked by hand

    ui::TrackOverlayOptions overlay = bench.tracking()->track_overlay();
    overlay.trail_before_frames = 20;
    overlay.trail_after_frames = 6;
    bench.tracking()->set_track_overlay(overlay);
    QVERIFY(bench.show_frame(31));
    QTest::qWait(100);

    const core::TrackQuality* cues = bench.window->annotations()->quality()->quality(corrected);
    QVERIFY(cues->flags_at(19) & core::quality_velocity_outlier);  // the kink where the correction joins the old track
    QVERIFY(cues->flags_at(10) & core::quality_inconsistent);      // before the keyframe the check disagrees
    ui::QualityStrip* strip = bench.window->annotations()->quality_strip();
    QCOMPARE(strip->rows().size(), size_t{4});
    QVERIFY(strip->isVisible() && strip->height() >= 4 * ui::QualityStrip::min_row_height_px);

    const QImage shot = bench.window->grab().toImage();
    const QString file = testing::test_output_dir() + QStringLiteral("/annotation_correction.png");
    QVERIFY(shot.save(file));
    qInfo("screenshot: %s", qPrintable(file));
    // The strip shows the flagged frame of the selected row in red.
    const QImage strip_image = strip->grab().toImage();
    const int row = corrected;  // rows in id order
    const int y = 2 + row * strip->row_height() + 1;
    const QColor flagged = strip_image.pixelColor(static_cast<int>(strip->x_of(10)), y);
    QVERIFY2(flagged.red() > 200 && flagged.green() < 80, qPrintable(flagged.name()));
  }
};

QTEST_MAIN(ExportTest)
#include "export_test.moc"
