#include "core/perf/telemetry.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace trackscope::core {

namespace {

constexpr std::pair<uint64_t, const char*> kReasonNames[] = {
    {throttle_reason::gpu_idle, "gpu_idle"},
    {throttle_reason::applications_clocks_setting, "applications_clocks_setting"},
    {throttle_reason::sw_power_cap, "sw_power_cap"},
    {throttle_reason::hw_slowdown, "hw_slowdown"},
    {throttle_reason::sync_boost, "sync_boost"},
    {throttle_reason::sw_thermal_slowdown, "sw_thermal_slowdown"},
    {throttle_reason::hw_thermal_slowdown, "hw_thermal_slowdown"},
    {throttle_reason::hw_power_brake_slowdown, "hw_power_brake_slowdown"},
    {throttle_reason::display_clock_setting, "display_clock_setting"},
};

template <typename T, typename Get>
std::vector<T> collect(std::span<const TelemetrySample> samples, Get get) {
  std::vector<T> values;
  for (const TelemetrySample& s : samples) {
    if (const auto& v = get(s)) values.push_back(*v);
  }
  return values;
}

template <typename T>
std::optional<T> median_of(std::vector<T> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  if (values.size() % 2 == 1) return values[mid];
  return static_cast<T>((values[mid - 1] + values[mid]) / 2);
}
template <typename T>
std::optional<T> min_of(const std::vector<T>& values) {
  if (values.empty()) return std::nullopt;
  return *std::min_element(values.begin(), values.end());
}
template <typename T>
std::optional<T> max_of(const std::vector<T>& values) {
  if (values.empty()) return std::nullopt;
  return *std::max_element(values.begin(), values.end());
}

}  // namespace

std::vector<std::string> decode_throttle_reasons(uint64_t mask) {
  std::vector<std::string> names;
  uint64_t known = 0;
  for (const auto& [bit, name] : kReasonNames) {
    known |= bit;
    if (mask & bit) names.emplace_back(name);
  }
  for (int bit = 0; bit < 64; ++bit) {
    const uint64_t value = uint64_t{1} << bit;
    if ((mask & value) && !(known & value)) names.push_back(fmt::format("bit_{}", bit));
  }
  return names;
}

uint64_t encode_throttle_reasons(std::span<const std::string> names) {
  uint64_t mask = 0;
  for (const std::string& name : names) {
    for (const auto& [bit, known] : kReasonNames) {
      if (name == known) mask |= bit;
    }
  }
  return mask;
}

Status TelemetrySamplerOptions::check() const {
  if (!(interval_ms >= 10.0 && interval_ms <= 60'000.0)) {
    return invalid_argument(fmt::format("telemetry interval {} ms out of range (10..60000)", interval_ms));
  }
  if (capacity < 1 || capacity > 1'000'000) {
    return invalid_argument(fmt::format("telemetry capacity {} out of range (1..1000000)", capacity));
  }
  return {};
}

struct TelemetrySampler::Impl {
  TelemetrySamplerOptions options;
  std::unique_ptr<TelemetrySource> source;  // null when unavailable
  std::string unavailable_reason;
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();

  mutable std::mutex mutex;  // guards everything below
  std::deque<TelemetrySample> ring;
  uint64_t total = 0;
  std::string last_error;
  std::condition_variable_any wake;
  std::jthread thread;

  double now_s() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin).count(); }

  void run(std::stop_token stop) {
    const auto interval = std::chrono::duration<double, std::milli>(options.interval_ms);
    auto next = std::chrono::steady_clock::now();
    while (!stop.stop_requested()) {
      Expected<TelemetrySample> reading = source->sample();  // outside the lock: NVML calls can take ~ms
      const double t = now_s();
      const auto unix_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
              .count();
      {
        std::unique_lock lock(mutex);
        if (reading) {
          TelemetrySample sample = std::move(*reading);
          sample.time_s = t;
          sample.unix_ms = unix_ms;
          if (sample.throttle_reasons && sample.throttle_reason_names.empty()) {
            sample.throttle_reason_names = decode_throttle_reasons(*sample.throttle_reasons);
          }
          ring.push_back(std::move(sample));
          while (ring.size() > options.capacity) ring.pop_front();
          ++total;
          last_error.clear();
        } else {
          last_error = reading.status().message();
        }
        next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(interval);
        const auto now = std::chrono::steady_clock::now();
        if (next < now) next = now;  // a slow reading: do not try to catch up with a burst
        wake.wait_until(lock, stop, next, [] { return false; });
      }
    }
  }
};

TelemetrySampler::TelemetrySampler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TelemetrySampler::~TelemetrySampler() { stop(); }

