#pragma once
// TelemetryMonitor: live telemetry of the active tracker device. It keeps one core::TelemetrySampler (its own
// ~10 Hz sampling thread and ring buffer) for the selected device, opened through an injected source factory
// (app/ gives NVML for CUDA devices and /proc/stat for the CPU); readers pull snapshots (the performance dock's
// 10 Hz timer), nothing is pushed per sample.
//
//   TelemetryMonitor monitor(factory);                 // empty factory: CPU from /proc/stat, no GPU telemetry
//   monitor.set_device("cuda:0");                       // reopens the source; a failure = "no telemetry: why"
//   dock->set_telemetry_provider([&monitor] { return monitor.snapshot(); });
//   double start_s = monitor.now_s();  ...  std::optional<TelemetrySummary> s = monitor.summary_since(start_s);
//
// Threads: GUI thread for every method (snapshot() is also safe from others: the sampler guards its ring).
// The destructor stops and joins the sampling thread.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/perf/telemetry.h"
#include "core/status.h"

namespace trackscope::ui {

/// Opens the telemetry source of a tracker device ("cpu", "cuda:0"). An error means "no telemetry" and says why.
using TelemetrySourceFactory =
    std::function<core::Expected<std::unique_ptr<core::TelemetrySource>>(const std::string& device_id)>;

/// The fallback without an injected factory: the /proc/stat source for "cpu", an unsupported error for GPUs.
core::Expected<std::unique_ptr<core::TelemetrySource>> open_default_telemetry(const std::string& device_id);

class TelemetryMonitor {
 public:
  explicit TelemetryMonitor(TelemetrySourceFactory factory, core::TelemetrySamplerOptions options = {});
  ~TelemetryMonitor();
  TelemetryMonitor(const TelemetryMonitor&) = delete;
  TelemetryMonitor& operator=(const TelemetryMonitor&) = delete;

  /// Samples `device_id` from now on (no-op when it is already the one).
  void set_device(const std::string& device_id);
  const std::string& device() const { return device_; }

  /// The current snapshot; "no telemetry: <reason>" before set_device or when the device has none.
  core::TelemetrySnapshot snapshot() const;
  /// Seconds on the current sampler's clock (0 without a sampler).
  double now_s() const;
  /// Summary of the samples since `start_s` (nullopt without telemetry or samples).
  std::optional<core::TelemetrySummary> summary_since(double start_s) const;
  /// Stops the sampling thread (the last snapshot stays readable).
  void stop();

 private:
  TelemetrySourceFactory factory_;
  core::TelemetrySamplerOptions options_;
  std::string device_;
  std::unique_ptr<core::TelemetrySampler> sampler_;
  std::string failure_;  // why there is no sampler at all
};

}  // namespace trackscope::ui
