#pragma once
// The one rule by which a file's name decides its format: its ending, compared case-insensitively, on the file
// name only (not the folders), and only when the name is longer than the ending (".csv" alone names no file).
// Track formats (io::track_format_from_path), projects (io::is_project_path), BADJA annotations
// (load_badja_annotations), image-sequence folders and texture photographs all decide by it.
//
//   file_name_ends_with("out/Bees_DLC.csv", "_dlc.csv")   // true
//   list_files_ending_with("frames/", kEndings)           // frames/00000.jpg, frames/00001.jpg, ...
//
// Threads: pure functions.

#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace trackscope::core::io {

/// True when `path`'s file name ends with `suffix` (ASCII case-insensitive) and is longer than it.
bool file_name_ends_with(const std::filesystem::path& path, std::string_view suffix);

/// The regular files directly in `folder` whose names end with one of `endings` (file_name_ends_with), in
/// file-name order; empty when there are none. Errors: io_error when the folder cannot be listed.
Expected<std::vector<std::filesystem::path>> list_files_ending_with(const std::filesystem::path& folder,
                                                                    std::span<const std::string_view> endings);

}  // namespace trackscope::core::io
