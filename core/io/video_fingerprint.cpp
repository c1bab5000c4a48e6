#include "core/io/video_fingerprint.h"

#include <algorithm>
#include <fstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/io/sha256.h"

namespace trackscope::core::io {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kEdgeBytes = int64_t{1} << 20;

Status read_span(std::ifstream& in, int64_t offset, int64_t length, Sha256& hasher, const fs::path& path) {
  std::vector<char> buffer(static_cast<size_t>(length));
  in.seekg(offset);
  in.read(buffer.data(), length);
  if (in.gcount() != length) return io_error(fmt::format("reading '{}' failed", path.string()));
  hasher.update(std::as_bytes(std::span(buffer.data(), buffer.size())));
  return {};
}

}  // namespace

Expected<VideoFingerprint> fingerprint_video(const fs::path& path) {
  std::error_code error;
  if (!fs::exists(path, error)) return not_found(fmt::format("'{}' does not exist", path.string()));
  Sha256 hasher;
  VideoFingerprint fingerprint;
  if (fs::is_directory(path, error)) {
    std::vector<std::pair<std::string, uintmax_t>> files;
    for (fs::directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
      if (it->is_regular_file()) files.emplace_back(it->path().filename().string(), it->file_size());
    }
    if (error) return io_error(fmt::format("cannot list '{}': {}", path.string(), error.message()));
    std::sort(files.begin(), files.end());
    for (const auto& [name, size] : files) {
      hasher.update(fmt::format("{}\t{}\n", name, size));
      fingerprint.size_bytes += static_cast<int64_t>(size);
    }
    fingerprint.sha256 = to_hex(hasher.finish());
    return fingerprint;
  }
  const auto size = fs::file_size(path, error);
  if (error) return io_error(fmt::format("cannot read '{}': {}", path.string(), error.message()));
  fingerprint.size_bytes = static_cast<int64_t>(size);
  std::array<std::byte, 8> size_bytes{};
  for (size_t i = 0; i < 8; ++i)
    size_bytes[i] = static_cast<std::byte>((static_cast<uint64_t>(size) >> (8 * i)) & 0xFF);
  hasher.update(size_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error(fmt::format("cannot open '{}' for reading", path.string()));
  const int64_t total = fingerprint.size_bytes;
  const int64_t head = std::min(total, kEdgeBytes);
  TRACKSCOPE_RETURN_IF_ERROR(read_span(in, 0, head, hasher, path));
  const int64_t tail = std::min(total, kEdgeBytes);
  TRACKSCOPE_RETURN_IF_ERROR(read_span(in, total - tail, tail, hasher, path));
  fingerprint.sha256 = to_hex(hasher.finish());
  return fingerprint;
}

}  // namespace trackscope::core::io
