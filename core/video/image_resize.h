#pragma once
// Resizing of packed RGB24 images, bit-exact with Pillow's Image.resize(size, Image.LANCZOS / Image.BILINEAR)
// on uint8 RGB images: the separable filters of Pillow's Resample.c (Lanczos with a = 3; triangle), widened
// by the downscale factor (antialiasing), with Pillow's fixed-point coefficients (22 fractional bits) and its
// rounding to uint8 after the horizontal pass, which runs first. The official LocoTrack evaluation resizes
// video frames to 256x256 this way (mediapy -> PIL), so the tracker uses it to reproduce its inputs.
//
//   ImageResizer resizer(1280, 720, 256, 256, ResizeFilter::lanczos);   // coefficients computed once
//   resizer.resize(frame.rgb.data(), out.data());                        // 256 * 256 * 3 bytes
//   Expected<Frame> small = resize_image(frame, {256, 256}, ResizeFilter::lanczos);
//
// Threads: an ImageResizer is immutable after construction; resize() may run on many threads at once.

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/video/video_source.h"

namespace trackscope::core {

enum class ResizeFilter {
  bilinear,  // Pillow BILINEAR: triangle filter, support 1
  lanczos,   // Pillow LANCZOS (ANTIALIAS): sinc(x) sinc(x/3), support 3
};

class ImageResizer {
 public:
  /// Sizes in pixels, each within 1..16384; throws InvariantError otherwise (check with resize_image first,
  /// or validate user input before).
  ImageResizer(int source_width, int source_height, int width, int height, ResizeFilter filter);

  /// Reads source_width x source_height packed RGB24 pixels and writes width x height packed RGB24 pixels.
  void resize(const uint8_t* source_rgb, uint8_t* destination_rgb) const;

  int source_width() const { return source_width_; }
  int source_height() const { return source_height_; }
  int width() const { return width_; }
  int height() const { return height_; }

  /// The filter taps of one axis, as Pillow computes them: for output pixel i, `size[i]` input pixels starting
  /// at `first[i]` weighted by `weights[i * taps + k]` (fixed point, 22 fractional bits).
  struct Taps {
    int taps = 0;
    std::vector<int> first;
    std::vector<int> size;
    std::vector<int32_t> weights;
  };
  const Taps& horizontal_taps() const { return horizontal_; }
  const Taps& vertical_taps() const { return vertical_; }

 private:
  int source_width_, source_height_, width_, height_;
  Taps horizontal_;
  Taps vertical_;
};

/// Resizes a frame (index and pts are kept). Errors: invalid_argument for an inconsistent frame or a size
/// outside 1..16384.
Expected<Frame> resize_image(const Frame& image, FrameSize size, ResizeFilter filter);

}  // namespace trackscope::core
