#include "core/io/queries_csv.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "core/io/atomic_file.h"
#include "core/io/input_checks.h"

#include "core/limits.h"

namespace trackscope::core {
namespace {

// A query file is a few kilobytes per thousand queries; a larger file is not one.
constexpr size_t kMaxQueryFileBytes = size_t{256} << 20;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> fields;
  for (size_t start = 0;;) {
    const size_t comma = line.find(',', start);
    fields.push_back(
        trim(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

template <typename T>
bool parse(std::string_view text, T& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

Expected<std::vector<Query>> read_queries_csv(const std::filesystem::path& path, const QueryBounds& bounds) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    return not_found(fmt::format("query file {} does not exist", path.string()));
  Expected<std::string> text = io::read_file(path, kMaxQueryFileBytes);
  if (!text) return text.status();
  return queries_from_csv(*text, path.string(), bounds);
}

Expected<std::vector<Query>> queries_from_csv(std::string_view text, const std::string& source,
                                              const QueryBounds& bounds) {
  text = io::strip_utf8_bom(text);
  const int64_t frame_limit = bounds.frame_count > 0 ? bounds.frame_count : io::kMaxFrameIndex;
  std::vector<Query> queries;
  bool header = false;
  int64_t line_number = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(start, end - start));
    start = end + 1;
    ++line_number;
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string_view> fields = split(line);
    if (!header) {
      if (fields.size() < 3 || fields[0] != "frame" || fields[1] != "x" || fields[2] != "y") {
        return corrupt_data(
            fmt::format("{}:{}: the header must be 'frame,x,y', got '{}'", source, line_number, line.substr(0, 200)));
      }
      header = true;
      continue;
    }
    Query q;
    if (fields.size() < 3 || !parse(fields[0], q.frame) || !parse(fields[1], q.x_px) || !parse(fields[2], q.y_px) ||
        q.frame < 0 || !std::isfinite(q.x_px) || !std::isfinite(q.y_px)) {
      return corrupt_data(
          fmt::format("{}:{}: expected 'frame,x,y' with a frame index >= 0 and finite pixel "
                      "coordinates, got '{}'",
                      source, line_number, line.substr(0, 200)));
    }
    if (q.frame >= frame_limit) {
      return corrupt_data(fmt::format("{}:{}: frame {} is past the end ({})", source, line_number, q.frame,
                                      bounds.frame_count > 0
                                          ? fmt::format("the video has {} frames", bounds.frame_count)
                                          : fmt::format("frames must be below {}", io::kMaxFrameIndex)));
    }
    if (!io::plausible_position(q.x_px, q.y_px, bounds.width, bounds.height)) {
      return corrupt_data(fmt::format("{}:{}: the position ({}, {}) is not plausible: {}", source, line_number, q.x_px,
                                      q.y_px, io::position_bounds_text(bounds.width, bounds.height)));
    }
    // Stop at the first row past the limit: a huge file is refused without reading (or allocating) the rest.
    if (queries.size() == static_cast<size_t>(kMaxTrackedPoints)) {
      return invalid_argument(fmt::format(
          "{}:{}: more than {} queries: one tracking run accepts at most {} points (docs/limits.md); split the "
          "file into several runs",
          source, line_number, kMaxTrackedPoints, kMaxTrackedPoints));
    }
    queries.push_back(q);
  }
  if (!header) return corrupt_data(fmt::format("{} is empty: it needs a 'frame,x,y' header", source));
  return queries;
}

}  // namespace trackscope::core
