#pragma once
// The performance dock: where the GPU time of the tracker goes, live and across devices.
//  * Stages: a stacked bar of per-stage time of the current run (per query chunk while a run is in progress)
//    and a time series of the stage times across runs;
//  * Roofline: per stage FLOPs, bytes, achieved rates, share of the device's peak, floor, flagged stages;
//  * Compare: two profiles side by side (live runs or bench JSON files) with measured vs predicted ratios, the
//    diagnosis and a what-if on another GPU of the specification table;
//  * Telemetry: live NVML (or CPU) values and a chart of the last minute;
//  * above the tabs: the device and precision selectors (gated, with trap warnings) and "Export report…".
//
// Data comes in through plain setters and providers (the live wiring to the tracker is done by its owner):
//   dock->setDevices(factory->devices(), factory->runtime(), "cuda:0");
//   dock->setTelemetryProvider([sampler] { return sampler->snapshot(); });   // pulled by one 10 Hz QTimer
//   dock->setLiveRunProvider([job] { return job->stage_snapshot(); });       // also pulled, never pushed
//   dock->addRun(profile_of_finished_run);                                  // on the GUI thread (queued)
//   connect(dock->deviceSelector(), &DeviceSelector::deviceRequested, owner, &Owner::switchDevice);
// Threads: GUI thread only. Providers are called on the GUI thread by the timer: they must return a copy of
// a mutex-protected snapshot quickly and never block on the tracker.

#include <QDockWidget>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/perf/diagnosis.h"
#include "core/perf/telemetry.h"
#include "ui/perf/live_run.h"
#include "ui/perf/profile_entry.h"

class QLabel;
class QPushButton;
class QTabWidget;
class QTimer;

namespace trackscope::ui {

class ComparisonView;
class DeviceSelector;
class RooflineTable;
class StageBreakdownChart;
class StageHistoryChart;
class TelemetryPanel;

class PerformanceDock : public QDockWidget {
  Q_OBJECT
 public:
  using TelemetryProvider = std::function<core::TelemetrySnapshot()>;
  using LiveRunProvider = std::function<LiveRunSnapshot()>;

  explicit PerformanceDock(QWidget* parent = nullptr);
  ~PerformanceDock() override;

  void setDevices(const std::vector<core::DeviceInfo>& devices, const core::RuntimeInfo& runtime,
                  const std::string& current_id);
  void setCurrentDevice(const std::string& id);
  void setCurrentPrecision(core::Precision precision);
  void setTelemetryProvider(TelemetryProvider provider);
  void setLiveRunProvider(LiveRunProvider provider);

  /// A finished run: becomes the current run (stage chart, roofline), joins the history and the comparable
  /// profiles. Returns its entry index.
  int addRun(const core::Profile& profile, int case_index = 0, const QString& label = {});
  /// Every case of a profile becomes comparable (not part of the history). Returns the first entry's index.
  int addProfile(const core::Profile& profile, const QString& source, const QString& label_prefix = {});
  /// Reads a bench JSON file and adds its cases; the error says what is wrong with the file.
  core::Status openProfileFile(const QString& path);
  /// Compares two entries (indices as returned above).
  void compare(int a, int b);
  /// Predicts the compared A on a GPU of the table ("t4"), at `precision` ("" = A's); the prediction becomes
  /// an entry and is compared as B.
  core::Status showWhatIf(const QString& gpu_key, const QString& precision = {});
  /// Writes the report (see report_export.h) into `directory`.
  core::Expected<QStringList> exportReport(const QString& directory);

  /// Pulls the providers once (the 10 Hz timer calls this).
  void pollProviders();

  const std::vector<ProfileEntry>& entries() const { return entries_; }
  int currentEntry() const { return current_entry_; }
  QTabWidget* tabs() const { return tabs_; }
  StageBreakdownChart* stageChart() const { return stage_chart_; }
  StageHistoryChart* historyChart() const { return history_chart_; }
  RooflineTable* rooflineTable() const { return roofline_; }
  ComparisonView* comparisonView() const { return comparison_; }
  TelemetryPanel* telemetryPanel() const { return telemetry_; }
  /// The device and precision requests come from here (DeviceSelector::deviceRequested / precisionRequested).
  DeviceSelector* deviceSelector() const { return devices_; }
  QString runWarningsText() const;

 private:
  void showCurrentRun();
  void exportWithDialog();
  void openWithDialog();
  QString describe(const core::Profile& profile, const core::ProfileCase& run) const;

  std::vector<ProfileEntry> entries_;
  int current_entry_ = -1;
  int run_count_ = 0;
  TelemetryProvider telemetry_provider_;
  LiveRunProvider live_provider_;
  size_t live_samples_shown_ = 0;
  bool live_running_ = false;

  DeviceSelector* devices_ = nullptr;
  QPushButton* export_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  StageBreakdownChart* stage_chart_ = nullptr;
  StageHistoryChart* history_chart_ = nullptr;
  QLabel* run_warnings_ = nullptr;
  RooflineTable* roofline_ = nullptr;
  ComparisonView* comparison_ = nullptr;
  TelemetryPanel* telemetry_ = nullptr;
  QTimer* timer_ = nullptr;
};

}  // namespace trackscope::ui
