#include "core/perf/process_memory.h"

#include <malloc.h>
#include <sys/resource.h>

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>

namespace trackscope::core {

std::string ProcessMemory::summary() const {
  return fmt::format("resident {:.0f} MiB, peak {:.0f} MiB; heap {:.0f} MiB, in use {:.0f} MiB", resident_mib,
                     peak_resident_mib, heap_mib, heap_in_use_mib);
}

ProcessMemory read_process_memory() {
  ProcessMemory memory;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    // "VmRSS:     123456 kB"
    if (line.rfind("VmRSS:", 0) == 0) memory.resident_mib = std::atof(line.c_str() + 6) / 1024.0;
    if (line.rfind("VmHWM:", 0) == 0) memory.peak_resident_mib = std::atof(line.c_str() + 6) / 1024.0;
  }
  const struct mallinfo2 heap = ::mallinfo2();
  memory.heap_mib = static_cast<double>(heap.arena) / (1 << 20);
  memory.heap_in_use_mib = static_cast<double>(heap.uordblks) / (1 << 20);
  return memory;
}

double peak_resident_mib() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0.0;
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux: KiB
}

}  // namespace trackscope::core
