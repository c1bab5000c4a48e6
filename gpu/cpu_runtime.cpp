#include "gpu/cpu_runtime.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <limits>

#include "core/limits.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace trackscope::gpu {

bool keep_freed_host_memory() {
#if defined(__GLIBC__)
  const bool no_mmap = mallopt(M_MMAP_MAX, 0) == 1;
  const bool trim = mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max()) == 1;
  return no_mmap && trim;
#else
  return false;
#endif
}

void release_freed_host_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

int set_cpu_threads(int threads) {
  // Capped to the machine here too (callers report the cap with core::cap_thread_count's notice).
  at::set_num_threads(std::clamp(threads, 1, core::available_cpu_threads()));
  return at::get_num_threads();
}

int cpu_threads() { return at::get_num_threads(); }

}  // namespace trackscope::gpu
