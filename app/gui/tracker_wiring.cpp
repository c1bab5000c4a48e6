#include "app/gui/tracker_wiring.h"

#include "core/log.h"
#include "gpu/devices.h"
#include "gpu/telemetry_nvml.h"

namespace trackscope::app {
namespace {

// Stands in for the LocoTrack factory until gpu/tracker_factory.h exists: it lists the real devices (so the
// device selector and the telemetry work) and explains, on Track, that this build has no tracker yet.
class TrackerNotBuiltFactory final : public core::TrackerFactory {
 public:
  std::vector<core::DeviceDescription> devices() const override { return gpu::list_devices(); }
  core::Expected<std::unique_ptr<core::PointTracker>> create(const core::TrackerOptions& /*options*/) override {
    return core::unsupported(
        "this build of Trackscope has no LocoTrack tracker yet (gpu/tracker_factory.h is not part of it)");
  }
};

}  // namespace

// ======================== WIRING POINT: the GUI's tracker ========================
// Once gpu/tracker_factory.h is in the tree, replace the body with
//     return gpu::make_tracker_factory(gpu::TrackerFactoryOptions{});
// (and #include "gpu/tracker_factory.h"). Nothing else in the GUI changes: ui/ talks to the tracker only
// through core::TrackerFactory / core::PointTracker.
std::unique_ptr<core::TrackerFactory> make_gui_tracker_factory() {
  core::log::warn("no LocoTrack tracker factory in this build: Track will explain that");
  return std::make_unique<TrackerNotBuiltFactory>();
}
// ================================================================================

ui::TelemetrySourceFactory make_gui_telemetry_factory() {
  return [](const std::string& device_id) -> core::Expected<std::unique_ptr<core::TelemetrySource>> {
    core::Expected<core::DeviceDescription> device = gpu::resolve_device(device_id);
    if (!device) return device.status();
    return gpu::open_device_telemetry(*device);
  };
}

}  // namespace trackscope::app
