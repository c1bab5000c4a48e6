#include "core/io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include <fmt/format.h>

namespace trackscope::core::io {
namespace {

namespace fs = std::filesystem;

std::string system_reason(int error) {
  if (error == ENOSPC) return "the disk is full";
  if (error == EDQUOT) return "the disk quota is exceeded";
  return std::strerror(error);
}

std::string temporary_prefix(const fs::path& path) { return "." + path.filename().string() + ".tmp-"; }

// Closes a descriptor on every path out of write_file_atomically.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

bool process_alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

// Removes ".NAME.tmp-PID-N" files whose writer no longer runs (a crash or a kill in the middle of a save).
void remove_stale_temporaries(const fs::path& path) {
  const std::string prefix = temporary_prefix(path);
  for (const fs::path& leftover : leftover_temporary_files(path)) {
    const std::string name = leftover.filename().string();
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid == static_cast<long>(::getpid()) || process_alive(pid)) continue;
    std::error_code ignored;
    fs::remove(leftover, ignored);
  }
}

}  // namespace

Status AtomicWriteOptions::check() const {
  if (chunk_bytes == 0) return invalid_argument("chunk_bytes must be positive");
  return {};
}

std::vector<fs::path> leftover_temporary_files(const fs::path& path) {
  std::vector<fs::path> found;
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const std::string prefix = temporary_prefix(path);
  std::error_code error;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    if (it->path().filename().string().rfind(prefix, 0) == 0) found.push_back(it->path());
  }
  return found;
}

Status write_file_atomically(const fs::path& path, std::string_view contents, const AtomicWriteOptions& options) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  static std::atomic<unsigned> counter{0};
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const fs::path temporary =
      folder / fmt::format("{}{}-{}", temporary_prefix(path), static_cast<long>(::getpid()), counter.fetch_add(1));
  auto fail = [&](const std::string& what, int error) {
    ::unlink(temporary.c_str());
    return io_error(fmt::format("could not save '{}': {} ({}); the previous file is unchanged", path.string(), what,
                                system_reason(error)));
  };

  Descriptor file;
  file.fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (file.fd < 0) {
    const int error = errno;
    return io_error(fmt::format("could not save '{}': cannot create a file in '{}' ({})", path.string(),
                                folder.string(), system_reason(error)));
  }
  size_t written = 0;
  while (written < contents.size()) {
    const size_t chunk = std::min(options.chunk_bytes, contents.size() - written);
    const ssize_t result = ::write(file.fd, contents.data() + written, chunk);
    if (result < 0) {
      if (errno == EINTR) continue;
      return fail("writing failed", errno);
    }
    written += static_cast<size_t>(result);
    if (options.after_chunk) options.after_chunk(written, contents.size());
  }
  if (::fsync(file.fd) != 0) return fail("flushing to disk failed", errno);
  const int fd = file.fd;
  file.fd = -1;
  if (::close(fd) != 0) return fail("closing failed", errno);
  if (::rename(temporary.c_str(), path.c_str()) != 0) return fail("replacing the file failed", errno);
  // The rename itself becomes durable once the folder's entry is on disk.
  Descriptor directory;
  directory.fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory.fd >= 0) (void)::fsync(directory.fd);
  remove_stale_temporaries(path);
  return {};
}

Expected<std::string> read_file(const fs::path& path, size_t max_bytes) {
  std::error_code error;
  if (!fs::exists(path, error)) return not_found(fmt::format("'{}' does not exist", path.string()));
  if (fs::is_directory(path, error))
    return invalid_argument(fmt::format("'{}' is a folder, not a file", path.string()));
  const auto size = fs::file_size(path, error);
  if (error) return io_error(fmt::format("cannot read '{}': {}", path.string(), error.message()));
  if (size > max_bytes) {
    return invalid_argument(
        fmt::format("'{}' is {} bytes, more than the {} this reader accepts", path.string(), size, max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error(fmt::format("cannot open '{}' for reading", path.string()));
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.gcount() != static_cast<std::streamsize>(text.size())) {
    return io_error(fmt::format("reading '{}' failed after {} of {} bytes", path.string(), in.gcount(), size));
  }
  return text;
}

}  // namespace trackscope::core::io
