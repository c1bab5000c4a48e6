// Telemetry: throttle-reason decoding, summaries, the /proc/stat CPU source and the sampler's ring buffer and thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/perf/telemetry.h"

namespace trackscope::core {
namespace {

namespace fs = std::filesystem;

fs::path output_dir() {
  const fs::path dir = fs::path(TRACKSCOPE_TEST_OUTPUT_DIR) / "perf_telemetry";
  fs::create_directories(dir);
  return dir;
}

TEST(ThrottleReasons, DecodeAndEncode) {
  const uint64_t mask = throttle_reason::sw_power_cap | throttle_reason::hw_thermal_slowdown | (uint64_t{1} << 12);
  const std::vector<std::string> names = decode_throttle_reasons(mask);
  EXPECT_EQ(names, (std::vector<std::string>{"sw_power_cap", "hw_thermal_slowdown", "bit_12"}));
  EXPECT_EQ(encode_throttle_reasons(names), mask & ~(uint64_t{1} << 12));
  EXPECT_TRUE(decode_throttle_reasons(0).empty());
  EXPECT_FALSE(throttle_reason::performance_limiting & throttle_reason::gpu_idle);
}

TEST(TelemetrySummary, MediansExtremesAndReasons) {
  std::vector<TelemetrySample> samples(5);
  const double clocks[] = {1980, 1410, 1755, 1980, 1200};
  for (size_t i = 0; i < samples.size(); ++i) {
    samples[i].sm_clock_mhz = clocks[i];
    samples[i].power_w = 100.0 * static_cast<double>(i + 1);
    samples[i].temperature_c = 50.0 + static_cast<double>(i);
    samples[i].memory_used_bytes = 1000 * static_cast<int64_t>(i);
  }
  samples[1].throttle_reasons = throttle_reason::sw_power_cap;
  samples[3].throttle_reasons = throttle_reason::gpu_idle;
  samples[4].pcie_generation = 4;
  const TelemetrySummary s = summarize_telemetry(samples);
  EXPECT_EQ(s.samples, 5);
  EXPECT_DOUBLE_EQ(*s.sm_clock_min_mhz, 1200);
  EXPECT_DOUBLE_EQ(*s.sm_clock_median_mhz, 1755);
  EXPECT_DOUBLE_EQ(*s.power_median_w, 300);
  EXPECT_DOUBLE_EQ(*s.power_max_w, 500);
  EXPECT_DOUBLE_EQ(*s.temperature_max_c, 54);
  EXPECT_EQ(*s.memory_used_max_bytes, 4000);
  EXPECT_EQ(*s.pcie_generation, 4);
  EXPECT_FALSE(s.memory_clock_median_mhz);  // never reported
  EXPECT_EQ(s.throttle_reasons_seen, throttle_reason::sw_power_cap | throttle_reason::gpu_idle);
  EXPECT_EQ(s.throttle_reasons_seen_names, (std::vector<std::string>{"gpu_idle", "sw_power_cap"}));
}

TEST(CpuTelemetry, UtilisationFromProcStatDeltas) {
  const fs::path stat = output_dir() / "stat";
  std::ofstream(stat) << "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 50 0 50 400 0 0 0 0 0 0\nintr 1\n";
  Expected<std::unique_ptr<TelemetrySource>> source = open_cpu_telemetry(stat.string());
  ASSERT_TRUE(source) << source.status().message();
  Expected<TelemetrySample> first = (*source)->sample();
  ASSERT_TRUE(first);
  EXPECT_FALSE(first->cpu_utilisation_percent);  // needs two readings
  EXPECT_GT(*first->cpu_threads, 0);
  EXPECT_FALSE(first->sm_clock_mhz);
  // +100 user, +100 system, +150 idle, +50 iowait: 200 busy of 400.
  std::ofstream(stat) << "cpu  200 0 200 950 50 0 0 0 0 0\n";
  Expected<TelemetrySample> second = (*source)->sample();
  ASSERT_TRUE(second);
  EXPECT_DOUBLE_EQ(*second->cpu_utilisation_percent, 50.0);
  std::ofstream(stat) << "garbage\n";
  EXPECT_EQ((*source)->sample().status().code(), StatusCode::corrupt_data);
  EXPECT_EQ(open_cpu_telemetry((output_dir() / "missing").string()).status().code(), StatusCode::not_found);
}

TEST(CpuTelemetry, RealProcStatAndHost) {
  Expected<std::unique_ptr<TelemetrySource>> source = open_cpu_telemetry();
  ASSERT_TRUE(source) << source.status().message();
  ASSERT_TRUE((*source)->sample());
  const HostInfo host = probe_host_info();
  EXPECT_GT(host.threads, 0);
  EXPECT_FALSE(host.cpu_model.empty());
}

// Counts its readings; optionally fails every other one.
class CountingSource final : public TelemetrySource {
 public:
  explicit CountingSource(bool fail_odd = false) : fail_odd_(fail_odd) {}
  std::string description() const override { return "counting source"; }
  Expected<TelemetrySample> sample() override {
    const int n = count_++;
    if (fail_odd_ && n % 2 == 1) return io_error("odd reading failed");
    TelemetrySample s;
    s.sm_clock_mhz = 1000.0 + n;
    return s;
  }
  std::atomic<int> count_{0};

