#pragma once
// Query points from a CSV file, as `trackscope-cli track --queries` reads them.
//
//   frame,x,y            <- header (required; extra columns after these three are ignored)
//   0,120.5,64.5         <- one query per line: frame index (integer >= 0), x and y in raster pixels of the
//   12,300,200              original video (pixel (i, j) covers [j, j+1) x [i, i+1); its centre is +0.5)
//
// At most kMaxTrackedPoints queries (core/limits.h): the reader stops with invalid_argument at the first row past
// it. Lines that are empty or start with '#' are skipped. Errors name the file and line (corrupt_data), or the
// file (not_found / io_error). Threads: pure function.

#include <filesystem>
#include <vector>

#include "core/status.h"
#include "core/tracking/tracks.h"

namespace trackscope::core {

Expected<std::vector<Query>> read_queries_csv(const std::filesystem::path& path);

}  // namespace trackscope::core
