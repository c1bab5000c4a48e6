#include "core/tracking/query_spec.h"

#include <fmt/format.h>

#include <limits>

#include "core/dimensions.h"
#include "core/io/queries_csv.h"

namespace trackscope::core {
namespace {

constexpr std::string_view kGridPrefix = "grid:";
constexpr int kMaxGridSide = 1024;

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
  if (at != std::string_view::npos) {
    const std::string_view frame = rest.substr(at + 1);
    if (frame.substr(0, 5) != "frame") return malformed();
    Expected<std::vector<int64_t>> index =
        parse_dimensions(frame.substr(5), {.parts = 1, .min = 0, .max = std::numeric_limits<int64_t>::max()});
    if (!index) return malformed();
    spec.grid_frame = (*index)[0];
  }
  Expected<std::vector<int64_t>> size = parse_dimensions(rest.substr(0, at), {.max = kMaxGridSide});
  if (!size) return malformed();
  spec.grid_columns = static_cast<int>((*size)[0]);
  spec.grid_rows = static_cast<int>((*size)[1]);
  return spec;
}

Expected<std::vector<Query>> resolve_queries(const QuerySpec& spec, const VideoInfo& video) {
  // A CSV's queries are checked against the video they are for (frames within it, plausible positions).
  if (!spec.is_grid()) return read_queries_csv(spec.csv, QueryBounds{video.width, video.height, video.frame_count});
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
