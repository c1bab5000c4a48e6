// VideoCanvas alone: the view transform after fit, zoom and pan (against values worked out by hand), the
// rendered pixels agreeing with that transform, and wheel / drag gestures.
#include <QApplication>
#include <QImage>
#include <QPainter>
#include <QWheelEvent>
#include <QtTest>

#include <cmath>

#include "fake_frame_server.h"
#include "ui/annotation_editor.h"
#include "ui/canvas_markers.h"
#include "ui/point_colours.h"
#include "ui/video_canvas.h"

using trackscope::testing::blue_of_frame;
using trackscope::testing::FakeVideo;
using trackscope::testing::make_fake_frame;
using trackscope::ui::AnnotationEditor;
using trackscope::ui::VideoCanvas;

namespace {

void compare_points(const QPointF& actual, const QPointF& expected, double tolerance = 1e-9) {
  QVERIFY2(std::abs(actual.x() - expected.x()) <= tolerance && std::abs(actual.y() - expected.y()) <= tolerance,
           qPrintable(QStringLiteral("got (%1, %2), expected (%3, %4)")
                          .arg(actual.x(), 0, 'f', 6)
                          .arg(actual.y(), 0, 'f', 6)
                          .arg(expected.x(), 0, 'f', 6)
                          .arg(expected.y(), 0, 'f', 6)));
}

void send_wheel(QWidget* widget, QPoint position, int angle_delta_y) {
  QWheelEvent event(QPointF(position), QPointF(widget->mapToGlobal(position)), QPoint(), QPoint(0, angle_delta_y),
                    Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(widget, &event);
}

}  // namespace

class CanvasTest : public QObject {
  Q_OBJECT

 private:
  // A 500x300 canvas showing frame 3 of a 320x240 clip: fit gives zoom 1.25, the image centred at x offset 50.
  struct Fixture {
    QWidget window;
    AnnotationEditor editor{&window};
    VideoCanvas* canvas = new VideoCanvas(&editor, &window);
    Fixture() {
      canvas->setGeometry(0, 0, 500, 300);
      window.resize(500, 300);
      window.show();
      canvas->set_frame(make_fake_frame(FakeVideo{}, 3));
    }
  };

 private Q_SLOTS:
  void fit_centres_the_whole_frame() {
    Fixture f;
    QVERIFY(QTest::qWaitForWindowExposed(&f.window));
    QVERIFY(f.canvas->fit_active());
    QCOMPARE(f.canvas->zoom(), 1.25);
    compare_points(f.canvas->pan_offset(), QPointF(50, 0));
    compare_points(f.canvas->widget_from_image(QPointF(10, 20)), QPointF(62.5, 25));
    compare_points(f.canvas->image_from_widget(QPointF(450, 300)), QPointF(320, 240));
    const QImage shot = f.canvas->grab().toImage();
    QCOMPARE(QColor(shot.pixel(20, 150)), QColor(40, 40, 44));  // left of the image: background
    QCOMPARE(qRed(shot.pixel(60, 150)), 8);                     // image x = (60.5 - 50) / 1.25 = 8.4
    // A resize refits while fit is active.
    f.canvas->resize(320, 480);
    QCOMPARE(f.canvas->zoom(), 1.0);
    compare_points(f.canvas->pan_offset(), QPointF(0, 120));
  }

