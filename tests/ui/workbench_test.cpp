// The workbench main window driven like a user would: open a (fake) clip, seek with keys and the slider,
// add / move / delete points with the mouse and keys, open errors, drag-and-drop, recent files, playback,
// responsiveness while decoding is slow, and a screenshot.
#include <QApplication>
#include <QDialog>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QSlider>
#include <QTableView>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <cmath>
#include <memory>

#include "fake_frame_server.h"
#include "ui/annotation_editor.h"
#include "ui/main_window.h"
#include "ui/point_colours.h"
#include "ui/point_list_panel.h"
#include "ui/settings.h"
#include "ui/timeline.h"
#include "ui/video_canvas.h"
#include "ui/video_session.h"

using trackscope::core::Query;
using trackscope::core::QueryPoint;
using trackscope::testing::blue_of_frame;
using trackscope::testing::FakeVideo;
using trackscope::testing::FakeVideoLibrary;
using trackscope::ui::MainWindow;
using trackscope::ui::MainWindowOptions;
using trackscope::ui::point_colour;
using trackscope::ui::VideoCanvas;

namespace {

const QString kClipA = QStringLiteral("/videos/clip_a.mp4");             // 320x240, 48 frames, 25 fps
const QString kClipB = QStringLiteral("/videos/clip_b.webm");            // 640x360, 20 frames, 30000/1001 fps
const QString kSlowClip = QStringLiteral("/videos/slow.mp4");            // 400 ms per decoded frame
const QString kFastClip = QStringLiteral("/videos/fast.mp4");            // 100 fps, 30 frames
const QString kTruncatedClip = QStringLiteral("/videos/truncated.mp4");  // frames >= 10 fail to decode
const QString kNotAVideo = QStringLiteral("/videos/notes.txt");
const QString kUnsupported = QStringLiteral("/videos/prores_raw.mov");
const QString kCorrupt = QStringLiteral("/videos/half_downloaded.mp4");
const QString kMissing = QStringLiteral("/videos/missing.mp4");
const QString kDamagedClip = QStringLiteral("/videos/damaged.mp4");  // frames 5 and 30 concealed by the decoder

FakeVideo fake_video(int width, int height, int64_t frame_count, trackscope::core::Rational frame_rate,
                     int decode_delay_ms = 0) {
  FakeVideo video;
  video.width = width;
  video.height = height;
  video.frame_count = frame_count;
  video.frame_rate = frame_rate;
  video.decode_delay = std::chrono::milliseconds(decode_delay_ms);
  return video;
}

struct Workbench {
  QTemporaryDir settings_dir;
  FakeVideoLibrary library;
  QStringList errors;  // "title: message" of every reported error
  int unsaved_questions = 0;
  std::unique_ptr<MainWindow> window;

  Workbench() {
    library.add_video(kClipA.toStdString(), FakeVideo{});
    library.add_video(kClipB.toStdString(), fake_video(640, 360, 20, {30000, 1001}));
    library.add_video(kSlowClip.toStdString(), fake_video(320, 240, 48, {25, 1}, 400));
    library.add_video(kFastClip.toStdString(), fake_video(320, 240, 30, {100, 1}));
    FakeVideo truncated;
    for (int64_t i = 10; i < truncated.frame_count; ++i) truncated.failing_frames.insert(i);
    library.add_video(kTruncatedClip.toStdString(), truncated);
    FakeVideo damaged;
    damaged.damaged_frames = {5, 30};
    library.add_video(kDamagedClip.toStdString(), damaged);
    library.add_error(kNotAVideo.toStdString(), trackscope::core::unsupported("notes.txt has no video stream"));
    library.add_error(kUnsupported.toStdString(),
                      trackscope::core::unsupported("no decoder for codec 'prores_raw' in this FFmpeg build"));
    library.add_error(kCorrupt.toStdString(),
                      trackscope::core::corrupt_data("moov atom not found: the file is truncated"));
    window = make_window();
  }

