// NVML telemetry loaded at run time: against a fake libnvidia-ml (always), a missing library and driver (no
// crash, "no telemetry"), and the real driver when there is one.
#include <gtest/gtest.h>

#include <cstdlib>

#include "gpu/telemetry_nvml.h"

namespace trackscope::gpu {
namespace {

TEST(NvmlTelemetry, ReadsEveryFieldThroughTheFakeLibrary) {
  NvmlTelemetryOptions options;
  options.library = FAKE_NVML_PATH;
  auto source = open_nvml_telemetry(options);
  ASSERT_TRUE(source) << source.status().message();
  EXPECT_EQ((*source)->description(), "NVML: Fake GPU 9000 (driver 999.1)");
  auto sample = (*source)->sample();
  ASSERT_TRUE(sample) << sample.status().message();
  EXPECT_DOUBLE_EQ(*sample->sm_clock_mhz, 1410);
  EXPECT_DOUBLE_EQ(*sample->memory_clock_mhz, 1593);
  EXPECT_DOUBLE_EQ(*sample->sm_clock_max_mhz, 1980);
  EXPECT_DOUBLE_EQ(*sample->power_w, 312.5);  // milliwatts -> watts
  EXPECT_DOUBLE_EQ(*sample->power_limit_w, 700.0);
  EXPECT_DOUBLE_EQ(*sample->temperature_c, 71);
  EXPECT_DOUBLE_EQ(*sample->gpu_utilisation_percent, 99);
  EXPECT_DOUBLE_EQ(*sample->memory_utilisation_percent, 42);
  EXPECT_EQ(*sample->memory_used_bytes, 2'500'000'000);
  EXPECT_EQ(*sample->memory_total_bytes, 150'000'000'000);
  EXPECT_EQ(sample->throttle_reason_names, (std::vector<std::string>{"sw_power_cap", "sw_thermal_slowdown"}));
  EXPECT_FALSE(sample->pcie_generation);  // NOT_SUPPORTED stays unset
  EXPECT_EQ(*sample->pcie_width, 16);
  EXPECT_FALSE(sample->cpu_utilisation_percent);
}

TEST(NvmlTelemetry, SelectsTheDeviceByPciBusId) {
  NvmlTelemetryOptions options;
  options.library = FAKE_NVML_PATH;
  options.pci_bus_id = "0000:19:00.0";
  EXPECT_TRUE(open_nvml_telemetry(options));
  options.pci_bus_id = "0000:c1:00.0";
  auto missing = open_nvml_telemetry(options);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.status().message().find("0000:c1:00.0"), std::string::npos);
  options.pci_bus_id.clear();
  options.nvml_index = 3;
  EXPECT_EQ(open_nvml_telemetry(options).status().code(), core::StatusCode::unsupported);
}

TEST(NvmlTelemetry, NoLibraryOrNoDriverIsNoTelemetryNotACrash) {
  NvmlTelemetryOptions options;
  options.library = "libnvidia-ml-does-not-exist.so.1";
  auto none = open_nvml_telemetry(options);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.status().code(), core::StatusCode::unsupported);
  EXPECT_NE(none.status().message().find("not found"), std::string::npos);
  auto sampler = core::TelemetrySampler::create({}, std::move(none));
  ASSERT_TRUE(sampler);
  EXPECT_FALSE((*sampler)->snapshot().available);
  EXPECT_EQ((*sampler)->snapshot().status.rfind("no telemetry: ", 0), 0u);

  setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  options.library = FAKE_NVML_PATH;
  auto no_driver = open_nvml_telemetry(options);
  unsetenv("FAKE_NVML_INIT_ERROR");
  ASSERT_FALSE(no_driver);
  EXPECT_NE(no_driver.status().message().find("Driver Not Loaded"), std::string::npos) << no_driver.status().message();
}

TEST(NvmlTelemetry, CpuDeviceUsesProcStat) {
  core::DeviceInfo cpu{"cpu", "CPU", 2, 0, 0, 0};
  auto source = open_device_telemetry(cpu);
  ASSERT_TRUE(source) << source.status().message();
  EXPECT_NE((*source)->description().find("CPU"), std::string::npos);
}

TEST(NvmlTelemetry, RealDriverWhenPresent) {
  auto source = open_nvml_telemetry();
  if (!source) GTEST_SKIP() << "no NVIDIA driver here: " << source.status().message();
  auto sample = (*source)->sample();
  ASSERT_TRUE(sample) << sample.status().message();
  ASSERT_TRUE(sample->sm_clock_mhz);
  EXPECT_GT(*sample->sm_clock_mhz, 0.0);
  ASSERT_TRUE(sample->memory_total_bytes);
  EXPECT_GT(*sample->memory_total_bytes, 1'000'000'000);
  if (sample->temperature_c) {
    EXPECT_GT(*sample->temperature_c, 0.0);
    EXPECT_LT(*sample->temperature_c, 120.0);
  }
}

}  // namespace
}  // namespace trackscope::gpu
