#include "ui/perf/roofline_table.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

namespace trackscope::ui {

QColor highlight_color() { return QColor(0xff, 0xcd, 0xd2); }

RooflineTable::RooflineTable(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  header_ = new QLabel(tr("no run yet"), this);
  header_->setWordWrap(true);
  layout->addWidget(header_);
  table_ = new QTableWidget(0, kColumnCount, this);
  table_->setHorizontalHeaderLabels({tr("stage"), tr("ms"), tr("GFLOP"), tr("GB"), tr("precision"), tr("TFLOP/s"),
                                     tr("GB/s"), tr("% peak FLOP"), tr("% peak BW"), tr("floor ms"), tr("bound"),
                                     tr("x floor"), tr("flagged")});
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  layout->addWidget(table_, 1);
}

QString RooflineTable::header_text() const { return header_->text(); }

void RooflineTable::clear() {
  table_->setRowCount(0);
  header_->setText(tr("no run yet"));
}

void RooflineTable::show_roofline(const core::Roofline& r) {
  const core::DevicePeaks& p = r.peaks;
  header_->setText(p.known()
                       ? tr("%1: fp32 %2, tf32 %3, bf16 %4, fp16 %5 TFLOP/s, %6 GB/s (%7). Floor sum %8 ms of %9 ms.")
                             .arg(QString::fromStdString(r.device_name))
                             .arg(p.fp32_tflops, 0, 'f', 1)
                             .arg(p.effective_tflops(core::Precision::tf32), 0, 'f', 1)
                             .arg(p.effective_tflops(core::Precision::bf16), 0, 'f', 1)
                             .arg(p.effective_tflops(core::Precision::fp16), 0, 'f', 1)
                             .arg(p.bandwidth_gbps, 0, 'f', 0)
                             .arg(QString::fromStdString(p.source))
                             .arg(r.total_floor_ms, 0, 'f', 2)
                             .arg(r.total_ms, 0, 'f', 2)
                       : tr("%1: no specification or measured peaks: achieved rates only")
                             .arg(QString::fromStdString(r.device_name)));
  table_->setRowCount(static_cast<int>(r.stages.size()));
  for (int row = 0; row < static_cast<int>(r.stages.size()); ++row) {
    const core::StageRoofline& s = r.stages[static_cast<size_t>(row)];
    const bool floor = s.floor.has_value();
    const QString dash = "-";
    const QString texts[kColumnCount] = {QString::fromStdString(s.stage),
                                         QString::number(s.ms, 'f', 2),
                                         QString::number(s.flops / 1e9, 'f', 1),
                                         QString::number(s.bytes / 1e9, 'f', 2),
                                         QString(core::to_string(s.precision)),
                                         QString::number(s.achieved_tflops, 'f', 2),
                                         QString::number(s.achieved_gbps, 'f', 0),
                                         floor ? QString::number(s.compute_share * 100, 'f', 1) : dash,
                                         floor ? QString::number(s.bandwidth_share * 100, 'f', 1) : dash,
                                         floor ? QString::number(s.floor->ms(), 'f', 2) : dash,
                                         floor ? QString(core::to_string(s.floor->bound())) : dash,
                                         floor ? QString::number(s.above_floor, 'f', 1) : dash,
                                         s.flagged ? tr("far above floor") : QString()};
    for (int column = 0; column < kColumnCount; ++column) {
      auto* item = new QTableWidgetItem(texts[column]);
      if (column != kStage && column != kPrecision && column != kBound && column != kFlagged)
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      if (s.flagged) item->setBackground(highlight_color());
      table_->setItem(row, column, item);
    }
  }
}

}  // namespace trackscope::ui