  /// A window whose errors are recorded in `errors`, or shown in the default message box.
  std::unique_ptr<MainWindow> make_window(bool record_errors = true) {
    MainWindowOptions options;
    options.frame_server_factory = library.factory();
    if (record_errors) {
      options.error_presenter = [this](QWidget*, const QString& title, const QString& message) {
        errors << title + QStringLiteral(": ") + message;
      };
    }
    options.settings_file = settings_dir.filePath(QStringLiteral("trackscope.ini"));
    // Opening by drop or recent file asks about unsaved points first: these tests discard them (and count).
    options.project.prompts.unsaved_changes = [this](QWidget*, const QString&) {
      ++unsaved_questions;
      return trackscope::ui::UnsavedChoice::discard;
    };
    auto result = std::make_unique<MainWindow>(std::move(options));
    result->resize(1000, 700);
    result->show();
    return result;
  }

  VideoCanvas* canvas() const { return window->canvas(); }
  const trackscope::core::Annotation& annotation() const { return window->editor()->annotation(); }

  /// Opens `path` and waits until its first frame is on screen.
  bool open(const QString& path) {
    QSignalSpy opened(window.get(), &MainWindow::video_opened);
    window->open_video(path);
    if (!opened.isEmpty()) return false;  // open_video() must report later, not from inside the call
    if (!opened.wait(5000)) return false;
    return QTest::qWaitFor([&] { return canvas()->frame_index() == 0 && !window->session()->frame_pending(); }, 5000);
  }

  /// The integer widget position a user clicks to hit image point `point_in_image`.
  QPoint click_position(QPointF point_in_image) const {
    const QPointF in_widget = canvas()->widget_from_image(point_in_image);
    return {static_cast<int>(std::floor(in_widget.x())), static_cast<int>(std::floor(in_widget.y()))};
  }

  /// Presses key on the focused widget, as a keyboard would.
  void key(Qt::Key key, Qt::KeyboardModifiers modifiers = Qt::NoModifier) {
    QWidget* target = QApplication::focusWidget() ? QApplication::focusWidget() : window.get();
    QTest::keyClick(target, key, modifiers);
  }

  bool shows_frame(int64_t index) const {
    return canvas()->frame_index() == index && window->timeline()->current_frame() == index;
  }

  QString cell(int row, int column) const {
    auto* model = window->point_list()->model();
    return model->data(model->index(row, column), Qt::DisplayRole).toString();
  }
};

// A click lands on the centre of the device pixel under the pointer, so a point lies within half a widget
// pixel (in image pixels: 0.5 / zoom) of the image point the test aimed at.
void expect_near(const Query& actual, int64_t frame, QPointF expected, double zoom) {
  const double tolerance = 0.5 / zoom + 1e-9;
  QCOMPARE(actual.frame, frame);
  QVERIFY2(std::abs(actual.x_px - expected.x()) <= tolerance && std::abs(actual.y_px - expected.y()) <= tolerance,
           qPrintable(QStringLiteral("point at (%1, %2), expected (%3, %4) +- %5")
                          .arg(actual.x_px)
                          .arg(actual.y_px)
                          .arg(expected.x())
                          .arg(expected.y())
                          .arg(tolerance)));
}

}  // namespace

class WorkbenchTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void opens_a_clip_and_shows_its_metadata() {
    Workbench w;
    QVERIFY(QTest::qWaitForWindowActive(w.window.get()));
    QVERIFY(w.open(kClipA));
    QCOMPARE(w.window->session()->path(), kClipA);
    QCOMPARE(w.window->timeline()->counter_text(), QStringLiteral("frame 0 / 48"));
    QCOMPARE(w.window->timeline()->playback_interval_ms(), 40);
    const QString status = w.window->status_fields();
    QVERIFY2(status.contains(QStringLiteral("320 × 240")), qPrintable(status));
    QVERIFY2(status.contains(QStringLiteral("25 fps")), qPrintable(status));
    QVERIFY2(status.contains(QStringLiteral("frame 0")), qPrintable(status));
    QVERIFY2(status.contains(QStringLiteral("decode ")) && status.contains(QStringLiteral(" ms")), qPrintable(status));
    QVERIFY(w.window->windowTitle().contains(QStringLiteral("clip_a.mp4")));
    QCOMPARE(w.window->settings().recent_files(), QStringList{kClipA});
    QVERIFY(w.canvas()->fit_active());
    QCOMPARE(w.canvas()->zoom(), std::min(w.canvas()->width() / 320.0, w.canvas()->height() / 240.0));

