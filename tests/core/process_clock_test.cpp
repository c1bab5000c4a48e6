// seconds_since_process_start: this process's age from /proc, as track's start-up line reports it.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <thread>

#include "core/perf/process_clock.h"

namespace trackscope::core {
namespace {

TEST(ProcessClock, GrowsWithTheProcessAge) {
  const std::optional<double> first = seconds_since_process_start();
  if (!first) GTEST_SKIP() << "/proc/self/stat is not readable here";
  // A test process is seconds old (a neighbouring field of /proc/self/stat, read by mistake, would be far off).
  EXPECT_GE(*first, 0.0);
  EXPECT_LT(*first, 600.0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::optional<double> later = seconds_since_process_start();
  ASSERT_TRUE(later);
  // /proc's clock ticks are 10 ms: 300 ms later reads 0.28-0.32 s later, plus scheduling delay.
  EXPECT_GT(*later - *first, 0.25);
  EXPECT_LT(*later - *first, 5.0);
}

}  // namespace
}  // namespace trackscope::core
