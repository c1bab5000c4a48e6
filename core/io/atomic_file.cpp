#include "core/io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace trackscope::core::io {
namespace {

namespace fs = std::filesystem;

std::string system_reason(int error) {
  if (error == ENOSPC) return "the disk is full";
  if (error == EDQUOT) return "the disk quota is exceeded";
  if (error == EFBIG) return "the file is larger than this process may write: ulimit -f";
  if (error == EROFS) return "the file system is read-only";
  return std::strerror(error);
}

std::string temporary_prefix(const fs::path& path) { return "." + path.filename().string() + ".tmp-"; }

fs::path folder_of(const fs::path& path) { return path.parent_path().empty() ? fs::path(".") : path.parent_path(); }

fs::path new_temporary_name(const fs::path& path) {
  static std::atomic<unsigned> counter{0};
  return folder_of(path) /
         fmt::format("{}{}-{}", temporary_prefix(path), static_cast<long>(::getpid()), counter.fetch_add(1));
}

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

void fsync_folder(const fs::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

Status AtomicWriteOptions::check() const {
  if (chunk_bytes == 0) return invalid_argument("chunk_bytes must be positive");
  return {};
}

// ---- AtomicFile ---------------------------------------------------------------------------------------------

Expected<AtomicFile> AtomicFile::create(const fs::path& path, const AtomicWriteOptions& options) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  if (path.empty() || !path.has_filename()) return invalid_argument(fmt::format("'{}' names no file", path.string()));
  AtomicFile file;
  file.path_ = path;
  file.options_ = options;
  file.temporary_ = new_temporary_name(path);
  file.fd_ = ::open(file.temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (file.fd_ < 0) {
    const int error = errno;
    file.temporary_.clear();
    return io_error(fmt::format("could not save '{}': cannot create a file in '{}' ({})", path.string(),
                                folder_of(path).string(), system_reason(error)));
  }
  return file;
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)),
      temporary_(std::move(other.temporary_)),
      options_(std::move(other.options_)),
      fd_(std::exchange(other.fd_, -1)),
      written_(other.written_),
      failed_(other.failed_) {
  other.temporary_.clear();
}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    abandon();
    path_ = std::move(other.path_);
    temporary_ = std::move(other.temporary_);
    other.temporary_.clear();
    options_ = std::move(other.options_);
    fd_ = std::exchange(other.fd_, -1);
    written_ = other.written_;
    failed_ = other.failed_;
  }
  return *this;
}

AtomicFile::~AtomicFile() { abandon(); }

void AtomicFile::abandon() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
  temporary_.clear();
}

Status AtomicFile::fail(const std::string& what, int error) {
  abandon();
  failed_ = true;
  return io_error(fmt::format("could not save '{}': {} ({}); the previous file is unchanged", path_.string(), what,
                              system_reason(error)));
}

Status AtomicFile::write(std::string_view bytes) {
  if (fd_ < 0) {
    return io_error(fmt::format("could not save '{}': the file was {}", path_.string(),
                                failed_ ? "abandoned after an error" : "already committed or abandoned"));
  }
  const uint64_t before = written_;
  size_t done = 0;
  while (done < bytes.size()) {
    const size_t chunk = std::min(options_.chunk_bytes, bytes.size() - done);
    const ssize_t result = ::write(fd_, bytes.data() + done, chunk);
    if (result < 0) {
      if (errno == EINTR) continue;
      return fail("writing failed", errno);
    }
    done += static_cast<size_t>(result);
    written_ += static_cast<uint64_t>(result);
    if (options_.after_chunk)
      options_.after_chunk(static_cast<size_t>(written_), static_cast<size_t>(before) + bytes.size());
  }
  return {};
}

Status AtomicFile::commit() {
  if (fd_ < 0) {
    return io_error(fmt::format("could not save '{}': the file was {}", path_.string(),
                                failed_ ? "abandoned after an error" : "already committed or abandoned"));
  }
  if (::fsync(fd_) != 0) return fail("flushing to disk failed", errno);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) return fail("closing failed", errno);
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) return fail("replacing the file failed", errno);
  temporary_.clear();
  // The rename itself becomes durable once the folder's entry is on disk.
  fsync_folder(folder_of(path_));
  remove_stale_temporaries(path_);
  return {};
}

// ---- whole files --------------------------------------------------------------------------------------------

Status write_file_atomically(const fs::path& path, std::string_view contents, const AtomicWriteOptions& options) {
  Expected<AtomicFile> file = AtomicFile::create(path, options);
  if (!file) return file.status();
  TRACKSCOPE_RETURN_IF_ERROR(file->write(contents));
  return file->commit();
}

Status check_writable(const fs::path& path, uint64_t expected_bytes) {
  if (path.empty() || !path.has_filename()) return invalid_argument(fmt::format("'{}' names no file", path.string()));
  std::error_code error;
  if (fs::is_directory(path, error)) {
    return invalid_argument(fmt::format("'{}' is a folder: name a file to write", path.string()));
  }
  const fs::path folder = folder_of(path);
  if (!fs::is_directory(folder, error)) {
    return not_found(fmt::format("cannot write '{}': the folder '{}' does not exist", path.string(), folder.string()));
  }
  // The probe is what the real write does first (a temporary file beside the target): read-only mounts,
  // permissions and ACLs all answer exactly as they will later.
  const fs::path probe = new_temporary_name(path);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int reason = errno;
    return io_error(fmt::format("cannot write '{}': no file can be created in '{}' ({})", path.string(),
                                folder.string(), system_reason(reason)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  if (expected_bytes > 0) {
    struct statvfs space {};
    if (::statvfs(folder.c_str(), &space) == 0) {
      const uint64_t available = static_cast<uint64_t>(space.f_bavail) * space.f_frsize;
      if (available < expected_bytes) {
        return io_error(fmt::format("cannot write '{}': it needs about {:.1f} MiB, only {:.1f} MiB are free in '{}'",
                                    path.string(), static_cast<double>(expected_bytes) / (1 << 20),
                                    static_cast<double>(available) / (1 << 20), folder.string()));
      }
    }
  }
  return {};
}

Expected<std::string> read_file(const fs::path& path, size_t max_bytes,
                                const std::function<void(uint64_t read_bytes, uint64_t total_bytes)>& progress) {
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
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int reason = errno;
    return io_error(fmt::format("cannot open '{}' for reading ({})", path.string(), system_reason(reason)));
  }
  std::string text(static_cast<size_t>(size), '\0');
  constexpr size_t kStep = size_t{1} << 20;
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t result = ::read(fd, text.data() + done, std::min(kStep, text.size() - done));
    if (result < 0 && errno == EINTR) continue;
    if (result <= 0) break;
    done += static_cast<size_t>(result);
    if (progress) progress(done, text.size());
  }
  ::close(fd);
  if (done != text.size()) {
    return io_error(fmt::format("reading '{}' failed after {} of {} bytes", path.string(), done, size));
  }
  return text;
}

std::vector<fs::path> leftover_temporary_files(const fs::path& path) {
  std::vector<fs::path> found;
  const std::string prefix = temporary_prefix(path);
  std::error_code error;
  for (fs::directory_iterator it(folder_of(path), error), end; !error && it != end; it.increment(error)) {
    if (it->path().filename().string().rfind(prefix, 0) == 0) found.push_back(it->path());
  }
  return found;
}

}  // namespace trackscope::core::io
