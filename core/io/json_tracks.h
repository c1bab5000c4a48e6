#pragma once
// Private to core/io (includes nlohmann-json, which core links privately): the JSON form of a PointTrack shared
// by project files and the JSON track export, and checked field access that turns schema errors into messages.
//
//   nlohmann::json j = track_to_json(point_track);
//   Expected<PointTrack> back = track_from_json(j, "points[3].track");

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/io/input_checks.h"
#include "core/status.h"
#include "core/tracking/annotation.h"

namespace trackscope::core::io::json_detail {

using nlohmann::json;

/// A JSON schema error: thrown by the helpers below, caught at the reader's entry point (then corrupt_data).
struct SchemaError {
  std::string message;
};

[[noreturn]] inline void fail(const std::string& where, const std::string& what) {
  throw SchemaError{where + ": " + what};
}

inline const json& field(const json& object, const char* key, const std::string& where) {
  if (!object.is_object()) fail(where, "expected an object");
  auto it = object.find(key);
  if (it == object.end()) fail(where, fmt::format("the field \"{}\" is missing", key));
  return *it;
}

inline double number(const json& value, const std::string& where) {
  if (!value.is_number()) fail(where, "expected a number");
  const double result = value.get<double>();
  if (!std::isfinite(result)) fail(where, "expected a finite number");
  return result;
}

/// The value as an int64 when it is an integer that fits (nlohmann keeps non-negative integers unsigned).
inline std::optional<int64_t> as_int64(const json& value) {
  if (!value.is_number_integer()) return std::nullopt;
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return std::nullopt;
  return value.get<int64_t>();
}

inline int64_t integer(const json& value, const std::string& where) {
  if (!value.is_number_integer()) fail(where, "expected an integer");
  const std::optional<int64_t> result = as_int64(value);
  if (!result) fail(where, fmt::format("{} is too large", value.get<uint64_t>()));
  return *result;
}

/// An integer in [low, high], named with its bounds when it is not.
inline int64_t integer_in(const json& value, const std::string& where, int64_t low, int64_t high) {
  const int64_t result = integer(value, where);
  if (result < low || result > high) fail(where, fmt::format("{} is outside [{}, {}]", result, low, high));
  return result;
}

inline std::string text(const json& value, const std::string& where) {
  if (!value.is_string()) fail(where, "expected a string");
  return value.get<std::string>();
}

inline bool boolean(const json& value, const std::string& where) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number_integer() && (value.get<int64_t>() == 0 || value.get<int64_t>() == 1))
    return value.get<int64_t>() == 1;
  fail(where, "expected true/false (or 0/1)");
}

inline json query_to_json(const Query& query) { return {{"frame", query.frame}, {"x", query.x_px}, {"y", query.y_px}}; }

/// What a track or query read from a file must fit: the video's size and frame count (0 = unknown, then only
/// the absolute bounds of input_checks.h apply).
struct VideoBounds {
  int width = 0;
  int height = 0;
  int64_t frame_count = 0;
};

/// A query: frame in [0, frame_count) (or [0, kMaxFrameIndex)), a plausible position (input_checks.h).
Query query_from_json(const json& value, const std::string& where, const VideoBounds& bounds = {});

/// {"first_frame", "query", "keyframes", "provenance", "x", "y", "visible", "p_occluded", "p_far"}: one array per
/// field, one entry per frame from first_frame. Reading checks the frames it covers against the video's frame
/// count and every position against plausible_position().
json track_to_json(const PointTrack& track);
PointTrack track_from_json(const json& value, const std::string& where, const VideoBounds& bounds = {});

}  // namespace trackscope::core::io::json_detail
