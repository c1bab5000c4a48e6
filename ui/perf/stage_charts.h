#pragma once
// The dock's stage charts (QtCharts stays inside ui/perf/):
//  * StageBreakdownChart: a stacked bar of per-stage time, one bar per run shown (the current run, or A and B
//    side by side) or, while a run is in progress, one bar per query chunk;
//  * StageHistoryChart: a time series of each stage's median time across runs (x = run number);
//  * StageTimelineChart: the run against time, one lane each for decoding, getting frames to the model and the
//    model's work (core/perf/stage_timeline.h), so that decode-vs-compute overlap shows at a glance;
//  * StageRatioChart: per-stage B/A ratio bars on a log10 axis (measured and predicted), readable when two runs
//    differ by 100x or more, where the stacked bars of the faster run shrink to nothing.
// Both are QChartViews owning their QChart; tests inspect chart()->series(). GUI thread only.

#include <QChartView>
#include <QColor>
#include <QStringList>

#include <optional>
#include <utility>
#include <vector>

#include "core/perf/profile.h"

class QBarSet;
class QHorizontalBarSeries;
class QStackedBarSeries;
class QLineSeries;

namespace trackscope::ui {

/// A fixed colour per canonical stage (the same in every chart of the dock).
QColor stage_color(const QString& stage_name);

class StageBreakdownChart : public QChartView {
  Q_OBJECT
 public:
  explicit StageBreakdownChart(QWidget* parent = nullptr);

  /// One bar per run: `labels[i]` under the bar of `runs[i]`. Stages become the stacked sets, in canonical
  /// order (unknown stage names after them).
  void show_runs(const std::vector<const core::ProfileCase*>& runs, const QStringList& labels);
  /// One bar per query chunk from the samples of a run in progress (refinement iterations summed); per-video
  /// stages (decode .. query features) form a bar "video" before the chunks.
  void show_live_samples(const std::vector<core::StageSample>& samples);

  QStackedBarSeries* series() const { return series_; }
  void set_legend_alignment(Qt::Alignment alignment);
  QStringList categories() const;

 private:
  void rebuild(const QStringList& categories, const std::vector<std::pair<QString, std::vector<double>>>& sets);
  QStackedBarSeries* series_ = nullptr;
};

class StageHistoryChart : public QChartView {
  Q_OBJECT
 public:
  explicit StageHistoryChart(QWidget* parent = nullptr);

  /// Appends one run (x = its number, 1-based) to every stage's series (a stage new to the history gets a
  /// series of its own from this run on).
  void append_run(const core::ProfileCase& run);
  void clear();
  int run_count() const { return runs_; }
  /// The series of a stage, or nullptr.
  QLineSeries* series_for(const QString& stage_name) const;

 private:
  void rescale();
  int runs_ = 0;
  double max_ms_ = 0.0;
};

class StageTimelineChart : public QChartView {
  Q_OBJECT
 public:
  explicit StageTimelineChart(QWidget* parent = nullptr);

  /// Draws the run of `samples` (those with a start time): each lane's busy intervals as a raised band; the title
  /// gives each lane's busy time and how much of the decoding ran while the model worked.
  void show_samples(const std::vector<core::StageSample>& samples);
  /// The series of a lane ("decode", "frames", "model"), or nullptr.
  QLineSeries* series_for(const QString& lane) const;
};

class StageRatioChart : public QChartView {
  Q_OBJECT
 public:
  explicit StageRatioChart(QWidget* parent = nullptr);

  /// One row per stage (top to bottom in the given order) with a bar per set: its value is log10(ratio) (0 = same
  /// time, +2 = B 100x slower, -2 = B 100x faster); a missing ratio (or <= 0) is drawn as 0. The axis spans the
  /// largest |log10| rounded up to a decade (at least 1), labelled "0.01x" .. "1x" .. "100x".
  void show_ratios(const QStringList& stages,
                   const std::vector<std::pair<QString, std::vector<std::optional<double>>>>& sets);

  QHorizontalBarSeries* series() const { return series_; }
  /// The axis' half-span in decades (2 = 0.01x .. 100x).
  int decades() const { return decades_; }

 private:
  QHorizontalBarSeries* series_ = nullptr;
  int decades_ = 1;
};

}  // namespace trackscope::ui
