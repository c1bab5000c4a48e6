#include "core/video/memory_video.h"

#include <fmt/format.h>

#include <chrono>

#include "core/video/image_resize.h"
#include "core/video/still_image.h"

namespace trackscope::core {

namespace {

int64_t pts_of(int64_t index, Rational frame_rate) {
  // index / (num / den) seconds, in microseconds, rounded down (exact for integer rates).
  return index * 1'000'000 * frame_rate.den / frame_rate.num;
}

}  // namespace

Expected<std::unique_ptr<MemoryVideoSource>> MemoryVideoSource::create(std::vector<Frame> frames, Rational frame_rate,
                                                                       std::filesystem::path name) {
  if (frames.empty()) return invalid_argument(fmt::format("in-memory video '{}' has no frames", name.string()));
  if (frame_rate.num <= 0 || frame_rate.den <= 0) {
    return invalid_argument(fmt::format("in-memory video '{}': frame rate {}/{} must be positive", name.string(),
                                        frame_rate.num, frame_rate.den));
  }
  const int width = frames.front().width, height = frames.front().height;
  if (!still_image::within_image_sides(width, height)) {
    return invalid_argument(fmt::format("in-memory video '{}': frame size {}x{} not within 1..{} px", name.string(),
                                        width, height, still_image::kMaxImageSide));
  }
  std::unique_ptr<MemoryVideoSource> source(new MemoryVideoSource());
  source->frames_.reserve(frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    Frame& frame = frames[i];
    if (frame.width != width || frame.height != height) {
      return invalid_argument(fmt::format("in-memory video '{}': frame {} is {}x{}, frame 0 is {}x{}", name.string(), i,
                                          frame.width, frame.height, width, height));
    }
    const size_t expected_bytes = static_cast<size_t>(width) * static_cast<size_t>(height) * 3;
    if (frame.rgb.size() != expected_bytes) {
      return invalid_argument(fmt::format("in-memory video '{}': frame {} holds {} bytes, {}x{} RGB24 needs {}",
                                          name.string(), i, frame.rgb.size(), width, height, expected_bytes));
    }
    frame.index = static_cast<int64_t>(i);
    frame.pts_us = pts_of(frame.index, frame_rate);
    source->frames_.push_back(std::make_shared<const Frame>(std::move(frame)));
  }
  VideoInfo& info = source->info_;
  info.path = std::move(name);
  info.container = "memory";
  info.codec = "rawvideo";
  info.width = width;
  info.height = height;
  info.frame_rate = frame_rate;
  info.frame_count = static_cast<int64_t>(source->frames_.size());
  info.duration_us = pts_of(info.frame_count, frame_rate);
  return source;
}

Expected<std::unique_ptr<MemoryVideoSource>> MemoryVideoSource::from_rgb(int width, int height,
                                                                         std::vector<std::vector<uint8_t>> frames_rgb,
                                                                         Rational frame_rate,
                                                                         std::filesystem::path name) {
  std::vector<Frame> frames(frames_rgb.size());
  for (size_t i = 0; i < frames_rgb.size(); ++i) {
    frames[i].width = width;
    frames[i].height = height;
    frames[i].rgb = std::move(frames_rgb[i]);
  }
  return create(std::move(frames), frame_rate, std::move(name));
}

Expected<FramePtr> MemoryVideoSource::read_frame(int64_t index, FrameSize size) {
  const auto start = std::chrono::steady_clock::now();
  if (index < 0 || index >= info_.frame_count) {
    return invalid_argument(
        fmt::format("frame {} is outside [0, {}) of '{}'", index, info_.frame_count, info_.path.string()));
  }
  const FramePtr& stored = frames_[static_cast<size_t>(index)];
  FramePtr result = stored;
  if (!size.native() && (size.width != info_.width || size.height != info_.height)) {
    TRACKSCOPE_RETURN_IF_ERROR(size.check());
    Expected<Frame> resized = resize_image(*stored, size, ResizeFilter::lanczos);
    if (!resized) return resized.status();
    result = std::make_shared<const Frame>(std::move(*resized));
  }
  ++counters_.decoded_frames;
  last_decode_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace trackscope::core
