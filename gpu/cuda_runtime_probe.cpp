#include "gpu/cuda_runtime_probe.h"

#ifdef TRACKSCOPE_WITH_CUDA_KERNELS
#include <cuda_runtime_api.h>
#endif

namespace trackscope::gpu {

#ifdef TRACKSCOPE_WITH_CUDA_KERNELS
namespace {
std::string cuda_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}
}  // namespace

std::vector<CudaDeviceProperties> probe_cuda_devices() {
  std::vector<CudaDeviceProperties> devices;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return devices;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    CudaDeviceProperties d;
    d.index = i;
    d.name = prop.name;
    d.multiprocessors = prop.multiProcessorCount;
    d.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    d.major = prop.major;
    d.minor = prop.minor;
    d.l2_cache_bytes = prop.l2CacheSize;
    int value = 0;
    if (cudaDeviceGetAttribute(&value, cudaDevAttrClockRate, i) == cudaSuccess) d.clock_khz = value;
    if (cudaDeviceGetAttribute(&value, cudaDevAttrMemoryClockRate, i) == cudaSuccess) d.memory_clock_khz = value;
    if (cudaDeviceGetAttribute(&value, cudaDevAttrGlobalMemoryBusWidth, i) == cudaSuccess)
      d.memory_bus_width_bits = value;
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), i) == cudaSuccess) d.pci_bus_id = bus_id;
    devices.push_back(d);
  }
  return devices;
}

void probe_cuda_versions(core::RuntimeInfo& runtime) {
  int version = 0;
  if (cudaRuntimeGetVersion(&version) == cudaSuccess) runtime.cuda_runtime = cuda_version_string(version);
  if (cudaDriverGetVersion(&version) == cudaSuccess && version > 0) runtime.driver = cuda_version_string(version);
  cudaGetLastError();
}
#else
std::vector<CudaDeviceProperties> probe_cuda_devices() { return {}; }
void probe_cuda_versions(core::RuntimeInfo&) {}
#endif

}  // namespace trackscope::gpu
