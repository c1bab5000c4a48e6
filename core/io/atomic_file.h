#pragma once
// Atomic file replacement, the one way Trackscope writes a file. The new contents go to a temporary file in the
// same folder (".NAME.tmp-PID-N"), which is written, fsync'ed and closed, then renamed over NAME, and the folder
// is fsync'ed. A crash, a kill -9, a cut-off write (ulimit -f) or a full disk at any moment leaves NAME either as
// it was or completely new, never half written. A failed or abandoned write removes its temporary file;
// temporary files left by a killed process are removed by the next successful write of the same NAME.
//
//   TRACKSCOPE_RETURN_IF_ERROR(io::write_file_atomically("clip.trackscope", json_text));   // all at once
//
//   Expected<io::AtomicFile> file = io::AtomicFile::create("checkpoint.safetensors");     // in pieces
//   if (!file) return file.status();
//   for (const auto& piece : pieces) TRACKSCOPE_RETURN_IF_ERROR(file->write(piece));
//   TRACKSCOPE_RETURN_IF_ERROR(file->commit());   // without commit() the destructor removes the temporary file
//
//   // A library that opens files by name (FFmpeg's avio_open) writes temporary_path(); commit() still
//   // fsyncs and renames it (fsync of any descriptor of the file flushes the file).
//
//   TRACKSCOPE_RETURN_IF_ERROR(io::check_writable("out/tracks.csv"));   // before a long job, in milliseconds
//
// Threads: thread-safe (different threads may write different files; two writers of one file each produce a
// complete file, the last rename wins). One AtomicFile is used by one thread at a time.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace trackscope::core::io {

struct AtomicWriteOptions {
  /// Bytes per write() call to the temporary file.
  size_t chunk_bytes = size_t{1} << 16;
  /// Called after every chunk reached the temporary file (bytes written so far, total), before the flush and
  /// the rename. A test hook: a test pauses or kills the writer here, in the middle of a save. For AtomicFile,
  /// `total` is the size of the current write() call's data plus what was written before.
  std::function<void(size_t written_bytes, size_t total_bytes)> after_chunk;

  Status check() const;
};

/// A file being replaced atomically, written in pieces (see the header comment). Move-only. The destructor
/// abandons an uncommitted file: the temporary file is removed and `path` is untouched.
class AtomicFile {
 public:
  /// Creates the temporary file beside `path`. io_error (no such folder, read-only, permission denied) names
  /// the folder and the system's reason.
  static Expected<AtomicFile> create(const std::filesystem::path& path, const AtomicWriteOptions& options = {});

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  /// Appends `bytes`. io_error (disk full, file too large) abandons the file: later calls fail.
  Status write(std::string_view bytes);
  /// fsync, close, rename over path(), fsync of the folder. After it (ok or not) the object is spent.
  Status commit();
  /// Removes the temporary file; path() is untouched. Safe to call twice.
  void abandon();

  const std::filesystem::path& path() const { return path_; }
  /// Where the bytes go until commit(); empty once committed or abandoned.
  const std::filesystem::path& temporary_path() const { return temporary_; }
  /// The open descriptor of the temporary file (-1 once committed or abandoned).
  int descriptor() const { return fd_; }
  uint64_t bytes_written() const { return written_; }

 private:
  AtomicFile() = default;
  Status fail(const std::string& what, int error);

  std::filesystem::path path_;
  std::filesystem::path temporary_;
  AtomicWriteOptions options_;
  int fd_ = -1;
  uint64_t written_ = 0;
  bool failed_ = false;
};

/// Replaces (or creates) `path` with `contents` atomically (see the header comment). io_error with the
/// system's reason (disk full, permission denied, no such folder) when it fails; `path` is then untouched.
Status write_file_atomically(const std::filesystem::path& path, std::string_view contents,
                             const AtomicWriteOptions& options = {});

/// Whether `path` can be written, checked the way the write will happen (a file created and removed in its
/// folder), so that a long job fails before it starts rather than after. invalid_argument when `path` is empty
/// or a folder, not_found when its folder does not exist, io_error (read-only file system, permission denied,
/// or fewer than `expected_bytes` free on its file system) otherwise. Nothing is left behind.
Status check_writable(const std::filesystem::path& path, uint64_t expected_bytes = 0);

/// The whole file. not_found when it does not exist, io_error when it cannot be read, invalid_argument when it
/// is larger than `max_bytes`. `progress(read_bytes, total_bytes)`, when given, is called after every MiB.
Expected<std::string> read_file(const std::filesystem::path& path, size_t max_bytes,
                                const std::function<void(uint64_t read_bytes, uint64_t total_bytes)>& progress = {});

/// The temporary files (".NAME.tmp-*") that writes of `path` have left beside it.
std::vector<std::filesystem::path> leftover_temporary_files(const std::filesystem::path& path);

}  // namespace trackscope::core::io
