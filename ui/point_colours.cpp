#include "ui/point_colours.h"

#include <array>

namespace trackscope::ui {
namespace {

// Saturated, mutually distinct hues (after Kelly's and Glasbey's palettes), none close to black or white so
// the dark outline and white label always contrast.
constexpr std::array<QRgb, 12> kPalette = {
    0xffe6194b, 0xff3cb44b, 0xffffe119, 0xff4363d8, 0xfff58231, 0xff911eb4,
    0xff42d4f4, 0xfff032e6, 0xffbfef45, 0xfffabed4, 0xff469990, 0xffdcbeff,
};

}  // namespace

QColor point_colour(int colour_index) {
  const int size = static_cast<int>(kPalette.size());
  const int slot = ((colour_index % size) + size) % size;
  return QColor::fromRgb(kPalette[static_cast<size_t>(slot)]);
}

}  // namespace trackscope::ui
