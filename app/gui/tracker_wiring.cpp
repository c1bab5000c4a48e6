#include "app/gui/tracker_wiring.h"

#include "core/limits.h"
#include "core/log.h"
#include "gpu/cpu_runtime.h"
#include "gpu/devices.h"
#include "gpu/telemetry_nvml.h"
#include "gpu/tracker_factory.h"

namespace trackscope::app {

// The GUI's tracker: the LocoTrack factory of gpu/. ui/ talks to it only through core::TrackerFactory /
// core::PointTracker. The CPU path keeps freed host memory mapped (gpu/cpu_runtime.h: large tensors would
// otherwise be page-faulted in again on every chunk).
std::unique_ptr<core::TrackerFactory> make_gui_tracker_factory() {
  if (!gpu::keep_freed_host_memory()) core::log::warn("could not tune the host allocator for CPU tracking");
  // Debian's LibTorch starts with one intra-op thread; a desktop user tracking on the CPU wants every core
  // (core::automatic_cpu_threads(): the CPUs this process may run on, or OMP_NUM_THREADS, as the CLI does).
  const int cores = core::automatic_cpu_threads();
  if (cores > 1) core::log::info("CPU tracking uses {} threads", gpu::set_cpu_threads(cores));
  return gpu::make_tracker_factory({});
}

ui::TelemetrySourceFactory make_gui_telemetry_factory() {
  return [](const std::string& device_id) -> core::Expected<std::unique_ptr<core::TelemetrySource>> {
    core::Expected<core::DeviceInfo> device = gpu::resolve_device(device_id);
    if (!device) return device.status();
    return gpu::open_device_telemetry(*device);
  };
}

}  // namespace trackscope::app