    QVERIFY(w.open(kClipB));
    QCOMPARE(w.window->timeline()->counter_text(), QStringLiteral("frame 0 / 20"));
    QVERIFY2(w.window->status_fields().contains(QStringLiteral("29.97 fps")), qPrintable(w.window->status_fields()));
    QCOMPARE(w.window->timeline()->playback_interval_ms(), 33);
    QCOMPARE(w.window->settings().recent_files(), (QStringList{kClipB, kClipA}));
  }

  void seeks_with_keys_and_the_slider() {
    Workbench w;
    QVERIFY(QTest::qWaitForWindowActive(w.window.get()));
    QVERIFY(w.open(kClipA));
    QCOMPARE(QApplication::focusWidget(), static_cast<QWidget*>(w.canvas()));
    struct Step {
      Qt::Key key;
      Qt::KeyboardModifiers modifiers;
      int64_t expected;
    };
    const Step steps[] = {{Qt::Key_Right, Qt::NoModifier, 1},     {Qt::Key_Right, Qt::ControlModifier, 11},
                          {Qt::Key_Left, Qt::NoModifier, 10},     {Qt::Key_Left, Qt::ControlModifier, 0},
                          {Qt::Key_Left, Qt::ControlModifier, 0}, {Qt::Key_End, Qt::NoModifier, 47},
                          {Qt::Key_Right, Qt::NoModifier, 47},    {Qt::Key_Home, Qt::NoModifier, 0}};
    for (const Step& step : steps) {
      w.key(step.key, step.modifiers);
      QTRY_VERIFY2(
          w.shows_frame(step.expected),
          qPrintable(QStringLiteral("expected frame %1, shown %2").arg(step.expected).arg(w.canvas()->frame_index())));
    }
    // The shown picture is that frame's (the fake encodes the index in the blue channel).
    w.key(Qt::Key_Right, Qt::ControlModifier);
    QTRY_VERIFY(w.shows_frame(10));
    const QImage shot = w.canvas()->grab().toImage();
    QCOMPARE(qBlue(shot.pixel(w.click_position({160.5, 120.5}))), static_cast<int>(blue_of_frame(10)));
    QCOMPARE(w.window->timeline()->counter_text(), QStringLiteral("frame 10 / 48"));

    QSlider* slider = w.window->timeline()->slider();
    slider->setValue(30);
    QTRY_VERIFY(w.shows_frame(30));
    slider->triggerAction(QSlider::SliderPageStepAdd);
    QTRY_VERIFY(w.shows_frame(40));
    QVERIFY2(w.window->status_fields().contains(QStringLiteral("frame 40")), qPrintable(w.window->status_fields()));

    // Frame keys also work while the point list has the focus.
    w.window->point_list()->table()->setFocus();
    w.key(Qt::Key_Left);
    QTRY_VERIFY(w.shows_frame(39));
  }

  void adds_moves_and_deletes_points_with_mouse_and_keys() {
    Workbench w;
    QVERIFY(QTest::qWaitForWindowActive(w.window.get()));
    QVERIFY(w.open(kClipA));
    w.window->seek(5);
    QTRY_VERIFY(w.shows_frame(5));
    const double zoom = w.canvas()->zoom();

    QTest::mouseClick(w.canvas(), Qt::LeftButton, {}, w.click_position({100.5, 60.5}));
    QTest::mouseClick(w.canvas(), Qt::LeftButton, {}, w.click_position({200.5, 120.5}));
    QCOMPARE(w.annotation().size(), 2u);
    expect_near(w.annotation().find(0)->query, 5, {100.5, 60.5}, zoom);
    expect_near(w.annotation().find(1)->query, 5, {200.5, 120.5}, zoom);
    QCOMPARE(w.window->editor()->selected_point(), std::optional<int>(1));
    QCOMPARE(w.window->point_list()->model()->rowCount(), 2);
    QCOMPARE(w.cell(0, 0), QStringLiteral("0"));
    QCOMPARE(w.cell(0, 1), QStringLiteral("5"));
    QCOMPARE(w.cell(0, 2), QString::number(w.annotation().find(0)->query.x_px, 'f', 2));
    QCOMPARE(w.cell(1, 3), QString::number(w.annotation().find(1)->query.y_px, 'f', 2));
    QCOMPARE(w.window->point_list()->table()->selectionModel()->selectedRows().front().row(), 1);

    // Drag point 0, grabbing it 3 px off-centre: it moves by the pointer's displacement, without jumping.
    const Query before = w.annotation().find(0)->query;
    const QPoint grab = w.click_position({before.x_px, before.y_px}) + QPoint(3, -2);
    QTest::mousePress(w.canvas(), Qt::LeftButton, {}, grab);
    QCOMPARE(w.window->editor()->selected_point(), std::optional<int>(0));
    for (int i = 1; i <= 4; ++i) QTest::mouseMove(w.canvas(), grab + QPoint(10 * i, 5 * i));
    QTest::mouseRelease(w.canvas(), Qt::LeftButton, {}, grab + QPoint(40, 20));
    QCOMPARE(w.annotation().size(), 2u);
    const Query after = w.annotation().find(0)->query;
    QCOMPARE(after.frame, 5);
    QVERIFY(std::abs(after.x_px - (before.x_px + 40 / zoom)) < 1e-9);
    QVERIFY(std::abs(after.y_px - (before.y_px + 20 / zoom)) < 1e-9);
    QCOMPARE(w.cell(0, 2), QString::number(after.x_px, 'f', 2));

    // Delete removes the selected point (point 0, selected by the drag).
    w.key(Qt::Key_Delete);
    QCOMPARE(w.annotation().size(), 1u);
    QVERIFY(w.annotation().find(0) == nullptr);
    QCOMPARE(w.window->point_list()->model()->rowCount(), 1);
    QCOMPARE(w.cell(0, 0), QStringLiteral("1"));
    QVERIFY(!w.window->editor()->selected_point());

    // On another frame the same spot is free: a click adds a new point there instead of grabbing point 1.
    w.key(Qt::Key_Right);
    QTRY_VERIFY(w.shows_frame(6));
    QTest::mouseClick(w.canvas(), Qt::LeftButton, {}, w.click_position({200.5, 120.5}));
    QCOMPARE(w.annotation().size(), 2u);
    expect_near(w.annotation().find(2)->query, 6, {200.5, 120.5}, zoom);
    expect_near(w.annotation().find(1)->query, 5, {200.5, 120.5}, zoom);
    // A click outside the image adds nothing and clears the selection.
    QTest::mouseClick(w.canvas(), Qt::LeftButton, {}, w.click_position({-5.0, 100.0}) - QPoint(2, 0));
    QCOMPARE(w.annotation().size(), 2u);
    QVERIFY(!w.window->editor()->selected_point());

    // Selecting point 1's row selects it and shows its frame; Delete with the list focused removes it.
    QTableView* table = w.window->point_list()->table();
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(table->model()->index(0, 0)).center());
    QCOMPARE(w.window->editor()->selected_point(), std::optional<int>(1));
    QTRY_VERIFY(w.shows_frame(5));
    table->setFocus();
    w.key(Qt::Key_Delete);
    QCOMPARE(w.annotation().size(), 1u);
    QVERIFY(w.annotation().find(2) != nullptr);
    QCOMPARE(w.window->point_list()->model()->rowCount(), 1);
  }

  void clicks_map_to_the_image_after_zoom_and_pan() {
    Workbench w;
    QVERIFY(QTest::qWaitForWindowActive(w.window.get()));
    QVERIFY(w.open(kClipA));
    w.key(Qt::Key_Plus, Qt::ControlModifier);  // zoom in about the centre
    QVERIFY(!w.canvas()->fit_active());
    QPoint pointer = w.click_position({200.5, 100.5});
    QWheelEvent wheel(QPointF(pointer), QPointF(w.canvas()->mapToGlobal(pointer)), QPoint(), QPoint(0, 240),
                      Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(w.canvas(), &wheel);
    QTest::mousePress(w.canvas(), Qt::MiddleButton, {}, QPoint(300, 200));
    QTest::mouseMove(w.canvas(), QPoint(250, 230));
    QTest::mouseRelease(w.canvas(), Qt::MiddleButton, {}, QPoint(250, 230));
    const double zoom = w.canvas()->zoom();
    QVERIFY2(zoom > 4.0, qPrintable(QString::number(zoom)));
    const QPointF targets[] = {{200.5, 100.5}, {195.25, 97.75}, {205.0, 104.0}};
    for (const QPointF& target : targets) {
      QTest::mouseClick(w.canvas(), Qt::LeftButton, {}, w.click_position(target));
    }
    QCOMPARE(w.annotation().size(), 3u);
    for (int id = 0; id < 3; ++id) expect_near(w.annotation().find(id)->query, 0, targets[id], zoom);
    // And they are drawn where they are.
    const QImage shot = w.canvas()->grab().toImage();
    for (int id = 0; id < 3; ++id) {
      QCOMPARE(QColor(shot.pixel(w.click_position(targets[id]))), point_colour(w.annotation().find(id)->colour_index));
    }
    w.key(Qt::Key_F);
    QVERIFY(w.canvas()->fit_active());
  }

  void stays_responsive_while_decoding_is_slow() {
    Workbench w;
    QVERIFY(QTest::qWaitForWindowActive(w.window.get()));
    QVERIFY(w.open(kSlowClip));
    std::vector<Qt::HANDLE> delivery_threads;
    connect(w.window->session(), &trackscope::ui::VideoSession::frame_ready, w.window.get(),
            [&] { delivery_threads.push_back(QThread::currentThreadId()); });
    int ticks = 0;
    QTimer ticker;
    connect(&ticker, &QTimer::timeout, [&] { ++ticks; });
    ticker.start(10);

    QElapsedTimer elapsed;
    elapsed.start();
    w.key(Qt::Key_Right);
    QVERIFY2(elapsed.elapsed() < 200, qPrintable(QString::number(elapsed.elapsed())));  // decoding takes 400 ms
    QCOMPARE(w.canvas()->frame_index(), 0);  // the previous frame stays on screen meanwhile
    QCOMPARE(w.window->timeline()->current_frame(), 1);
    QVERIFY2(w.window->status_fields().contains(QStringLiteral("frame 1 (decoding)")),
             qPrintable(w.window->status_fields()));
    // The window keeps working while the frame decodes: a point can be added on the frame on screen.
    QTest::mouseClick(w.canvas(), Qt::LeftButton, {}, w.click_position({50.5, 50.5}));
    QCOMPARE(w.annotation().size(), 1u);
    QCOMPARE(w.annotation().find(0)->query.frame, 0);
    QTRY_VERIFY_WITH_TIMEOUT(w.shows_frame(1), 5000);
    QVERIFY2(ticks >= 10, qPrintable(QString::number(ticks)));  // the event loop ran all along

    // Scrubbing faster than decoding: later requests supersede earlier ones, the last one is shown.
    for (int i = 0; i < 5; ++i) w.key(Qt::Key_Right);
    QVERIFY2(elapsed.elapsed() < 2000, qPrintable(QString::number(elapsed.elapsed())));
    QTRY_VERIFY_WITH_TIMEOUT(w.shows_frame(6), 5000);
    QVERIFY(!delivery_threads.empty());
    for (Qt::HANDLE thread : delivery_threads) QCOMPARE(thread, QThread::currentThreadId());
    QVERIFY2(w.window->session()->stats().decoded_frames < 7, "superseded frames should not all be decoded");
  }

  void open_errors_leave_the_previous_video_and_points_intact() {
    Workbench w;
    QVERIFY(QTest::qWaitForWindowActive(w.window.get()));
    QVERIFY(w.open(kClipA));
    w.window->seek(7);
    QTRY_VERIFY(w.shows_frame(7));
    QTest::mouseClick(w.canvas(), Qt::LeftButton, {}, w.click_position({30.5, 40.5}));
    QTest::mouseClick(w.canvas(), Qt::LeftButton, {}, w.click_position({130.5, 140.5}));
    const std::vector<QueryPoint> points = w.annotation().points();
    QCOMPARE(points.size(), 2u);

    struct Case {
      QString path;
      QString expected_text;
    };
    const Case cases[] = {{kMissing, QStringLiteral("no such file")},
                          {kNotAVideo, QStringLiteral("has no video stream")},
                          {kUnsupported, QStringLiteral("no decoder for codec 'prores_raw'")},
                          {kCorrupt, QStringLiteral("the file is truncated")}};
    for (const Case& c : cases) {
      const qsizetype errors_before = w.errors.size();
      w.window->open_video(c.path);
      QTRY_COMPARE(w.errors.size(), errors_before + 1);
      const QString& error = w.errors.back();
      QVERIFY2(error.startsWith(QStringLiteral("Could not open video")), qPrintable(error));
      QVERIFY2(error.contains(c.path) && error.contains(c.expected_text), qPrintable(error));
      QVERIFY2(error.contains(QStringLiteral("clip_a.mp4 stays open")), qPrintable(error));
      QCOMPARE(w.window->session()->path(), kClipA);
      QVERIFY(w.shows_frame(7));
      QCOMPARE(w.annotation().points(), points);
      QCOMPARE(w.window->timeline()->frame_count(), 48);
    }
    QCOMPARE(w.window->settings().recent_files(), QStringList{kClipA});  // failed opens are not recent files
    // Still usable.
    w.key(Qt::Key_Right);
    QTRY_VERIFY(w.shows_frame(8));

    // A file that opens but whose later frames cannot be decoded (truncated): one clear message, the last good
    // frame stays, and the rest of the video can still be used.
    QVERIFY(w.open(kTruncatedClip));
    w.window->seek(9);
    QTRY_VERIFY(w.shows_frame(9));
    const qsizetype errors_before = w.errors.size();
    w.key(Qt::Key_Right);
    QTRY_COMPARE(w.errors.size(), errors_before + 1);
    QVERIFY2(w.errors.back().contains(QStringLiteral("Frame 10 of truncated.mp4 could not be decoded")),
             qPrintable(w.errors.back()));
    QCOMPARE(w.canvas()->frame_index(), 9);
    w.key(Qt::Key_Right);  // another bad frame: status bar only, no second dialog
    QTRY_VERIFY(!w.window->session()->frame_pending());
    QCOMPARE(w.errors.size(), errors_before + 1);
    w.key(Qt::Key_Home);
    QTRY_VERIFY(w.shows_frame(0));
  }

  void default_error_dialog_does_not_block() {
    Workbench w;
    w.window = w.make_window(/*record_errors=*/false);
    QVERIFY(QTest::qWaitForWindowActive(w.window.get()));
    QVERIFY(w.open(kClipA));
    QSignalSpy reported(w.window.get(), &MainWindow::error_reported);
    w.window->open_video(kMissing);
    QVERIFY(reported.wait(5000));
    QMessageBox* box = w.window->findChild<QMessageBox*>();
    QVERIFY(box != nullptr);
    QTRY_VERIFY(box->isVisible());
    QVERIFY(box->text().contains(kMissing));
    QCOMPARE(box->windowModality(), Qt::WindowModal);
    // report_error returned and the event loop runs on with the box open: decoded frames still arrive.
    w.window->seek(5);
    QTRY_VERIFY(w.shows_frame(5));
    QCOMPARE(w.window->session()->path(), kClipA);
    box->accept();
    QTRY_VERIFY(w.window->findChild<QMessageBox*>() == nullptr);  // deleted on close
    w.window->activateWindow();  // the offscreen platform does not hand activation back by itself
    QVERIFY(QTest::qWaitForWindowActive(w.window.get()));
    w.canvas()->setFocus();
    w.key(Qt::Key_Right);
    QTRY_VERIFY(w.shows_frame(6));
  }

  void opens_by_drag_and_drop_and_recent_files() {
    Workbench w;
    QVERIFY(QTest::qWaitForWindowActive(w.window.get()));
    QVERIFY(w.open(kClipA));
    QTest::mouseClick(w.canvas(), Qt::LeftButton, {}, w.click_position({10.5, 10.5}));
    QCOMPARE(w.annotation().size(), 1u);

    QMimeData web;
    web.setUrls({QUrl(QStringLiteral("https://example.org/clip.mp4"))});
    QDragEnterEvent web_enter(QPoint(100, 100), Qt::CopyAction, &web, Qt::LeftButton, Qt::NoModifier);
    web_enter.setAccepted(false);
    QApplication::sendEvent(w.window.get(), &web_enter);
    QVERIFY(!web_enter.isAccepted());

    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(kClipB)});
    QDragEnterEvent enter(QPoint(100, 100), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    enter.setAccepted(false);
    QApplication::sendEvent(w.window.get(), &enter);
    QVERIFY(enter.isAccepted());
    QSignalSpy opened(w.window.get(), &MainWindow::video_opened);
    QDropEvent drop(QPointF(100, 100), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(w.window.get(), &drop);
    QVERIFY(opened.wait(5000));
    QCOMPARE(w.unsaved_questions, 1);  // the unsaved point was asked about before it was replaced
    QCOMPARE(w.window->session()->path(), kClipB);
    QTRY_VERIFY(w.shows_frame(0));
    QCOMPARE(w.canvas()->frame()->width, 640);
    QVERIFY(w.annotation().empty());  // the points belonged to clip A

    // Open Recent lists both, most recent first; choosing clip A reopens it.
    QMenu* recent = w.window->actions().recent_menu;
    QList<QAction*> entries;
    for (QAction* action : recent->actions()) {
      if (!action->data().toString().isEmpty()) entries << action;
    }
    QCOMPARE(entries.size(), 2);
    QCOMPARE(entries[0]->data().toString(), kClipB);
    QCOMPARE(entries[1]->data().toString(), kClipA);
    entries[1]->trigger();
    QVERIFY(opened.wait(5000));
    QCOMPARE(w.window->session()->path(), kClipA);

    // The list survives a restart (same settings file).
    w.window.reset();
    w.window = w.make_window();
    QCOMPARE(w.window->settings().recent_files(), (QStringList{kClipA, kClipB}));
  }

  void plays_at_the_clip_rate_without_skipping_and_stops_at_the_end() {
    Workbench w;
    QVERIFY(QTest::qWaitForWindowActive(w.window.get()));
    QVERIFY(w.open(kFastClip));
    QCOMPARE(w.window->timeline()->playback_interval_ms(), 10);
    std::vector<int64_t> shown;
    connect(w.window->session(), &trackscope::ui::VideoSession::frame_ready, w.window.get(),
            [&](const trackscope::core::FramePtr& frame) { shown.push_back(frame->index); });
    QCOMPARE(QApplication::focusWidget(), static_cast<QWidget*>(w.canvas()));
    w.key(Qt::Key_Space);
    QVERIFY(w.window->timeline()->playing());
    QTRY_VERIFY_WITH_TIMEOUT(!w.window->timeline()->playing(), 10000);
    QVERIFY(w.shows_frame(29));
    QCOMPARE(static_cast<int64_t>(shown.size()), 29);
    for (size_t i = 0; i < shown.size(); ++i) QCOMPARE(shown[i], static_cast<int64_t>(i + 1));

    // Space at the end plays again from the start; Space again pauses.
    w.key(Qt::Key_Space);
    QVERIFY(w.window->timeline()->playing());
    QTRY_VERIFY(w.window->timeline()->current_frame() > 2);
    w.key(Qt::Key_Space);
    QVERIFY(!w.window->timeline()->playing());
    // Space plays from anywhere in the window, e.g. with the point list focused.
    w.window->point_list()->table()->setFocus();
    w.key(Qt::Key_Space);
    QVERIFY(w.window->timeline()->playing());
    w.key(Qt::Key_Space);
    QVERIFY(!w.window->timeline()->playing());
  }

  void damaged_frames_are_marked_on_the_timeline() {
    Workbench w;
    QVERIFY(QTest::qWaitForWindowActive(w.window.get()));
    QVERIFY(w.open(kDamagedClip));
    trackscope::ui::Timeline* timeline = w.window->timeline();
    QVERIFY(timeline->damaged_frames().empty());
    QVERIFY(!timeline->damaged_badge_visible());
    QVERIFY(!timeline->findChild<QWidget*>(QStringLiteral("damage_strip"))->isVisible());
    timeline->slider()->setValue(5);
    QTRY_VERIFY(w.shows_frame(5));
    QCOMPARE(timeline->damaged_frames(), (std::set<int64_t>{5}));
    QVERIFY(timeline->damaged_badge_visible());
    QVERIFY(timeline->findChild<QWidget*>(QStringLiteral("damage_strip"))->isVisible());
    // The strip paints a red tick where frame 5 lies under the slider.
    const QImage strip = timeline->findChild<QWidget*>(QStringLiteral("damage_strip"))->grab().toImage();
    int red_columns = 0;
    for (int x = 0; x < strip.width(); ++x)
      red_columns += qRed(strip.pixel(x, 1)) > 200 && qGreen(strip.pixel(x, 1)) < 80;
    QVERIFY2(red_columns >= 1 && red_columns <= 4, qPrintable(QString::number(red_columns)));
    w.key(Qt::Key_Right, Qt::NoModifier);
    QTRY_VERIFY(w.shows_frame(6));
    QVERIFY(!timeline->damaged_badge_visible());
    QCOMPARE(timeline->damaged_frames(), (std::set<int64_t>{5}));
    // Another video starts with no marks.
    QVERIFY(w.open(kClipA));
    QVERIFY(timeline->damaged_frames().empty());
  }

  void help_lists_the_keyboard_shortcuts() {
    Workbench w;
    QVERIFY(QTest::qWaitForWindowActive(w.window.get()));
    const auto rows = trackscope::ui::shortcut_descriptions(w.window->actions());
    QStringList keys;
    for (const auto& row : rows) keys << row.keys;
    for (const QString& expected :
         {QStringLiteral("Left"), QStringLiteral("Right"), QStringLiteral("Ctrl+Left"), QStringLiteral("Ctrl+Right"),
          QStringLiteral("Home"), QStringLiteral("End"), QStringLiteral("Space"), QStringLiteral("Del, Backspace"),
          QStringLiteral("Ctrl+O")}) {
      QVERIFY2(keys.contains(expected), qPrintable(keys.join(QStringLiteral(" | "))));
    }
    w.window->actions().keyboard_shortcuts->trigger();
    auto* dialog = w.window->findChild<QDialog*>(QStringLiteral("keyboard_shortcuts_dialog"));
    QVERIFY(dialog != nullptr);
    QVERIFY(dialog->isVisible());
    QVERIFY(!dialog->isModal());
  }

  void screenshot_shows_the_frame_and_the_points() {
    Workbench w;
    QVERIFY(QTest::qWaitForWindowActive(w.window.get()));
    QVERIFY(w.open(kClipA));
    w.window->seek(12);
    QTRY_VERIFY(w.shows_frame(12));
    const QPointF targets[] = {{60.5, 50.5}, {160.5, 120.5}, {260.5, 190.5}, {100.5, 200.5}};
    for (const QPointF& target : targets) QTest::mouseClick(w.canvas(), Qt::LeftButton, {}, w.click_position(target));
    w.window->editor()->select_point(1);
    QCOMPARE(w.annotation().size(), 4u);
    QTest::qWait(50);  // let the point list finish its delayed column layout, as it would before a real paint

    const QImage shot = w.window->grab().toImage();
    const QString folder = QStringLiteral(TRACKSCOPE_TEST_OUTPUT_DIR);
    QVERIFY(QDir().mkpath(folder));
    const QString file = folder + QStringLiteral("/ui_workbench.png");
    QVERIFY(shot.save(file));
    qInfo("screenshot: %s", qPrintable(file));

    QCOMPARE(shot.size(), w.window->size() * w.window->devicePixelRatio());
    for (const QueryPoint& point : w.annotation()) {
      const QPoint in_canvas = w.click_position({point.query.x_px, point.query.y_px});
      const QPoint in_window = w.canvas()->mapTo(w.window.get(), in_canvas);
      QCOMPARE(QColor(shot.pixel(in_window)), point_colour(point.colour_index));
    }
    // Between the points: the video of frame 12.
    const QPoint video = w.canvas()->mapTo(w.window.get(), w.click_position({200.5, 60.5}));
    QCOMPARE(qBlue(shot.pixel(video)), static_cast<int>(blue_of_frame(12)));
    QCOMPARE(qRed(shot.pixel(video)), 200);
    QCOMPARE(qGreen(shot.pixel(video)), 60);
  }
};

QTEST_MAIN(WorkbenchTest)
#include "workbench_test.moc"
