// The performance dock, offscreen: the charts hold the right series and values, the A/B table shows the measured
// and predicted ratios, the trap warnings fire (bf16 on a T4, TF32 against strict FP32), the selectors are
// gated, the report export writes valid files, and a screenshot of two profiles side by side is saved.
#include <QBarSet>
#include <QComboBox>
#include <QDir>
#include <QHorizontalBarSeries>
#include <QImage>
#include <QLabel>
#include <QLineSeries>
#include <QPushButton>
#include <QSignalSpy>
#include <QStackedBarSeries>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableWidget>
#include <QValueAxis>
#include <QtTest>

#include <cmath>

#include "core/perf/roofline.h"
#include "ui/perf/comparison_view.h"
#include "ui/perf/device_selector.h"
#include "ui/perf/performance_dock.h"
#include "ui/perf/roofline_table.h"
#include "ui/perf/stage_charts.h"
#include "ui/perf/telemetry_panel.h"

using namespace trackscope;

namespace {

const QString kFixture = QString(TRACKSCOPE_SOURCE_DIR) + "/tests/data/perf/h200_locotrack_section5_2_transcribed.json";

QString output_dir() {
  const QByteArray env = qgetenv("TRACKSCOPE_TEST_OUTPUT_DIR");
  QString dir = env.isEmpty() ? QString(TRACKSCOPE_TEST_OUTPUT_DIR) : QString::fromLocal8Bit(env);
  QDir().mkpath(dir);
  return dir;
}

struct StageSpec {
  core::Stage stage;
  double ms;
  double flops;
  double bytes;
  int executions = 1;
};

core::Profile make_profile(const std::string& cuda_name, core::Precision precision, bool tf32_flags,
                           const std::vector<StageSpec>& stages) {
  core::Profile p;
  p.device.id = "cuda:0";
  p.device.name = cuda_name;
  if (const core::GpuSpec* spec = core::find_gpu_spec(cuda_name)) {
    p.device.compute_capability_major = spec->compute_capability_major;
    p.device.compute_capability_minor = spec->compute_capability_minor;
    p.device.multiprocessors = spec->multiprocessors;
  }
  core::ProfileCase c;
  c.config.points = 1024;
  c.config.frames = 47;
  c.config.chunk = 256;
  c.config.precision = precision;
  c.config.tf32_cudnn = c.config.tf32_matmul = tf32_flags;
  c.config.warmup = 2;
  c.name = core::default_case_name(c.config);
  double total = 0.0;
  for (const StageSpec& s : stages) {
    core::StageStats stats;
    stats.name = std::string(core::stage_name(s.stage));
    stats.stats = core::compute_statistics(std::vector<double>{s.ms, s.ms * 1.1, s.ms * 0.95});
    stats.flops = s.flops;
    stats.bytes = s.bytes;
    stats.executions_per_run = s.executions;
    c.stages.push_back(stats);
    total += stats.stats.median_ms;
  }
  c.end_to_end = core::compute_statistics(std::vector<double>{total});
  p.cases.push_back(c);
  return p;
}

core::Profile a100_tf32() {
  return make_profile(
      "NVIDIA A100-SXM4-40GB", core::Precision::fp32, true,
      {{core::Stage::backbone, 10.0, 1e12, 1e6}, {core::Stage::refine_correlation, 8.0, 1e9, 10e9, 16}});
}
core::Profile t4_fp32() {
  return make_profile(
      "Tesla T4", core::Precision::fp32, false,
      {{core::Stage::backbone, 200.0, 1e12, 1e6}, {core::Stage::refine_correlation, 40.0, 1e9, 10e9, 16}});
}

int row_of(QTableWidget* table, const QString& stage) {
  for (int row = 0; row < table->rowCount(); ++row) {
    if (table->item(row, 0)->text() == stage) return row;
  }
  return -1;
}

QBarSet* bar_set(ui::StageBreakdownChart* chart, const QString& label) {
  for (QBarSet* set : chart->series()->barSets()) {
    if (set->label() == label) return set;
  }
  return nullptr;
}

QBarSet* ratio_set(ui::StageRatioChart* chart, const QString& label) {
  for (QBarSet* set : chart->series()->barSets()) {
    if (set->label() == label) return set;
  }
  return nullptr;
}

}  // namespace

class PerformanceDockTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void stage_chart_holds_the_current_run() {
    ui::PerformanceDock dock;
    const core::Profile p = t4_fp32();
    dock.add_run(p, 0, "run");
    ui::StageBreakdownChart* chart = dock.stage_chart();
    QCOMPARE(chart->categories(), QStringList{"run"});
    QCOMPARE(chart->series()->barSets().size(), 2);
    QCOMPARE(chart->series()->barSets()[0]->label(), QString("backbone"));  // canonical order
    QCOMPARE(bar_set(chart, "backbone")->at(0), p.cases[0].find_stage("backbone")->stats.median_ms);
    QCOMPARE(bar_set(chart, "refine_correlation")->at(0), p.cases[0].find_stage("refine_correlation")->stats.median_ms);
  }

  void history_has_one_point_per_run() {
    ui::PerformanceDock dock;
    const double times[] = {200.0, 150.0, 120.0};
    for (double ms : times) {
      dock.add_run(make_profile("Tesla T4", core::Precision::fp32, false, {{core::Stage::backbone, ms, 1e12, 1e6}}));
    }
    QCOMPARE(dock.history_chart()->run_count(), 3);
    QLineSeries* series = dock.history_chart()->series_for("backbone");
    QVERIFY(series);
    QCOMPARE(series->count(), 3);
    for (int i = 0; i < 3; ++i) {
      QCOMPARE(series->at(i).x(), i + 1.0);
      QCOMPARE(series->at(i).y(), times[i]);  // the median of {ms, 1.1 ms, 0.95 ms}
    }
    QCOMPARE(dock.entries().size(), size_t{3});
    QCOMPARE(dock.current_entry(), 2);
  }

  // The y axis of the stage chart: 0..1 ms with readable ticks when there is nothing to show, and neighbouring
  // tick labels that differ when the bars are short.
  void stage_chart_axis_reads_sensibly_when_empty_or_short() {
    const auto tick_labels = [](const ui::StageBreakdownChart& chart) {
      const QList<QAbstractAxis*> axes = chart.chart()->axes(Qt::Vertical);
      auto* y = axes.isEmpty() ? nullptr : qobject_cast<QValueAxis*>(axes.front());
      QStringList labels;
      for (int i = 0; y && i < y->tickCount(); ++i) {
        const double value = y->min() + i * (y->max() - y->min()) / (y->tickCount() - 1);
        labels << QString::asprintf(y->labelFormat().toLatin1().constData(), value);
      }
      return labels;
    };
    ui::StageBreakdownChart chart;
    QCOMPARE(tick_labels(chart), (QStringList{"0.00", "0.25", "0.50", "0.75", "1.00"}));
    chart.show_live_samples({{core::Stage::backbone, 0, 0, 0.3}});
    const QStringList short_bars = tick_labels(chart);
    QCOMPARE(short_bars.size(), 5);
    QCOMPARE(QSet<QString>(short_bars.begin(), short_bars.end()).size(), 5);
    chart.show_live_samples({{core::Stage::backbone, 0, 0, 200.0}});
    QCOMPARE(tick_labels(chart).back(), QStringLiteral("210"));  // whole milliseconds, as before
  }

  void live_samples_show_one_bar_per_chunk() {
    ui::PerformanceDock dock;
    dock.add_run(t4_fp32());
    bool running = true;
    std::vector<core::StageSample> samples = {{core::Stage::backbone, 0, 0, 50.0}};
    for (int chunk = 0; chunk < 2; ++chunk) {
      for (int iteration = 1; iteration <= 4; ++iteration)
        samples.push_back({core::Stage::refine_encoder, chunk, iteration, 1.5 + chunk});
    }
    dock.set_live_run_provider([&] { return ui::LiveRunSnapshot{running, samples}; });
    dock.poll_providers();
    ui::StageBreakdownChart* chart = dock.stage_chart();
    QCOMPARE(chart->categories(), (QStringList{"video", "chunk 1", "chunk 2"}));
    QBarSet* encoder = bar_set(chart, "refine_encoder");
    QVERIFY(encoder);
    QCOMPARE(encoder->at(0), 0.0);
    QCOMPARE(encoder->at(1), 4 * 1.5);
    QCOMPARE(encoder->at(2), 4 * 2.5);
    QCOMPARE(bar_set(chart, "backbone")->at(0), 50.0);
    running = false;  // the run ends: back to the current run's bar
    dock.poll_providers();
    QCOMPARE(chart->categories().size(), 1);
  }

  void telemetry_panel_shows_the_snapshot() {
    ui::PerformanceDock dock;
    core::TelemetrySnapshot snapshot;
    snapshot.available = true;
    snapshot.status = "NVML: Tesla T4 (driver 550.1)";
    for (int i = 0; i < 3; ++i) {
      core::TelemetrySample s;
      s.time_s = 0.1 * i;
      s.sm_clock_mhz = 1410.0 + i;
      s.sm_clock_max_mhz = 1590.0;
      s.power_w = 60.0;
      s.power_limit_w = 70.0;
      s.temperature_c = 77.0;
      s.gpu_utilisation_percent = 99.0;
      s.throttle_reasons = core::throttle_reason::sw_power_cap;
      s.throttle_reason_names = core::decode_throttle_reasons(*s.throttle_reasons);
      s.pcie_generation = 3;
      s.pcie_width = 16;
      snapshot.samples.push_back(s);
    }
    dock.set_telemetry_provider([snapshot] { return snapshot; });
    dock.poll_providers();
    ui::TelemetryPanel* panel = dock.telemetry_panel();
    QCOMPARE(panel->status_text(), QString("NVML: Tesla T4 (driver 550.1)"));
    QCOMPARE(panel->value_label("sm_clock")->text(), QString("1412 / 1590 MHz"));
    QCOMPARE(panel->value_label("power")->text(), QString("60 / 70 W"));
    QCOMPARE(panel->value_label("throttle")->text(), QString("sw_power_cap"));
    QCOMPARE(panel->value_label("pcie")->text(), QString("gen 3 x16"));
    QCOMPARE(panel->sm_clock_series()->count(), 3);
    QCOMPARE(panel->sm_clock_series()->at(2).y(), 1412.0);
    QCOMPARE(panel->sm_clock_series()->at(2).x(), 0.0);  // seconds relative to the latest sample
    QCOMPARE(panel->power_series()->at(0).y(), 100.0 * 60.0 / 70.0);
    QCOMPARE(panel->cpu_series()->count(), 0);

    core::TelemetrySnapshot none;
    none.status = "no telemetry: NVIDIA driver library libnvidia-ml.so.1 not found";
    dock.set_telemetry_provider([none] { return none; });
    dock.poll_providers();
    QVERIFY(panel->status_text().startsWith("no telemetry"));
    QCOMPARE(panel->value_label("sm_clock")->text(), QString("-"));
    QCOMPARE(panel->sm_clock_series()->count(), 0);
  }

  void roofline_table_matches_the_roofline() {
    ui::PerformanceDock dock;
    const core::Profile p = t4_fp32();
    dock.add_run(p);
    const core::Roofline expected = core::compute_roofline(p, p.cases[0]);
    QTableWidget* table = dock.roofline_table()->table();
    QCOMPARE(table->rowCount(), static_cast<int>(expected.stages.size()));
    for (int row = 0; row < table->rowCount(); ++row) {
      const core::StageRoofline& s = expected.stages[static_cast<size_t>(row)];
      QCOMPARE(table->item(row, ui::RooflineTable::kStage)->text(), QString::fromStdString(s.stage));
      QCOMPARE(table->item(row, ui::RooflineTable::kMs)->text(), QString::number(s.ms, 'f', 2));
      QCOMPARE(table->item(row, ui::RooflineTable::kFloor)->text(), QString::number(s.floor->ms(), 'f', 2));
      QCOMPARE(table->item(row, ui::RooflineTable::kFlagged)->text().isEmpty(), !s.flagged);
    }
    // backbone: 1 TFLOP in 200 ms on an 8.1 TFLOP/s card = 5 TFLOP/s, 61.7% of peak, not flagged (1.6x its floor).
    QCOMPARE(table->item(0, ui::RooflineTable::kTflops)->text(), QString("5.00"));
    QCOMPARE(table->item(0, ui::RooflineTable::kComputeShare)->text(), QString::number(5.0 / 8.1 * 100, 'f', 1));
    QVERIFY(dock.roofline_table()->header_text().contains("Tesla T4"));
  }

  void comparison_shows_measured_and_predicted_ratios() {
    ui::PerformanceDock dock;
    const int a = dock.add_profile(a100_tf32(), "test", "A100");
    const int b = dock.add_profile(t4_fp32(), "test", "T4");
    dock.compare(a, b);
    QTableWidget* table = dock.comparison_view()->table();
    const int backbone = row_of(table, "backbone");
    const int correlation = row_of(table, "refine_correlation");
    QVERIFY(backbone >= 0 && correlation >= 0);
    QCOMPARE(table->item(backbone, ui::ComparisonView::kMeasured)->text(), QString("20.00x"));
    QCOMPARE(table->item(backbone, ui::ComparisonView::kPredicted)->text(), QString::number(19.5 / 8.1, 'f', 2) + "x");
    QCOMPARE(table->item(backbone, ui::ComparisonView::kPrecisionAware)->text(),
             QString::number(156.0 / 8.1, 'f', 2) + "x");
    QCOMPARE(table->item(backbone, 0)->background().color(), ui::highlight_color());
    QVERIFY(table->item(backbone, ui::ComparisonView::kCauses)->text().contains("TF32 on one side only"));
    QCOMPARE(table->item(correlation, ui::ComparisonView::kMeasured)->text(), QString("5.00x"));
    QCOMPARE(table->item(correlation, ui::ComparisonView::kPredicted)->text(),
             QString::number(1555.0 / 320.0, 'f', 2) + "x");
    QVERIFY(table->item(correlation, ui::ComparisonView::kCauses)->text().isEmpty());
    // The two profiles side by side in the stacked chart.
    ui::StageBreakdownChart* chart = dock.comparison_view()->side_by_side_chart();
    QCOMPARE(chart->categories().size(), 2);
    QCOMPARE(bar_set(chart, "backbone")->at(0), 10.0);
    QCOMPARE(bar_set(chart, "backbone")->at(1), 200.0);
    // Ratio bars on a log10 axis; the chart lists the stages top to bottom, i.e. bar index count-1-row.
    ui::StageRatioChart* ratios = dock.comparison_view()->ratio_chart();
    QBarSet* measured = ratio_set(ratios, "measured");
    QBarSet* predicted = ratio_set(ratios, "predicted");
    QVERIFY(measured != nullptr && predicted != nullptr);
    const int rows = table->rowCount();
    QCOMPARE(measured->count(), rows);
    QVERIFY(std::abs(measured->at(rows - 1 - backbone) - std::log10(20.0)) < 1e-9);
    QVERIFY(std::abs(measured->at(rows - 1 - correlation) - std::log10(5.0)) < 1e-9);
    QVERIFY(std::abs(predicted->at(rows - 1 - backbone) - std::log10(19.5 / 8.1)) < 1e-9);
    QCOMPARE(ratios->decades(), 2);  // log10(20) = 1.3 -> 0.01x .. 100x
  }

  void ratio_chart_stays_readable_at_100x() {
    // B 300x slower in the backbone and 1/50 of A's time in the correlation: the axis spans 0.001x .. 1000x and
    // both bars have lengths of the same order, where the stacked chart draws A's bar at 1/300 of B's.
    ui::PerformanceDock dock;
    const core::Profile fast =
        make_profile("NVIDIA H200", core::Precision::fp32, false,
                     {{core::Stage::backbone, 2.0, 1e12, 1e6}, {core::Stage::refine_correlation, 50.0, 1e9, 10e9, 16}});
    const core::Profile slow = make_profile(
        "Tesla T4", core::Precision::fp32, false,
        {{core::Stage::backbone, 600.0, 1e12, 1e6}, {core::Stage::refine_correlation, 1.0, 1e9, 10e9, 16}});
    dock.compare(dock.add_profile(fast, "test", "H200"), dock.add_profile(slow, "test", "T4"));
    ui::StageRatioChart* ratios = dock.comparison_view()->ratio_chart();
    QTableWidget* table = dock.comparison_view()->table();
    const int rows = table->rowCount();
    QBarSet* measured = ratio_set(ratios, "measured");
    QVERIFY(measured != nullptr);
    QVERIFY(std::abs(measured->at(rows - 1 - row_of(table, "backbone")) - std::log10(300.0)) < 1e-9);
    QVERIFY(std::abs(measured->at(rows - 1 - row_of(table, "refine_correlation")) - std::log10(1.0 / 50.0)) < 1e-9);
    QCOMPARE(ratios->decades(), 3);
    dock.resize(1500, 950);
    dock.show();
    QTest::qWait(50);
    QVERIFY(dock.grab().save(output_dir() + "/perf_dock_compare_300x.png"));
  }

  void trap_warning_for_bf16_on_a_turing_card() {
    ui::PerformanceDock dock;
    const core::Profile t4 =
        make_profile("Tesla T4", core::Precision::bf16, false, {{core::Stage::refine_transformer, 400.0, 1e12, 1e6}});
    const core::Profile a100 = make_profile("NVIDIA A100-SXM4-40GB", core::Precision::bf16, false,
                                            {{core::Stage::refine_transformer, 10.0, 1e12, 1e6}});
    dock.add_run(t4);
    QVERIFY2(dock.run_warnings_text().contains("emulated"), qPrintable(dock.run_warnings_text()));
    const int a = dock.add_profile(a100, "test");
    dock.compare(a, 0);
    const QString diagnosis = dock.comparison_view()->diagnosis_text();
    QVERIFY2(diagnosis.contains("precision emulation"), qPrintable(diagnosis));
    QVERIFY(diagnosis.contains("no bf16 tensor cores"));
  }

  void trap_warning_for_tf32_against_strict_fp32() {
    ui::PerformanceDock dock;
    dock.compare(dock.add_profile(a100_tf32(), "test"), dock.add_profile(t4_fp32(), "test"));
    QVERIFY2(dock.comparison_view()->diagnosis_text().contains("TF32 vs strict FP32"),
             qPrintable(dock.comparison_view()->diagnosis_text()));
    dock.add_run(a100_tf32());
    QVERIFY(dock.run_warnings_text().contains("not strict FP32"));
  }

  void device_and_precision_selectors_are_gated() {
    ui::PerformanceDock dock;
    const std::vector<core::DeviceInfo> devices = {{"cpu", "CPU (2 threads)", 2, 0, 0, 0},
                                                   {"cuda:0", "Tesla T4", 40, 15'000'000'000, 7, 5},
                                                   {"cuda:1", "NVIDIA A100-SXM4-40GB", 108, 40'000'000'000, 8, 0}};
    core::RuntimeInfo runtime;
    runtime.libtorch = "2.11.0";
    dock.set_devices(devices, runtime, "cuda:0");
    ui::DeviceSelector* selector = dock.device_selector();
    QCOMPARE(selector->device_combo()->count(), 3);
    QCOMPARE(selector->device_combo()->itemText(0), QStringLiteral("CPU (2 threads)"));  // the count once
    QVERIFY(selector->device_combo()->itemText(1).contains("40 SMs"));
    QVERIFY(selector->device_combo()->itemText(1).contains("compute capability 7.5"));
    auto* model = qobject_cast<QStandardItemModel*>(selector->precision_combo()->model());
    QVERIFY(!model->item(1)->isEnabled());  // tf32 on sm_75
    QVERIFY(model->item(2)->isEnabled());   // bf16 runs, but is a trap
    selector->set_current_precision(core::Precision::bf16);
    QVERIFY2(selector->warning_text().contains("emulated"), qPrintable(selector->warning_text()));

    QSignalSpy device_spy(selector, &ui::DeviceSelector::device_requested);
    QSignalSpy precision_spy(selector, &ui::DeviceSelector::precision_requested);
    selector->device_combo()->setCurrentIndex(2);
    Q_EMIT selector->device_combo()->activated(2);  // as a user's pick
    QCOMPARE(device_spy.count(), 1);
    QVERIFY(device_spy.at(0).at(0).value<core::DeviceId>() == core::DeviceId::cuda(1));
    QVERIFY(model->item(1)->isEnabled());
    QVERIFY(selector->warning_text().isEmpty());  // bf16 is native on 8.0
    selector->set_current_precision(core::Precision::tf32);
    selector->device_combo()->setCurrentIndex(1);
    Q_EMIT selector->device_combo()->activated(1);  // back to the T4: tf32 is not available there
    QCOMPARE(precision_spy.count(), 1);
    QVERIFY(precision_spy.at(0).at(0).value<core::Precision>() == core::Precision::fp32);
  }

  void what_if_of_the_h200_on_a_t4() {
    ui::PerformanceDock dock;
    QVERIFY(dock.open_profile_file(kFixture));
    QCOMPARE(dock.entries().size(), size_t{11});
    int official = -1;
    for (size_t i = 0; i < dock.entries().size(); ++i) {
      if (dock.entries()[i].run().name == "small-n1024-t47-c64-default") official = static_cast<int>(i);
    }
    QVERIFY(official >= 0);
    dock.compare(official, official);
    QVERIFY(dock.show_what_if("t4", core::Precision::bf16));
    QCOMPARE(dock.entries().size(), size_t{12});
    QCOMPARE(dock.comparison_view()->selected_b(), 11);
    QCOMPARE(dock.entries()[11].profile->origin, core::ProfileOrigin::predicted);
    QVERIFY(dock.comparison_view()->comparison()->highlighted_count() >= 3);
    QVERIFY(dock.comparison_view()->diagnosis_text().contains("precision emulation"));
    QCOMPARE(dock.show_what_if("b200").code(), core::StatusCode::not_found);
  }

  void what_if_button_sends_the_chosen_precision_as_a_type() {
    const std::vector<ui::ProfileEntry> entries;
    ui::ComparisonView view(entries);
    QSignalSpy spy(&view, &ui::ComparisonView::what_if_requested);
    QComboBox* precisions = view.what_if_precision_combo();
    QCOMPARE(precisions->count(), 1 + static_cast<int>(std::size(core::kAllPrecisions)));
    precisions->setCurrentIndex(precisions->findText("bf16"));
    view.what_if_button()->click();
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toString(), QStringLiteral("t4"));
    QVERIFY(spy.at(0).at(1).value<std::optional<core::Precision>>() == core::Precision::bf16);
    precisions->setCurrentIndex(0);  // "same precision": A's own
    view.what_if_button()->click();
    QCOMPARE(spy.count(), 2);
    QVERIFY(!spy.at(1).at(1).value<std::optional<core::Precision>>().has_value());
  }

  void open_profile_file_rejects_bad_files() {
    ui::PerformanceDock dock;
    QCOMPARE(dock.open_profile_file(output_dir() + "/does-not-exist.json").code(), core::StatusCode::not_found);
    const QString bad = output_dir() + "/perf_dock_bad.json";
    QFile file(bad);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("{\"schema\": \"trackscope.profile\", \"schema_version\": \"1.0\", \"device\": ");
    file.close();
    QCOMPARE(dock.open_profile_file(bad).code(), core::StatusCode::corrupt_data);
    QVERIFY(dock.entries().empty());
  }

  void export_writes_valid_files() {
    ui::PerformanceDock dock;
    dock.resize(1200, 800);
    const core::Profile t4 = t4_fp32();
    dock.add_run(t4);
    dock.compare(dock.add_profile(a100_tf32(), "test"), 0);
    const QString dir = output_dir() + "/perf_report";
    QDir(dir).removeRecursively();
    core::Expected<QStringList> written = dock.export_report(dir);
    QVERIFY2(written, written ? "" : written.status().message().c_str());
    for (const char* name :
         {"profile.json", "stages.csv", "roofline.csv", "comparison.csv", "comparison.txt", "comparison_a.json",
          "comparison_b.json", "stage_breakdown.png", "stage_history.png", "comparison.png", "telemetry.png"}) {
      QVERIFY2(written->contains(dir + "/" + name), name);
    }
    core::Expected<core::Profile> back = core::read_profile((dir + "/profile.json").toStdString());
    QVERIFY(back);
    QVERIFY(*back == t4);
    QFile csv(dir + "/roofline.csv");
    QVERIFY(csv.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = csv.readAll().split('\n');
    QVERIFY(lines[0].startsWith("stage,work,ms,"));
    QVERIFY(lines[1].startsWith("backbone,convolution,200,"));
    QFile comparison(dir + "/comparison.csv");
    QVERIFY(comparison.open(QIODevice::ReadOnly));
    QVERIFY(comparison.readAll().contains("TF32 on one side only"));
    const QImage png(dir + "/stage_breakdown.png");
    QVERIFY(!png.isNull());
    QVERIFY(png.width() > 100);
    QCOMPARE(dock.export_report("/proc/no-such-dir/x").status().code(), core::StatusCode::io_error);
  }

  void screenshot_of_two_profiles_side_by_side() {
    ui::PerformanceDock dock;
    dock.set_devices({{"cpu", "CPU (16 threads)", 16, 0, 0, 0}, {"cuda:0", "NVIDIA H200", 132, 150'000'000'000, 9, 0}},
                     core::RuntimeInfo{}, "cuda:0");
    QVERIFY(dock.open_profile_file(kFixture));
    int official = -1;
    for (size_t i = 0; i < dock.entries().size(); ++i) {
      if (dock.entries()[i].run().name == "small-n1024-t47-c64-default") official = static_cast<int>(i);
    }
    dock.add_run(*dock.entries()[static_cast<size_t>(official)].profile, official,
                 "H200 (docs/locotrack-spec.md §5.2)");
    dock.compare(official, official);
    QVERIFY(dock.show_what_if("t4", core::Precision::bf16));
    dock.resize(1500, 950);
    dock.show();
    QTest::qWait(50);
    const QImage compare = dock.grab().toImage();
    QVERIFY(!compare.isNull());
    QVERIFY(compare.save(output_dir() + "/perf_dock.png"));
    dock.tabs()->setCurrentIndex(0);
    QTest::qWait(20);
    QVERIFY(dock.grab().save(output_dir() + "/perf_dock_stages.png"));
    dock.tabs()->setCurrentIndex(1);
    QTest::qWait(20);
    QVERIFY(dock.grab().save(output_dir() + "/perf_dock_roofline.png"));
    // Telemetry tab with a synthetic minute (labelled as such): a power-capped card dropping its clock.
    core::TelemetrySnapshot synthetic;
    synthetic.available = true;
    synthetic.status = "synthetic telemetry (test data, not a measurement)";
    for (int i = 0; i <= 600; ++i) {
      core::TelemetrySample t;
      t.time_s = 0.1 * i;
      const bool capped = i > 300;
      t.sm_clock_mhz = capped ? 1395.0 + 40.0 * std::sin(i * 0.2) : 1980.0;
      t.sm_clock_max_mhz = 1980.0;
      t.memory_clock_mhz = 2619.0;
      t.power_w = capped ? 698.0 : 520.0 + 0.5 * i;
      t.power_limit_w = 700.0;
      t.temperature_c = 55.0 + 0.03 * i;
      t.gpu_utilisation_percent = 99.0;
      t.memory_utilisation_percent = 41.0;
      t.memory_used_bytes = 2'600'000'000;
      t.memory_total_bytes = 150'000'000'000;
      t.throttle_reasons = capped ? core::throttle_reason::sw_power_cap : 0;
      t.throttle_reason_names = core::decode_throttle_reasons(*t.throttle_reasons);
      t.pcie_generation = 5;
      t.pcie_width = 16;
      synthetic.samples.push_back(t);
    }
    dock.set_telemetry_provider([synthetic] { return synthetic; });
    dock.poll_providers();
    dock.tabs()->setCurrentIndex(3);
    QTest::qWait(20);
    QVERIFY(dock.grab().save(output_dir() + "/perf_dock_telemetry.png"));
  }
};

QTEST_MAIN(PerformanceDockTest)
#include "perf_dock_test.moc"