 private:
  bool fail_odd_;
};

template <typename Predicate>
bool wait_for(Predicate predicate) {
  for (int i = 0; i < 500 && !predicate(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return predicate();
}

TEST(TelemetrySampler, RingBufferSnapshotsAndStop) {
  TelemetrySamplerOptions options;
  options.interval_ms = 10;
  options.capacity = 3;
  auto sampler =
      TelemetrySampler::create(options, std::unique_ptr<TelemetrySource>(std::make_unique<CountingSource>()));
  ASSERT_TRUE(sampler);
  TelemetrySampler& s = **sampler;
  EXPECT_FALSE(s.running());
  s.start();
  s.start();  // no second thread
  EXPECT_TRUE(s.running());
  ASSERT_TRUE(wait_for([&] { return s.snapshot().total_samples >= 5; }));
  s.stop();
  EXPECT_FALSE(s.running());
  const TelemetrySnapshot snapshot = s.snapshot();
  EXPECT_TRUE(snapshot.available);
  EXPECT_EQ(snapshot.status, "counting source");
  ASSERT_EQ(snapshot.samples.size(), 3u);  // the ring keeps the newest
  const uint64_t total = snapshot.total_samples;
  EXPECT_DOUBLE_EQ(*snapshot.latest()->sm_clock_mhz, 1000.0 + static_cast<double>(total - 1));
  for (size_t i = 1; i < snapshot.samples.size(); ++i) {
    EXPECT_GE(snapshot.samples[i].time_s, snapshot.samples[i - 1].time_s);
    EXPECT_GT(snapshot.samples[i].unix_ms, 0);
  }
  EXPECT_EQ(s.snapshot().total_samples, total);  // stopped: no more readings
  EXPECT_EQ(s.samples_since(snapshot.samples[1].time_s).size(), 2u);
  EXPECT_TRUE(s.samples_since(s.now_s() + 1.0).empty());
  s.clear();
  EXPECT_TRUE(s.snapshot().samples.empty());
}

TEST(TelemetrySampler, StopDoesNotWaitForTheNextInterval) {
  TelemetrySamplerOptions options;
  options.interval_ms = 60'000;
  auto sampler =
      TelemetrySampler::create(options, std::unique_ptr<TelemetrySource>(std::make_unique<CountingSource>()));
  ASSERT_TRUE(sampler);
  (*sampler)->start();
  ASSERT_TRUE(wait_for([&] { return (*sampler)->snapshot().total_samples >= 1; }));
  const auto before = std::chrono::steady_clock::now();
  sampler->reset();                                                                // the destructor stops and joins
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(10));  // not the 60 s interval
}

TEST(TelemetrySampler, ReportsFailedReadingsAndUnavailableSources) {
  TelemetrySamplerOptions options;
  options.interval_ms = 10;
  auto failing =
      TelemetrySampler::create(options, std::unique_ptr<TelemetrySource>(std::make_unique<CountingSource>(true)));
  ASSERT_TRUE(failing);
  (*failing)->start();
  ASSERT_TRUE(wait_for([&] { return (*failing)->snapshot().status.find("odd reading failed") != std::string::npos; }));
  (*failing)->stop();

  auto none = TelemetrySampler::create(
      {}, Expected<std::unique_ptr<TelemetrySource>>(unsupported("libnvidia-ml.so.1 not found")));
  ASSERT_TRUE(none);
  (*none)->start();
  EXPECT_FALSE((*none)->running());
  const TelemetrySnapshot snapshot = (*none)->snapshot();
  EXPECT_FALSE(snapshot.available);
  EXPECT_EQ(snapshot.status, "no telemetry: libnvidia-ml.so.1 not found");

  options.interval_ms = 0;
  EXPECT_EQ(TelemetrySampler::create(options, unsupported("x")).status().code(), StatusCode::invalid_argument);
}

}  // namespace
}  // namespace trackscope::core