Expected<std::unique_ptr<TelemetrySampler>> TelemetrySampler::create(
    const TelemetrySamplerOptions& options, Expected<std::unique_ptr<TelemetrySource>> source) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (source && *source) {
    impl->source = std::move(*source);
  } else {
    impl->unavailable_reason = source ? "no telemetry source" : source.status().message();
  }
  return std::unique_ptr<TelemetrySampler>(new TelemetrySampler(std::move(impl)));
}

void TelemetrySampler::start() {
  if (!impl_->source) return;
  std::lock_guard lock(impl_->mutex);
  if (impl_->thread.joinable()) return;
  impl_->thread = std::jthread([impl = impl_.get()](std::stop_token stop) { impl->run(stop); });
}

void TelemetrySampler::stop() {
  std::jthread thread;
  {
    std::lock_guard lock(impl_->mutex);
    thread = std::move(impl_->thread);
  }
  if (thread.joinable()) {
    thread.request_stop();  // wakes wait_until through the stop token
    thread.join();
  }
}

bool TelemetrySampler::running() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->thread.joinable();
}

TelemetrySnapshot TelemetrySampler::snapshot() const {
  TelemetrySnapshot snapshot;
  std::lock_guard lock(impl_->mutex);
  snapshot.available = impl_->source != nullptr;
  if (!impl_->source) {
    snapshot.status = "no telemetry: " + impl_->unavailable_reason;
  } else if (!impl_->last_error.empty()) {
    snapshot.status = impl_->source->description() + " (last reading failed: " + impl_->last_error + ")";
  } else {
    snapshot.status = impl_->source->description();
  }
  snapshot.samples.assign(impl_->ring.begin(), impl_->ring.end());
  snapshot.total_samples = impl_->total;
  return snapshot;
}

std::vector<TelemetrySample> TelemetrySampler::samples_since(double since_s) const {
  std::lock_guard lock(impl_->mutex);
  std::vector<TelemetrySample> out;
  for (const TelemetrySample& s : impl_->ring) {
    if (s.time_s >= since_s) out.push_back(s);
  }
  return out;
}

double TelemetrySampler::now_s() const { return impl_->now_s(); }

void TelemetrySampler::clear() {
  std::lock_guard lock(impl_->mutex);
  impl_->ring.clear();
}

TelemetrySummary summarize_telemetry(std::span<const TelemetrySample> samples) {
  TelemetrySummary s;
  s.samples = static_cast<int>(samples.size());
  const auto sm = collect<double>(samples, [](const auto& x) { return x.sm_clock_mhz; });
  const auto mem = collect<double>(samples, [](const auto& x) { return x.memory_clock_mhz; });
  const auto power = collect<double>(samples, [](const auto& x) { return x.power_w; });
  const auto temperature = collect<double>(samples, [](const auto& x) { return x.temperature_c; });
  s.sm_clock_min_mhz = min_of(sm);
  s.sm_clock_median_mhz = median_of(sm);
  s.sm_clock_max_mhz = max_of(collect<double>(samples, [](const auto& x) { return x.sm_clock_max_mhz; }));
  s.memory_clock_min_mhz = min_of(mem);
  s.memory_clock_median_mhz = median_of(mem);
  s.power_median_w = median_of(power);
  s.power_max_w = max_of(power);
  s.power_limit_w = max_of(collect<double>(samples, [](const auto& x) { return x.power_limit_w; }));
  s.temperature_median_c = median_of(temperature);
  s.temperature_max_c = max_of(temperature);
  s.gpu_utilisation_median_percent =
      median_of(collect<double>(samples, [](const auto& x) { return x.gpu_utilisation_percent; }));
  s.memory_used_max_bytes = max_of(collect<int64_t>(samples, [](const auto& x) { return x.memory_used_bytes; }));
  s.cpu_utilisation_median_percent =
      median_of(collect<double>(samples, [](const auto& x) { return x.cpu_utilisation_percent; }));
  s.cpu_threads = max_of(collect<int>(samples, [](const auto& x) { return x.cpu_threads; }));
  s.pcie_generation = min_of(collect<int>(samples, [](const auto& x) { return x.pcie_generation; }));
  s.pcie_width = min_of(collect<int>(samples, [](const auto& x) { return x.pcie_width; }));
  for (const TelemetrySample& x : samples) {
    if (x.throttle_reasons) s.throttle_reasons_seen |= *x.throttle_reasons;
  }
  s.throttle_reasons_seen_names = decode_throttle_reasons(s.throttle_reasons_seen);
  return s;
}

}  // namespace trackscope::core
