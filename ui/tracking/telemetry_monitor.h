#pragma once
// TelemetryMonitor: live telemetry of the active tracker device. It keeps a core::TelemetrySampler (its own
// ~10 Hz sampling thread and ring buffer) per device selected so far, opened through an injected source factory
// (app/ gives NVML for CUDA devices and /proc/stat for the CPU); only the selected device's sampler runs, and
// switching back to a device resumes its history (with a gap while it was not selected). Readers pull snapshots
// (the performance dock's 10 Hz timer), nothing is pushed per sample.
//
//   TelemetryMonitor monitor(factory);                 // empty factory: CPU from /proc/stat, no GPU telemetry
//   monitor.set_device("cuda:0");                       // reopens the source; a failure = "no telemetry: why"
//   dock->set_telemetry_provider([&monitor] { return monitor.snapshot(); });
//   double start_s = monitor.now_s();  ...  std::optional<TelemetrySummary> s = monitor.summary_since(start_s);
//
// Threads: GUI thread for every method (snapshot() is also safe from others: the sampler guards its ring).
// The destructor stops and joins the sampling thread.

#include <functional>
#include <map>
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

  /// Samples `device_id` from now on (no-op when it is already the one); the previous device's sampler stops and
  /// keeps its samples for when it is selected again. A device without telemetry is asked again each time.
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
  std::map<std::string, std::unique_ptr<core::TelemetrySampler>> samplers_;  // by device id, each opened once
  std::unique_ptr<core::TelemetrySampler> unavailable_;  // the selected device's when it has no telemetry source
  core::TelemetrySampler* sampler_ = nullptr;            // the selected device's, if any
  std::string failure_;                                  // why the selected device has no sampler
};

}  // namespace trackscope::ui
