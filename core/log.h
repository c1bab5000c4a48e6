#pragma once
// The logging facade. Code logs through log::info/warn/error/debug (fmt syntax); where the text goes is
// decided by the sinks that app/ installs (stderr, a rotating file, the UI's log dock). With no sink installed
// nothing is printed except warnings and errors, which go to stderr.
//
//   log::info("opened {} ({}x{})", path, width, height);
//   auto handle = log::add_sink([](log::Level level, std::string_view text) { ... });   // removed with handle
//
// Threads: every function is thread-safe. Sinks are called on the logging thread, under the facade's lock,
// so a sink must be quick and must not log itself (a UI sink queues the text and returns).
// This is the one process-wide registry in the code base: a logger threaded through every call would
// add a parameter to every function for no gain.

#include <fmt/format.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace trackscope::core::log {

enum class Level { debug, info, warning, error };

const char* to_string(Level level);

using Sink = std::function<void(Level level, std::string_view text)>;

/// Removes its sink when destroyed.
class SinkHandle {
 public:
  SinkHandle() = default;
  explicit SinkHandle(int id) : id_(id) {}
  SinkHandle(SinkHandle&& other) noexcept : id_(other.id_) { other.id_ = 0; }
  SinkHandle& operator=(SinkHandle&& other) noexcept;
  SinkHandle(const SinkHandle&) = delete;
  SinkHandle& operator=(const SinkHandle&) = delete;
  ~SinkHandle();

 private:
  int id_ = 0;
};

/// Installs a sink receiving every message at or above `min_level`.
[[nodiscard]] SinkHandle add_sink(Sink sink, Level min_level = Level::info);

void write(Level level, std::string_view text);

template <typename... Args>
void debug(fmt::format_string<Args...> format, Args&&... args) {
  write(Level::debug, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
  write(Level::info, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
  write(Level::warning, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void error(fmt::format_string<Args...> format, Args&&... args) {
  write(Level::error, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace trackscope::core::log
