#include "ui/canvas_markers.h"

#include <QPainter>
#include <QPainterPath>

namespace trackscope::ui {

void paint_marker(QPainter& painter, QPointF centre_in_widget, const QColor& colour, const MarkerStyle& style,
                  const QString& label) {
  painter.save();
  painter.setRenderHint(QPainter::Antialiasing, true);
  const double radius = style.radius_widget_px;
  if (style.selected) {
    painter.setPen(QPen(Qt::white, 2.0));
    painter.setBrush(Qt::NoBrush);
    painter.drawEllipse(centre_in_widget, radius + 3.0, radius + 3.0);
  }
  if (style.fill == MarkerFill::solid) {
    painter.setPen(QPen(QColor(0, 0, 0, 200), 1.5));
    painter.setBrush(colour);
    painter.drawEllipse(centre_in_widget, radius, radius);
  } else {
    // A dark halo under the coloured ring keeps it readable on any background.
    painter.setBrush(Qt::NoBrush);
    painter.setPen(QPen(QColor(0, 0, 0, 200), 4.0));
    painter.drawEllipse(centre_in_widget, radius - 1.0, radius - 1.0);
    painter.setPen(QPen(colour, 2.0));
    painter.drawEllipse(centre_in_widget, radius - 1.0, radius - 1.0);
  }
  if (!label.isEmpty()) {
    QFont font = painter.font();
    font.setBold(true);
    QPainterPath text;
    text.addText(centre_in_widget + QPointF(radius + 3.0, -radius - 1.0), font, label);
    painter.setPen(QPen(QColor(0, 0, 0, 220), 3.0));
    painter.setBrush(Qt::NoBrush);
    painter.drawPath(text);
    painter.setPen(Qt::NoPen);
    painter.setBrush(Qt::white);
    painter.drawPath(text);
  }
  painter.restore();
}

}  // namespace trackscope::ui
