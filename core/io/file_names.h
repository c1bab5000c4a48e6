#pragma once
// The one rule by which a file's name decides its format: its ending, compared case-insensitively, on the file
// name only (not the folders), and only when the name is longer than the ending (".csv" alone names no file).
// Track formats (io::track_format_from_path), projects (io::is_project_path) and BADJA annotations
// (load_badja_annotations) all decide by it.
//
//   file_name_ends_with("out/Bees_DLC.csv", "_dlc.csv")   // true
//
// Threads: pure functions.

#include <filesystem>
#include <string_view>

namespace trackscope::core::io {

/// True when `path`'s file name ends with `suffix` (ASCII case-insensitive) and is longer than it.
bool file_name_ends_with(const std::filesystem::path& path, std::string_view suffix);

}  // namespace trackscope::core::io
