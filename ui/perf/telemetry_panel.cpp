#include "ui/perf/telemetry_panel.h"

#include <QChart>
#include <QChartView>
#include <QFormLayout>
#include <QLabel>
#include <QLineSeries>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>

namespace trackscope::ui {

namespace {

constexpr double kWindowSeconds = 60.0;

QString optional_text(const std::optional<double>& value, const char* unit, int decimals = 0) {
  return value ? QString("%1 %2").arg(*value, 0, 'f', decimals).arg(unit) : QString("-");
}

}  // namespace

TelemetryPanel::TelemetryPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  status_ = new QLabel(tr("no telemetry"), this);
  status_->setWordWrap(true);
  layout->addWidget(status_);
  auto* form = new QFormLayout();
  const std::pair<const char*, QString> rows[] = {{"sm_clock", tr("SM clock")},
                                                  {"memory_clock", tr("Memory clock")},
                                                  {"power", tr("Power")},
                                                  {"temperature", tr("Temperature")},
                                                  {"utilisation", tr("Utilisation")},
                                                  {"memory", tr("Memory used")},
                                                  {"throttle", tr("Throttle reasons")},
                                                  {"pcie", tr("PCIe link")},
                                                  {"cpu", tr("CPU")}};
  for (const auto& [key, title] : rows) {
    auto* value = new QLabel("-", this);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    form->addRow(title, value);
    values_.emplace_back(key, value);
  }
  layout->addLayout(form);

  auto* chart = new QChart();
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->setAlignment(Qt::AlignBottom);
  auto* x = new QValueAxis();
  x->setRange(-kWindowSeconds, 0.0);
  x->setTitleText(tr("s"));
  auto* mhz = clock_axis_ = new QValueAxis();
  mhz->setTitleText(tr("MHz"));
  mhz->setRange(0.0, 2000.0);
  mhz->setLabelFormat("%.0f");
  auto* percent = new QValueAxis();
  percent->setTitleText(tr("%"));
  percent->setRange(0.0, 100.0);
  percent->setLabelFormat("%.0f");
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(mhz, Qt::AlignLeft);
  chart->addAxis(percent, Qt::AlignRight);
  auto add = [&](QLineSeries*& series, const QString& name, QValueAxis* y) {
    series = new QLineSeries();
    series->setName(name);
    chart->addSeries(series);
    series->attachAxis(x);
    series->attachAxis(y);
  };
  add(sm_clock_, tr("SM clock (MHz)"), mhz);
  add(power_, tr("power (% of limit)"), percent);
  add(gpu_utilisation_, tr("GPU utilisation (%)"), percent);
  add(cpu_utilisation_, tr("CPU utilisation (%)"), percent);
  view_ = new QChartView(chart, this);
  view_->setRenderHint(QPainter::Antialiasing);
  view_->setMinimumHeight(160);
  layout->addWidget(view_, 1);
}

QString TelemetryPanel::status_text() const { return status_->text(); }

QLabel* TelemetryPanel::value_label(const QString& key) const {
  for (const auto& [name, label] : values_) {
    if (name == key) return label;
  }
  return nullptr;
}

void TelemetryPanel::show_snapshot(const core::TelemetrySnapshot& snapshot) {
  status_->setText(QString::fromStdString(snapshot.status));
  const core::TelemetrySample* latest = snapshot.latest();
  if (latest) {
    const core::TelemetrySample& s = *latest;
    value_label("sm_clock")
        ->setText(s.sm_clock_mhz ? QString("%1 / %2 MHz")
                                       .arg(*s.sm_clock_mhz, 0, 'f', 0)
                                       .arg(s.sm_clock_max_mhz.value_or(0.0), 0, 'f', 0)
                                 : QString("-"));
    value_label("memory_clock")->setText(optional_text(s.memory_clock_mhz, "MHz"));
    value_label("power")->setText(
        s.power_w ? QString("%1 / %2 W").arg(*s.power_w, 0, 'f', 0).arg(s.power_limit_w.value_or(0.0), 0, 'f', 0)
                  : QString("-"));
    value_label("temperature")->setText(optional_text(s.temperature_c, "°C"));
    value_label("utilisation")
        ->setText(s.gpu_utilisation_percent ? QString("GPU %1%, memory %2%")
                                                  .arg(*s.gpu_utilisation_percent, 0, 'f', 0)
                                                  .arg(s.memory_utilisation_percent.value_or(0.0), 0, 'f', 0)
                                            : QString("-"));
    value_label("memory")->setText(
        s.memory_used_bytes ? QString("%1 / %2 GB")
                                  .arg(static_cast<double>(*s.memory_used_bytes) / 1e9, 0, 'f', 2)
                                  .arg(static_cast<double>(s.memory_total_bytes.value_or(0)) / 1e9, 0, 'f', 1)
                            : QString("-"));
    QStringList reasons;
    for (const std::string& name : s.throttle_reason_names) reasons << QString::fromStdString(name);
    value_label("throttle")
        ->setText(s.throttle_reasons ? (reasons.isEmpty() ? tr("none") : reasons.join(", ")) : QString("-"));
    const bool limiting = s.throttle_reasons && (*s.throttle_reasons & core::throttle_reason::performance_limiting);
    value_label("throttle")->setStyleSheet(limiting ? "color: #c62828; font-weight: bold;" : "");
    value_label("pcie")->setText(
        s.pcie_generation || s.pcie_width
            ? QString("gen %1 x%2").arg(s.pcie_generation.value_or(0)).arg(s.pcie_width.value_or(0))
            : QString("-"));
    value_label("cpu")->setText(
        s.cpu_threads ? QString("%1 threads, %2").arg(*s.cpu_threads).arg(optional_text(s.cpu_utilisation_percent, "%"))
                      : QString("-"));
  } else {
    for (const auto& [name, label] : values_) label->setText("-");
  }
  QList<QPointF> clock, power, gpu, cpu;
  const double now = latest ? latest->time_s : 0.0;
  double max_clock = 0.0;
  for (const core::TelemetrySample& s : snapshot.samples) {
    const double t = s.time_s - now;
    if (t < -kWindowSeconds) continue;
    if (s.sm_clock_mhz) {
      clock.append({t, *s.sm_clock_mhz});
      max_clock = std::max({max_clock, *s.sm_clock_mhz, s.sm_clock_max_mhz.value_or(0.0)});
    }
    if (s.power_w && s.power_limit_w && *s.power_limit_w > 0.0)
      power.append({t, 100.0 * *s.power_w / *s.power_limit_w});
    if (s.gpu_utilisation_percent) gpu.append({t, *s.gpu_utilisation_percent});
    if (s.cpu_utilisation_percent) cpu.append({t, *s.cpu_utilisation_percent});
  }
  sm_clock_->replace(clock);
  power_->replace(power);
  gpu_utilisation_->replace(gpu);
  cpu_utilisation_->replace(cpu);
  if (max_clock > 0.0) {
    clock_axis_->setRange(0.0, max_clock * 1.1);
    clock_axis_->applyNiceNumbers();
  }
}

}  // namespace trackscope::ui
