#pragma once
// Query points from a CSV file, as `trackscope-cli track --queries` reads them.
//
//   frame,x,y            <- header (required; extra columns after these three are ignored; a UTF-8 byte order
//   0,120.5,64.5            mark before it is accepted)
//   12,300,200           <- one query per line: frame index (integer >= 0), x and y in raster pixels of the
//                           original video (pixel (i, j) covers [j, j+1) x [i, i+1); its centre is +0.5)
//
// At most kMaxTrackedPoints queries (core/limits.h): the reader stops with invalid_argument at the first row past
// it. Lines that are empty or start with '#' are skipped. Sense checks: frames below the video's frame count and
// positions plausible for its size (core/io/input_checks.h) when `bounds` gives them, else the absolute bounds
// (frames below 2^31, |x|, |y| <= 1e6). Errors name the file and line (corrupt_data), or the file
// (not_found / io_error). Threads: pure functions.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tracking/tracks.h"

namespace trackscope::core {

/// The video the queries are for; 0 = unknown.
struct QueryBounds {
  int width = 0;
  int height = 0;
  int64_t frame_count = 0;
};

Expected<std::vector<Query>> read_queries_csv(const std::filesystem::path& path, const QueryBounds& bounds = {});
/// The same from the text of a file; `source` names it in messages.
Expected<std::vector<Query>> queries_from_csv(std::string_view text, const std::string& source,
                                              const QueryBounds& bounds = {});

}  // namespace trackscope::core
