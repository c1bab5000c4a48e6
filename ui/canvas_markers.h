#pragma once
// How a point is drawn on the canvas, in widget coordinates (constant size on screen whatever the zoom):
// a disc of the point's colour with a dark outline, a white ring when selected, and a white id label with a
// dark outline. Query points are solid; issue 3's occluded track estimates use MarkerFill::hollow.

#include <QColor>
#include <QPointF>
#include <QString>

class QPainter;

namespace trackscope::ui {

enum class MarkerFill {
  solid,   // a visible point: filled disc
  hollow,  // an occluded estimate: coloured ring, the video shows through
};

struct MarkerStyle {
  double radius_widget_px = 6.0;
  MarkerFill fill = MarkerFill::solid;
  bool selected = false;
};

/// Beyond this many markers on screen, only the selected one keeps its id label: a hundred labels already
/// overlap into noise, and the text outline is most of a marker's cost (10,000 labelled markers took ~3 s a paint).
inline constexpr int kMaxLabelledMarkers = 200;

/// Draws one marker centred at `centre_in_widget`. `label` (may be empty) goes to the upper right.
void paint_marker(QPainter& painter, QPointF centre_in_widget, const QColor& colour, const MarkerStyle& style,
                  const QString& label);

}  // namespace trackscope::ui
