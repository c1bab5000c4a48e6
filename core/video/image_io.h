#pragma once
// Still images of RGB frames: PNG and JPEG written through FFmpeg's encoders, PNG read through libpng (the
// pixels PIL and OpenCV read, as image sequences: still_image.h).
//
//   TRACKSCOPE_RETURN_IF_ERROR(write_png("frame_000042.png", *frame));
//   Expected<Frame> image = read_png("frame_000042.png");     // packed RGB24, index 0, pts 0
//
// Threads: the functions are independent and may be called from any thread concurrently.

#include <filesystem>

#include "core/status.h"
#include "core/video/video_source.h"

namespace trackscope::core {

/// Writes `frame` (packed RGB24, rgb.size() == width * height * 3) as an 8-bit RGB PNG, losslessly.
/// Errors: invalid_argument (inconsistent frame), unsupported (no PNG encoder in this FFmpeg), io_error.
Status write_png(const std::filesystem::path& path, const Frame& frame);

/// Reads a PNG of any bit depth and colour type as packed RGB24, as image sequences read it (libpng: alpha
/// dropped, 16-bit samples reduced to their high byte, greyscale replicated; docs/video-decoding.md).
/// Errors: not_found, corrupt_data (not a PNG, damaged or truncated), unsupported (larger than 16384 per side).
Expected<Frame> read_png(const std::filesystem::path& path);

/// Whether this FFmpeg build can write PNG (the GPU machine's minimal FFmpeg has no encoders; JPEG needs the
/// mjpeg encoder: video_encoder_available(VideoCodec::mjpeg)).
bool png_encoder_available();

/// Writes `frame` as a baseline JPEG with 4:4:4 chroma. `qscale` is FFmpeg's -q:v scale: 2 (best) to 31.
Status write_jpeg(const std::filesystem::path& path, const Frame& frame, int qscale = 2);

}  // namespace trackscope::core
