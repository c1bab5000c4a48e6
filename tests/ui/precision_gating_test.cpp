// The precision selector never offers what the tracker factory refuses, and refuses nothing the factory accepts:
// for every device kind (the CPU; CUDA from compute capability 6.0 to 9.0) and every LibTorch version the project
// builds against (1.13 and 2.x; an unknown version too), and for the real factory on this machine's devices.
#include <QComboBox>
#include <QStandardItemModel>
#include <QtTest>

#include <string>
#include <vector>

#include "core/tracking/device.h"
#include "gpu/devices.h"
#include "gpu/tracker_factory.h"
#include "ui/perf/device_selector.h"

using namespace trackscope;

namespace {

core::DeviceInfo cuda_device(int index, const char* name, int major, int minor) {
  core::DeviceInfo d;
  d.id = core::DeviceId::cuda(index).to_string();
  d.name = name;
  d.multiprocessors = 40;
  d.compute_capability_major = major;
  d.compute_capability_minor = minor;
  return d;
}

// Checks every device row of the selector against `accepted` (whether the factory takes the precision there).
template <typename Accepted>
void compare_with_factory(ui::DeviceSelector& selector, const std::vector<core::DeviceInfo>& devices, Accepted accepted,
                          const QString& context) {
  auto* model = qobject_cast<QStandardItemModel*>(selector.precision_combo()->model());
  QVERIFY(model != nullptr);
  for (const core::DeviceInfo& device : devices) {
    selector.set_current_device(device.id);
    QCOMPARE(selector.current_device_id().to_string(), device.id);
    for (core::Precision precision : core::kAllPrecisions) {
      const int row = selector.precision_combo()->findData(static_cast<int>(precision));
      QVERIFY(row >= 0);
      const bool offered = model->item(row)->isEnabled();
      QVERIFY2(offered == accepted(precision, device),
               qPrintable(QStringLiteral("%1: %2 on %3 (%4): offered %5")
                              .arg(context, core::to_string(precision), QString::fromStdString(device.name),
                                   QString::fromStdString(device.id))
                              .arg(offered)));
    }
  }
}

}  // namespace

class PrecisionGatingTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void selector_and_factory_agree_for_every_device_kind_and_libtorch() {
    core::DeviceInfo cpu;
    cpu.id = core::DeviceId::cpu().to_string();
    cpu.name = "CPU (2 threads)";
    const std::vector<core::DeviceInfo> devices = {cpu,
                                                   cuda_device(0, "Tesla P100", 6, 0),
                                                   cuda_device(1, "Tesla V100", 7, 0),
                                                   cuda_device(2, "Tesla T4", 7, 5),
                                                   cuda_device(3, "NVIDIA A100-SXM4-40GB", 8, 0),
                                                   cuda_device(4, "NVIDIA RTX A6000", 8, 6),
                                                   cuda_device(5, "NVIDIA H200", 9, 0)};
    int refusals = 0;
    for (const char* version : {"1.13.1", "2.0.0", "2.11.0", ""}) {
      core::RuntimeInfo runtime;
      runtime.libtorch = version;
      ui::DeviceSelector selector;
      selector.set_devices(devices, runtime, "cpu");
      compare_with_factory(
          selector, devices,
          [&](core::Precision precision, const core::DeviceInfo& device) {
            const bool ok = gpu::check_precision_supported(precision, device, runtime).ok();
            refusals += ok ? 0 : 1;
            return ok;
          },
          QStringLiteral("LibTorch '%1'").arg(version));
    }
    // Not vacuous: tf32 is refused on the CPU and below 8.0 (4 devices), fp16 on the CPU with LibTorch 1.x or an
    // unknown version; everything else is accepted.
    QCOMPARE(refusals, 4 * 4 + 2);
  }

  void the_real_factory_refuses_exactly_what_the_selector_disables() {
    std::unique_ptr<core::TrackerFactory> factory = gpu::make_tracker_factory({});
    const std::vector<core::DeviceInfo> devices = factory->devices();
    QVERIFY(!devices.empty());
    QVERIFY(factory->runtime() == gpu::runtime_versions());
    ui::DeviceSelector selector;
    selector.set_devices(devices, factory->runtime(), devices.front().id);
    compare_with_factory(
        selector, devices,
        [&](core::Precision precision, const core::DeviceInfo& device) {
          core::TrackerOptions options;
          options.model = "/nonexistent/trackscope-precision-gating.safetensors";  // fails after the checks
          options.device = device.id;
          options.precision = precision;
          const core::Status status = factory->create(options).status();
          if (status.code() != core::StatusCode::unsupported) {
            // Accepted: the precision check passed and the missing weights file stopped it.
            if (status.code() != core::StatusCode::not_found) qWarning("%s", status.message().c_str());
            return status.code() == core::StatusCode::not_found;
          }
          return false;
        },
        QStringLiteral("the real factory"));
  }
};

QTEST_MAIN(PrecisionGatingTest)
#include "precision_gating_test.moc"
