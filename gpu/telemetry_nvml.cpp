#include "gpu/telemetry_nvml.h"

#include <dlfcn.h>

#include <cstdio>

#include <fmt/format.h>

#include "gpu/cuda_runtime_probe.h"

namespace trackscope::gpu {

namespace {

// The few NVML declarations used here (nvml.h, stable C ABI). Return codes: 0 = NVML_SUCCESS.
using nvmlReturn_t = int;  // NOLINT(readability-identifier-naming): nvml.h's name
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;  // NOLINT(readability-identifier-naming): nvml.h's name
struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kClockSm = 1;         // NVML_CLOCK_SM
constexpr int kClockMemory = 2;     // NVML_CLOCK_MEM
constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU

struct NvmlApi {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*handle_by_pci_bus_id)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned int*) = nullptr;        // mW
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned int*) = nullptr;  // mW
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*utilisation)(nvmlDevice_t, NvmlUtilization*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, NvmlMemory*) = nullptr;
  nvmlReturn_t (*throttle_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*pcie_generation)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*pcie_width)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned int) = nullptr;
};

template <typename F>
void bind(void* library, F& function, std::initializer_list<const char*> names) {
  for (const char* symbol : names) {
    if (void* address = dlsym(library, symbol)) {
      function = reinterpret_cast<F>(address);
      return;
    }
  }
}

class NvmlSource final : public core::TelemetrySource {
 public:
  NvmlSource(void* library, const NvmlApi& api, nvmlDevice_t device, std::string description)
      : library_(library), api_(api), device_(device), description_(std::move(description)) {}
  ~NvmlSource() override {
    api_.shutdown();
    dlclose(library_);
  }
  NvmlSource(const NvmlSource&) = delete;
  NvmlSource& operator=(const NvmlSource&) = delete;

  std::string description() const override { return description_; }

  core::Expected<core::TelemetrySample> sample() override {
    core::TelemetrySample s;
    int answered = 0;
    unsigned int value = 0;
    auto ok = [&answered](nvmlReturn_t result) { return result == kNvmlSuccess ? (++answered, true) : false; };
    if (api_.clock && ok(api_.clock(device_, kClockSm, &value))) s.sm_clock_mhz = value;
    if (api_.clock && ok(api_.clock(device_, kClockMemory, &value))) s.memory_clock_mhz = value;
    if (api_.max_clock && ok(api_.max_clock(device_, kClockSm, &value))) s.sm_clock_max_mhz = value;
    if (api_.power && ok(api_.power(device_, &value))) s.power_w = value / 1000.0;
    if (api_.power_limit && ok(api_.power_limit(device_, &value))) s.power_limit_w = value / 1000.0;
    if (api_.temperature && ok(api_.temperature(device_, kTemperatureGpu, &value))) s.temperature_c = value;
    NvmlUtilization utilisation{};
    if (api_.utilisation && ok(api_.utilisation(device_, &utilisation))) {
      s.gpu_utilisation_percent = utilisation.gpu;
      s.memory_utilisation_percent = utilisation.memory;
    }
    NvmlMemory memory{};
    if (api_.memory && ok(api_.memory(device_, &memory))) {
      s.memory_used_bytes = static_cast<int64_t>(memory.used);
      s.memory_total_bytes = static_cast<int64_t>(memory.total);
    }
    unsigned long long reasons = 0;
    if (api_.throttle_reasons && ok(api_.throttle_reasons(device_, &reasons))) {
      s.throttle_reasons = reasons;
      s.throttle_reason_names = core::decode_throttle_reasons(reasons);
    }
    if (api_.pcie_generation && ok(api_.pcie_generation(device_, &value))) s.pcie_generation = static_cast<int>(value);
    if (api_.pcie_width && ok(api_.pcie_width(device_, &value))) s.pcie_width = static_cast<int>(value);
    if (answered == 0) return core::io_error("NVML answered none of the telemetry queries (device lost or reset?)");
    return s;
  }

 private:
  void* library_;
  NvmlApi api_;
  nvmlDevice_t device_;
  std::string description_;
};

}  // namespace

