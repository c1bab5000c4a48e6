#include "core/perf/process_clock.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace trackscope::core {

std::optional<double> seconds_since_process_start() {
  std::ifstream stat_file("/proc/self/stat");
  std::string stat;
  if (!stat_file || !std::getline(stat_file, stat)) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: count fields after its closing parenthesis.
  const size_t name_end = stat.rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(name_end + 1));
  std::string field;
  // Fields 3.. follow; the start time is field 22, i.e. the 20th after the name (19 skipped).
  for (int i = 0; i < 19; ++i) {
    if (!(fields >> field)) return std::nullopt;
  }
  unsigned long long start_ticks = 0;
  if (!(fields >> start_ticks)) return std::nullopt;
  std::ifstream uptime_file("/proc/uptime");
  double uptime_s = 0.0;
  if (!uptime_file || !(uptime_file >> uptime_s)) return std::nullopt;
  const long ticks_per_s = sysconf(_SC_CLK_TCK);
  if (ticks_per_s <= 0) return std::nullopt;
  const double age_s = uptime_s - static_cast<double>(start_ticks) / static_cast<double>(ticks_per_s);
  return age_s >= 0.0 ? std::optional<double>(age_s) : std::nullopt;
}

}  // namespace trackscope::core
