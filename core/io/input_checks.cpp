#include "core/io/input_checks.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace trackscope::core::io {
namespace {

bool within_axis(double value, int size) {
  if (!std::isfinite(value)) return false;
  if (size <= 0) return std::abs(value) <= kMaxCoordinatePx;
  const double margin = kMaxOutsideImages * size;
  return value >= -margin && value <= size + margin;
}

}  // namespace

bool plausible_position(double x_px, double y_px, int width, int height) {
  return within_axis(x_px, width) && within_axis(y_px, height);
}

std::string position_bounds_text(int width, int height) {
  if (width <= 0 || height <= 0) {
    return fmt::format("x and y must be finite and within +-{:g} px", kMaxCoordinatePx);
  }
  const double mx = kMaxOutsideImages * width, my = kMaxOutsideImages * height;
  return fmt::format("x and y must lie within [{:g}, {:g}] x [{:g}, {:g}] px ({:g} image sizes around the {}x{} video)",
                     -mx, width + mx, -my, height + my, kMaxOutsideImages, width, height);
}

std::optional<int64_t> parse_int64(std::string_view text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::string_view strip_utf8_bom(std::string_view text) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (text.substr(0, kBom.size()) == kBom) text.remove_prefix(kBom.size());
  return text;
}

}  // namespace trackscope::core::io
