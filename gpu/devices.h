#pragma once
// Device discovery for the tracker (torch-free header: ui/ and app/ may include it).
//
//   for (const auto& d : gpu::list_devices()) log::info("{}: {}", d.id, d.name);
//   Expected<DeviceInfo> device = gpu::resolve_device("auto");   // first CUDA device, else the CPU
//
// Threads: safe from any thread. The CUDA runtime is initialised on first use; a machine without a driver
// (any CUDA error) simply has no CUDA devices.

#include <cstdint>
#include <string>
#include <vector>

#include "core/tracking/point_tracker.h"

namespace trackscope::gpu {

/// The CPU first, then every CUDA device LibTorch can use (with clocks, L2 and PCI bus id). Logs each device once
/// per process.
std::vector<core::DeviceInfo> list_devices();

/// core::resolve_device over list_devices() for a request that DeviceId::parse reads ("auto" logs one clear line
/// when it falls back to the CPU). invalid_argument for an unknown spelling, not_found for a missing device.
core::Expected<core::DeviceInfo> resolve_device(const std::string& request);

/// Peak bytes LibTorch's caching allocator held on a CUDA device ("cuda:N", DeviceId::parse) since the last reset
/// (0 for the CPU, for anything else, or without CUDA support in this build), and the reset. For the CPU, a
/// process's peak RSS is what there is.
int64_t peak_device_memory_bytes(const std::string& device_id);
void reset_peak_device_memory(const std::string& device_id);

/// The runtime of this build: LibTorch, CUDA runtime, cuDNN and driver versions, whether LibTorch has CUDA and
/// whether Trackscope's CUDA kernels are built in.
core::RuntimeInfo runtime_versions();

}  // namespace trackscope::gpu
