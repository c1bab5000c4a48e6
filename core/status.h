#pragma once
// Status and Expected<T>: the result types for expected failures (file missing, codec unsupported, no CUDA,
// weights mismatch, out of memory). Their messages are written for the user: say what failed, on what, and
// what to do about it. Invariant violations are not Statuses: they throw (see TRACKSCOPE_CHECK).
//
//   Expected<VideoInfo> info = probe(path);
//   if (!info) { log::error("{}", info.status().message()); return info.status(); }
//   use(*info);

#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace trackscope::core {

enum class StatusCode {
  ok,
  invalid_argument,  // absurd parameters, malformed input that the caller gave
  not_found,         // a file, device or key that does not exist
  unsupported,       // a codec, format or device feature we cannot handle
  corrupt_data,      // a file exists but its content is damaged or truncated
  out_of_memory,     // host or device allocation failed
  cancelled,         // the user or a shutdown stopped the work
  io_error,          // reading or writing failed at the OS level
  internal,          // a bug: should not happen, reported instead of crashing
};

/// Canonical lower-case name of a code ("not_found"), used in JSON and logs.
const char* to_string(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }

  bool ok() const { return code_ == StatusCode::ok; }
  explicit operator bool() const { return ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  /// Returns a copy whose message is prefixed with `context + ": "`, keeping the code.
  Status with_context(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

inline Status invalid_argument(std::string message) { return {StatusCode::invalid_argument, std::move(message)}; }
inline Status not_found(std::string message) { return {StatusCode::not_found, std::move(message)}; }
inline Status unsupported(std::string message) { return {StatusCode::unsupported, std::move(message)}; }
inline Status corrupt_data(std::string message) { return {StatusCode::corrupt_data, std::move(message)}; }
inline Status out_of_memory(std::string message) { return {StatusCode::out_of_memory, std::move(message)}; }
inline Status cancelled(std::string message) { return {StatusCode::cancelled, std::move(message)}; }
inline Status io_error(std::string message) { return {StatusCode::io_error, std::move(message)}; }
inline Status internal_error(std::string message) { return {StatusCode::internal, std::move(message)}; }

/// A value or a non-ok Status. Accessing the value of an error throws std::logic_error (a bug, not a user error).
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Expected(Status status) : storage_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(storage_).ok()) {
      storage_ = Status(StatusCode::internal, "Expected constructed from an ok Status without a value");
    }
  }

  bool has_value() const { return std::holds_alternative<T>(storage_); }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    check();
    return std::get<T>(storage_);
  }
  const T& value() const& {
    check();
    return std::get<T>(storage_);
  }
  T&& value() && {
    check();
    return std::get<T>(std::move(storage_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  /// The error; an ok Status when a value is held.
  Status status() const { return has_value() ? Status() : std::get<Status>(storage_); }

 private:
  void check() const {
    if (!has_value()) {
      throw std::logic_error("Expected::value() on an error: " + std::get<Status>(storage_).message());
    }
  }
  std::variant<T, Status> storage_;
};

/// Thrown for invariant violations (bugs). Carries file:line.
class InvariantError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

inline const Status& status_of(const Status& status) { return status; }
template <typename T>
Status status_of(const Expected<T>& expected) {
  return expected.status();
}

[[noreturn]] void throw_invariant(const char* condition, const char* file, int line, const std::string& message);

}  // namespace trackscope::core

/// TRACKSCOPE_CHECK(cond, message): throws InvariantError with file:line when `cond` is false.
#define TRACKSCOPE_CHECK(cond, message)                                                     \
  do {                                                                                      \
    if (!(cond)) ::trackscope::core::throw_invariant(#cond, __FILE__, __LINE__, (message)); \
  } while (false)

/// Propagates a non-ok Status (or the status of a failed Expected) to the caller.
#define TRACKSCOPE_RETURN_IF_ERROR(expr)                                               \
  do {                                                                                 \
    auto trackscope_status_ = (expr);                                                  \
    if (!trackscope_status_) return ::trackscope::core::status_of(trackscope_status_); \
  } while (false)
