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

namespace trackscope::gpu {

std::vector<core::DeviceDescription> list_devices() {
  std::vector<core::DeviceDescription> devices;
  core::DeviceDescription cpu;
  cpu.id = "cpu";
  cpu.multiprocessors = at::get_num_threads();
  cpu.name = fmt::format("CPU ({} threads)", cpu.multiprocessors);
  devices.push_back(cpu);

  if (at::hasCUDA()) {
    for (const CudaDeviceProperties& props : probe_cuda_devices()) {
      core::DeviceDescription d;
      d.id = fmt::format("cuda:{}", props.index);
      d.name = props.name;
      d.multiprocessors = props.multiprocessors;
      d.memory_bytes = props.memory_bytes;
      d.compute_capability_major = props.major;
      d.compute_capability_minor = props.minor;
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

core::Expected<core::DeviceDescription> resolve_device(const std::string& id) {
  std::vector<core::DeviceDescription> devices = list_devices();
  if (id == "auto") {
    if (devices.size() > 1) return devices[1];
    core::log::info("no CUDA device available: tracking on the CPU");
    return devices[0];
  }
  const std::string wanted = id == "cuda" ? "cuda:0" : id;
  for (const auto& d : devices) {
    if (d.id == wanted) return d;
  }
  std::string known;
  for (const auto& d : devices) known += (known.empty() ? "" : ", ") + d.id;
  return core::not_found(fmt::format("device '{}' does not exist here (available: {})", id, known));
}

namespace {
int cuda_index_of(const std::string& device_id) {
  if (device_id.rfind("cuda:", 0) != 0) return -1;
  return std::atoi(device_id.c_str() + 5);
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

RuntimeVersions runtime_versions() {
  RuntimeVersions v;
  v.libtorch = TORCH_VERSION;
  v.cuda_compiled = at::hasCUDA();
  CudaRuntimeVersions cuda = probe_cuda_versions();
  v.cuda_runtime = cuda.runtime;
  v.driver = cuda.driver;
  if (at::hasCUDA() && at::globalContext().hasCuDNN()) {
    const long version = at::globalContext().versionCuDNN();
    v.cudnn = fmt::format("{}.{}.{}", version / 10000 ? version / 10000 : version / 1000,
                          version / 10000 ? (version / 100) % 100 : (version % 1000) / 100, version % 100);
  }
#ifdef TRACKSCOPE_WITH_CUDA_KERNELS
  v.kernels_compiled = true;
#endif
  return v;
}

}  // namespace trackscope::gpu
