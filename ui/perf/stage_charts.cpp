#include "ui/perf/stage_charts.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QCategoryAxis>
#include <QChart>
#include <QHorizontalBarSeries>
#include <QLineSeries>
#include <QStackedBarSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include "core/perf/stage_timeline.h"

namespace trackscope::ui {

namespace {

// Stage order for stacking: canonical stages first, then unknown names alphabetically.
int stage_rank(const QString& name) {
  const std::optional<core::Stage> stage = core::stage_from_name(name.toStdString());
  if (!stage) return 1000;
  return static_cast<int>(std::find(core::kAllStages.begin(), core::kAllStages.end(), *stage) -
                          core::kAllStages.begin());
}

void sort_stage_names(QStringList& names) {
  std::stable_sort(names.begin(), names.end(), [](const QString& a, const QString& b) {
    const int ra = stage_rank(a), rb = stage_rank(b);
    return ra != rb ? ra < rb : a < b;
  });
}

// Enough decimals that neighbouring ticks of a 0..top axis read differently ("%.0f" labelled an empty 0..1 axis
// "0 0 1 1 1").
QString tick_label_format(double top, int tick_count) {
  const double step = top / std::max(1, tick_count - 1);
  const int decimals = step >= 1.0 ? 0 : std::min(3, static_cast<int>(std::ceil(-std::log10(step))) + 1);
  return QStringLiteral("%.%1f").arg(decimals);
}

}  // namespace

QColor stage_color(const QString& stage_name) {
  static const std::map<QString, QColor> kColors = {
      {"decode", QColor(0x9e, 0x9e, 0x9e)},         {"resize_normalize", QColor(0xbd, 0xbd, 0xbd)},
      {"upload", QColor(0x78, 0x90, 0x9c)},         {"backbone", QColor(0x1f, 0x77, 0xb4)},
      {"feature_stream", QColor(0xe3, 0x77, 0xc2)}, {"query_features", QColor(0x17, 0xbe, 0xcf)},
      {"init", QColor(0x2c, 0xa0, 0x2c)},           {"refine_correlation", QColor(0xff, 0x7f, 0x0e)},
      {"refine_encoder", QColor(0xd6, 0x27, 0x28)}, {"refine_transformer", QColor(0x94, 0x67, 0xbd)},
      {"assembly", QColor(0x8c, 0x56, 0x4b)},       {"download", QColor(0x54, 0x6e, 0x7a)}};
  const auto it = kColors.find(stage_name);
  if (it != kColors.end()) return it->second;
  return QColor::fromHsv(static_cast<int>(qHash(stage_name) % 360), 120, 200);
}

// ---- breakdown --------------------------------------------------------------------------------------------

StageBreakdownChart::StageBreakdownChart(QWidget* parent) : QChartView(parent) {
  auto* chart = new QChart();
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->setAlignment(Qt::AlignRight);
  chart->setTitle(tr("Time per stage (ms)"));
  setChart(chart);
  setRenderHint(QPainter::Antialiasing);
  setMinimumHeight(180);
  rebuild({}, {});
}

void StageBreakdownChart::set_legend_alignment(Qt::Alignment alignment) { chart()->legend()->setAlignment(alignment); }

QStringList StageBreakdownChart::categories() const {
  for (QAbstractAxis* axis : chart()->axes(Qt::Horizontal)) {
    if (auto* categories = qobject_cast<QBarCategoryAxis*>(axis)) return categories->categories();
  }
  return {};
}

void StageBreakdownChart::rebuild(const QStringList& categories,
                                  const std::vector<std::pair<QString, std::vector<double>>>& sets) {
  QChart* c = chart();
  c->removeAllSeries();  // deletes the old series and their sets
  for (QAbstractAxis* axis : c->axes()) {
    c->removeAxis(axis);
    delete axis;
  }
  series_ = new QStackedBarSeries();
  double max_total = 0.0;
  std::vector<double> totals(static_cast<size_t>(categories.size()), 0.0);
  for (const auto& [name, values] : sets) {
    auto* set = new QBarSet(name);
    set->setColor(stage_color(name));
    for (size_t i = 0; i < values.size(); ++i) {
      set->append(values[i]);
      totals[i] += values[i];
    }
    series_->append(set);
  }
  for (double total : totals) max_total = std::max(max_total, total);
  c->addSeries(series_);
  auto* x = new QBarCategoryAxis();
  x->append(categories);
  c->addAxis(x, Qt::AlignBottom);
  series_->attachAxis(x);
  auto* y = new QValueAxis();
  y->setTitleText(tr("ms"));
  const double top_ms = max_total > 0.0 ? max_total * 1.05 : 1.0;  // empty: 0..1
  y->setRange(0.0, top_ms);
  y->setLabelFormat(tick_label_format(top_ms, y->tickCount()));
  c->addAxis(y, Qt::AlignLeft);
  series_->attachAxis(y);
}

void StageBreakdownChart::show_runs(const std::vector<const core::ProfileCase*>& runs, const QStringList& labels) {
  QStringList names;
  for (const core::ProfileCase* run : runs) {
    for (const core::StageStats& s : run->stages) {
      if (!names.contains(QString::fromStdString(s.name))) names << QString::fromStdString(s.name);
    }
  }
  sort_stage_names(names);
  std::vector<std::pair<QString, std::vector<double>>> sets;
  for (const QString& name : names) {
    std::vector<double> values;
    for (const core::ProfileCase* run : runs) {
      const core::StageStats* s = run->find_stage(name.toStdString());
      values.push_back(s ? s->stats.median_ms : 0.0);
    }
    sets.emplace_back(name, std::move(values));
  }
  chart()->setTitle(tr("Time per stage (ms, median)"));
  rebuild(labels, sets);
}

void StageBreakdownChart::show_live_samples(const std::vector<core::StageSample>& samples) {
  int chunks = 0;
  bool per_video = false;
  for (const core::StageSample& s : samples) {
    const bool chunked =
        s.stage == core::Stage::init || core::is_refinement_stage(s.stage) || s.stage == core::Stage::assembly;
    if (chunked)
      chunks = std::max(chunks, s.chunk + 1);
    else
      per_video = true;
  }
  QStringList categories;
  if (per_video) categories << tr("video");
  for (int i = 0; i < chunks; ++i) categories << tr("chunk %1").arg(i + 1);
  std::map<QString, std::vector<double>> by_stage;
  for (const core::StageSample& s : samples) {
    const QString name = QString::fromStdString(std::string(core::stage_name(s.stage)));
    auto& values = by_stage[name];
    values.resize(static_cast<size_t>(categories.size()), 0.0);
    const bool chunked =
        s.stage == core::Stage::init || core::is_refinement_stage(s.stage) || s.stage == core::Stage::assembly;
    const int column = chunked ? s.chunk + (per_video ? 1 : 0) : 0;
    values[static_cast<size_t>(column)] += s.elapsed_ms;
  }
  QStringList names;
  for (const auto& [name, values] : by_stage) names << name;
  sort_stage_names(names);
  std::vector<std::pair<QString, std::vector<double>>> sets;
  for (const QString& name : names) sets.emplace_back(name, by_stage[name]);
  chart()->setTitle(tr("Run in progress: time per stage and chunk (ms)"));
  rebuild(categories, sets);
}

// ---- history ----------------------------------------------------------------------------------------------

StageTimelineChart::StageTimelineChart(QWidget* parent) : QChartView(parent) {
  auto* chart = new QChart();
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->setAlignment(Qt::AlignRight);
  chart->setTitle(tr("Timeline: no run with start times yet"));
  chart->setMargins(QMargins(4, 0, 4, 0));
  // The x axis carries no title (the chart's title names the unit): in a short chart QtCharts elides the tick
  // labels when a title takes their room.
  auto* x = new QValueAxis();
  x->setRange(0.0, 1.0);
  x->setLabelFormat("%.0f");
  x->setTickCount(6);
  auto* y = new QValueAxis();
  y->setRange(-0.2, 3.0);
  y->setVisible(false);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  setChart(chart);
  setMinimumHeight(170);
}

QLineSeries* StageTimelineChart::series_for(const QString& lane) const {
  for (QAbstractSeries* series : chart()->series()) {
    if (series->name().section(QLatin1Char(' '), 0, 0) == lane) return qobject_cast<QLineSeries*>(series);
  }
  return nullptr;
}

void StageTimelineChart::show_samples(const std::vector<core::StageSample>& samples) {
  const std::vector<core::TimelineLane> lanes = core::stage_timeline(samples);
  chart()->removeAllSeries();
  // Lane i idles at height 2 - i and is raised by 0.7 while busy: a square wave per lane, decode on top.
  // Three lanes in colours of their own (the stage colours of decode and upload are two greys).
  const QColor colours[] = {QColor(0xe6, 0x7e, 0x22), QColor(0x8e, 0x44, 0xad), QColor(0x1f, 0x77, 0xb4)};
  double end_ms = 0.0;
  for (const core::TimelineLane& lane : lanes) end_ms = std::max(end_ms, lane.end_ms());
  for (size_t i = 0; i < lanes.size(); ++i) {
    const double base = 2.0 - static_cast<double>(i);
    auto* series = new QLineSeries();
    series->setName(QStringLiteral("%1 (%2 ms busy)")
                        .arg(QString::fromStdString(lanes[i].name))
                        .arg(lanes[i].busy_total_ms(), 0, 'f', 0));
    series->setColor(colours[i]);
    QList<QPointF> points{{0.0, base}};
    for (const auto& [start, stop] : lanes[i].busy_ms) {
      points << QPointF(start, base) << QPointF(start, base + 0.7) << QPointF(stop, base + 0.7) << QPointF(stop, base);
    }
    points << QPointF(end_ms, base);
    series->replace(points);
    chart()->addSeries(series);
    for (QAbstractAxis* axis : chart()->axes()) series->attachAxis(axis);
  }
  if (QList<QAbstractAxis*> x = chart()->axes(Qt::Horizontal); !x.isEmpty()) {
    x.front()->setRange(0.0, end_ms > 0.0 ? end_ms : 1.0);
  }
  const double decode_ms = lanes[0].busy_total_ms();
  if (end_ms <= 0.0) {
    chart()->setTitle(tr("Timeline: no run with start times yet"));
  } else {
    chart()->setTitle(
        tr("Timeline (ms since the run began): %1 ms; decoding %2 ms, %3% of it while the model worked")
            .arg(end_ms, 0, 'f', 0)
            .arg(decode_ms, 0, 'f', 0)
            .arg(decode_ms > 0.0 ? 100.0 * core::overlap_ms(lanes[0], lanes[2]) / decode_ms : 0.0, 0, 'f', 0));
  }
}

StageHistoryChart::StageHistoryChart(QWidget* parent) : QChartView(parent) {
  auto* chart = new QChart();
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->setAlignment(Qt::AlignRight);
  chart->setTitle(tr("Stage times across runs (ms, median)"));
  auto* x = new QValueAxis();
  x->setTitleText(tr("run"));
  auto* y = new QValueAxis();
  y->setTitleText(tr("ms"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  setChart(chart);
  setRenderHint(QPainter::Antialiasing);
  setMinimumHeight(180);
  rescale();
}

QLineSeries* StageHistoryChart::series_for(const QString& stage_name) const {
  for (QAbstractSeries* series : chart()->series()) {
    if (series->name() == stage_name) return qobject_cast<QLineSeries*>(series);
  }
  return nullptr;
}

void StageHistoryChart::append_run(const core::ProfileCase& run) {
  ++runs_;
  for (const core::StageStats& s : run.stages) {
    const QString name = QString::fromStdString(s.name);
    QLineSeries* series = series_for(name);
    if (!series) {
      series = new QLineSeries();
      series->setName(name);
      series->setColor(stage_color(name));
      series->setPointsVisible(true);
      series->setMarkerSize(8.0);
      chart()->addSeries(series);
      for (QAbstractAxis* axis : chart()->axes()) series->attachAxis(axis);
    }
    series->append(runs_, s.stats.median_ms);
    max_ms_ = std::max(max_ms_, s.stats.median_ms);
  }
  rescale();
}

void StageHistoryChart::clear() {
  chart()->removeAllSeries();
  runs_ = 0;
  max_ms_ = 0.0;
  rescale();
}

void StageHistoryChart::rescale() {
  const QList<QAbstractAxis*> x = chart()->axes(Qt::Horizontal);
  const QList<QAbstractAxis*> y = chart()->axes(Qt::Vertical);
  if (!x.isEmpty()) x.front()->setRange(0.0, runs_ + 1.0);
  if (!y.isEmpty()) y.front()->setRange(0.0, max_ms_ > 0.0 ? max_ms_ * 1.1 : 1.0);
  if (auto* axis = x.isEmpty() ? nullptr : qobject_cast<QValueAxis*>(x.front())) {
    axis->setTickCount(runs_ + 2 <= 12 ? runs_ + 2 : 2);  // integer ticks while they fit
    axis->setLabelFormat("%.0f");
  }
}

// ---- ratios -----------------------------------------------------------------------------------------------

StageRatioChart::StageRatioChart(QWidget* parent) : QChartView(parent) {
  auto* chart = new QChart();
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->setTitle(tr("B/A per stage (log scale)"));
  setChart(chart);
  setRenderHint(QPainter::Antialiasing);
  setMinimumHeight(180);
  show_ratios({}, {});
}

void StageRatioChart::show_ratios(const QStringList& stages,
                                  const std::vector<std::pair<QString, std::vector<std::optional<double>>>>& sets) {
  QChart* c = chart();
  c->removeAllSeries();
  for (QAbstractAxis* axis : c->axes()) {
    c->removeAxis(axis);
    delete axis;
  }
  series_ = new QHorizontalBarSeries();
  double largest = 0.0;
  static const QColor kSetColors[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xbd, 0xbd, 0xbd), QColor(0xff, 0x7f, 0x0e)};
  size_t index = 0;
  for (const auto& [name, ratios] : sets) {
    auto* set = new QBarSet(name);
    set->setColor(kSetColors[index++ % std::size(kSetColors)]);
    // A horizontal bar chart draws its first category at the bottom: append in reverse for top-to-bottom order.
    for (auto it = ratios.rbegin(); it != ratios.rend(); ++it) {
      const double value = *it && **it > 0.0 ? std::log10(**it) : 0.0;
      largest = std::max(largest, std::abs(value));
      set->append(value);
    }
    series_->append(set);
  }
  c->addSeries(series_);
  QStringList reversed(stages.rbegin(), stages.rend());
  auto* y = new QBarCategoryAxis();
  y->append(reversed);
  c->addAxis(y, Qt::AlignLeft);
  series_->attachAxis(y);
  decades_ = std::max(1, static_cast<int>(std::ceil(largest - 1e-9)));
  auto* x = new QCategoryAxis();
  x->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
  x->setStartValue(-decades_);
  for (int d = -decades_; d <= decades_; ++d) {
    const double ratio = std::pow(10.0, d);
    const QString label = (d < 0 ? QString::number(ratio, 'g', 6) : QString::number(ratio, 'f', 0)) + "x";
    x->append(label, d);
  }
  x->setRange(-decades_, decades_);
  x->setTitleText(tr("B/A (right of 1x: B slower)"));
  QFont label_font = x->labelsFont();  // up to seven decade labels ("0.001x" .. "1000x") side by side
  label_font.setPointSizeF(label_font.pointSizeF() * 0.8);
  x->setLabelsFont(label_font);
  c->addAxis(x, Qt::AlignBottom);
  series_->attachAxis(x);
}

}  // namespace trackscope::ui
