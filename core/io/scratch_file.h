#pragma once
// ScratchFile: a large temporary file for data that does not fit in memory (exact streaming's feature-grid
// cache, docs/long-videos.md). The file has no name (O_TMPFILE, else created and unlinked at once), so it
// disappears when the ScratchFile is destroyed or the process dies, and it is not a file the user sees (it is
// not written atomically: there is nothing to keep). Its size is reserved at creation (posix_fallocate), so a
// full disk is reported before any work starts, not in the middle of a run.
//
//   Expected<ScratchFile> cache = ScratchFile::create("/var/tmp", bytes);
//   TRACKSCOPE_RETURN_IF_ERROR(cache->write(offset, data, size));
//   TRACKSCOPE_RETURN_IF_ERROR(cache->read(offset, out, size));
//
// Threads: read and write may be called from different threads for disjoint ranges (pread/pwrite).

#include <cstdint>
#include <filesystem>

#include "core/status.h"

namespace trackscope::core::io {

class ScratchFile {
 public:
  /// A file of `bytes` bytes in `directory` (empty = the system's temporary folder). io_error naming the folder
  /// and the reason (no space: how much is free), not_found when the folder does not exist.
  static Expected<ScratchFile> create(const std::filesystem::path& directory, int64_t bytes);

  ScratchFile(ScratchFile&& other) noexcept;
  ScratchFile& operator=(ScratchFile&& other) noexcept;
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  ~ScratchFile();

  int64_t size() const { return bytes_; }
  const std::filesystem::path& directory() const { return directory_; }
  Status write(int64_t offset, const void* data, int64_t bytes);
  Status read(int64_t offset, void* data, int64_t bytes) const;

 private:
  ScratchFile(int fd, int64_t bytes, std::filesystem::path directory)
      : fd_(fd), bytes_(bytes), directory_(std::move(directory)) {}
  int fd_ = -1;
  int64_t bytes_ = 0;
  std::filesystem::path directory_;
};

/// The directory scratch files go to by default: $TMPDIR, else /var/tmp (on disk, unlike a tmpfs /tmp), else /tmp.
std::filesystem::path default_scratch_directory();
/// Free bytes for an unprivileged user in `directory`; -1 when it cannot be determined.
int64_t free_disk_bytes(const std::filesystem::path& directory);

}  // namespace trackscope::core::io
