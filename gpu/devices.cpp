#include "gpu/devices.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/version.h>

#include <fmt/format.h>

#include <cstdlib>
#include <mutex>

#include "core/log.h"
#include "gpu/cuda_runtime_probe.h"
#include "gpu/engine/cuda_support.h"
#include "gpu/ops/cpu/cpu_support.h"

namespace trackscope::gpu {

std::vector<core::DeviceInfo> list_devices() {
  std::vector<core::DeviceInfo> devices;
  core::DeviceInfo cpu;
  cpu.id = core::DeviceId::cpu().to_string();
  cpu.multiprocessors = at::get_num_threads();
  cpu.name = fmt::format("CPU ({} threads)", cpu.multiprocessors);
  cpu.cpu_bf16 = ops::detail::cpu_has_bf16_arithmetic();
  devices.push_back(cpu);

  if (at::hasCUDA()) {
    for (const CudaDeviceProperties& props : probe_cuda_devices()) {
      core::DeviceInfo d;
      d.id = core::DeviceId::cuda(props.index).to_string();
      d.name = props.name;
      d.multiprocessors = props.multiprocessors;
      d.memory_bytes = props.memory_bytes;
      d.compute_capability_major = props.major;
      d.compute_capability_minor = props.minor;
      d.sm_clock_max_mhz = props.clock_khz / 1000.0;
      d.memory_clock_max_mhz = props.memory_clock_khz / 1000.0;
      d.l2_cache_bytes = props.l2_cache_bytes;
      d.pci_bus_id = props.pci_bus_id;
      devices.push_back(d);
    }
  }
  static std::once_flag logged;
  std::call_once(logged, [&devices] {
    for (const auto& d : devices) {
      core::log::info("device {}: {} ({} SMs/threads, {:.1f} GiB, compute capability {}.{})", d.id, d.name,
                      d.multiprocessors, static_cast<double>(d.memory_bytes) / (1024.0 * 1024.0 * 1024.0),
                      d.compute_capability_major, d.compute_capability_minor);
    }
  });
  return devices;
}

core::Expected<core::DeviceInfo> resolve_device(const std::string& request) {
  core::Expected<core::DeviceId> id = core::DeviceId::parse(request);
  if (!id) return id.status();
  core::Expected<core::DeviceInfo> device = core::resolve_device(*id, list_devices());
  if (device && id->is_automatic() && !device->is_cuda())
    core::log::info("no CUDA device available: tracking on the CPU");
  return device;
}

namespace {
int cuda_index_of(const std::string& device_id) {
  const core::Expected<core::DeviceId> id = core::DeviceId::parse(device_id);
  return id && id->is_cuda() ? id->cuda_index() : -1;
}
}  // namespace

int64_t peak_device_memory_bytes(const std::string& device_id) {
  const int index = cuda_index_of(device_id);
  return index < 0 ? 0 : cuda_support::peak_allocated_bytes(index);
}

void reset_peak_device_memory(const std::string& device_id) {
  const int index = cuda_index_of(device_id);
  if (index >= 0) cuda_support::reset_peak_memory(index);
}

core::RuntimeInfo runtime_versions() {
  core::RuntimeInfo v;
  v.libtorch = TORCH_VERSION;
  v.torch_cuda = at::hasCUDA();
  probe_cuda_versions(v);
  if (at::hasCUDA() && at::globalContext().hasCuDNN()) {
    const long version = at::globalContext().versionCuDNN();
    v.cudnn = fmt::format("{}.{}.{}", version / 10000 ? version / 10000 : version / 1000,
                          version / 10000 ? (version / 100) % 100 : (version % 1000) / 100, version % 100);
  }
#ifdef TRACKSCOPE_WITH_CUDA_KERNELS
  v.trackscope_kernels = true;
#endif
  return v;
}

}  // namespace trackscope::gpu
