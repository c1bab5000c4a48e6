#pragma once
// Internal to core/video: the two VideoSource implementations behind VideoSource::open.

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/video/video_source.h"

namespace trackscope::core::video_backends {

/// What the file-backed sources' read_frame share: the request's checks, the last frame handed out given again
/// without decoding when the same (index, size) is asked twice in a row (a repaint of a paused view), and the
/// time of the last call that got past the checks.
class LastFrame {
 public:
  /// `decode(index, size)` -> Expected<FramePtr> runs unless this frame is the last one handed out. Errors:
  /// invalid_argument for a size FrameSize::check refuses or an index outside [0, frame_count); decode's errors.
  template <typename Decode>
  Expected<FramePtr> read(int64_t index, FrameSize size, int64_t frame_count, Decode&& decode) {
    TRACKSCOPE_RETURN_IF_ERROR(size.check());
    if (index < 0 || index >= frame_count) {
      return invalid_argument(fmt::format("frame index {} is out of range [0, {})", index, frame_count));
    }
    const auto start = std::chrono::steady_clock::now();
    const bool same = frame_ && frame_->index == index && size_.width == size.width && size_.height == size.height;
    Expected<FramePtr> frame = same ? Expected<FramePtr>(frame_) : std::forward<Decode>(decode)(index, size);
    if (frame) remember(*frame, size);
    last_read_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return frame;
  }
  /// A frame decoded some other way (the first one, while opening), at `size`.
  void remember(FramePtr frame, FrameSize size = {}) {
    frame_ = std::move(frame);
    size_ = size;
  }
  double last_read_ms() const { return last_read_ms_; }

 private:
  FramePtr frame_;
  FrameSize size_;
  double last_read_ms_ = 0.0;
};

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
