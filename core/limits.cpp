#include "core/limits.h"

#include <sched.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <string>
#include <thread>

namespace trackscope::core {
namespace {

// cgroup v2 "cpu.max": "QUOTA PERIOD" or "max PERIOD". 0 when there is no quota.
int cgroup_cpu_quota() {
  std::ifstream in("/sys/fs/cgroup/cpu.max");
  std::string quota;
  double period = 0.0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0.0) return 0;
  try {
    const double cpus = std::stod(quota) / period;
    return cpus > 0.0 ? std::max(1, static_cast<int>(std::ceil(cpus))) : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

int available_cpu_threads() {
  int cpus = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  if (cpus <= 0) cpus = static_cast<int>(std::thread::hardware_concurrency());
  if (const int quota = cgroup_cpu_quota(); quota > 0) cpus = std::min(cpus, quota);
  return std::max(1, cpus);
}

int automatic_cpu_threads() {
  const int available = available_cpu_threads();
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read-only; nothing in this process sets the environment
  const char* requested = std::getenv("OMP_NUM_THREADS");
  if (requested == nullptr) return available;
  // OMP_NUM_THREADS may list one count per nesting level ("4,2"): the first is the outer level's.
  char* end = nullptr;
  errno = 0;
  const long threads = std::strtol(requested, &end, 10);
  if (errno != 0 || end == requested || (*end != '\0' && *end != ',') || threads < 1) return available;
  return static_cast<int>(std::min<long>(threads, available));
}

Expected<ThreadCount> cap_thread_count(int64_t requested, std::string_view what, int limit) {
  if (requested < 0) {
    return invalid_argument(fmt::format("{} {} is negative: use 0 (automatic) or a count from 1 to {}", what, requested,
                                        limit > 0 ? limit : available_cpu_threads()));
  }
  ThreadCount count;
  if (requested == 0) return count;
  const int cap = limit > 0 ? limit : available_cpu_threads();
  if (requested > cap) {
    count.threads = cap;
    count.notice = fmt::format("{} {} is more than the {} CPU thread{} this process can use; using {}", what, requested,
                               cap, cap == 1 ? "" : "s", cap);
    return count;
  }
  count.threads = static_cast<int>(requested);
  return count;
}

Status check_tracked_point_count(int64_t points) {
  if (points <= kMaxTrackedPoints) return {};
  return invalid_argument(fmt::format(
      "{} points are more than the {} one tracking run accepts (docs/limits.md): track them in several runs "
      "of at most {} points",
      points, kMaxTrackedPoints, kMaxTrackedPoints));
}

}  // namespace trackscope::core
