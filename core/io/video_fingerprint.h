#pragma once
// A fast content fingerprint of a video, so that a project can recognise its video after the file moved:
// SHA-256 of (the file size as 8 little-endian bytes, the first MiB, the last MiB). It reads at most 2 MiB
// whatever the size of the file (milliseconds for a 50 GB recording), and any change of length, header or
// trailer (where containers keep their index) changes it. It is not a proof of identical content (a change
// only in the middle of a long file keeps the fingerprint); the project also checks the frame count.
// For an image-sequence folder: SHA-256 of the sorted file names with their sizes ("name\tsize\n" each).
//
//   Expected<VideoFingerprint> fingerprint = io::fingerprint_video("/videos/bees.mp4");
//   if (*fingerprint == project.video.fingerprint) ...
//
// Threads: thread-safe.

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/status.h"

namespace trackscope::core::io {

struct VideoFingerprint {
  int64_t size_bytes = 0;  // file size (a folder: the sum of its files)
  std::string sha256;      // 64 lower-case hex digits
  bool operator==(const VideoFingerprint&) const = default;
};

/// The method, as written into project files.
inline constexpr const char* kFingerprintMethod = "sha256(size_u64le + first 1 MiB + last 1 MiB)";

Expected<VideoFingerprint> fingerprint_video(const std::filesystem::path& path);

}  // namespace trackscope::core::io
