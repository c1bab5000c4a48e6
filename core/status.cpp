#include "core/status.h"

#include <sstream>

namespace trackscope::core {

const char* to_string(StatusCode code) {
  switch (code) {
    case StatusCode::ok: return "ok";
    case StatusCode::invalid_argument: return "invalid_argument";
    case StatusCode::not_found: return "not_found";
    case StatusCode::unsupported: return "unsupported";
    case StatusCode::corrupt_data: return "corrupt_data";
    case StatusCode::out_of_memory: return "out_of_memory";
    case StatusCode::cancelled: return "cancelled";
    case StatusCode::io_error: return "io_error";
    case StatusCode::internal: return "internal";
  }
  return "unknown";
}

Status Status::with_context(const std::string& context) const {
  if (ok()) return *this;
  return {code_, context + ": " + message_};
}

void throw_invariant(const char* condition, const char* file, int line, const std::string& message) {
  std::ostringstream text;
  text << file << ":" << line << ": invariant `" << condition << "` violated: " << message;
  throw InvariantError(text.str());
}

}  // namespace trackscope::core
