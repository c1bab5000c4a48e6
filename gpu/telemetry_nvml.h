#pragma once
// GPU telemetry from NVML, loaded at run time with dlopen("libnvidia-ml.so.1"): no NVML headers or link-time
// dependency, so a machine without the NVIDIA driver builds and runs, and simply has "no telemetry".
// Torch-free (ui/ and app/ may include it).
//
//   auto sampler = core::TelemetrySampler::create({}, gpu::open_device_telemetry(device));   // cuda:N or cpu
//   (*sampler)->start();   // the sampler thread calls sample(); the GUI pulls snapshots at 10 Hz
//
// Threads: a source is used by one thread at a time (the sampler's). Opening one calls nvmlInit, closing it
// nvmlShutdown (NVML counts these), so several sources may coexist.

#include <memory>
#include <string>

#include "core/perf/telemetry.h"
#include "core/tracking/point_tracker.h"

namespace trackscope::gpu {

struct NvmlTelemetryOptions {
  std::string library = "libnvidia-ml.so.1";  // dlopen name or path (tests load a fake NVML)
  int nvml_index = 0;                         // NVML device index, used when pci_bus_id is empty
  std::string pci_bus_id;                     // "0000:19:00.0": CUDA and NVML may number devices differently
};

/// unsupported with a reason a user can act on when the library, the driver or the device is missing; never
/// crashes. Fields the device does not report (NVML_ERROR_NOT_SUPPORTED) stay unset in the samples.
core::Expected<std::unique_ptr<core::TelemetrySource>> open_nvml_telemetry(const NvmlTelemetryOptions& options = {});

/// The telemetry of a tracker device: NVML for "cuda:N" (matched through the PCI bus id of CUDA device N), the
/// /proc/stat source for "cpu".
core::Expected<std::unique_ptr<core::TelemetrySource>> open_device_telemetry(const core::DeviceInfo& device);

}  // namespace trackscope::gpu
