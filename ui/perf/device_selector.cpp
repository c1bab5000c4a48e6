#include "ui/perf/device_selector.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QStandardItemModel>

namespace trackscope::ui {

namespace {

QString describe(const core::DeviceDescription& d) {
  if (!d.is_cuda()) return QObject::tr("%1 — %2 threads").arg(QString::fromStdString(d.name)).arg(d.multiprocessors);
  return QObject::tr("%1 (%2) — %3 SMs, %4 GB, compute capability %5.%6")
      .arg(QString::fromStdString(d.name), QString::fromStdString(d.id))
      .arg(d.multiprocessors)
      .arg(static_cast<double>(d.memory_bytes) / 1e9, 0, 'f', 1)
      .arg(d.compute_capability_major)
      .arg(d.compute_capability_minor);
}

}  // namespace

DeviceSelector::DeviceSelector(QWidget* parent) : QWidget(parent) {
  auto* form = new QFormLayout(this);
  form->setFieldGrowthPolicy(QFormLayout::FieldsStayAtSizeHint);
  devices_ = new QComboBox(this);
  devices_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  precisions_ = new QComboBox(this);
  precisions_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  for (core::Precision p :
       {core::Precision::fp32, core::Precision::tf32, core::Precision::bf16, core::Precision::fp16}) {
    precisions_->addItem(core::to_string(p), static_cast<int>(p));
  }
  precisions_->setItemText(0, tr("fp32 (exact)"));
  warnings_ = new QLabel(this);
  warnings_->setWordWrap(true);
  warnings_->setStyleSheet("color: #b71c1c;");
  form->addRow(tr("Device"), devices_);
  form->addRow(tr("Precision"), precisions_);
  form->addRow(QString(), warnings_);

  connect(devices_, &QComboBox::activated, this, [this](int) {
    const core::Precision before = currentPrecision();
    updateGating();
    Q_EMIT deviceRequested(currentDeviceId());
    if (currentPrecision() != before) Q_EMIT precisionRequested(core::to_string(currentPrecision()));
  });
  connect(precisions_, &QComboBox::activated, this, [this](int) {
    updateWarnings();
    Q_EMIT precisionRequested(core::to_string(currentPrecision()));
  });
  updateGating();
}

void DeviceSelector::setDevices(const std::vector<core::DeviceDescription>& devices, const QString& current_id) {
  device_list_ = devices;
  devices_->clear();
  for (const core::DeviceDescription& d : devices) devices_->addItem(describe(d), QString::fromStdString(d.id));
  setCurrentDevice(current_id);
}

void DeviceSelector::setCurrentDevice(const QString& id) {
  const int index = devices_->findData(id);
  if (index >= 0) devices_->setCurrentIndex(index);
  updateGating();
}

void DeviceSelector::setCurrentPrecision(core::Precision precision) {
  precisions_->setCurrentIndex(precisions_->findData(static_cast<int>(precision)));
  updateWarnings();
}

QString DeviceSelector::currentDeviceId() const { return devices_->currentData().toString(); }

core::Precision DeviceSelector::currentPrecision() const {
  return static_cast<core::Precision>(precisions_->currentData().toInt());
}

QString DeviceSelector::warningText() const { return warnings_->text(); }

void DeviceSelector::updateGating() {
  const int index = devices_->currentIndex();
  core::DeviceDescription device{"cpu", "CPU", 0, 0, 0, 0};
  if (index >= 0 && index < static_cast<int>(device_list_.size())) device = device_list_[static_cast<size_t>(index)];
  choices_ = core::precision_choices(device);
  auto* model = qobject_cast<QStandardItemModel*>(precisions_->model());
  for (const core::PrecisionChoice& choice : choices_) {
    const int row = precisions_->findData(static_cast<int>(choice.precision));
    QStandardItem* item = model->item(row);
    item->setEnabled(choice.available);
    QStringList tip;
    if (!choice.reason.empty()) tip << QString::fromStdString(choice.reason);
    for (const std::string& w : choice.warnings) tip << QString::fromStdString(w);
    item->setToolTip(tip.join("\n"));
    const bool trap = choice.available && !choice.warnings.empty() && choice.warnings.front().rfind("trap", 0) == 0;
    item->setText(QString(core::to_string(choice.precision)) +
                  (choice.precision == core::Precision::fp32 ? tr(" (exact)") : QString()) +
                  (trap ? tr(" — slow here") : QString()) + (!choice.available ? tr(" — unavailable") : QString()));
  }
  const core::Precision current = currentPrecision();
  for (const core::PrecisionChoice& choice : choices_) {
    if (choice.precision == current && !choice.available) setCurrentPrecision(core::Precision::fp32);
  }
  updateWarnings();
}

void DeviceSelector::updateWarnings() {
  QStringList lines;
  for (const core::PrecisionChoice& choice : choices_) {
    if (choice.precision != currentPrecision()) continue;
    for (const std::string& w : choice.warnings) lines << QString::fromStdString(w);
  }
  warnings_->setText(lines.join("\n"));
  warnings_->setVisible(!lines.isEmpty());
}

}  // namespace trackscope::ui
