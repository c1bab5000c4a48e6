#include "ui/perf/comparison_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <algorithm>

#include "core/perf/gpu_specs.h"
#include "ui/perf/roofline_table.h"
#include "ui/perf/stage_charts.h"

namespace trackscope::ui {

namespace {

QString ratio_text(const std::optional<double>& value, const char* suffix = "x") {
  return value ? QString::number(*value, 'f', 2) + suffix : QString("-");
}

QString ms_text(const std::optional<double>& value) { return value ? QString::number(*value, 'f', 2) : QString("-"); }

}  // namespace

ComparisonView::ComparisonView(const std::vector<ProfileEntry>& entries, QWidget* parent)
    : QWidget(parent), entries_(entries) {
  auto* layout = new QVBoxLayout(this);
  auto* pick = new QHBoxLayout();
  a_ = new QComboBox(this);
  b_ = new QComboBox(this);
  a_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  b_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  a_->setMinimumContentsLength(24);
  b_->setMinimumContentsLength(24);
  open_ = new QPushButton(tr("Open profile…"), this);
  pick->addWidget(new QLabel(tr("A:"), this));
  pick->addWidget(a_, 1);
  pick->addWidget(new QLabel(tr("B:"), this));
  pick->addWidget(b_, 1);
  pick->addWidget(open_);
  layout->addLayout(pick);

  auto* what_if = new QHBoxLayout();
  what_if_gpu_ = new QComboBox(this);
  for (const core::GpuSpec& spec : core::gpu_spec_table()) {
    what_if_gpu_->addItem(QString::fromStdString(spec.display_name), QString::fromStdString(spec.key));
  }
  what_if_gpu_->setCurrentIndex(std::max(0, what_if_gpu_->findData(QString("t4"))));
  what_if_precision_ = new QComboBox(this);
  what_if_precision_->addItem(tr("same precision"));  // no data: A's own precision
  for (core::Precision p : core::kAllPrecisions) what_if_precision_->addItem(core::to_string(p), static_cast<int>(p));
  what_if_run_ = new QPushButton(tr("Predict A there"), this);
  what_if->addWidget(new QLabel(tr("What-if on:"), this));
  what_if->addWidget(what_if_gpu_, 1);
  what_if->addWidget(what_if_precision_);
  what_if->addWidget(what_if_run_);
  layout->addLayout(what_if);

  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  layout->addWidget(summary_);
  auto* splitter = new QSplitter(Qt::Vertical, this);
  auto* top = new QSplitter(Qt::Horizontal, splitter);
  chart_ = new StageBreakdownChart(top);
  chart_->set_legend_alignment(Qt::AlignBottom);
  ratio_chart_ = new StageRatioChart(top);
  table_ = new QTableWidget(0, kColumnCount, top);
  table_->setHorizontalHeaderLabels({tr("stage"), tr("A ms"), tr("B ms"), tr("B/A measured"), tr("B/A predicted"),
                                     tr("precision-aware"), tr("excess"), tr("likely causes")});
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  top->setSizes({380, 560, 740});
  diagnosis_ = new QTextBrowser(splitter);
  diagnosis_->setOpenLinks(false);
  layout->addWidget(splitter, 1);

  connect(a_, &QComboBox::currentIndexChanged, this, [this] { recompute(); });
  connect(b_, &QComboBox::currentIndexChanged, this, [this] { recompute(); });
  connect(open_, &QPushButton::clicked, this, &ComparisonView::open_file_requested);
  connect(what_if_run_, &QPushButton::clicked, this, [this] {
    const QVariant precision = what_if_precision_->currentData();
    Q_EMIT what_if_requested(
        what_if_gpu_->currentData().toString(),
        precision.isValid() ? std::optional(static_cast<core::Precision>(precision.toInt())) : std::nullopt);
  });
  entries_changed();
}

void ComparisonView::entries_changed() {
  const int a = selected_a(), b = selected_b();
  QSignalBlocker block_a(a_), block_b(b_);
  a_->clear();
  b_->clear();
  for (const ProfileEntry& entry : entries_) {
    a_->addItem(entry.label);
    b_->addItem(entry.label);
  }
  const int count = static_cast<int>(entries_.size());
  a_->setCurrentIndex(a >= 0 && a < count ? a : (count > 0 ? 0 : -1));
  b_->setCurrentIndex(b >= 0 && b < count ? b : (count > 1 ? 1 : (count > 0 ? 0 : -1)));
  recompute();
}

void ComparisonView::select(int a, int b) {
  {
    QSignalBlocker block_a(a_), block_b(b_);
    a_->setCurrentIndex(a);
    b_->setCurrentIndex(b);
  }
  recompute();
}

int ComparisonView::selected_a() const { return a_->currentIndex(); }
int ComparisonView::selected_b() const { return b_->currentIndex(); }
QString ComparisonView::diagnosis_text() const { return diagnosis_->toPlainText(); }

void ComparisonView::recompute() {
  comparison_.reset();
  const int a = selected_a(), b = selected_b();
  const int count = static_cast<int>(entries_.size());
  if (a < 0 || b < 0 || a >= count || b >= count) {
    table_->setRowCount(0);
    chart_->show_runs({}, {});
    ratio_chart_->show_ratios({}, {});
    summary_->setText(tr("Open or run two profiles to compare them."));
    diagnosis_->clear();
    return;
  }
  const ProfileEntry& ea = entries_[static_cast<size_t>(a)];
  const ProfileEntry& eb = entries_[static_cast<size_t>(b)];
  chart_->show_runs({&ea.run(), &eb.run()}, {tr("A"), tr("B")});
  core::RunRef ra = ea.ref(), rb = eb.ref();
  ra.label = "A";
  rb.label = "B";
  core::Expected<core::Comparison> result = core::compare_runs(ra, rb);
  if (!result) {
    ratio_chart_->show_ratios({}, {});
    summary_->setText(QString::fromStdString(result.status().message()));
    return;
  }
  comparison_ = std::move(*result);
  QStringList stages;
  std::vector<std::optional<double>> measured, predicted;
  for (const core::StageComparison& s : comparison_->stages) {
    stages << QString::fromStdString(s.stage);
    measured.push_back(s.measured_ratio);
    predicted.push_back(s.predicted_ratio);
  }
  ratio_chart_->show_ratios(stages, {{tr("measured"), measured}, {tr("predicted"), predicted}});
  summary_->setText(
      tr("A = %1\nB = %2\nend to end: B/A measured %3, predicted %4; %5 stage(s) more than 2x off the prediction")
          .arg(ea.label, eb.label, ratio_text(comparison_->end_to_end_measured_ratio),
               ratio_text(comparison_->end_to_end_predicted_ratio))
          .arg(comparison_->highlighted_count()));
  fill_table(*comparison_);
  fill_diagnosis(*comparison_);
}

void ComparisonView::fill_table(const core::Comparison& c) {
  table_->setRowCount(static_cast<int>(c.stages.size()));
  for (int row = 0; row < static_cast<int>(c.stages.size()); ++row) {
    const core::StageComparison& s = c.stages[static_cast<size_t>(row)];
    QStringList kinds;
    for (const core::Cause& cause : s.causes) kinds << QString(core::to_string(cause.kind));
    const QString texts[kColumnCount] = {
        QString::fromStdString(s.stage),
        ms_text(s.a_ms),
        ms_text(s.b_ms),
        ratio_text(s.measured_ratio),
        ratio_text(s.predicted_ratio),
        ratio_text(s.precision_aware_ratio),
        ratio_text(s.excess, ""),
        s.highlighted ? tr("%1 slow: %2").arg(QChar(s.slow_side)).arg(kinds.join(", ")) : QString()};
    for (int column = 0; column < kColumnCount; ++column) {
      auto* item = new QTableWidgetItem(texts[column]);
      if (column > kStage && column < kCauses) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      if (s.highlighted) item->setBackground(highlight_color());
      table_->setItem(row, column, item);
    }
  }
}

void ComparisonView::fill_diagnosis(const core::Comparison& c) {
  QString html;
  if (c.highlighted_count() > 0) {
    html += "<b>" + tr("Stages more than 2x off the prediction") + "</b><ul>";
    for (const core::StageComparison& s : c.stages) {
      if (!s.highlighted) continue;
      html += QString("<li><b>%1</b> (%2 measured vs %3 predicted)<ul>")
                  .arg(QString::fromStdString(s.stage).toHtmlEscaped(), ratio_text(s.measured_ratio),
                       ratio_text(s.predicted_ratio));
      for (const core::Cause& cause : s.causes) {
        html += QString("<li><i>%1</i>: %2</li>")
                    .arg(QString(core::to_string(cause.kind)), QString::fromStdString(cause.text).toHtmlEscaped());
      }
      html += "</ul></li>";
    }
    html += "</ul>";
  } else {
    html += "<p>" + tr("Every stage is within 2x of the ratio the specifications predict.") + "</p>";
  }
  if (!c.warnings.empty()) {
    html += "<b>" + tr("Warnings") + "</b><ul>";
    for (const std::string& w : c.warnings)
      html += "<li style='color:#b71c1c'>" + QString::fromStdString(w).toHtmlEscaped() + "</li>";
    html += "</ul>";
  }
  html += "<p style='color:gray'>" +
          tr("Ratios are B/A. Predicted: ratio of the stage floors (max of FLOPs/peak, bytes/bandwidth) at the "
             "datasheet rate of "
             "the precision each side asked for. Precision-aware: the same with what really ran (TF32 flags, bf16 "
             "emulation).") +
          "</p>";
  diagnosis_->setHtml(html);
}

}  // namespace trackscope::ui
