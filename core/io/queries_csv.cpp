#include "core/io/queries_csv.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <string_view>

#include "core/limits.h"

namespace trackscope::core {
namespace {

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

Expected<std::vector<Query>> read_queries_csv(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    return not_found(fmt::format("query file {} does not exist", path.string()));
  std::ifstream in(path);
  if (!in) return io_error(fmt::format("cannot read {}", path.string()));
  std::vector<Query> queries;
  bool header = false;
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    const std::string_view text = trim(line);
    if (text.empty() || text.front() == '#') continue;
    const std::vector<std::string_view> fields = split(text);
    if (!header) {
      if (fields.size() < 3 || fields[0] != "frame" || fields[1] != "x" || fields[2] != "y") {
        return corrupt_data(
            fmt::format("{}:{}: the header must be 'frame,x,y', got '{}'", path.string(), line_number, text));
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
                      path.string(), line_number, text));
    }
    // Stop at the first row past the limit: a huge file is refused without reading (or allocating) the rest.
    if (queries.size() == static_cast<size_t>(kMaxTrackedPoints)) {
      return invalid_argument(fmt::format(
          "{}:{}: more than {} queries: one tracking run accepts at most {} points (docs/limits.md); split the "
          "file into several runs",
          path.string(), line_number, kMaxTrackedPoints, kMaxTrackedPoints));
    }
    queries.push_back(q);
  }
  if (!header) return corrupt_data(fmt::format("{} is empty: it needs a 'frame,x,y' header", path.string()));
  return queries;
}

}  // namespace trackscope::core