core::Expected<std::unique_ptr<core::TelemetrySource>> open_nvml_telemetry(const NvmlTelemetryOptions& options) {
  void* library = dlopen(options.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = dlerror();  // NOLINT(concurrency-mt-unsafe): glibc keeps dlerror's state per thread
    return core::unsupported(
        fmt::format("NVIDIA driver library {} not found ({}): install the NVIDIA driver for GPU telemetry",
                    options.library, why ? why : "dlopen failed"));
  }
  NvmlApi api;
  bind(library, api.init, {"nvmlInit_v2", "nvmlInit"});
  bind(library, api.shutdown, {"nvmlShutdown"});
  bind(library, api.error_string, {"nvmlErrorString"});
  bind(library, api.handle_by_index, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  bind(library, api.handle_by_pci_bus_id, {"nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId"});
  bind(library, api.name, {"nvmlDeviceGetName"});
  bind(library, api.clock, {"nvmlDeviceGetClockInfo"});
  bind(library, api.max_clock, {"nvmlDeviceGetMaxClockInfo"});
  bind(library, api.power, {"nvmlDeviceGetPowerUsage"});
  bind(library, api.power_limit, {"nvmlDeviceGetEnforcedPowerLimit"});
  bind(library, api.temperature, {"nvmlDeviceGetTemperature"});
  bind(library, api.utilisation, {"nvmlDeviceGetUtilizationRates"});
  bind(library, api.memory, {"nvmlDeviceGetMemoryInfo"});
  // Renamed "clocks event reasons" in recent drivers; same bits.
  bind(library, api.throttle_reasons,
       {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  bind(library, api.pcie_generation, {"nvmlDeviceGetCurrPcieLinkGeneration"});
  bind(library, api.pcie_width, {"nvmlDeviceGetCurrPcieLinkWidth"});
  bind(library, api.driver_version, {"nvmlSystemGetDriverVersion"});
  if (!api.init || !api.shutdown || !api.handle_by_index) {
    dlclose(library);
    return core::unsupported(
        fmt::format("{} lacks nvmlInit/nvmlDeviceGetHandleByIndex: not a usable NVML library", options.library));
  }
  auto error_text = [&api](nvmlReturn_t code) {
    return api.error_string ? fmt::format("{} (NVML error {})", api.error_string(code), code)
                            : fmt::format("NVML error {}", code);
  };
  if (const nvmlReturn_t result = api.init(); result != kNvmlSuccess) {
    const std::string text = error_text(result);
    dlclose(library);
    return core::unsupported(fmt::format("NVML could not start: {}; is the NVIDIA driver loaded?", text));
  }
  nvmlDevice_t device = nullptr;
  nvmlReturn_t result = kNvmlSuccess;
  std::string which;
  if (!options.pci_bus_id.empty() && api.handle_by_pci_bus_id) {
    result = api.handle_by_pci_bus_id(options.pci_bus_id.c_str(), &device);
    which = "PCI bus id " + options.pci_bus_id;
  } else {
    result = options.nvml_index < 0 ? 2 /* NVML_ERROR_INVALID_ARGUMENT */
                                    : api.handle_by_index(static_cast<unsigned int>(options.nvml_index), &device);
    which = fmt::format("index {}", options.nvml_index);
  }
  if (result != kNvmlSuccess) {
    const std::string text = error_text(result);
    api.shutdown();
    dlclose(library);
    return core::unsupported(fmt::format("NVML has no device at {}: {}", which, text));
  }
  char name[96] = {};
  if (!api.name || api.name(device, name, sizeof name) != kNvmlSuccess)
    std::snprintf(name, sizeof name, "device %s", which.c_str());
  char driver[96] = {};
  std::string description = fmt::format("NVML: {}", name);
  if (api.driver_version && api.driver_version(driver, sizeof driver) == kNvmlSuccess)
    description += fmt::format(" (driver {})", driver);
  return std::unique_ptr<core::TelemetrySource>(std::make_unique<NvmlSource>(library, api, device, description));
}

core::Expected<std::unique_ptr<core::TelemetrySource>> open_device_telemetry(const core::DeviceInfo& device) {
  if (!device.is_cuda()) return core::open_cpu_telemetry();
  NvmlTelemetryOptions options;
  const int cuda_index = device.device_id()->cuda_index();  // is_cuda(): a parsed "cuda:N"
  for (const CudaDeviceProperties& props : probe_cuda_devices()) {
    if (props.index == cuda_index) options.pci_bus_id = props.pci_bus_id;
  }
  if (options.pci_bus_id.empty()) options.nvml_index = cuda_index;  // without CUDA's bus id, assume the same order
  return open_nvml_telemetry(options);
}

}  // namespace trackscope::gpu
