#pragma once
// Device and precision selection for the tracker: a list of core::DeviceDescription entries (the CPU and every
// CUDA device: name, SMs, memory, compute capability) and a precision selector gated by the selected device's
// capability, with the trap warnings next to it (bf16 below compute capability 8.0 is emulated and slow; TF32
// needs 8.0). It only emits requests: whoever owns the tracker moves or reloads the model and then confirms with
// setCurrentDevice / setCurrentPrecision. GUI thread only.

#include <QWidget>

#include <vector>

#include "core/perf/diagnosis.h"
#include "core/tracking/point_tracker.h"

class QComboBox;
class QLabel;

namespace trackscope::ui {

class DeviceSelector : public QWidget {
  Q_OBJECT
 public:
  explicit DeviceSelector(QWidget* parent = nullptr);

  void setDevices(const std::vector<core::DeviceDescription>& devices, const QString& current_id);
  void setCurrentDevice(const QString& id);
  void setCurrentPrecision(core::Precision precision);

  QString currentDeviceId() const;
  core::Precision currentPrecision() const;
  /// The gating of the selected device (what the precision list shows).
  const std::vector<core::PrecisionChoice>& choices() const { return choices_; }
  /// The warnings shown for the selected precision (empty when none).
  QString warningText() const;
  QComboBox* deviceCombo() const { return devices_; }
  QComboBox* precisionCombo() const { return precisions_; }

 Q_SIGNALS:
  /// The user picked another device ("cpu", "cuda:1").
  void deviceRequested(const QString& id);
  /// The user picked another precision ("fp32", "tf32", "bf16", "fp16"), or the new device cannot run the
  /// current one and the selector fell back to fp32.
  void precisionRequested(const QString& precision);

 private:
  void updateGating();
  void updateWarnings();

  QComboBox* devices_ = nullptr;
  QComboBox* precisions_ = nullptr;
  QLabel* warnings_ = nullptr;
  std::vector<core::DeviceDescription> device_list_;
  std::vector<core::PrecisionChoice> choices_;
};

}  // namespace trackscope::ui
