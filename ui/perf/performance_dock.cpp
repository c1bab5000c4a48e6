#include "ui/perf/performance_dock.h"

#include <QChartView>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>

#include "core/perf/roofline.h"
#include "ui/perf/comparison_view.h"
#include "ui/perf/device_selector.h"
#include "ui/perf/report_export.h"
#include "ui/perf/roofline_table.h"
#include "ui/perf/stage_charts.h"
#include "ui/perf/telemetry_panel.h"

namespace trackscope::ui {

namespace {
constexpr int kPollIntervalMs = 100;  // 10 Hz
}

PerformanceDock::PerformanceDock(QWidget* parent) : QDockWidget(tr("Performance"), parent) {
  setObjectName("PerformanceDock");
  auto* body = new QWidget(this);
  auto* layout = new QVBoxLayout(body);
  auto* top = new QHBoxLayout();
  devices_ = new DeviceSelector(body);
  export_ = new QPushButton(tr("Export report…"), body);
  top->addWidget(devices_, 1);
  top->addWidget(export_, 0, Qt::AlignTop);
  layout->addLayout(top);

  tabs_ = new QTabWidget(body);
  auto* stages = new QSplitter(Qt::Vertical, tabs_);
  stage_chart_ = new StageBreakdownChart(stages);
  history_chart_ = new StageHistoryChart(stages);
  timeline_chart_ = new StageTimelineChart(stages);
  tabs_->addTab(stages, tr("Stages"));
  auto* roofline_page = new QWidget(tabs_);
  auto* roofline_layout = new QVBoxLayout(roofline_page);
  run_warnings_ = new QLabel(roofline_page);
  run_warnings_->setWordWrap(true);
  run_warnings_->setStyleSheet("color: #b71c1c;");
  roofline_ = new RooflineTable(roofline_page);
  roofline_layout->addWidget(run_warnings_);
  roofline_layout->addWidget(roofline_, 1);
  tabs_->addTab(roofline_page, tr("Roofline"));
  comparison_ = new ComparisonView(entries_, tabs_);
  tabs_->addTab(comparison_, tr("Compare"));
  telemetry_ = new TelemetryPanel(tabs_);
  tabs_->addTab(telemetry_, tr("Telemetry"));
  layout->addWidget(tabs_, 1);
  setWidget(body);

  connect(export_, &QPushButton::clicked, this, &PerformanceDock::export_with_dialog);
  connect(comparison_, &ComparisonView::open_file_requested, this, &PerformanceDock::open_with_dialog);
  connect(comparison_, &ComparisonView::what_if_requested, this,
          [this](const QString& gpu, std::optional<core::Precision> precision) {
            if (core::Status s = show_what_if(gpu, precision); !s)
              QMessageBox::warning(this, tr("What-if"), QString::fromStdString(s.message()));
          });
  timer_ = new QTimer(this);
  timer_->setInterval(kPollIntervalMs);
  // A hidden dock draws nothing: the timer skips it (the snapshots stay in their owners and are pulled once the
  // dock is shown again).
  connect(timer_, &QTimer::timeout, this, [this] {
    if (isVisible()) poll_providers();
  });
  run_warnings_->hide();
}

PerformanceDock::~PerformanceDock() {
  timer_->stop();
  // The comparison view reads entries_: destroy the widgets before the members they refer to.
  delete widget();
}

void PerformanceDock::set_devices(const std::vector<core::DeviceInfo>& devices, const core::RuntimeInfo& runtime,
                                  const std::string& current_id) {
  devices_->set_devices(devices, runtime, current_id);
}
void PerformanceDock::set_current_device(const std::string& id) { devices_->set_current_device(id); }
void PerformanceDock::set_current_precision(core::Precision precision) { devices_->set_current_precision(precision); }

void PerformanceDock::set_telemetry_provider(TelemetryProvider provider) {
  telemetry_provider_ = std::move(provider);
  if (telemetry_provider_ || live_provider_) timer_->start();
}

void PerformanceDock::set_live_run_provider(LiveRunProvider provider) {
  live_provider_ = std::move(provider);
  if (telemetry_provider_ || live_provider_) timer_->start();
}

QString PerformanceDock::describe(const core::Profile& profile, const core::ProfileCase& run) const {
  QString text = QString("%1 %2").arg(QString::fromStdString(profile.device.name), QString::fromStdString(run.name));
  if (profile.origin != core::ProfileOrigin::measured) text += QString(" (%1)").arg(core::to_string(profile.origin));
  return text;
}

int PerformanceDock::add_run(const core::Profile& profile, int case_index, const QString& label) {
  if (case_index < 0 || case_index >= static_cast<int>(profile.cases.size())) return -1;
  auto shared = std::make_shared<const core::Profile>(profile);
  ++run_count_;
  ProfileEntry entry{
      label.isEmpty()
          ? tr("run %1: %2").arg(run_count_).arg(describe(profile, profile.cases[static_cast<size_t>(case_index)]))
          : label,
      "live", shared, case_index};
  entries_.push_back(std::move(entry));
  current_entry_ = static_cast<int>(entries_.size()) - 1;
  history_chart_->append_run(entries_.back().run());
  comparison_->entries_changed();
  if (!live_running_) show_current_run();
  return current_entry_;
}

int PerformanceDock::add_profile(const core::Profile& profile, const QString& source, const QString& label_prefix) {
  auto shared = std::make_shared<const core::Profile>(profile);
  const int first = static_cast<int>(entries_.size());
  for (size_t i = 0; i < profile.cases.size(); ++i) {
    const QString prefix = label_prefix.isEmpty() ? QString() : label_prefix + ": ";
    entries_.push_back({prefix + describe(profile, profile.cases[i]), source, shared, static_cast<int>(i)});
  }
  comparison_->entries_changed();
  return first;
}

core::Status PerformanceDock::open_profile_file(const QString& path) {
  core::Expected<core::Profile> profile = core::read_profile(path.toStdString());
  if (!profile) return profile.status();
  if (profile->cases.empty()) return core::invalid_argument(path.toStdString() + " holds no cases");
  add_profile(*profile, path, QFileInfo(path).fileName());
  return {};
}

void PerformanceDock::compare(int a, int b) {
  comparison_->select(a, b);
  tabs_->setCurrentWidget(comparison_);
}

core::Status PerformanceDock::show_what_if(const QString& gpu_key, std::optional<core::Precision> precision) {
  const int a = comparison_->selected_a();
  if (a < 0 || a >= static_cast<int>(entries_.size()))
    return core::invalid_argument("choose a profile A to predict first");
  core::Expected<const core::GpuSpec*> spec = core::lookup_gpu_spec(gpu_key.toStdString());
  if (!spec) return spec.status();
  core::WhatIfOptions options;
  options.precision = precision;
  const ProfileEntry source = entries_[static_cast<size_t>(a)];
  core::Expected<core::Profile> predicted =
      core::predict_profile(*source.profile, static_cast<size_t>(source.case_index), **spec, options);
  if (!predicted) return predicted.status();
  const int b = add_profile(*predicted, "what-if", tr("what-if"));
  compare(a, b);
  return {};
}

core::Expected<QStringList> PerformanceDock::export_report(const QString& directory) {
  ReportContent content;
  if (current_entry_ >= 0) {
    const ProfileEntry& current = entries_[static_cast<size_t>(current_entry_)];
    content.current = current.profile.get();
    content.roofline = core::compute_roofline(*current.profile, current.run());
  }
  if (comparison_->comparison()) {
    content.comparison = &*comparison_->comparison();
    content.compared_a = entries_[static_cast<size_t>(comparison_->selected_a())].profile.get();
    content.compared_b = entries_[static_cast<size_t>(comparison_->selected_b())].profile.get();
  }
  content.charts = {{"stage_breakdown", stage_chart_},
                    {"stage_history", history_chart_},
                    {"comparison", comparison_->side_by_side_chart()},
                    {"telemetry", telemetry_->chart_view()}};
  return ui::export_report(directory, content);
}

QString PerformanceDock::run_warnings_text() const { return run_warnings_->text(); }

void PerformanceDock::show_current_run() {
  if (current_entry_ < 0) return;
  const ProfileEntry& entry = entries_[static_cast<size_t>(current_entry_)];
  stage_chart_->show_runs({&entry.run()}, {entry.label});
  roofline_->show_roofline(core::compute_roofline(*entry.profile, entry.run()));
  QStringList traps;
  for (const std::string& trap : core::run_traps(*entry.profile, entry.run())) traps << QString::fromStdString(trap);
  run_warnings_->setText(traps.join("\n"));
  run_warnings_->setVisible(!traps.isEmpty());
}

void PerformanceDock::poll_providers() {
  if (telemetry_provider_) telemetry_->show_snapshot(telemetry_provider_());
  if (!live_provider_) return;
  LiveRunSnapshot live = live_provider_();
  if (live.run != timeline_run_ || live.samples.size() != timeline_samples_) {
    timeline_chart_->show_samples(live.samples);
    timeline_run_ = live.run;
    timeline_samples_ = live.samples.size();
  }
  if (live.running) {
    if (!live_running_ || live.samples.size() != live_samples_shown_) stage_chart_->show_live_samples(live.samples);
    live_samples_shown_ = live.samples.size();
  } else if (live_running_) {
    live_samples_shown_ = 0;
    live_running_ = false;
    show_current_run();
  }
  live_running_ = live.running;
}

void PerformanceDock::open_with_dialog() {
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Open a profile"), QString(), tr("Trackscope profiles (*.json)"));
  if (path.isEmpty()) return;
  if (core::Status s = open_profile_file(path); !s)
    QMessageBox::warning(this, tr("Open profile"), QString::fromStdString(s.message()));
}

void PerformanceDock::export_with_dialog() {
  const QString directory = QFileDialog::getExistingDirectory(this, tr("Export the performance report into"));
  if (directory.isEmpty()) return;
  core::Expected<QStringList> written = export_report(directory);
  if (!written) QMessageBox::warning(this, tr("Export report"), QString::fromStdString(written.status().message()));
}

}  // namespace trackscope::ui
