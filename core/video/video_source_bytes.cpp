// VideoSource::open_bytes: a video or image held in memory, through the container backend's custom I/O.
#include <fmt/format.h>

#include "core/video/ffmpeg_support.h"
#include "core/video/video_source.h"
#include "core/video/video_source_backends.h"

namespace trackscope::core {

Expected<std::unique_ptr<VideoSource>> VideoSource::open_bytes(std::shared_ptr<const std::vector<uint8_t>> bytes,
                                                               const std::string& name,
                                                               const VideoOpenOptions& options) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  ffmpeg::route_ffmpeg_logs();
  if (!bytes) return invalid_argument("no bytes given");
  if (bytes->empty()) return corrupt_data(fmt::format("{} is empty (0 bytes)", name));
  return video_backends::open_container_bytes(std::move(bytes), name.empty() ? std::string("memory") : name, options);
}

}  // namespace trackscope::core
