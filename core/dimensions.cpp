#include "core/dimensions.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/video/still_image.h"

namespace trackscope::core {

Expected<std::vector<int64_t>> parse_dimensions(std::string_view text, const DimensionsFormat& format) {
  const auto refuse = [&](const std::string& reason) {
    const std::string value =
        format.what.empty() ? fmt::format("'{}'", text) : fmt::format("{} '{}'", format.what, text);
    return invalid_argument(fmt::format("{}: {}; give {}, whole numbers from {} to {}, e.g. {}", value, reason,
                                        format.pattern, format.min, format.max, format.example));
  };
  std::vector<int64_t> values;
  std::string_view rest = text;
  for (size_t i = 0; i < format.parts; ++i) {
    const bool last = i + 1 == format.parts;
    const size_t x = rest.find('x');
    if (last != (x == std::string_view::npos)) {
      return refuse(fmt::format("not {} numbers joined by 'x'", format.parts));
    }
    const std::string_view part = rest.substr(0, x);
    if (part.size() > 1 && part[0] == '-') return refuse(fmt::format("{} is negative", part));
    if (part.empty() || !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return refuse(fmt::format("not {} numbers joined by 'x'", format.parts));
    }
    int64_t value = 0;
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (error == std::errc::result_out_of_range) return refuse(fmt::format("{} is too large", part));
    if (error != std::errc() || end != part.data() + part.size()) {
      return refuse(fmt::format("not {} numbers joined by 'x'", format.parts));
    }
    if (value < format.min || value > format.max) return refuse(fmt::format("{} is out of range", value));
    values.push_back(value);
    if (!last) rest = rest.substr(x + 1);
  }
  return values;
}

Expected<FrameSize> parse_frame_size(std::string_view text, std::string_view what) {
  Expected<std::vector<int64_t>> parts = parse_dimensions(
      text, {.what = what, .pattern = "WIDTHxHEIGHT", .example = "640x360", .max = still_image::kMaxImageSide});
  if (!parts) return parts.status();
  return FrameSize{static_cast<int>((*parts)[0]), static_cast<int>((*parts)[1])};
}

}  // namespace trackscope::core
