#pragma once
// Device telemetry: clocks, power, temperature, utilisation, memory, clock-throttle reasons and PCIe link of the
// active GPU (NVML, gpu/telemetry_nvml.h), or thread count and utilisation of the CPU (/proc/stat), sampled on a
// thread at ~10 Hz into a ring buffer that the GUI and the bench read through a snapshot.
//
//   Expected<std::unique_ptr<TelemetrySource>> source = gpu::open_device_telemetry(device);   // NVML or /proc/stat
//   auto sampler = TelemetrySampler::create({}, std::move(source));    // an error source = "no telemetry: why"
//   (*sampler)->start();
//   ...                                                                 // GUI: a 10 Hz QTimer calls snapshot()
//   TelemetrySnapshot now = (*sampler)->snapshot();
//   TelemetrySummary during_run = summarize_telemetry((*sampler)->samples_since(run_start_s));
//   (*sampler)->stop();                                                 // also done by the destructor
//
// Threading contract: TelemetrySampler owns one sampling thread between start() and stop(); only that thread
// calls TelemetrySource::sample(). snapshot(), samples_since(), clear(), start() and stop() may be called from any
// thread; the ring buffer is guarded by a mutex held only to copy in or out (no callback, no signal per sample:
// readers pull). stop() and the destructor wake the thread and join it (at most one sample() call's duration).

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace trackscope::core {

/// NVML clock-event ("clocks throttle") reason bits, as nvmlDeviceGetCurrentClocksEventReasons reports them.
namespace throttle_reason {
inline constexpr uint64_t gpu_idle = 0x1;
inline constexpr uint64_t applications_clocks_setting = 0x2;
inline constexpr uint64_t sw_power_cap = 0x4;
inline constexpr uint64_t hw_slowdown = 0x8;
inline constexpr uint64_t sync_boost = 0x10;
inline constexpr uint64_t sw_thermal_slowdown = 0x20;
inline constexpr uint64_t hw_thermal_slowdown = 0x40;
inline constexpr uint64_t hw_power_brake_slowdown = 0x80;
inline constexpr uint64_t display_clock_setting = 0x100;
/// Reasons that lower the clocks under load (power, thermal, hardware slowdown), as opposed to idle or settings.
inline constexpr uint64_t performance_limiting =
    sw_power_cap | hw_slowdown | sw_thermal_slowdown | hw_thermal_slowdown | hw_power_brake_slowdown;
}  // namespace throttle_reason

/// Names of the set bits ("sw_power_cap", "hw_thermal_slowdown", ...; unknown bits as "bit_N").
std::vector<std::string> decode_throttle_reasons(uint64_t mask);
/// Inverse of decode_throttle_reasons for known names (unknown names are ignored).
uint64_t encode_throttle_reasons(std::span<const std::string> names);

/// One reading. Fields a source cannot provide stay unset (a CPU sample has no GPU fields and vice versa).
struct TelemetrySample {
  double time_s = 0.0;  // steady-clock seconds since the sampler was created
  int64_t unix_ms = 0;  // wall-clock time of the reading
  std::optional<double> sm_clock_mhz;
  std::optional<double> memory_clock_mhz;
  std::optional<double> sm_clock_max_mhz;  // the card's maximum SM clock (for "throttled" judgements)
  std::optional<double> power_w;
  std::optional<double> power_limit_w;  // enforced limit
  std::optional<double> temperature_c;
  std::optional<double> gpu_utilisation_percent;
  std::optional<double> memory_utilisation_percent;  // memory-controller busy time
  std::optional<int64_t> memory_used_bytes;
  std::optional<int64_t> memory_total_bytes;
  std::optional<uint64_t> throttle_reasons;        // throttle_reason bits
  std::vector<std::string> throttle_reason_names;  // decoded throttle_reasons
  std::optional<int> pcie_generation;
  std::optional<int> pcie_width;
  std::optional<int> cpu_threads;
  std::optional<double> cpu_utilisation_percent;  // all threads, 0..100
};

/// Where samples come from. sample() is called by one thread at a time (the sampler's).
class TelemetrySource {
 public:
  virtual ~TelemetrySource() = default;
  /// "NVML: NVIDIA H200 (driver 580.65)", "CPU: /proc/stat (16 threads)"
  virtual std::string description() const = 0;
  /// The current values (time fields are filled by the sampler). An error means this reading failed.
  virtual Expected<TelemetrySample> sample() = 0;
};

/// A CPU source: thread count (std::thread::hardware_concurrency) and utilisation from the deltas of the
/// aggregate "cpu" line of /proc/stat between consecutive samples (the first sample has no utilisation).
/// not_found when the file cannot be read.
Expected<std::unique_ptr<TelemetrySource>> open_cpu_telemetry(const std::string& proc_stat_path = "/proc/stat");

/// What a reader sees at one moment.
struct TelemetrySnapshot {
  bool available = false;                // false: "no telemetry" (status says why)
  std::string status;                    // source description, or "no telemetry: <reason>", or the last error
  std::vector<TelemetrySample> samples;  // oldest first, at most the ring capacity
  uint64_t total_samples = 0;            // samples taken since creation (including those dropped from the ring)
  const TelemetrySample* latest() const { return samples.empty() ? nullptr : &samples.back(); }
};

struct TelemetrySamplerOptions {
  double interval_ms = 100.0;  // 10 Hz
  size_t capacity = 600;       // one minute at 10 Hz
  Status check() const;
};

class TelemetrySampler {
 public:
  /// `source` may be an error: the sampler then runs no thread and its snapshot says "no telemetry: <message>".
  static Expected<std::unique_ptr<TelemetrySampler>> create(const TelemetrySamplerOptions& options,
                                                            Expected<std::unique_ptr<TelemetrySource>> source);
  ~TelemetrySampler();
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;

  /// Starts the sampling thread (no-op when running or unavailable).
  void start();
  /// Stops and joins the sampling thread (no-op when not running). Samples stay readable.
  void stop();
  bool running() const;

  TelemetrySnapshot snapshot() const;
  /// Samples with time_s >= since_s (the ring's content only).
  std::vector<TelemetrySample> samples_since(double since_s) const;
  /// Seconds on the sampler's clock now (to mark the start of a run for samples_since).
  double now_s() const;
  void clear();

 private:
  struct Impl;  // the thread, the ring buffer and the source
  explicit TelemetrySampler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Summary of the samples of one run (what a bench JSON case records).
struct TelemetrySummary {
  int samples = 0;
  std::optional<double> sm_clock_min_mhz;
  std::optional<double> sm_clock_median_mhz;
  std::optional<double> sm_clock_max_mhz;  // the card's maximum SM clock, if a sample reported it
  std::optional<double> memory_clock_min_mhz;
  std::optional<double> memory_clock_median_mhz;
  std::optional<double> power_median_w;
  std::optional<double> power_max_w;
  std::optional<double> power_limit_w;
  std::optional<double> temperature_median_c;
  std::optional<double> temperature_max_c;
  std::optional<double> gpu_utilisation_median_percent;
  std::optional<int64_t> memory_used_max_bytes;
  std::optional<double> cpu_utilisation_median_percent;
  std::optional<int> cpu_threads;
  std::optional<int> pcie_generation;
  std::optional<int> pcie_width;
  uint64_t throttle_reasons_seen = 0;  // union of the samples' bits
  std::vector<std::string> throttle_reasons_seen_names;
  bool operator==(const TelemetrySummary&) const = default;
};
TelemetrySummary summarize_telemetry(std::span<const TelemetrySample> samples);

/// The host, for reports: CPU model from /proc/cpuinfo ("unknown CPU" when unreadable), hardware threads,
/// host name and OS (uname).
struct HostInfo {
  std::string cpu_model;
  int threads = 0;
  std::string hostname;
  std::string os;
  bool operator==(const HostInfo&) const = default;
};
HostInfo probe_host_info();

}  // namespace trackscope::core
