#pragma once
// This process's host memory, as the command-line tools report it (track's summary line, trackscope-long-video's
// progress lines and report, the batch records).
//
//   const ProcessMemory now = read_process_memory();
//   std::fprintf(stderr, "%s\n", now.summary().c_str());   // "resident 812 MiB, peak 1024 MiB; heap 640 MiB, ..."
//
// Threads: thread-safe (reads /proc/self/status and glibc's allocator statistics).

#include <string>

namespace trackscope::core {

struct ProcessMemory {
  double resident_mib = 0.0;       // VmRSS of /proc/self/status
  double peak_resident_mib = 0.0;  // VmHWM
  double heap_mib = 0.0;           // glibc's main arena (mallinfo2().arena): held from the system
  double heap_in_use_mib = 0.0;    // of it in allocated blocks (uordblks)
  /// "resident 812 MiB, peak 1024 MiB; heap 640 MiB, in use 600 MiB".
  std::string summary() const;
};

ProcessMemory read_process_memory();

/// The process's peak resident memory so far, MiB (getrusage's ru_maxrss; 0 when unavailable).
double peak_resident_mib();

}  // namespace trackscope::core
