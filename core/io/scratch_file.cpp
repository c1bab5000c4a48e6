#include "core/io/scratch_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

namespace trackscope::core::io {
namespace {

std::string system_reason(int error) { return std::generic_category().message(error); }

double gib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

}  // namespace

std::filesystem::path default_scratch_directory() {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read-only; the project never sets environment variables
  if (const char* tmp = std::getenv("TMPDIR"); tmp != nullptr && *tmp != '\0') return tmp;
  std::error_code error;
  if (std::filesystem::is_directory("/var/tmp", error)) return "/var/tmp";
  return "/tmp";
}

int64_t free_disk_bytes(const std::filesystem::path& directory) {
  std::error_code error;
  const std::filesystem::space_info space = std::filesystem::space(directory, error);
  if (error) return -1;
  return static_cast<int64_t>(space.available);
}

Expected<ScratchFile> ScratchFile::create(const std::filesystem::path& directory, int64_t bytes) {
  const std::filesystem::path dir = directory.empty() ? default_scratch_directory() : directory;
  if (bytes < 0) return invalid_argument(fmt::format("a scratch file of {} bytes", bytes));
  std::error_code exists_error;
  if (!std::filesystem::is_directory(dir, exists_error)) {
    return not_found(fmt::format("the cache folder {} does not exist", dir.string()));
  }
  int fd = -1;
#ifdef O_TMPFILE
  fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, S_IRUSR | S_IWUSR);
#endif
  if (fd < 0) {  // file systems without O_TMPFILE: a named file, unlinked at once
    std::string name = (dir / "trackscope-cache-XXXXXX").string();
    fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(name.c_str());
  }
  if (fd < 0) {
    const int error = errno;
    return io_error(fmt::format("could not create a cache file in {}: {}", dir.string(), system_reason(error)));
  }
  if (bytes > 0) {
    const int error = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    if (error != 0) {
      ::close(fd);
      return io_error(fmt::format("could not reserve {:.2f} GiB for the cache file in {} ({:.2f} GiB free): {}",
                                  gib(bytes), dir.string(), gib(free_disk_bytes(dir)), system_reason(error)));
    }
  }
  return ScratchFile(fd, bytes, dir);
}

ScratchFile::ScratchFile(ScratchFile&& other) noexcept
    : fd_(other.fd_), bytes_(other.bytes_), directory_(std::move(other.directory_)) {
  other.fd_ = -1;
  other.bytes_ = 0;
}

ScratchFile& ScratchFile::operator=(ScratchFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    bytes_ = other.bytes_;
    directory_ = std::move(other.directory_);
    other.fd_ = -1;
    other.bytes_ = 0;
  }
  return *this;
}

ScratchFile::~ScratchFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status ScratchFile::write(int64_t offset, const void* data, int64_t bytes) {
  if (offset < 0 || bytes < 0 || offset + bytes > bytes_) {
    return invalid_argument(
        fmt::format("cache write of {} bytes at {} outside the {}-byte file", bytes, offset, bytes_));
  }
  const char* from = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t written = ::pwrite(fd_, from, static_cast<size_t>(bytes), static_cast<off_t>(offset));
    if (written < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      return io_error(
          fmt::format("writing the cache file in {} failed: {}", directory_.string(), system_reason(error)));
    }
    from += written;
    offset += written;
    bytes -= written;
  }
  return {};
}

Status ScratchFile::read(int64_t offset, void* data, int64_t bytes) const {
  if (offset < 0 || bytes < 0 || offset + bytes > bytes_) {
    return invalid_argument(
        fmt::format("cache read of {} bytes at {} outside the {}-byte file", bytes, offset, bytes_));
  }
  char* to = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t got = ::pread(fd_, to, static_cast<size_t>(bytes), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int error = got < 0 ? errno : EIO;
      return io_error(
          fmt::format("reading the cache file in {} failed: {}", directory_.string(), system_reason(error)));
    }
    to += got;
    offset += got;
    bytes -= got;
  }
  return {};
}

}  // namespace trackscope::core::io
