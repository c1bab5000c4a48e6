#pragma once
// A VideoSource over frames held in memory: synthetic clips (the evaluation's generated videos) and tests.
//
//   std::vector<std::vector<uint8_t>> rgb = ...;          // T buffers of width * height * 3 bytes (RGB24)
//   Expected<std::unique_ptr<MemoryVideoSource>> video =
//       MemoryVideoSource::from_rgb(256, 256, std::move(rgb), Rational{24, 1});
//   Expected<FramePtr> frame = (*video)->read_frame(3);     // shared, no copy
//
// Frames are immutable and shared (FramePtr): read_frame at the native size returns the stored frame itself;
// another size is resized with Pillow's Lanczos filter (core/video/image_resize.h), antialiased, i.e. at least
// the quality of the bicubic scaling of the FFmpeg sources. VideoInfo: container "memory", codec "rawvideo",
// frame_count = number of frames, pts_us = index / frame_rate, duration_us = frame_count / frame_rate.
// Threads: like every VideoSource, one thread at a time (read_frame updates the decode counters and timing).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/video/video_source.h"

namespace trackscope::core {

class MemoryVideoSource final : public VideoSource {
 public:
  /// Takes frames that all have the same size (1..16384 px per side) and consistent buffers
  /// (rgb.size() == width * height * 3); their `index` and `pts_us` are rewritten to the position in the list
  /// and the frame rate. invalid_argument for an empty list, mixed sizes, a bad buffer or a frame rate <= 0.
  static Expected<std::unique_ptr<MemoryVideoSource>> create(std::vector<Frame> frames, Rational frame_rate,
                                                             std::filesystem::path name = "memory");

  /// The same from bare packed RGB24 buffers of width x height pixels (row-major, width * 3 bytes per row).
  static Expected<std::unique_ptr<MemoryVideoSource>> from_rgb(int width, int height,
                                                               std::vector<std::vector<uint8_t>> frames_rgb,
                                                               Rational frame_rate,
                                                               std::filesystem::path name = "memory");

  const VideoInfo& info() const override { return info_; }
  Expected<FramePtr> read_frame(int64_t index, FrameSize size = {}) override;
  double last_decode_ms() const override { return last_decode_ms_; }
  /// decoded_frames counts read_frame calls that returned a frame; there are never seeks.
  DecodeCounters decode_counters() const override { return counters_; }

 private:
  MemoryVideoSource() = default;

  VideoInfo info_;
  std::vector<FramePtr> frames_;
  double last_decode_ms_ = 0.0;
  DecodeCounters counters_;
};

}  // namespace trackscope::core
