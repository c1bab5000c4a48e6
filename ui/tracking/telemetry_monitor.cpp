#include "ui/tracking/telemetry_monitor.h"

#include <exception>

#include "core/log.h"

namespace trackscope::ui {

core::Expected<std::unique_ptr<core::TelemetrySource>> open_default_telemetry(const std::string& device_id) {
  if (device_id == "cpu") return core::open_cpu_telemetry();
  return core::unsupported("no GPU telemetry source in this build for " + device_id);
}

TelemetryMonitor::TelemetryMonitor(TelemetrySourceFactory factory, core::TelemetrySamplerOptions options)
    : factory_(factory ? std::move(factory) : TelemetrySourceFactory(open_default_telemetry)),
      options_(options),
      failure_("no device selected") {}

TelemetryMonitor::~TelemetryMonitor() { stop(); }

void TelemetryMonitor::set_device(const std::string& device_id) {
  if (device_id == device_ && (sampler_ || !failure_.empty())) return;
  stop();
  device_ = device_id;
  sampler_ = nullptr;
  if (auto known = samplers_.find(device_id); known != samplers_.end()) {
    failure_.clear();
    sampler_ = known->second.get();
    sampler_->start();
    return;
  }
  core::Expected<std::unique_ptr<core::TelemetrySource>> source = core::internal_error("no telemetry source");
  // A broken source (a driver refusing NVML) costs the telemetry view, not the application.
  try {
    source = factory_(device_id);
  } catch (const std::exception& failure) {
    source = core::internal_error(std::string("opening telemetry failed: ") + failure.what());
  }
  const bool source_failed = !source;
  if (source_failed) core::log::info("no telemetry for {}: {}", device_id, source.status().message());
  core::Expected<std::unique_ptr<core::TelemetrySampler>> sampler =
      core::TelemetrySampler::create(options_, std::move(source));
  if (!sampler) {
    failure_ = sampler.status().message();
    return;
  }
  failure_.clear();
  sampler_ = sampler->get();
  // A sampler without a source only holds the reason: not kept, so the device is asked again next time.
  if (source_failed) {
    unavailable_ = std::move(*sampler);
    return;
  }
  samplers_.emplace(device_id, std::move(*sampler));
  sampler_->start();
}

core::TelemetrySnapshot TelemetryMonitor::snapshot() const {
  if (sampler_) return sampler_->snapshot();
  core::TelemetrySnapshot none;
  none.status = "no telemetry: " + failure_;
  return none;
}

double TelemetryMonitor::now_s() const { return sampler_ ? sampler_->now_s() : 0.0; }

std::optional<core::TelemetrySummary> TelemetryMonitor::summary_since(double start_s) const {
  if (!sampler_) return std::nullopt;
  const std::vector<core::TelemetrySample> samples = sampler_->samples_since(start_s);
  if (samples.empty()) return std::nullopt;
  return core::summarize_telemetry(samples);
}

void TelemetryMonitor::stop() {
  if (sampler_) sampler_->stop();
}

}  // namespace trackscope::ui
