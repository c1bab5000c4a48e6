#pragma once
// Device discovery for the tracker (torch-free header: ui/ and app/ may include it).
//
//   for (const auto& d : gpu::list_devices()) log::info("{}: {}", d.id, d.name);
//   Expected<DeviceDescription> device = gpu::resolve_device("auto");   // first CUDA device, else the CPU
//
// Threads: safe from any thread. The CUDA runtime is initialised on first use; a machine without a driver
// (any CUDA error) simply has no CUDA devices.

#include <cstdint>
#include <string>
#include <vector>

#include "core/tracking/point_tracker.h"

namespace trackscope::gpu {

/// The CPU first, then every CUDA device LibTorch can use. Logs each device once per process.
std::vector<core::DeviceDescription> list_devices();

/// "auto" -> the first CUDA device, or the CPU with one clear log line; "cuda" -> "cuda:0"; "cpu"; "cuda:N".
/// not_found when the device does not exist (with the list of those that do).
core::Expected<core::DeviceDescription> resolve_device(const std::string& id);

/// Peak bytes LibTorch's caching allocator held on CUDA device "cuda:N" since the last reset (0 for the CPU or
/// without CUDA support in this build), and the reset. For the CPU, a process's peak RSS is what there is.
int64_t peak_device_memory_bytes(const std::string& device_id);
void reset_peak_device_memory(const std::string& device_id);

/// Versions of the runtime pieces, for bench reports: "libtorch", "cuda_runtime", "cudnn", "driver".
struct RuntimeVersions {
  std::string libtorch;
  std::string cuda_runtime;  // empty without CUDA
  std::string cudnn;
  std::string driver;
  bool cuda_compiled = false;     // LibTorch was built with CUDA
  bool kernels_compiled = false;  // Trackscope's own CUDA kernels are in this build
};
RuntimeVersions runtime_versions();

}  // namespace trackscope::gpu
