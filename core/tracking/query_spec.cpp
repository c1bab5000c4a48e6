#include "core/tracking/query_spec.h"

#include <fmt/format.h>

#include <charconv>

#include "core/io/queries_csv.h"

namespace trackscope::core {
namespace {

constexpr std::string_view kGridPrefix = "grid:";
constexpr int kMaxGridSide = 1024;

// A whole decimal number filling `text`.
template <typename T>
bool parse_whole(std::string_view text, T& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && error == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string QuerySpec::to_string() const {
  if (!is_grid()) return csv.string();
  return fmt::format("grid:{}x{}@frame{}", grid_columns, grid_rows, grid_frame);
}

Expected<QuerySpec> parse_query_spec(std::string_view text) {
  if (text.empty()) return invalid_argument("no queries: give a CSV file or a grid such as grid:16x16@frame0");
  QuerySpec spec;
  if (text.substr(0, kGridPrefix.size()) != kGridPrefix) {
    spec.csv = std::filesystem::path(text);
    return spec;
  }
  const auto malformed = [text] {
    return invalid_argument(
        fmt::format("queries '{}': a grid is grid:COLUMNSxROWS or grid:COLUMNSxROWS@frameN, e.g. grid:16x16@frame0 "
                    "(1 to {} columns and rows)",
                    text, kMaxGridSide));
  };
  std::string_view rest = text.substr(kGridPrefix.size());
  const size_t at = rest.find('@');
  std::string_view size = rest.substr(0, at);
  if (at != std::string_view::npos) {
    std::string_view frame = rest.substr(at + 1);
    if (frame.substr(0, 5) != "frame" || !parse_whole(frame.substr(5), spec.grid_frame) || spec.grid_frame < 0) {
      return malformed();
    }
  }
  const size_t x = size.find('x');
  if (x == std::string_view::npos || !parse_whole(size.substr(0, x), spec.grid_columns) ||
      !parse_whole(size.substr(x + 1), spec.grid_rows) || spec.grid_columns < 1 || spec.grid_rows < 1 ||
      spec.grid_columns > kMaxGridSide || spec.grid_rows > kMaxGridSide) {
    return malformed();
  }
  return spec;
}

Expected<std::vector<Query>> resolve_queries(const QuerySpec& spec, const VideoInfo& video) {
  if (!spec.is_grid()) return read_queries_csv(spec.csv);
  if (spec.grid_frame >= video.frame_count) {
    return invalid_argument(fmt::format("queries {}: frame {} is not in the video ({} frames)", spec.to_string(),
                                        spec.grid_frame, video.frame_count));
  }
  std::vector<Query> queries;
  queries.reserve(static_cast<size_t>(spec.grid_columns) * static_cast<size_t>(spec.grid_rows));
  for (int row = 0; row < spec.grid_rows; ++row) {
    for (int column = 0; column < spec.grid_columns; ++column) {
      queries.push_back({spec.grid_frame, (column + 0.5) * video.width / spec.grid_columns,
                         (row + 0.5) * video.height / spec.grid_rows});
    }
  }
  return queries;
}

}  // namespace trackscope::core
