#pragma once
// The point palette: a point's stable colour_index picks its colour, so a point keeps its colour through
// moves, tracking and reloads. Twelve well-separated colours that stay readable on bright and dark video.

#include <QColor>

namespace trackscope::ui {

/// The colour of colour slot `colour_index` (any int; wraps around the palette).
QColor point_colour(int colour_index);

}  // namespace trackscope::ui
