#pragma once
// Small, realistic changes to a clip's pixels for the stability evaluation (evaluation_stability.h): a uniform
// grey-level shift and a JPEG round trip, applied to decoded RGB24 frames, and a VideoSource that serves another
// source's frames changed that way.
//
//   FramePerturbation shift{.kind = PerturbationKind::brightness, .brightness_levels = +2};
//   Expected<Frame> brighter = perturb_frame(frame, shift);           // every sample + 2, clamped to [0, 255]
//   FramePerturbation jpeg{.kind = PerturbationKind::jpeg, .jpeg_quality = 90};
//   PerturbedVideoSource recompressed(*video, jpeg);                   // frames as a JPEG of quality 90 decodes
//
// JPEG: libjpeg-turbo, the library PIL and OpenCV use, with the settings of PIL's Image.save(quality=q): baseline,
// 4:2:0 chroma subsampling, the standard IJG tables scaled for q, no optimised Huffman tables; decoded with PIL's
// settings (islow IDCT, fancy upsampling). So the pixels equal PIL's `Image.open(io.BytesIO(buf))` of
// `img.save(buf, "JPEG", quality=q)` (tests/core/evaluation_stability_test.cpp checks it against PIL when present).
// Threads: perturb_frame is pure; a PerturbedVideoSource is used by one thread at a time, like its base.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/video/video_source.h"

namespace trackscope::core {

enum class PerturbationKind {
  none,        // the frame unchanged
  brightness,  // every R, G and B sample + brightness_levels, clamped to [0, 255]
  jpeg,        // a JPEG round trip at jpeg_quality
};

struct FramePerturbation {
  PerturbationKind kind = PerturbationKind::none;
  int brightness_levels = 0;  // grey levels (of 255), may be negative
  int jpeg_quality = 90;      // 1..100, the IJG quality scale (PIL's `quality`)

  /// invalid_argument for a shift outside [-255, 255] or a quality outside [1, 100].
  Status check() const;
  /// "brightness +2", "brightness -2", "jpeg q90", "none".
  std::string name() const;
};

/// The frame with the perturbation applied (index and pts kept). invalid_argument for bad options or a frame
/// whose buffer does not match its size; internal_error if libjpeg fails.
Expected<Frame> perturb_frame(const Frame& frame, const FramePerturbation& perturbation);

/// JPEG bytes of a packed RGB24 image (PIL's save settings at `quality`), and their decode (PIL's settings).
Expected<std::vector<uint8_t>> encode_jpeg(const uint8_t* rgb, int width, int height, int quality);
Expected<Frame> decode_jpeg(const std::vector<uint8_t>& jpeg);

/// A VideoSource whose frames are `base`'s frames perturbed. Frames are perturbed at the native size (the
/// change a re-encoded or re-exposed video would show) and then resized like MemoryVideoSource does when another
/// size is asked for. `base` must outlive it; same VideoInfo as `base`.
class PerturbedVideoSource final : public VideoSource {
 public:
  PerturbedVideoSource(VideoSource& base, FramePerturbation perturbation);

  const VideoInfo& info() const override { return base_.info(); }
  Expected<FramePtr> read_frame(int64_t index, FrameSize size = {}) override;
  double last_decode_ms() const override { return last_decode_ms_; }

 private:
  VideoSource& base_;
  FramePerturbation perturbation_;
  double last_decode_ms_ = 0.0;
};

}  // namespace trackscope::core
