#pragma once
// Atomic file replacement: the new contents go to a temporary file in the same folder (".NAME.tmp-PID-N"),
// which is written, flushed and fsync'ed, then renamed over NAME, and the folder is fsync'ed. A crash, a kill
// or a full disk at any moment leaves NAME either as it was or completely new, never half written. A failed
// write removes its temporary file; temporary files left by a killed process are removed by the next
// successful write of the same NAME.
//
//   TRACKSCOPE_RETURN_IF_ERROR(io::write_file_atomically("clip.trackscope", json_text));
//   Expected<std::string> text = io::read_file("clip.trackscope", 1 << 30);
//
// Threads: thread-safe (different threads may write different files; two writers of one file each produce a
// complete file, the last rename wins).

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace trackscope::core::io {

struct AtomicWriteOptions {
  /// Bytes per write() call to the temporary file.
  size_t chunk_bytes = size_t{1} << 16;
  /// Called after every chunk reached the temporary file (bytes written so far, total), before the flush and
  /// the rename. A test hook: a test pauses or kills the writer here, in the middle of a save.
  std::function<void(size_t written_bytes, size_t total_bytes)> after_chunk;

  Status check() const;
};

/// Replaces (or creates) `path` with `contents` atomically (see the header comment). io_error with the
/// system's reason (disk full, permission denied, no such folder) when it fails; `path` is then untouched.
Status write_file_atomically(const std::filesystem::path& path, std::string_view contents,
                             const AtomicWriteOptions& options = {});

/// The whole file. not_found when it does not exist, io_error when it cannot be read, invalid_argument when it
/// is larger than `max_bytes`.
Expected<std::string> read_file(const std::filesystem::path& path, size_t max_bytes);

/// The temporary files (".NAME.tmp-*") that writes of `path` have left beside it.
std::vector<std::filesystem::path> leftover_temporary_files(const std::filesystem::path& path);

}  // namespace trackscope::core::io
