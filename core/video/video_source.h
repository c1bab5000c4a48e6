#pragma once
// Video input: metadata and frame-accurate random access by frame index.
//
//   auto source = VideoSource::open("clip.mp4");             // or an image-sequence folder / "%05d.jpg" pattern
//   if (!source) return source.status();
//   const VideoInfo& info = (*source)->info();
//   Expected<FramePtr> frame = (*source)->read_frame(42);          // native size, RGB
//   Expected<FramePtr> small = (*source)->read_frame(42, {256, 256});
//
// Coordinates: frames are returned upright (container rotation applied); width/height in VideoInfo are the
// upright size. Pixel (i, j) covers [j, j+1) x [i, i+1) (raster convention, centre at j+0.5, i+0.5).
// Threads: a VideoSource is used by one thread at a time (it owns a decoder). Each thread that decodes opens
// its own instance (the display decode thread and the tracking thread each have one).
// FFmpeg stays behind the implementation: no FFmpeg type appears in this header.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace trackscope::core {

struct Rational {
  int64_t num = 0;
  int64_t den = 1;
  double to_double() const { return den == 0 ? 0.0 : static_cast<double>(num) / static_cast<double>(den); }
  bool operator==(const Rational&) const = default;
};

struct VideoInfo {
  std::filesystem::path path;
  std::string container;        // FFmpeg demuxer name, e.g. "mov,mp4,m4a,3gp,3g2,mj2", "image2"
  std::string codec;            // decoder name, e.g. "h264"
  int width = 0;                // upright (displayed) size in pixels
  int height = 0;
  Rational frame_rate;          // average frame rate (frames per second)
  int64_t frame_count = 0;      // exact number of decodable frames (counted by demuxing when the header lies)
  int64_t duration_us = 0;
  int rotation_deg = 0;         // clockwise rotation applied to the coded frames to make them upright: 0/90/180/270
  bool variable_frame_rate = false;
};

/// A decoded frame: packed RGB24, row-major, `width * 3` bytes per row. Immutable once made, shared by
/// reference between the cache, the GUI and the tracker.
struct Frame {
  int64_t index = 0;            // frame index in the video (0-based, presentation order)
  int64_t pts_us = 0;           // presentation time of the frame
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;

  size_t bytes() const { return rgb.size(); }
  const uint8_t* pixel(int x, int y) const { return rgb.data() + (static_cast<size_t>(y) * width + x) * 3; }
};
using FramePtr = std::shared_ptr<const Frame>;

/// Requested output size; {0, 0} means the native (upright) size. Scaling uses a bicubic-quality filter; the
/// tracker does its own model-exact resizing from native frames.
struct FrameSize {
  int width = 0;
  int height = 0;
  bool native() const { return width == 0 && height == 0; }
};

struct VideoOpenOptions {
  int decoder_threads = 0;      // 0 = FFmpeg's automatic choice
  Status check() const;
};

class VideoSource {
 public:
  virtual ~VideoSource() = default;

  /// Opens a video file, an image-sequence folder (frames sorted by name) or an FFmpeg image2 pattern
  /// ("dir/%05d.jpg"). Fails with not_found, unsupported (no video stream / no decoder) or corrupt_data.
  static Expected<std::unique_ptr<VideoSource>> open(const std::filesystem::path& path,
                                                     const VideoOpenOptions& options = {});

  virtual const VideoInfo& info() const = 0;

  /// Frame `index` (0 <= index < frame_count), exactly the frame a sequential decode yields at that position,
  /// also after arbitrary seeks and for variable-frame-rate files. Sequential reads are fast (no seek).
  virtual Expected<FramePtr> read_frame(int64_t index, FrameSize size = {}) = 0;

  /// Wall time of the last read_frame call in milliseconds (demux + decode + convert).
  virtual double last_decode_ms() const = 0;
};

}  // namespace trackscope::core
