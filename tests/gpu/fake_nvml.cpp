// A stand-in for libnvidia-ml.so.1 with fixed readings, so that the dlopen path of gpu/telemetry_nvml.cpp is
// tested on machines without the NVIDIA driver. FAKE_NVML_INIT_ERROR=<code> makes nvmlInit fail with that code.
#include <cstdlib>
#include <cstring>

extern "C" {

struct nvmlDevice_st {
  int index;
};
static nvmlDevice_st device0{0};
static int init_count = 0;

int nvmlInit_v2() {
  if (const char* error = std::getenv("FAKE_NVML_INIT_ERROR")) return std::atoi(error);
  ++init_count;
  return 0;
}
int nvmlShutdown() {
  --init_count;
  return 0;
}
const char* nvmlErrorString(int code) { return code == 9 ? "Driver Not Loaded" : "Unknown Error"; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_st** device) {
  if (init_count <= 0) return 1;  // NVML_ERROR_UNINITIALIZED
  if (index != 0) return 2;       // NVML_ERROR_INVALID_ARGUMENT
  *device = &device0;
  return 0;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvmlDevice_st** device) {
  if (std::strcmp(bus_id, "00000000:19:00.0") != 0 && std::strcmp(bus_id, "0000:19:00.0") != 0) return 6;  // NOT_FOUND
  *device = &device0;
  return 0;
}
int nvmlDeviceGetName(nvmlDevice_st*, char* name, unsigned int length) {
  std::strncpy(name, "Fake GPU 9000", length);
  return 0;
}
int nvmlDeviceGetClockInfo(nvmlDevice_st*, int type, unsigned int* mhz) {
  *mhz = type == 1 ? 1410 : type == 2 ? 1593 : 1400;
  return 0;
}
int nvmlDeviceGetMaxClockInfo(nvmlDevice_st*, int type, unsigned int* mhz) {
  *mhz = type == 1 ? 1980 : 2619;
  return 0;
}
int nvmlDeviceGetPowerUsage(nvmlDevice_st*, unsigned int* milliwatts) {
  *milliwatts = 312500;
  return 0;
}
int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_st*, unsigned int* milliwatts) {
  *milliwatts = 700000;
  return 0;
}
int nvmlDeviceGetTemperature(nvmlDevice_st*, int, unsigned int* celsius) {
  *celsius = 71;
  return 0;
}
struct Utilization {
  unsigned int gpu, memory;
};
int nvmlDeviceGetUtilizationRates(nvmlDevice_st*, Utilization* u) {
  u->gpu = 99;
  u->memory = 42;
  return 0;
}
struct Memory {
  unsigned long long total, free, used;
};
int nvmlDeviceGetMemoryInfo(nvmlDevice_st*, Memory* m) {
  m->total = 150'000'000'000ull;
  m->used = 2'500'000'000ull;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_st*, unsigned long long* reasons) {
  *reasons = 0x4 | 0x20;  // sw_power_cap | sw_thermal_slowdown
  return 0;
}
int nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_st*, unsigned int*) { return 3; }  // NOT_SUPPORTED
int nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_st*, unsigned int* width) {
  *width = 16;
  return 0;
}
int nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  std::strncpy(version, "999.1", length);
  return 0;
}
}
