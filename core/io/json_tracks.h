#pragma once
// Private to core/io (includes nlohmann-json, which core links privately): the JSON form of a PointTrack shared
// by project files and the JSON track export, and checked field access that turns schema errors into messages.
//
//   nlohmann::json j = track_to_json(point_track);
//   Expected<PointTrack> back = track_from_json(j, "points[3].track");

#include <cmath>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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

inline int64_t integer(const json& value, const std::string& where) {
  if (!value.is_number_integer()) fail(where, "expected an integer");
  return value.get<int64_t>();
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

inline Query query_from_json(const json& value, const std::string& where) {
  Query query;
  query.frame = integer(field(value, "frame", where), where + ".frame");
  query.x_px = number(field(value, "x", where), where + ".x");
  query.y_px = number(field(value, "y", where), where + ".y");
  if (query.frame < 0) fail(where + ".frame", "must be >= 0");
  return query;
}

/// {"first_frame", "query", "keyframes", "provenance", "x", "y", "visible", "p_occluded", "p_far"}: one array per
/// field, one entry per frame from first_frame.
json track_to_json(const PointTrack& track);
PointTrack track_from_json(const json& value, const std::string& where);

}  // namespace trackscope::core::io::json_detail
