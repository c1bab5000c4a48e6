#pragma once
// Sense checks shared by every reader of untrusted files (projects, recovery files, track imports, query CSV,
// profiles, BADJA annotations, checkpoints): bounds outside which a number is damage or a hand edit, never real
// data. Readers check a value against them BEFORE they allocate anything it sizes, and name the value, the
// bound and the file in their message.
//
//   if (!plausible_position(x, y, video_width, video_height)) return corrupt_data(... position_bounds_text(...));
//   Expected<int64_t> frame = checked_frame(value, "points[3].query.frame");
//
// Threads: pure functions and constants.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trackscope::core::io {

/// Frame indices at or above this are refused (2^31 frames: over two years of video at 30 fps).
inline constexpr int64_t kMaxFrameIndex = int64_t{1} << 31;
/// Images wider or taller than this are refused (FFmpeg's own limit is 16384 for most codecs).
inline constexpr int kMaxImageSidePx = 1 << 16;
/// A position may lie outside the image (tracks leave the frame), by at most this many image sizes.
inline constexpr double kMaxOutsideImages = 4.0;
/// Positions beyond this magnitude are refused when the image size is unknown (float32 still resolves 0.06 px).
inline constexpr double kMaxCoordinatePx = 1e6;
/// Per file: the sum over the tracks of the frames they span. Above it an import would need gigabytes for
/// estimates that a file of a few lines can claim (two rows at frames 0 and 10^12): refused, not allocated.
inline constexpr int64_t kMaxTrackEstimates = int64_t{1} << 26;

/// Finite and within kMaxOutsideImages image sizes around [0, width] x [0, height]; within +-kMaxCoordinatePx
/// on an axis whose size is unknown (<= 0).
bool plausible_position(double x_px, double y_px, int width, int height);
/// "x and y must lie within [-2560, 3200] x [-1920, 2400] px (4 image sizes around the 640x480 video)".
std::string position_bounds_text(int width, int height);

/// Strict decimal integer parsing of a whole field (no sign other than '-', no spaces, no "1e3", no overflow).
std::optional<int64_t> parse_int64(std::string_view text);

/// `text` without a leading UTF-8 byte order mark (EF BB BF), which spreadsheet programs put before CSV headers.
std::string_view strip_utf8_bom(std::string_view text);

}  // namespace trackscope::core::io
