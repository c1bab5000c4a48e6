#pragma once
// The roofline panel: per stage the measured time, GFLOP, GB, achieved TFLOP/s and GB/s, their share of the
// device's peak at the precision the stage ran, the floor and whether the stage is far above it (flagged rows
// are highlighted). GUI thread only.

#include <QWidget>

#include "core/perf/roofline.h"

class QLabel;
class QTableWidget;

namespace trackscope::ui {

class RooflineTable : public QWidget {
  Q_OBJECT
 public:
  enum Column {
    kStage,
    kMs,
    kGflop,
    kGb,
    kPrecision,
    kTflops,
    kGbps,
    kComputeShare,
    kBandwidthShare,
    kFloor,
    kBound,
    kAboveFloor,
    kFlagged,
    kColumnCount
  };

  explicit RooflineTable(QWidget* parent = nullptr);
  void show_roofline(const core::Roofline& roofline);
  void clear();

  QTableWidget* table() const { return table_; }
  QString header_text() const;

 private:
  QLabel* header_ = nullptr;
  QTableWidget* table_ = nullptr;
};

/// The highlight colour of flagged / unexpectedly slow rows (shared with the comparison table).
QColor highlight_color();

}  // namespace trackscope::ui
