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
//   dock->set_devices(factory->devices(), factory->runtime(), "cuda:0");
//   dock->set_telemetry_provider([sampler] { return sampler->snapshot(); });   // pulled by one 10 Hz QTimer
//   dock->set_live_run_provider([job] { return job->stage_snapshot(); });       // also pulled, never pushed
//   dock->add_run(profile_of_finished_run);                                  // on the GUI thread (queued)
//   connect(dock->device_selector(), &DeviceSelector::device_requested, owner, &Owner::switchDevice);
// Threads: GUI thread only. Providers are called on the GUI thread by the timer: they must return a copy of
// a mutex-protected snapshot quickly and never block on the tracker.

#include <QDockWidget>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/perf/diagnosis.h"
#include "core/perf/telemetry.h"
#include "core/tracking/device.h"
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
class StageTimelineChart;
class TelemetryPanel;

class PerformanceDock : public QDockWidget {
  Q_OBJECT
 public:
  using TelemetryProvider = std::function<core::TelemetrySnapshot()>;
  using LiveRunProvider = std::function<LiveRunSnapshot()>;

  explicit PerformanceDock(QWidget* parent = nullptr);
  ~PerformanceDock() override;

  void set_devices(const std::vector<core::DeviceInfo>& devices, const core::RuntimeInfo& runtime,
                   const std::string& current_id);
  void set_current_device(const std::string& id);
  void set_current_precision(core::Precision precision);
  void set_telemetry_provider(TelemetryProvider provider);
  void set_live_run_provider(LiveRunProvider provider);

  /// A finished run: becomes the current run (stage chart, roofline), joins the history and the comparable
  /// profiles. Returns its entry index.
  int add_run(const core::Profile& profile, int case_index = 0, const QString& label = {});
  /// Every case of a profile becomes comparable (not part of the history). Returns the first entry's index.
  int add_profile(const core::Profile& profile, const QString& source, const QString& label_prefix = {});
  /// Reads a bench JSON file and adds its cases; the error says what is wrong with the file.
  core::Status open_profile_file(const QString& path);
  /// Compares two entries (indices as returned above).
  void compare(int a, int b);
  /// Predicts the compared A on a GPU of the table ("t4"), at `precision` (nullopt = A's); the prediction becomes
  /// an entry and is compared as B.
  core::Status show_what_if(const QString& gpu_key, std::optional<core::Precision> precision = std::nullopt);
  /// Writes the report (see report_export.h) into `directory`.
  core::Expected<QStringList> export_report(const QString& directory);

  /// Pulls the providers once (the 10 Hz timer calls this).
  void poll_providers();

  const std::vector<ProfileEntry>& entries() const { return entries_; }
  int current_entry() const { return current_entry_; }
  QTabWidget* tabs() const { return tabs_; }
  StageBreakdownChart* stage_chart() const { return stage_chart_; }
  StageHistoryChart* history_chart() const { return history_chart_; }
  StageTimelineChart* timeline_chart() const { return timeline_chart_; }
  RooflineTable* roofline_table() const { return roofline_; }
  ComparisonView* comparison_view() const { return comparison_; }
  TelemetryPanel* telemetry_panel() const { return telemetry_; }
  /// The device and precision requests come from here (DeviceSelector::device_requested / precision_requested).
  DeviceSelector* device_selector() const { return devices_; }
  QString run_warnings_text() const;

 private:
  void show_current_run();
  void export_with_dialog();
  void open_with_dialog();
  QString describe(const core::Profile& profile, const core::ProfileCase& run) const;

  std::vector<ProfileEntry> entries_;
  int current_entry_ = -1;
  int run_count_ = 0;
  TelemetryProvider telemetry_provider_;
  LiveRunProvider live_provider_;
  size_t live_samples_shown_ = 0;
  bool live_running_ = false;
  // The timeline's samples: of which run, how many (redrawn when either changes, so a job that starts and ends
  // between two polls still gets its timeline once it is over).
  uint64_t timeline_run_ = 0;
  size_t timeline_samples_ = 0;

  DeviceSelector* devices_ = nullptr;
  QPushButton* export_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  StageBreakdownChart* stage_chart_ = nullptr;
  StageHistoryChart* history_chart_ = nullptr;
  StageTimelineChart* timeline_chart_ = nullptr;  // the live run's (or the last run's) decode-vs-compute timeline
  QLabel* run_warnings_ = nullptr;
  RooflineTable* roofline_ = nullptr;
  ComparisonView* comparison_ = nullptr;
  TelemetryPanel* telemetry_ = nullptr;
  QTimer* timer_ = nullptr;
};

}  // namespace trackscope::ui
