// ui/scripted_run: a tracking session in the GUI without a user (`trackscope VIDEO --queries ... --track
// --track-devices ... --screenshot-after-track ...`), with the fake tracker: the queries become points, one job
// per device in order with the device switched between them (a loaded model reused), a screenshot after each job
// showing that run in the performance dock, the exit code and summary for failures, bad queries refused.
#include <QImage>
#include <QLineSeries>
#include <QTabWidget>
#include <QTemporaryDir>

#include "tracking_bench.h"
#include "ui/perf/performance_dock.h"
#include "ui/perf/stage_charts.h"
#include "ui/scripted_run.h"

using namespace std::chrono_literals;
using namespace trackscope;
using testing::FakeTrackerConfig;
using testing::TrackingBench;

namespace {

ui::ScriptedRunOptions grid_run(int columns, int rows, std::vector<core::DeviceId> devices, const QString& png) {
  ui::ScriptedRunOptions options;
  options.queries = *core::parse_query_spec("grid:" + std::to_string(columns) + "x" + std::to_string(rows) + "@frame5");
  options.devices = std::move(devices);
  options.screenshot_png = png;
  options.settle = 200ms;
  return options;
}

ui::ScriptedRunParts parts(const TrackingBench& bench) {
  return {bench.window->editor(), bench.window->session(), bench.window->tracking(), bench.window.get()};
}

}  // namespace

class ScriptedRunTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void screenshot_names_number_the_later_jobs() {
    QCOMPARE(ui::scripted_screenshot_path(QStringLiteral("shot.png"), 1), QStringLiteral("shot.png"));
    QCOMPARE(ui::scripted_screenshot_path(QStringLiteral("shot.png"), 2), QStringLiteral("shot-2.png"));
    QCOMPARE(ui::scripted_screenshot_path(QStringLiteral("/tmp/out/run.png"), 3), QStringLiteral("/tmp/out/run-3.png"));
    QCOMPARE(ui::scripted_screenshot_path(QStringLiteral("./a.b.png"), 2), QStringLiteral("./a.b-2.png"));
    QCOMPARE(ui::scripted_screenshot_path(QStringLiteral("shot.png"), 1, QStringLiteral("Stages")),
             QStringLiteral("shot-stages.png"));
    QCOMPARE(ui::scripted_screenshot_path(QStringLiteral("o/shot.png"), 2, QStringLiteral("telemetry")),
             QStringLiteral("o/shot-2-telemetry.png"));
  }

  void runs_one_job_per_device_and_screenshots_each() {
    FakeTrackerConfig config;
    config.query_chunk = 4;
    config.chunk_delay = 10ms;
    TrackingBench bench(config, "cpu");
    QTemporaryDir dir;
    const QString png = dir.filePath(QStringLiteral("shot.png"));
    auto* run = new ui::ScriptedRun(
        parts(bench), grid_run(3, 2, {core::DeviceId::cuda(0), core::DeviceId::cpu(), core::DeviceId::cuda(0)}, png),
        bench.window.get());
    QSignalSpy finished(run, &ui::ScriptedRun::finished);
    bench.dock()->show();  // a hidden dock pulls no live samples
    const size_t runs_before = bench.dock()->entries().size();
    QVERIFY(bench.open());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
    QCOMPARE(finished.first().at(0).toInt(), 0);
    const QString summary = finished.first().at(1).toString();
    QVERIFY2(summary.contains(QStringLiteral("job 2 on cpu: completed")), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("job 3 on cuda:0: completed")), qPrintable(summary));

    // The grid on frame 5 of the 320x240 clip, every point tracked.
    QCOMPARE(static_cast<int>(bench.annotation().points().size()), 6);
    QCOMPARE(bench.annotation().points().front().query.frame, int64_t{5});
    QVERIFY(std::abs(bench.annotation().points().front().query.x_px - 0.5 * 320.0 / 3.0) < 1e-3);
    QCOMPARE(bench.tracked_points(), 6);
    // One job per device, in order; the second cuda:0 job reused the cached tracker.
    QCOMPARE(bench.log->devices_tracked(), (std::vector<std::string>{"cuda:0", "cpu", "cuda:0"}));
    QCOMPARE(bench.log->creations("cuda:0"), 1);
    QCOMPARE(bench.log->creations("cpu"), 1);
    // The last run's decode-vs-compute timeline: the fake's samples run back to back, decode first.
    ui::StageTimelineChart* timeline = bench.dock()->timeline_chart();
    QVERIFY(timeline->series_for(QStringLiteral("decode")) != nullptr);
    QLineSeries* model = timeline->series_for(QStringLiteral("model"));
    QVERIFY(model != nullptr);
    QVERIFY(model->count() > 4);
    QCOMPARE(model->at(0).x(), 0.0);
    QVERIFY(model->at(model->count() - 1).x() > testing::fake_stage_ms(core::Stage::decode));
    QVERIFY2(timeline->chart()->title().contains(QStringLiteral(", 0% of it while the model worked")),
             qPrintable(timeline->chart()->title()));
    // Each run reached the performance dock before its screenshot.
    QCOMPARE(bench.dock()->entries().size(), runs_before + 3);
    const QStringList expected = {png, dir.filePath(QStringLiteral("shot-2.png")),
                                  dir.filePath(QStringLiteral("shot-3.png"))};
    QCOMPARE(run->screenshots(), expected);
    for (const QString& path : expected) {
      const QImage shot(path);
      QVERIFY2(!shot.isNull(), qPrintable(path));
      QCOMPARE(shot.size(), bench.window->size() * bench.window->devicePixelRatio());
    }
  }

  void a_screenshot_per_dock_tab() {
    TrackingBench bench(FakeTrackerConfig{}, "cpu");
    QTemporaryDir dir;
    ui::ScriptedRunOptions options = grid_run(2, 2, {core::DeviceId::cpu()}, dir.filePath(QStringLiteral("run.png")));
    options.dock_tabs = {QStringLiteral("Telemetry"), QStringLiteral("stages")};
    auto* run = new ui::ScriptedRun(parts(bench), options, bench.window.get());
    QSignalSpy finished(run, &ui::ScriptedRun::finished);
    QVERIFY(bench.open());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
    QCOMPARE(finished.first().at(0).toInt(), 0);
    QCOMPARE(run->screenshots(), (QStringList{dir.filePath(QStringLiteral("run-telemetry.png")),
                                              dir.filePath(QStringLiteral("run-stages.png"))}));
    QVERIFY(bench.dock()->isVisible());
    QCOMPARE(bench.dock()->tabs()->tabText(bench.dock()->tabs()->currentIndex()).toLower(), QStringLiteral("stages"));
    // The two screenshots differ where the dock shows another tab.
    QVERIFY(QImage(run->screenshots()[0]) != QImage(run->screenshots()[1]));
  }

  void a_failed_job_gives_exit_code_1_and_the_rest_still_run() {
    FakeTrackerConfig config;
    config.model_errors["default"] = core::not_found("no weights installed for the default model (fake)");
    TrackingBench bench(config, "cpu");
    auto* run = new ui::ScriptedRun(parts(bench), grid_run(2, 1, {core::DeviceId::cpu(), core::DeviceId::cuda(0)}, {}),
                                    bench.window.get());
    QSignalSpy finished(run, &ui::ScriptedRun::finished);
    QVERIFY(bench.open());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
    QCOMPARE(finished.first().at(0).toInt(), 1);
    const QString summary = finished.first().at(1).toString();
    QVERIFY2(summary.contains(QStringLiteral("job 1 on cpu: Tracking failed")), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("job 2 on cuda:0: Tracking failed")), qPrintable(summary));
    QCOMPARE(bench.tracked_points(), 0);
    QVERIFY(run->screenshots().isEmpty());
    QVERIFY(!bench.errors.isEmpty());  // the failure also took the window's one error path
  }

  void queries_that_cannot_be_resolved_start_no_job() {
    TrackingBench bench(FakeTrackerConfig{}, "cpu");
    ui::ScriptedRunOptions options = grid_run(2, 2, {core::DeviceId::cpu()}, {});
    options.queries = *core::parse_query_spec("grid:2x2@frame480");  // the clip has 48 frames
    auto* run = new ui::ScriptedRun(parts(bench), options, bench.window.get());
    QSignalSpy finished(run, &ui::ScriptedRun::finished);
    QVERIFY(bench.open());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
    QCOMPARE(finished.first().at(0).toInt(), 2);
    QVERIFY2(finished.first().at(1).toString().contains(QStringLiteral("grid:2x2@frame480")),
             qPrintable(finished.first().at(1).toString()));
    QVERIFY(bench.annotation().points().empty());
    QVERIFY(bench.log->devices_tracked().empty());
  }
};

QTEST_MAIN(ScriptedRunTest)
#include "scripted_run_test.moc"
