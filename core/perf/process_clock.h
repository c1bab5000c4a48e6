#pragma once
// How long this process has existed, for start-up lines (`trackscope-cli track`: the time from process start,
// shared libraries loaded included, to the tracker being ready).
//
//   std::optional<double> age_s = seconds_since_process_start();   // 1.27
//
// Linux: /proc/self/stat's start time (clock ticks since boot, 10 ms on common kernels) against /proc/uptime; so
// the value is coarse (+-10 ms) and nullopt where /proc is not readable. Threads: thread-safe.

#include <optional>

namespace trackscope::core {

std::optional<double> seconds_since_process_start();

}  // namespace trackscope::core