  void zoom_about_anchor_then_pan() {
    Fixture f;
    QVERIFY(QTest::qWaitForWindowExposed(&f.window));
    // Anchor (150, 100) shows image point ((150-50)/1.25, 100/1.25) = (80, 80); zooming x2 to 2.5 keeps it there:
    // offset = (150, 100) - 2.5 * (80, 80) = (-50, -100). Panning by (30, 10) then gives (-20, -90).
    f.canvas->zoom_by(2.0, QPointF(150, 100));
    QVERIFY(!f.canvas->fit_active());
    QCOMPARE(f.canvas->zoom(), 2.5);
    compare_points(f.canvas->image_from_widget(QPointF(150, 100)), QPointF(80, 80));
    f.canvas->pan_by(QPointF(30, 10));
    compare_points(f.canvas->pan_offset(), QPointF(-20, -90));
    compare_points(f.canvas->widget_from_image(QPointF(50.5, 60.5)), QPointF(106.25, 61.25));
    compare_points(f.canvas->image_from_widget(QPointF(106.25, 61.25)), QPointF(50.5, 60.5));
    // Round trips everywhere.
    for (double x : {0.0, 0.5, 13.25, 319.75}) {
      for (double y : {0.0, 7.5, 239.5}) {
        compare_points(f.canvas->image_from_widget(f.canvas->widget_from_image(QPointF(x, y))), QPointF(x, y), 1e-9);
      }
    }
    // Zoom is clamped.
    f.canvas->zoom_by(1e6, QPointF(0, 0));
    QCOMPARE(f.canvas->zoom(), VideoCanvas::max_zoom);
    f.canvas->fit_to_window();
    QVERIFY(f.canvas->fit_active());
    QCOMPARE(f.canvas->zoom(), 1.25);
  }

  void rendered_pixels_follow_the_transform() {
    Fixture f;
    QVERIFY(QTest::qWaitForWindowExposed(&f.window));
    f.canvas->zoom_by(2.0, QPointF(150, 100));
    f.canvas->pan_by(QPointF(30, 10));
    const QImage shot = f.canvas->grab().toImage();
    QCOMPARE(shot.size(), QSize(500, 300));
    int checked = 0;
    for (int wy = 0; wy < 300; wy += 7) {
      for (int wx = 0; wx < 500; wx += 11) {
        const QPointF in_image = f.canvas->image_from_widget(QPointF(wx + 0.5, wy + 0.5));
        const double fx = in_image.x() - std::floor(in_image.x());
        const double fy = in_image.y() - std::floor(in_image.y());
        // Skip pixels outside the image and pixels straddling an image-pixel border (ambiguous sampling).
        if (in_image.x() < 0 || in_image.y() < 0 || in_image.x() >= 320 || in_image.y() >= 240) continue;
        if (fx < 0.2 || fx > 0.8 || fy < 0.2 || fy > 0.8) continue;
        const QRgb pixel = shot.pixel(wx, wy);
        const int image_x = static_cast<int>(std::floor(in_image.x()));
        const int image_y = static_cast<int>(std::floor(in_image.y()));
        QCOMPARE(qRed(pixel), image_x % 256);
        QCOMPARE(qGreen(pixel), image_y % 256);
        QCOMPARE(qBlue(pixel), static_cast<int>(blue_of_frame(3)));
        ++checked;
      }
    }
    QVERIFY2(checked > 300, qPrintable(QString::number(checked)));
  }

  void wheel_zooms_about_the_pointer() {
    Fixture f;
    QVERIFY(QTest::qWaitForWindowExposed(&f.window));
    const QPoint pointer(321, 77);
    const QPointF under_pointer = f.canvas->image_from_widget(QPointF(pointer) + QPointF(0.5, 0.5));
    send_wheel(f.canvas, pointer, 120);
    QCOMPARE(f.canvas->zoom(), 1.25 * 1.25);
    compare_points(f.canvas->image_from_widget(QPointF(pointer) + QPointF(0.5, 0.5)), under_pointer, 1e-9);
    send_wheel(f.canvas, pointer, -240);
    QVERIFY(std::abs(f.canvas->zoom() - 1.25 / 1.25) < 1e-12);
    compare_points(f.canvas->image_from_widget(QPointF(pointer) + QPointF(0.5, 0.5)), under_pointer, 1e-9);
  }

