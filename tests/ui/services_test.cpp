// ui/services: the GUI's thread-owning services without a window (trackscope_ui_services on Qt Core alone), the
// test that the ThreadSanitizer job runs for the GUI side (tools/ci/sanitizers.sh tsan). Every worker -> GUI
// hand-off is exercised: ThreadMailbox posts from many threads (order, thread, never inline, dropped with the
// mailbox), VideoSession's open thread and decode-thread callbacks (a superseded open, a failed open, frames
// delivered after a seek), TrackerService's loader thread and tracking thread (partial results, progress, the
// finished job's tracks in the annotation, a cancel, a device switch during a job).
#include <QCoreApplication>
#include <QSignalSpy>
#include <QThread>
#include <QtTest>

#include <atomic>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "fake_frame_server.h"
#include "fake_tracker.h"
#include "ui/annotation_editor.h"
#include "ui/thread_mailbox.h"
#include "ui/tracking/tracker_service.h"
#include "ui/video_session.h"

using namespace std::chrono_literals;
using namespace trackscope;
using testing::FakeTrackerConfig;
using testing::FakeTrackerFactory;
using testing::FakeTrackerLog;
using testing::FakeVideo;
using testing::FakeVideoLibrary;

namespace {

const std::filesystem::path kClip = "/videos/services.mp4";  // 320x240, 48 frames (FakeVideo's defaults)

struct ServiceBench {
  FakeVideoLibrary library;
  std::shared_ptr<FakeTrackerLog> log = std::make_shared<FakeTrackerLog>();
  ui::AnnotationEditor editor{nullptr};
  std::unique_ptr<ui::TrackerService> service;

  explicit ServiceBench(const FakeTrackerConfig& config) {
    library.add_video(kClip, FakeVideo{});
    ui::TrackerServiceOptions options;
    options.tracker.device = "cpu";
    options.video_opener = testing::fake_video_opener(library);
    service = std::make_unique<ui::TrackerService>(std::make_unique<FakeTrackerFactory>(config, log), &editor,
                                                   std::move(options), nullptr);
    service->set_video(kClip, FakeVideo{}.frame_count);
  }
  ~ServiceBench() { service->shutdown(); }

  void add_points(int count) {
    for (int i = 0; i < count; ++i) editor.add_point({0, 20.5 + 10.0 * i, 30.5 + 5.0 * i});
  }
  int tracked_points() const {
    int tracked = 0;
    for (const core::QueryPoint& point : editor.annotation().points()) {
      const core::PointTrack* track = editor.annotation().track(point.id);
      if (track != nullptr && !track->track.points.empty()) ++tracked;
    }
    return tracked;
  }
  bool wait_idle(int timeout_ms = 10000) const {
    return QTest::qWaitFor([&] { return service->state() == ui::TrackingState::idle; }, timeout_ms);
  }
};

}  // namespace

class ServicesTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void mailbox_runs_every_post_once_in_order_on_its_thread() {
    constexpr int kThreads = 4;
    constexpr int kPostsPerThread = 400;
    ui::ThreadMailbox mailbox;
    std::map<int, std::vector<int>> received;  // GUI thread only
    int off_thread_runs = 0;
    QThread* const gui = QThread::currentThread();
    {
      std::vector<std::jthread> posters;
      for (int t = 0; t < kThreads; ++t) {
        posters.emplace_back([&, t] {
          for (int i = 0; i < kPostsPerThread; ++i) {
            mailbox.post([&, t, i] {
              if (QThread::currentThread() != gui) ++off_thread_runs;
              received[t].push_back(i);
            });
          }
        });
      }
    }
    QTRY_COMPARE_WITH_TIMEOUT(static_cast<int>(received.size()), kThreads, 5000);
    QTRY_VERIFY_WITH_TIMEOUT(std::all_of(received.begin(), received.end(),
                                         [&](const auto& r) { return r.second.size() == kPostsPerThread; }),
                             5000);
    QCOMPARE(off_thread_runs, 0);
    for (const auto& [thread, sequence] : received) {
      for (int i = 0; i < kPostsPerThread; ++i) QCOMPARE(sequence[static_cast<size_t>(i)], i);
    }
    QCoreApplication::processEvents();
    for (const auto& [thread, sequence] : received) QCOMPARE(static_cast<int>(sequence.size()), kPostsPerThread);
  }

  void mailbox_never_runs_a_task_inside_post_and_drops_tasks_with_itself() {
    int runs = 0;
    {
      ui::ThreadMailbox mailbox;
      mailbox.post([&] { ++runs; });
      QCOMPARE(runs, 0);  // queued even on its own thread
      QCoreApplication::processEvents();
      QCOMPARE(runs, 1);
      mailbox.post([&] { ++runs; });
    }  // destroyed with one task queued
    QCoreApplication::processEvents();
    QCOMPARE(runs, 1);

    // A task that destroys the mailbox: the rest of its batch does not run.
    auto owned = std::make_unique<ui::ThreadMailbox>();
    int after = 0;
    owned->post([&] { owned.reset(); });
    owned->post([&] { ++after; });
    QTRY_VERIFY_WITH_TIMEOUT(owned == nullptr, 2000);
    QCoreApplication::processEvents();
    QCOMPARE(after, 0);
  }

  void video_session_reports_the_latest_open_and_delivers_decoded_frames() {
    FakeVideoLibrary library;
    FakeVideo slow;
    slow.frame_count = 10;
    FakeVideo clip;
    clip.decode_delay = 2ms;
    library.add_video("/videos/first.mp4", slow);
    library.add_video(kClip, clip);
    library.set_open_delay(30ms);
    ui::VideoSession session(library.factory(), core::FrameServerOptions{}, nullptr);
    QSignalSpy opened(&session, &ui::VideoSession::video_opened);
    QSignalSpy failed(&session, &ui::VideoSession::open_failed);
    QSignalSpy frames(&session, &ui::VideoSession::frame_ready);

    session.open(QStringLiteral("/videos/first.mp4"));
    session.open(QString::fromStdString(kClip.string()));  // supersedes the first before it finishes
    QVERIFY(session.opening());
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, 5000);
    QCoreApplication::processEvents();
    QCOMPARE(opened.count(), 1);  // the superseded open reported nothing
    QCOMPARE(session.frame_count(), clip.frame_count);
    QVERIFY(!session.opening());

    for (int64_t index : {0, 17, 47, 3}) {
      const int before = frames.count();
      session.seek(index);
      QTRY_VERIFY_WITH_TIMEOUT(frames.count() > before && session.displayed_frame() == index, 5000);
      const auto frame = frames.last().at(0).value<core::FramePtr>();
      QVERIFY(frame != nullptr);
      QCOMPARE(frame->index, index);
      QCOMPARE(frame->pixel(5, 7)[2], testing::blue_of_frame(index));  // the blue byte names the frame
    }

    session.open(QStringLiteral("/videos/missing.mp4"));
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 5000);
    QVERIFY(failed.first().at(1).toString().contains(QStringLiteral("no such file")));
    QCOMPARE(session.frame_count(), clip.frame_count);  // the open video stays
  }

  void tracker_service_tracks_on_its_threads_and_applies_every_chunk() {
    FakeTrackerConfig config;
    config.query_chunk = 2;
    config.chunk_delay = 5ms;
    ServiceBench bench(config);
    QSignalSpy applied(bench.service.get(), &ui::TrackerService::tracks_applied);
    QSignalSpy progress(bench.service.get(), &ui::TrackerService::progress_changed);
    QSignalSpy finished(bench.service.get(), &ui::TrackerService::job_finished);
    QSignalSpy ready(bench.service.get(), &ui::TrackerService::tracker_ready);
    bench.add_points(7);

    QVERIFY(bench.service->track({}));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
    QVERIFY(finished.first().at(0).toBool());
    QVERIFY(bench.wait_idle());
    QCOMPARE(ready.count(), 1);
    QCOMPARE(bench.log->chunks(), 4);
    QVERIFY(applied.count() >= 1);
    QVERIFY(progress.count() >= 1);
    QCOMPARE(bench.tracked_points(), 7);
    const std::set<std::thread::id> loaders = bench.log->create_threads();
    const std::set<std::thread::id> trackers = bench.log->track_threads();
    QCOMPARE(static_cast<int>(loaders.size()), 1);
    QCOMPARE(static_cast<int>(trackers.size()), 1);
    QVERIFY(!loaders.contains(std::this_thread::get_id()));
    QVERIFY(!trackers.contains(std::this_thread::get_id()));
    const core::QueryPoint& first = bench.editor.annotation().points().front();
    const core::PointTrack* track = bench.editor.annotation().track(first.id);
    QVERIFY(track != nullptr);
    const core::TrackPoint expected = testing::fake_estimate(first.query, 30, 320, 240);
    QCOMPARE(track->track.at(30).x_px, expected.x_px);
    QCOMPARE(track->track.at(30).y_px, expected.y_px);
  }

  void tracker_service_cancel_and_device_switch_during_a_job_leave_it_consistent() {
    FakeTrackerConfig config;
    config.query_chunk = 1;
    config.chunk_delay = 40ms;
    ServiceBench bench(config);
    QSignalSpy finished(bench.service.get(), &ui::TrackerService::job_finished);
    bench.add_points(12);

    QVERIFY(bench.service->track({}));
    QTRY_VERIFY_WITH_TIMEOUT(bench.log->chunks() >= 2, 10000);
    bench.service->cancel();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
    QVERIFY(!finished.first().at(0).toBool());
    QVERIFY(bench.wait_idle());
    const int after_cancel = bench.tracked_points();
    QVERIFY2(after_cancel >= 2 && after_cancel < 12, qPrintable(QString::number(after_cancel)));

    QVERIFY(bench.service->track({}));
    QTRY_VERIFY_WITH_TIMEOUT(bench.log->chunks() >= after_cancel + 2, 10000);
    bench.service->set_device(core::DeviceId::cuda(0));  // cancels the job, loads cuda:0 on the loader thread
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 10000);
    QVERIFY(bench.wait_idle());
    QCOMPARE(bench.service->selection().device, std::string("cuda:0"));
    QTRY_COMPARE_WITH_TIMEOUT(bench.log->creations("cuda:0"), 1, 10000);

    QVERIFY(bench.service->track({}));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 3, 20000);
    QVERIFY(finished.last().at(0).toBool());
    QVERIFY(bench.wait_idle());
    QCOMPARE(bench.tracked_points(), 12);
    QCOMPARE(bench.log->devices_tracked().back(), std::string("cuda:0"));
  }
};

QTEST_GUILESS_MAIN(ServicesTest)
#include "services_test.moc"
