// DeviceId (the one parser and printer of device names), resolve_device, RuntimeInfo's LibTorch version and the
// precision support table by device kind, compute capability and LibTorch version.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/tracking/device.h"

namespace trackscope::core {
namespace {

DeviceInfo cuda_device(int index, const std::string& name, int major, int minor) {
  DeviceInfo d;
  d.id = DeviceId::cuda(index).to_string();
  d.name = name;
  d.compute_capability_major = major;
  d.compute_capability_minor = minor;
  return d;
}

DeviceInfo cpu_device() {
  DeviceInfo d;
  d.id = DeviceId::cpu().to_string();
  d.name = "CPU (2 threads)";
  return d;
}

RuntimeInfo libtorch(const std::string& version) {
  RuntimeInfo r;
  r.libtorch = version;
  return r;
}

TEST(DeviceId, ParsesAndPrintsEverySpelling) {
  EXPECT_EQ(DeviceId::parse("auto")->kind(), DeviceKind::automatic);
  EXPECT_EQ(*DeviceId::parse("cpu"), DeviceId::cpu());
  EXPECT_EQ(*DeviceId::parse("cuda"), DeviceId::cuda(0));
  EXPECT_EQ(*DeviceId::parse("cuda:12"), DeviceId::cuda(12));
  EXPECT_EQ(DeviceId::parse("cuda:12")->cuda_index(), 12);
  EXPECT_EQ(DeviceId::cpu().cuda_index(), -1);
  for (const char* text : {"auto", "cpu", "cuda:0", "cuda:7"}) EXPECT_EQ(DeviceId::parse(text)->to_string(), text);
  EXPECT_EQ(DeviceId::parse("cuda")->to_string(), "cuda:0");
  for (const char* bad : {"", "gpu", "CPU", "cuda:", "cuda:x", "cuda:-1", "cuda:1x", "cuda:+1", " cpu", "cuda0"}) {
    const Expected<DeviceId> parsed = DeviceId::parse(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.status().code(), StatusCode::invalid_argument) << bad;
    EXPECT_NE(parsed.status().message().find("cuda:N"), std::string::npos) << parsed.status().message();
  }
}

TEST(DeviceInfo, ParsesItsIdOnlyWhenItNamesADevice) {
  EXPECT_TRUE(cuda_device(3, "T4", 7, 5).is_cuda());
  EXPECT_EQ(cuda_device(3, "T4", 7, 5).device_id(), DeviceId::cuda(3));
  EXPECT_FALSE(cpu_device().is_cuda());
  DeviceInfo what_if;
  what_if.id = "what-if";  // a predicted profile's label
  EXPECT_FALSE(what_if.device_id());
  EXPECT_FALSE(what_if.is_cuda());
  what_if.id = "auto";  // a request, not a device
  EXPECT_FALSE(what_if.device_id());
}

TEST(ResolveDevice, AutomaticPicksTheFirstGpuElseTheCpu) {
  const std::vector<DeviceInfo> both = {cpu_device(), cuda_device(0, "A100", 8, 0), cuda_device(1, "T4", 7, 5)};
  EXPECT_EQ(resolve_device(DeviceId::automatic(), both)->id, "cuda:0");
  EXPECT_EQ(resolve_device(DeviceId::cuda(1), both)->name, "T4");
  EXPECT_EQ(resolve_device(DeviceId::cpu(), both)->id, "cpu");
  const std::vector<DeviceInfo> cpu_only = {cpu_device()};
  EXPECT_EQ(resolve_device(DeviceId::automatic(), cpu_only)->id, "cpu");
  const Expected<DeviceInfo> missing = resolve_device(DeviceId::cuda(7), both);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().code(), StatusCode::not_found);
  EXPECT_NE(missing.status().message().find("cuda:7"), std::string::npos);
  EXPECT_NE(missing.status().message().find("cpu, cuda:0, cuda:1"), std::string::npos) << missing.status().message();
}

TEST(RuntimeInfo, LibtorchMajor) {
  EXPECT_EQ(libtorch("1.13.1").libtorch_major(), 1);
  EXPECT_EQ(libtorch("2.11.0+cu130").libtorch_major(), 2);
  EXPECT_EQ(libtorch("").libtorch_major(), 0);
  EXPECT_EQ(libtorch("unknown").libtorch_major(), 0);
}

SupportLevel level(Precision p, const DeviceInfo& d, const RuntimeInfo& r) { return precision_support(p, d, r).level; }

TEST(PrecisionSupport, OnTheCpuByLibtorchVersion) {
  const DeviceInfo cpu = cpu_device();
  for (const char* version : {"1.13.1", "2.0.0", "2.11.0", ""}) {
    const RuntimeInfo r = libtorch(version);
    EXPECT_EQ(level(Precision::fp32, cpu, r), SupportLevel::supported) << version;
    EXPECT_EQ(level(Precision::tf32, cpu, r), SupportLevel::unsupported) << version;
    EXPECT_EQ(level(Precision::bf16, cpu, r), SupportLevel::slow) << version;
  }
  // bf16 on a CPU with bf16 arithmetic: the opt-in reduced-precision mode, with its measured fidelity.
  DeviceInfo bf16_cpu = cpu_device();
  bf16_cpu.cpu_bf16 = true;
  const PrecisionSupport fast = precision_support(Precision::bf16, bf16_cpu, libtorch("1.13.1"));
  EXPECT_EQ(fast.level, SupportLevel::supported);
  EXPECT_TRUE(fast.reason.empty());
  EXPECT_NE(fast.note.find("px mean from fp32"), std::string::npos) << fast.note;
  const PrecisionSupport plain = precision_support(Precision::bf16, cpu, libtorch("1.13.1"));
  EXPECT_NE(plain.reason.find("no bf16 arithmetic"), std::string::npos) << plain.reason;
  EXPECT_EQ(level(Precision::fp32, bf16_cpu, libtorch("1.13.1")), SupportLevel::supported);
  // fp16 on the CPU: no half-precision GEMM in LibTorch 1.x (the engine's rule); from 2.0 through conversions.
  EXPECT_EQ(level(Precision::fp16, cpu, libtorch("1.13.1")), SupportLevel::unsupported);
  EXPECT_EQ(level(Precision::fp16, cpu, libtorch("")), SupportLevel::unsupported);
  EXPECT_EQ(level(Precision::fp16, cpu, libtorch("2.0.0")), SupportLevel::emulated);
  EXPECT_EQ(level(Precision::fp16, cpu, libtorch("2.11.0")), SupportLevel::emulated);
  const PrecisionSupport old = precision_support(Precision::fp16, cpu, libtorch("1.13.1"));
  EXPECT_NE(old.reason.find("LibTorch 1.13.1"), std::string::npos) << old.reason;
  EXPECT_FALSE(old.usable());
}

TEST(PrecisionSupport, OnCudaByComputeCapability) {
  const RuntimeInfo r = libtorch("2.11.0");
  const DeviceInfo p100 = cuda_device(0, "Tesla P100", 6, 0);
  const DeviceInfo v100 = cuda_device(0, "Tesla V100", 7, 0);
  const DeviceInfo t4 = cuda_device(0, "Tesla T4", 7, 5);
  const DeviceInfo a100 = cuda_device(0, "NVIDIA A100-SXM4-40GB", 8, 0);
  const DeviceInfo h200 = cuda_device(0, "NVIDIA H200", 9, 0);
  for (const DeviceInfo& d : {p100, v100, t4, a100, h200}) {
    EXPECT_EQ(level(Precision::fp32, d, r), SupportLevel::supported) << d.name;
    const bool ampere = d.compute_capability() >= 80;
    EXPECT_EQ(level(Precision::tf32, d, r), ampere ? SupportLevel::supported : SupportLevel::unsupported) << d.name;
    EXPECT_EQ(level(Precision::bf16, d, r), ampere ? SupportLevel::supported : SupportLevel::emulated) << d.name;
    // fp16 below 7.0: no tensor cores, but it runs (the engine refuses nothing there).
    EXPECT_EQ(level(Precision::fp16, d, r), d.compute_capability() >= 70 ? SupportLevel::supported : SupportLevel::slow)
        << d.name;
  }
  const PrecisionSupport tf32 = precision_support(Precision::tf32, t4, r);
  EXPECT_NE(tf32.reason.find("8.0"), std::string::npos);
  EXPECT_NE(tf32.reason.find("7.5"), std::string::npos);
  EXPECT_NE(precision_support(Precision::bf16, t4, r).reason.find("emulated"), std::string::npos);
  EXPECT_TRUE(precision_support(Precision::bf16, a100, r).reason.empty());
  EXPECT_TRUE(precision_support(Precision::bf16, a100, r).note.empty());
  // The caveats cite the measured fidelity, not "not validated".
  EXPECT_NE(precision_support(Precision::fp16, h200, r).note.find("0.13 px"), std::string::npos);
  EXPECT_NE(precision_support(Precision::tf32, h200, r).note.find("bit-exact"), std::string::npos);
  // The LibTorch version does not matter on CUDA.
  for (Precision p : kAllPrecisions) EXPECT_EQ(level(p, t4, r), level(p, t4, libtorch("1.13.1")));
}

TEST(PrecisionSupport, TableAndCheckAgree) {
  const std::vector<DeviceInfo> devices = {cpu_device(), cuda_device(0, "P100", 6, 0), cuda_device(1, "T4", 7, 5),
                                           cuda_device(2, "H200", 9, 0)};
  for (const char* version : {"1.13.1", "2.11.0"}) {
    for (const DeviceInfo& d : devices) {
      const std::vector<PrecisionSupport> table = precision_support(d, libtorch(version));
      ASSERT_EQ(table.size(), 4u);
      for (size_t i = 0; i < table.size(); ++i) {
        EXPECT_EQ(table[i].precision, kAllPrecisions[i]);
        const Status check = check_precision(table[i].precision, d, libtorch(version));
        EXPECT_EQ(check.ok(), table[i].usable()) << d.name << " " << to_string(table[i].precision);
        if (!check.ok()) {
          EXPECT_EQ(check.code(), StatusCode::unsupported);
          EXPECT_NE(check.message().find(table[i].reason), std::string::npos) << check.message();
        }
        EXPECT_EQ(table[i].reason.empty(), table[i].level == SupportLevel::supported);
      }
    }
  }
}

}  // namespace
}  // namespace trackscope::core
