#pragma once
// Resource limits every entry point shares (trackscope-cli and the GUI), so that a request the machine cannot
// serve is capped or refused with one clear message instead of running for ever or exhausting memory.
//
//   Expected<ThreadCount> threads = cap_thread_count(requested, "--threads");   // 1000 on 2 CPUs -> 2 + notice
//   if (!threads) return threads.status();                                       // -1 -> invalid_argument
//   if (!threads->notice.empty()) log::warn("{}", threads->notice);
//   TRACKSCOPE_RETURN_IF_ERROR(check_tracked_point_count(queries.size()));      // > kMaxTrackedPoints: refused
//
// Limits (documented in docs/limits.md):
// - CPU threads: at most the CPUs this process may run on (affinity mask and cgroup CPU quota). More threads
//   than cores only add contention (measured: --threads 64 on 2 cores ran 30x slower; 1000 never finished).
// - Points per tracking run and query-file rows: kMaxTrackedPoints. Larger sets are refused before anything is
//   allocated (the query-file reader stops at the first row past the limit); split them into several runs.
// Threads: pure functions, thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace trackscope::core {

/// Points one tracking run accepts (trackscope-cli track / eval, the GUI's Track), and the rows a query file
/// may hold. 10,000 points x 1,000 frames of tracks are 200 MB; query features alone 0.8 GiB in float32.
inline constexpr int64_t kMaxTrackedPoints = 10'000;

/// CPU threads this process may use: the CPUs of its affinity mask, lowered to the cgroup CPU quota when one
/// is set (containers), at least 1.
int available_cpu_threads();

/// The intra-op CPU threads a job uses when none are asked for (--threads 0): OMP_NUM_THREADS when it holds a
/// positive count (the standard knob; its first entry, capped to available_cpu_threads()), else every CPU this
/// process may use. (Debian's LibTorch would start with one thread.)
int automatic_cpu_threads();

struct ThreadCount {
  int threads = 0;     // 0: the library's automatic choice; else 1..available_cpu_threads()
  std::string notice;  // non-empty when the request was capped: one line to show the user
};

/// A user's thread request (`what` names it in messages: "--threads", "decoder threads"): 0 stays 0
/// (automatic), negative is invalid_argument, more than `limit` (default: available_cpu_threads()) is capped
/// to `limit` with a notice.
Expected<ThreadCount> cap_thread_count(int64_t requested, std::string_view what, int limit = 0);

/// invalid_argument when `points` exceeds kMaxTrackedPoints, saying what to do.
Status check_tracked_point_count(int64_t points);

}  // namespace trackscope::core
