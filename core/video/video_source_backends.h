#pragma once
// Internal to core/video: the two VideoSource implementations behind VideoSource::open.

#include <filesystem>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/video/video_source.h"

namespace trackscope::core::video_backends {

/// A file read through libavformat (any container FFmpeg demuxes), best video stream only.
Expected<std::unique_ptr<VideoSource>> open_container(const std::filesystem::path& path,
                                                      const VideoOpenOptions& options);

/// The same for the bytes of a file held in memory (FFmpeg custom I/O); `name` stands for the file in VideoInfo
/// and messages (and lets FFmpeg's probe use its extension).
Expected<std::unique_ptr<VideoSource>> open_container_bytes(std::shared_ptr<const std::vector<uint8_t>> bytes,
                                                            const std::string& name, const VideoOpenOptions& options);

/// Still images decoded one file per frame through FFmpeg's image2 demuxer, in the given order.
/// `display_path` is what the user opened (the folder or the pattern), reported in VideoInfo::path.
Expected<std::unique_ptr<VideoSource>> open_image_sequence(const std::filesystem::path& display_path,
                                                           std::vector<std::filesystem::path> files,
                                                           const VideoOpenOptions& options);

}  // namespace trackscope::core::video_backends
