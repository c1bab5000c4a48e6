#pragma once
// Device and precision selection for the tracker: a list of core::DeviceInfo entries (the CPU and every
// CUDA device: name, SMs, memory, compute capability) and a precision selector gated by core::precision_support
// of the selected device and the tracker's runtime (the table the factory refuses by): unsupported precisions are
// disabled, slow or emulated ones marked, and the reasons and caveats shown next to it. It only emits requests,
// typed: whoever owns the tracker moves or reloads the model and then confirms with set_current_device /
// set_current_precision. GUI thread only.

#include <QWidget>

#include <vector>

#include "core/tracking/device.h"

class QComboBox;
class QLabel;

namespace trackscope::ui {

class DeviceSelector : public QWidget {
  Q_OBJECT
 public:
  explicit DeviceSelector(QWidget* parent = nullptr);

  /// `runtime`: what the trackers run on (core::TrackerFactory::runtime()); `current_id`: a DeviceInfo::id.
  void set_devices(const std::vector<core::DeviceInfo>& devices, const core::RuntimeInfo& runtime,
                   const std::string& current_id);
  void set_current_device(const std::string& id);
  void set_current_precision(core::Precision precision);

  core::DeviceId current_device_id() const;
  core::Precision current_precision() const;
  /// The support table of the selected device (what the precision list shows), fp32, tf32, bf16, fp16.
  const std::vector<core::PrecisionSupport>& support() const { return support_; }
  /// The warnings shown for the selected precision (empty when none).
  QString warning_text() const;
  QComboBox* device_combo() const { return devices_; }
  QComboBox* precision_combo() const { return precisions_; }

 Q_SIGNALS:
  /// The user picked another device.
  void device_requested(const core::DeviceId& id);
  /// The user picked another precision, or the new device cannot run the current one and the selector fell back
  /// to fp32.
  void precision_requested(core::Precision precision);

 private:
  void update_gating();
  void update_warnings();

  QComboBox* devices_ = nullptr;
  QComboBox* precisions_ = nullptr;
  QLabel* warnings_ = nullptr;
  std::vector<core::DeviceInfo> device_list_;
  core::RuntimeInfo runtime_;
  std::vector<core::PrecisionSupport> support_;
};

}  // namespace trackscope::ui
