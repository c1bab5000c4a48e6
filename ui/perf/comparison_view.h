#pragma once
// Side-by-side comparison of two profiled runs (live runs, bench JSON files opened from disk, or what-if
// predictions): the two stacked bars next to each other, per-stage B/A ratio bars on a log axis, a per-stage table with
// the measured ratio, the ratio predicted from the two devices' specifications and the precision-aware one, highlighted
// rows where the measured ratio is more than 2x off, the likely causes, and the trap warnings. A what-if selector asks
// for the prediction of A on another GPU of the table. GUI thread only.

#include <QWidget>

#include <optional>
#include <vector>

#include "core/perf/diagnosis.h"
#include "core/tracking/device.h"
#include "ui/perf/profile_entry.h"

class QComboBox;
class QLabel;
class QPushButton;
class QTableWidget;
class QTextBrowser;

namespace trackscope::ui {

class StageBreakdownChart;
class StageRatioChart;

class ComparisonView : public QWidget {
  Q_OBJECT
 public:
  enum Column { kStage, kAms, kBms, kMeasured, kPredicted, kPrecisionAware, kExcess, kCauses, kColumnCount };

  /// `entries` is owned by the caller (the dock) and outlives the view.
  explicit ComparisonView(const std::vector<ProfileEntry>& entries, QWidget* parent = nullptr);

  /// Re-reads the entries (after the caller added some), keeping the selection.
  void entries_changed();
  /// Selects the entries compared (indices into the entries; -1 = none) and recomputes.
  void select(int a, int b);
  int selected_a() const;
  int selected_b() const;

  const std::optional<core::Comparison>& comparison() const { return comparison_; }
  QTableWidget* table() const { return table_; }
  StageBreakdownChart* side_by_side_chart() const { return chart_; }
  /// Per-stage B/A, measured and predicted, on a log axis (the stacked bars hide the faster run at 100x).
  StageRatioChart* ratio_chart() const { return ratio_chart_; }
  QString diagnosis_text() const;
  QComboBox* what_if_precision_combo() const { return what_if_precision_; }
  QPushButton* what_if_button() const { return what_if_run_; }

 Q_SIGNALS:
  /// The user wants to open a profile JSON file (the dock shows the dialog and adds the file's cases).
  void open_file_requested();
  /// The user asked for a what-if of side A on `gpu_key` ("t4"), at `precision` (nullopt = A's own).
  void what_if_requested(const QString& gpu_key, std::optional<core::Precision> precision);

 private:
  void recompute();
  void fill_table(const core::Comparison& comparison);
  void fill_diagnosis(const core::Comparison& comparison);

  const std::vector<ProfileEntry>& entries_;
  QComboBox* a_ = nullptr;
  QComboBox* b_ = nullptr;
  QPushButton* open_ = nullptr;
  QComboBox* what_if_gpu_ = nullptr;
  QComboBox* what_if_precision_ = nullptr;
  QPushButton* what_if_run_ = nullptr;
  StageBreakdownChart* chart_ = nullptr;
  StageRatioChart* ratio_chart_ = nullptr;
  QTableWidget* table_ = nullptr;
  QLabel* summary_ = nullptr;
  QTextBrowser* diagnosis_ = nullptr;
  std::optional<core::Comparison> comparison_;
};

}  // namespace trackscope::ui
