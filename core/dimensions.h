#pragma once
// Values written as whole numbers joined by 'x' on command lines and in job files: a frame size "640x360", a
// query grid "16x16", a synthetic clip "1920x1080x18000". One parser, so that every such value refuses a sign,
// garbage or a number past the type with the same kind of message instead of an exception from std::stoi.
//
//   Expected<FrameSize> size = parse_frame_size("640x360", "--size");          // {640, 360}
//   Expected<std::vector<int64_t>> parts = parse_dimensions("1920x1080x18000", {.what = "--synthetic",
//       .pattern = "WIDTHxHEIGHTxFRAMES", .example = "1920x1080x18000", .parts = 3});
//
// Threads: pure functions.

#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/video/video_source.h"

namespace trackscope::core {

struct DimensionsFormat {
  std::string_view what = {};            // names the value in messages: "--size" (empty: the caller says it)
  std::string_view pattern = "WxH";      // "WIDTHxHEIGHT"
  std::string_view example = "640x360";  // a valid value, shown in messages
  size_t parts = 2;                      // numbers joined by 'x'
  int64_t min = 1;                       // each number within [min, max]
  int64_t max = std::numeric_limits<int32_t>::max();
};

/// `text` as `format.parts` whole decimal numbers joined by a lower-case 'x' ("640x360" -> {640, 360}), each within
/// [format.min, format.max]. invalid_argument naming format.what, the text, what is wrong (not numbers joined by
/// 'x', a number out of range, a number too large to read) and the pattern with its range and example. Digits
/// only: a sign, spaces, a decimal point or an empty part are refused.
Expected<std::vector<int64_t>> parse_dimensions(std::string_view text, const DimensionsFormat& format);

/// "WIDTHxHEIGHT", each 1..16384 (still_image::kMaxImageSide, what VideoSource::read_frame accepts); `what` names
/// the value.
Expected<FrameSize> parse_frame_size(std::string_view text, std::string_view what);

}  // namespace trackscope::core
