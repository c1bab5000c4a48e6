#pragma once
// Live telemetry of the active device: current values (SM and memory clocks, power against its limit,
// temperature, utilisation, memory used, clock-throttle reasons, PCIe link; CPU threads and utilisation) and a
// small chart of the last minute. It is fed snapshots (the dock's 10 Hz timer pulls them from a
// core::TelemetrySampler); it never receives per-sample signals. GUI thread only.

#include <QWidget>

#include "core/perf/telemetry.h"

class QChartView;
class QLabel;
class QLineSeries;
class QValueAxis;

namespace trackscope::ui {

class TelemetryPanel : public QWidget {
  Q_OBJECT
 public:
  explicit TelemetryPanel(QWidget* parent = nullptr);

  void show_snapshot(const core::TelemetrySnapshot& snapshot);

  QString status_text() const;
  /// The value label of a row: "sm_clock", "memory_clock", "power", "temperature", "utilisation", "memory",
  /// "throttle", "pcie", "cpu".
  QLabel* value_label(const QString& key) const;
  QLineSeries* sm_clock_series() const { return sm_clock_; }
  QLineSeries* power_series() const { return power_; }
  QLineSeries* cpu_series() const { return cpu_utilisation_; }
  QChartView* chart_view() const { return view_; }

 private:
  QLabel* status_ = nullptr;
  std::vector<std::pair<QString, QLabel*>> values_;
  QChartView* view_ = nullptr;
  QLineSeries* sm_clock_ = nullptr;
  QLineSeries* power_ = nullptr;
  QLineSeries* gpu_utilisation_ = nullptr;
  QLineSeries* cpu_utilisation_ = nullptr;
  QValueAxis* clock_axis_ = nullptr;
};

}  // namespace trackscope::ui
