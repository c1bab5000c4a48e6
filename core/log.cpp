#include "core/log.h"

#include <cstdio>
#include <mutex>
#include <vector>

namespace trackscope::core::log {
namespace {

struct Registered {
  int id;
  Level min_level;
  Sink sink;
};

struct Registry {
  std::mutex mutex;
  std::vector<Registered> sinks;
  int next_id = 1;
};

Registry& registry() {
  static Registry instance;  // function-local: constructed on first use, safe across static initialisation
  return instance;
}

}  // namespace

const char* to_string(Level level) {
  switch (level) {
    case Level::debug: return "debug";
    case Level::info: return "info";
    case Level::warning: return "warning";
    case Level::error: return "error";
  }
  return "?";
}

SinkHandle& SinkHandle::operator=(SinkHandle&& other) noexcept {
  if (this != &other) {
    SinkHandle discard(id_);
    id_ = other.id_;
    other.id_ = 0;
  }
  return *this;
}

SinkHandle::~SinkHandle() {
  if (id_ == 0) return;
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  std::erase_if(reg.sinks, [this](const Registered& entry) { return entry.id == id_; });
}

SinkHandle add_sink(Sink sink, Level min_level) {
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  const int id = reg.next_id++;
  reg.sinks.push_back({id, min_level, std::move(sink)});
  return SinkHandle(id);
}

void write(Level level, std::string_view text) {
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  if (reg.sinks.empty()) {
    if (level >= Level::warning)
      std::fprintf(stderr, "[%s] %.*s\n", to_string(level), static_cast<int>(text.size()), text.data());
    return;
  }
  for (const Registered& entry : reg.sinks) {
    if (level >= entry.min_level) entry.sink(level, text);
  }
}

}  // namespace trackscope::core::log
