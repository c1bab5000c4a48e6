#pragma once
// Thin wrapper over the CUDA runtime's device queries (no torch, no CUDA types in this header).
// Built against cudart when TRACKSCOPE_WITH_CUDA is on; otherwise it reports no devices.
// Any CUDA error (no driver: error 35 "insufficient driver") means "no GPU", never a crash.

#include <cstdint>
#include <string>
#include <vector>

#include "core/tracking/device.h"

namespace trackscope::gpu {

struct CudaDeviceProperties {
  int index = 0;
  std::string name;
  int multiprocessors = 0;
  int64_t memory_bytes = 0;
  int major = 0;
  int minor = 0;
  int64_t l2_cache_bytes = 0;
  int clock_khz = 0;  // peak SM clock
  int memory_clock_khz = 0;
  int memory_bus_width_bits = 0;
  std::string pci_bus_id;
};

std::vector<CudaDeviceProperties> probe_cuda_devices();
/// Sets runtime.cuda_runtime ("13.0") and runtime.driver (the highest CUDA version the driver supports); leaves
/// them empty without CUDA.
void probe_cuda_versions(core::RuntimeInfo& runtime);

}  // namespace trackscope::gpu
