// CPU telemetry from /proc/stat and host facts from /proc/cpuinfo and uname (Linux).
#include <sys/utsname.h>
#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/perf/telemetry.h"

namespace trackscope::core {

namespace {

struct CpuTimes {
  uint64_t busy = 0;
  uint64_t total = 0;
};

// The aggregate line: "cpu  user nice system idle iowait irq softirq steal guest guest_nice" (USER_HZ ticks).
// idle + iowait count as idle; guest time is already included in user time.
Expected<CpuTimes> read_cpu_times(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found(fmt::format("cannot read {} (CPU telemetry needs Linux procfs)", path));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cpu ", 0) != 0) continue;
    std::istringstream fields(line.substr(4));
    std::array<uint64_t, 8> v{};
    size_t count = 0;
    while (count < v.size() && fields >> v[count]) ++count;
    if (count < 4)
      return corrupt_data(fmt::format("{}: the 'cpu' line has {} fields, expected at least 4", path, count));
    CpuTimes t;
    for (size_t i = 0; i < count; ++i) t.total += v[i];
    const uint64_t idle = v[3] + (count > 4 ? v[4] : 0);
    t.busy = t.total - idle;
    return t;
  }
  return corrupt_data(fmt::format("{} has no aggregate 'cpu' line", path));
}

class CpuTelemetrySource final : public TelemetrySource {
 public:
  explicit CpuTelemetrySource(std::string path) : path_(std::move(path)) {}

  std::string description() const override {
    return fmt::format("CPU: {} ({} threads)", path_, std::thread::hardware_concurrency());
  }

  Expected<TelemetrySample> sample() override {
    Expected<CpuTimes> now = read_cpu_times(path_);
    if (!now) return now.status();
    TelemetrySample sample;
    sample.cpu_threads = static_cast<int>(std::thread::hardware_concurrency());
    if (previous_ && now->total > previous_->total && now->busy >= previous_->busy) {
      sample.cpu_utilisation_percent =
          100.0 * static_cast<double>(now->busy - previous_->busy) / static_cast<double>(now->total - previous_->total);
    }
    previous_ = *now;
    return sample;
  }

 private:
  std::string path_;
  std::optional<CpuTimes> previous_;
};

std::string trim(std::string text) {
  const auto first = text.find_first_not_of(" \t");
  const auto last = text.find_last_not_of(" \t\r\n");
  return first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
}

}  // namespace

Expected<std::unique_ptr<TelemetrySource>> open_cpu_telemetry(const std::string& proc_stat_path) {
  Expected<CpuTimes> probe = read_cpu_times(proc_stat_path);
  if (!probe) return probe.status();
  return std::unique_ptr<TelemetrySource>(std::make_unique<CpuTelemetrySource>(proc_stat_path));
}

HostInfo probe_host_info() {
  HostInfo host;
  host.threads = static_cast<int>(std::thread::hardware_concurrency());
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) host.cpu_model = trim(line.substr(colon + 1));
      break;
    }
  }
  if (host.cpu_model.empty()) host.cpu_model = "unknown CPU";
  utsname names{};
  if (uname(&names) == 0) {
    host.hostname = names.nodename;
    host.os = fmt::format("{} {} {}", names.sysname, names.release, names.machine);
  }
  return host;
}

}  // namespace trackscope::core
