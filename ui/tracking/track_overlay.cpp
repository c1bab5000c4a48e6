#include "ui/tracking/track_overlay.h"

#include <QPainter>
#include <QPaintDevice>
#include <QPen>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "ui/canvas_markers.h"
#include "ui/point_colours.h"

namespace trackscope::ui {
namespace {

constexpr double kTrailWidthPx = 2.0;
constexpr double kFutureTrailWidthPx = 1.5;
constexpr double kOldestTrailOpacity = 0.3;  // the far end of the past trail fades to this

QPointF image_point(const core::TrackPoint& point) { return {point.x_px, point.y_px}; }

constexpr double kSelectedHaloWidthPx = 4.5;
constexpr double kKeyframeMarkPx = 3.5;

void paint_trail(QPainter& painter, const core::PointTrack& point_track, int64_t frame,
                 const TrackOverlayOptions& options, const WidgetFromImage& to_widget, const QColor& colour,
                 bool selected) {
  const core::Track& track = point_track.track;
  const int64_t last_frame = track.first_frame + static_cast<int64_t>(track.points.size()) - 1;
  const int64_t from = std::max(track.first_frame, frame - options.trail_before_frames);
  const int64_t to = std::min(last_frame, frame + options.trail_after_frames);
  if (selected) {
    // A white halo under the whole visible trail: the selected track reads at once among many.
    QPen halo(QColor(255, 255, 255, 110), kSelectedHaloWidthPx);
    halo.setCapStyle(Qt::RoundCap);
    painter.setPen(halo);
    for (int64_t k = from; k < to; ++k) {
      const bool occluded = !track.at(k).visible || !track.at(k + 1).visible;
      if (occluded && !options.show_occluded) continue;
      painter.drawLine(to_widget(image_point(track.at(k))), to_widget(image_point(track.at(k + 1))));
    }
  }
  for (int64_t k = from; k < to; ++k) {
    const core::TrackPoint& a = track.at(k);
    const core::TrackPoint& b = track.at(k + 1);
    const bool occluded = !a.visible || !b.visible;
    if (occluded && !options.show_occluded) continue;
    const bool future = k >= frame;
    QColor segment = options.colouring == TrackColouring::motion_direction
                         ? direction_colour(static_cast<double>(b.x_px) - a.x_px, static_cast<double>(b.y_px) - a.y_px)
                         : colour;
    if (!future) {
      // Older segments fade out, so the direction of motion reads at a glance.
      const double age = static_cast<double>(frame - k) / static_cast<double>(options.trail_before_frames + 1);
      segment.setAlphaF(static_cast<float>(1.0 - (1.0 - kOldestTrailOpacity) * age));
    }
    QPen pen(segment, future ? kFutureTrailWidthPx : kTrailWidthPx);
    pen.setCapStyle(Qt::RoundCap);
    if (future) pen.setStyle(Qt::DashLine);
    if (occluded) pen.setStyle(Qt::DotLine);
    painter.setPen(pen);
    painter.drawLine(to_widget(image_point(a)), to_widget(image_point(b)));
  }
  // Keyframes within the trail (not the shown frame: its marker is there).
  painter.setPen(QPen(QColor(0, 0, 0, 200), 1.0));
  painter.setBrush(Qt::white);
  for (int64_t keyframe : point_track.keyframes) {
    if (keyframe < from || keyframe > to || keyframe == frame) continue;
    const QPointF centre = to_widget(image_point(track.at(keyframe)));
    const QPointF diamond[] = {centre + QPointF(0, -kKeyframeMarkPx), centre + QPointF(kKeyframeMarkPx, 0),
                               centre + QPointF(0, kKeyframeMarkPx), centre + QPointF(-kKeyframeMarkPx, 0)};
    painter.drawPolygon(diamond, 4);
  }
  painter.setBrush(Qt::NoBrush);
}

}  // namespace

const char* to_string(TrackColouring colouring) {
  return colouring == TrackColouring::motion_direction ? "direction" : "track";
}

std::optional<TrackColouring> parse_track_colouring(const QString& name) {
  if (name == QLatin1String("track")) return TrackColouring::per_track;
  if (name == QLatin1String("direction")) return TrackColouring::motion_direction;
  return std::nullopt;
}

QColor direction_colour(double dx, double dy) {
  if (dx == 0.0 && dy == 0.0) return QColor(200, 200, 200);
  double turn = std::atan2(dy, dx) / (2.0 * std::numbers::pi);  // (-0.5, 0.5], 0 = right, 0.25 = down
  if (turn < 0.0) turn += 1.0;
  return QColor::fromHsvF(static_cast<float>(turn), 0.85f, 1.0f);
}

TrackOverlayOptions TrackOverlayOptions::clamped() const {
  TrackOverlayOptions result = *this;
  result.trail_before_frames = std::clamp(trail_before_frames, 0, max_trail_frames);
  result.trail_after_frames = std::clamp(trail_after_frames, 0, max_trail_frames);
  return result;
}

void paint_track_overlay(QPainter& painter, const core::Annotation& annotation, int64_t frame,
                         const TrackOverlayOptions& options, const WidgetFromImage& to_widget,
                         double marker_radius_widget_px, std::optional<core::PointId> selected) {
  if (!options.show_tracks || frame < 0) return;
  const TrackOverlayOptions bounded = options.clamped();
  painter.save();
  // The markers to draw (on the device, shown at this frame), counted first to pick the level of detail.
  const double margin = marker_radius_widget_px + 40.0;  // the ring and the label reach this far
  const QRectF device = painter.device() != nullptr
                            ? QRectF(0, 0, painter.device()->width(), painter.device()->height())
                                  .adjusted(-margin, -margin, margin, margin)
                            : QRectF();
  struct Marker {
    const core::QueryPoint* point;
    QPointF centre;
    bool visible;
  };
  std::vector<Marker> markers;
  int trails = 0;
  for (const core::QueryPoint& point : annotation) {
    const core::PointTrack* attached = annotation.track(point.id);
    if (attached == nullptr || attached->track.points.empty()) continue;
    ++trails;
    if (!attached->track.covers(frame) || point.query.frame == frame) continue;
    const core::TrackPoint& estimate = attached->track.at(frame);
    if (!estimate.visible && !bounded.show_occluded) continue;
    const QPointF centre = to_widget(image_point(estimate));
    if (!device.isEmpty() && !device.contains(centre)) continue;
    markers.push_back({&point, centre, estimate.visible});
  }
  // Trails first, markers on top: a marker is never hidden under another track's trail.
  painter.setRenderHint(QPainter::Antialiasing, trails <= kMaxAntialiasedTrails);
  for (const core::QueryPoint& point : annotation) {
    const core::PointTrack* attached = annotation.track(point.id);
    if (attached == nullptr || attached->track.points.empty()) continue;
    paint_trail(painter, *attached, frame, bounded, to_widget, point_colour(point.colour_index), selected == point.id);
  }
  painter.setRenderHint(QPainter::Antialiasing, true);
  const bool labels = markers.size() <= static_cast<size_t>(kMaxLabelledMarkers);
  for (const Marker& marker : markers) {
    MarkerStyle style;
    style.radius_widget_px = marker_radius_widget_px;
    style.fill = marker.visible ? MarkerFill::solid : MarkerFill::hollow;
    style.selected = selected == marker.point->id;
    paint_marker(painter, marker.centre, point_colour(marker.point->colour_index), style,
                 labels || style.selected ? QString::number(marker.point->id) : QString());
  }
  painter.restore();
}

TrackStateAtFrame track_state_at(const core::Annotation& annotation, core::PointId id, int64_t frame) {
  const core::PointTrack* attached = annotation.track(id);
  if (attached == nullptr || !attached->track.covers(frame)) return {};
  const core::TrackPoint& estimate = attached->track.at(frame);
  return {estimate.visible ? TrackState::visible : TrackState::occluded, estimate.p_occluded, estimate.p_far};
}

}  // namespace trackscope::ui
