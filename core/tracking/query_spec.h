#pragma once
// Where a clip's query points come from, as `trackscope-cli track --queries` and a batch job's "queries" name it:
//
//   "points.csv"            a CSV file with a 'frame,x,y' header (core/io/queries_csv.h)
//   "grid:16x16@frame0"     16 columns x 16 rows of points at the centres of a regular grid of cells over the
//   "grid:8x4"              whole frame (x = (c + 0.5) * width / columns), all on frame N (default 0)
//
//   Expected<QuerySpec> spec = parse_query_spec("grid:16x16@frame0");
//   Expected<std::vector<Query>> queries = resolve_queries(*spec, video->info());   // reads the CSV, or lays the grid
//
// Threads: pure functions (resolve_queries reads the CSV file).

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tracking/tracks.h"
#include "core/video/video_source.h"

namespace trackscope::core {

struct QuerySpec {
  std::filesystem::path csv;  // empty for a grid
  int grid_columns = 0;
  int grid_rows = 0;
  int64_t grid_frame = 0;

  bool is_grid() const { return csv.empty(); }
  /// The text parse_query_spec() reads back ("grid:16x16@frame0", or the CSV path).
  std::string to_string() const;
};

/// "grid:COLSxROWS[@frameN]" (1..1024 columns and rows, N >= 0) or a CSV path (anything else that is not empty).
/// invalid_argument for a malformed grid or an empty text.
Expected<QuerySpec> parse_query_spec(std::string_view text);

/// The queries: the CSV's rows, or the grid on a video of `video`'s size. invalid_argument when the grid's frame
/// is not inside the video; the CSV reader's errors (not_found, corrupt_data with the line) otherwise.
Expected<std::vector<Query>> resolve_queries(const QuerySpec& spec, const VideoInfo& video);

}  // namespace trackscope::core