  void middle_drag_and_shift_drag_pan_without_adding_points() {
    Fixture f;
    QVERIFY(QTest::qWaitForWindowExposed(&f.window));
    const QPointF start_offset = f.canvas->pan_offset();
    QTest::mousePress(f.canvas, Qt::MiddleButton, {}, QPoint(100, 100));
    QTest::mouseMove(f.canvas, QPoint(130, 90));
    QTest::mouseMove(f.canvas, QPoint(140, 95));
    QTest::mouseRelease(f.canvas, Qt::MiddleButton, {}, QPoint(140, 95));
    compare_points(f.canvas->pan_offset(), start_offset + QPointF(40, -5));
    QVERIFY(!f.canvas->fit_active());

    QTest::mousePress(f.canvas, Qt::LeftButton, Qt::ShiftModifier, QPoint(200, 150));
    QTest::mouseMove(f.canvas, QPoint(190, 170));
    QTest::mouseRelease(f.canvas, Qt::LeftButton, Qt::ShiftModifier, QPoint(190, 170));
    compare_points(f.canvas->pan_offset(), start_offset + QPointF(30, 15));
    QVERIFY(f.editor.annotation().empty());
  }

  void space_drag_pans_and_space_tap_requests_play_pause() {
    Fixture f;
    QVERIFY(QTest::qWaitForWindowExposed(&f.window));
    f.canvas->setFocus();
    QSignalSpy play_pause(f.canvas, &VideoCanvas::play_pause_requested);
    const QPointF start_offset = f.canvas->pan_offset();
    QTest::keyPress(f.canvas, Qt::Key_Space);
    QTest::mousePress(f.canvas, Qt::LeftButton, {}, QPoint(200, 150));
    QTest::mouseMove(f.canvas, QPoint(220, 140));
    QTest::mouseRelease(f.canvas, Qt::LeftButton, {}, QPoint(220, 140));
    QTest::keyRelease(f.canvas, Qt::Key_Space);
    compare_points(f.canvas->pan_offset(), start_offset + QPointF(20, -10));
    QVERIFY(f.editor.annotation().empty());
    QCOMPARE(play_pause.count(), 0);  // the Space was used to pan
    QTest::keyClick(f.canvas, Qt::Key_Space);
    QCOMPARE(play_pause.count(), 1);
  }

  void points_are_drawn_only_on_their_frame() {
    Fixture f;
    QVERIFY(QTest::qWaitForWindowExposed(&f.window));
    f.editor.add_point({3, 100.5, 50.5});
    f.editor.add_point({4, 200.5, 150.5});
    const QPoint on_frame_3 = f.canvas->widget_from_image(QPointF(100.5, 50.5)).toPoint();
    const QPoint on_frame_4 = f.canvas->widget_from_image(QPointF(200.5, 150.5)).toPoint();
    QImage shot = f.canvas->grab().toImage();
    QCOMPARE(QColor(shot.pixel(on_frame_3)), trackscope::ui::point_colour(0));
    QCOMPARE(qBlue(shot.pixel(on_frame_4)), static_cast<int>(blue_of_frame(3)));  // video, not a point
    f.canvas->set_frame(make_fake_frame(FakeVideo{}, 4));
    shot = f.canvas->grab().toImage();
    QCOMPARE(QColor(shot.pixel(on_frame_4)), trackscope::ui::point_colour(1));
    QCOMPARE(qBlue(shot.pixel(on_frame_3)), static_cast<int>(blue_of_frame(4)));
  }

  void markers_are_solid_or_hollow() {
    const QColor colour = trackscope::ui::point_colour(3);
    for (const trackscope::ui::MarkerFill fill :
         {trackscope::ui::MarkerFill::solid, trackscope::ui::MarkerFill::hollow}) {
      QImage image(64, 64, QImage::Format_RGB32);
      image.fill(QColor(10, 20, 30));
      {
        QPainter painter(&image);
        trackscope::ui::MarkerStyle style;
        style.radius_widget_px = 10.0;
        style.fill = fill;
        trackscope::ui::paint_marker(painter, QPointF(32, 32), colour, style, QString());
      }
      const bool solid = fill == trackscope::ui::MarkerFill::solid;
      QCOMPARE(QColor(image.pixel(32, 32)), solid ? colour : QColor(10, 20, 30));  // the centre
      QCOMPARE(QColor(image.pixel(32 + 8, 32)), colour);                           // on the ring / in the disc
      QCOMPARE(QColor(image.pixel(32 + 16, 32)), QColor(10, 20, 30));              // outside
    }
  }
};

QTEST_MAIN(CanvasTest)
#include "canvas_test.moc"
