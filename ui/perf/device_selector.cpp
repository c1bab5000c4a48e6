#include "ui/perf/device_selector.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QStandardItemModel>

namespace trackscope::ui {

namespace {

QString describe(const core::DeviceInfo& d) {
  if (!d.is_cuda()) return QString::fromStdString(d.name);  // "CPU (16 threads)": the name holds the thread count
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
  for (core::Precision p : core::kAllPrecisions) precisions_->addItem(core::to_string(p), static_cast<int>(p));
  precisions_->setItemText(0, tr("fp32 (exact)"));
  warnings_ = new QLabel(this);
  warnings_->setWordWrap(true);
  warnings_->setStyleSheet("color: #b71c1c;");
  form->addRow(tr("Device"), devices_);
  form->addRow(tr("Precision"), precisions_);
  form->addRow(QString(), warnings_);

  connect(devices_, &QComboBox::activated, this, [this](int) {
    const core::Precision before = current_precision();
    update_gating();
    Q_EMIT device_requested(current_device_id());
    if (current_precision() != before) Q_EMIT precision_requested(current_precision());
  });
  connect(precisions_, &QComboBox::activated, this, [this](int) {
    update_warnings();
    Q_EMIT precision_requested(current_precision());
  });
  update_gating();
}

void DeviceSelector::set_devices(const std::vector<core::DeviceInfo>& devices, const core::RuntimeInfo& runtime,
                                 const std::string& current_id) {
  device_list_ = devices;
  runtime_ = runtime;
  devices_->clear();
  for (const core::DeviceInfo& d : devices) devices_->addItem(describe(d), QString::fromStdString(d.id));
  set_current_device(current_id);
}

void DeviceSelector::set_current_device(const std::string& id) {
  const int index = devices_->findData(QString::fromStdString(id));
  if (index >= 0) devices_->setCurrentIndex(index);
  update_gating();
}

void DeviceSelector::set_current_precision(core::Precision precision) {
  precisions_->setCurrentIndex(precisions_->findData(static_cast<int>(precision)));
  update_warnings();
}

core::DeviceId DeviceSelector::current_device_id() const {
  const int row = devices_->currentIndex();
  if (row < 0 || row >= static_cast<int>(device_list_.size())) return core::DeviceId::cpu();
  return device_list_[static_cast<size_t>(row)].device_id().value_or(core::DeviceId::cpu());
}

core::Precision DeviceSelector::current_precision() const {
  return static_cast<core::Precision>(precisions_->currentData().toInt());
}

QString DeviceSelector::warning_text() const { return warnings_->text(); }

void DeviceSelector::update_gating() {
  const int index = devices_->currentIndex();
  core::DeviceInfo device{core::DeviceId::cpu().to_string(), "CPU"};
  if (index >= 0 && index < static_cast<int>(device_list_.size())) device = device_list_[static_cast<size_t>(index)];
  support_ = core::precision_support(device, runtime_);
  auto* model = qobject_cast<QStandardItemModel*>(precisions_->model());
  for (const core::PrecisionSupport& support : support_) {
    const int row = precisions_->findData(static_cast<int>(support.precision));
    QStandardItem* item = model->item(row);
    item->setEnabled(support.usable());
    QStringList tip;
    if (!support.reason.empty()) tip << QString::fromStdString(support.reason);
    if (!support.note.empty()) tip << QString::fromStdString(support.note);
    item->setToolTip(tip.join("\n"));
    const bool slow = support.level == core::SupportLevel::slow || support.level == core::SupportLevel::emulated;
    item->setText(QString(core::to_string(support.precision)) +
                  (support.precision == core::Precision::fp32 ? tr(" (exact)") : QString()) +
                  (slow ? tr(" — slow here") : QString()) + (!support.usable() ? tr(" — unavailable") : QString()));
  }
  const core::Precision current = current_precision();
  for (const core::PrecisionSupport& support : support_) {
    if (support.precision == current && !support.usable()) set_current_precision(core::Precision::fp32);
  }
  update_warnings();
}

void DeviceSelector::update_warnings() {
  QStringList lines;
  for (const core::PrecisionSupport& support : support_) {
    if (support.precision != current_precision()) continue;
    if (support.level != core::SupportLevel::supported) lines << QString::fromStdString(support.reason);
    if (!support.note.empty()) lines << QString::fromStdString(support.note);
  }
  warnings_->setText(lines.join("\n"));
  warnings_->setVisible(!lines.isEmpty());
}

}  // namespace trackscope::ui
