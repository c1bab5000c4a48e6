#pragma once
// How tracks are drawn over the video: for every point with a track, its estimate on the shown frame (a solid
// marker when the model says visible, a hollow ring when occluded) and a trail through its estimates on the
// frames before and after. Colours: per track (point_colour(colour_index): stable per track) or, for trails,
// by motion direction (the hue of each trail segment is its direction: right red, down yellow-green, left cyan,
// up violet; markers keep the track's colour so a track stays recognisable). The selected track's trail is
// drawn over a white halo; its marker gets a white ring. Keyframes (frames the user set) are drawn as a small
// white diamond on the trail.
//
//   TrackOverlayOptions options;              // trail of 10 frames back, occluded estimates shown hollow
//   options.trail_before_frames = 25;
//   paint_track_overlay(painter, annotation, frame, options, to_widget, 6.0, selected);
//
// Coordinates: track points are raster pixels of the original video (core/tracking/tracks.h); `to_widget` maps
// them to the widget (VideoCanvas::widget_from_image). Marker sizes are in widget pixels (constant on screen).
// On a point's own query frame the query marker (drawn by the canvas) stands for the estimate, so only the
// trail is drawn there.
// Threads: GUI thread (QPainter).

#include <QColor>
#include <QPointF>
#include <QString>

#include <cstdint>
#include <functional>
#include <optional>

#include "core/tracking/annotation.h"

class QPainter;

namespace trackscope::ui {

enum class TrackColouring {
  per_track,         // every track in its point's colour
  motion_direction,  // trail segments coloured by their direction of motion
};
const char* to_string(TrackColouring colouring);
/// "track" / "direction" (the names projects and settings store); nullopt for anything else.
std::optional<TrackColouring> parse_track_colouring(const QString& name);

struct TrackOverlayOptions {
  static constexpr int max_trail_frames = 10000;

  TrackColouring colouring = TrackColouring::per_track;
  bool show_tracks = true;       // false: no estimates, no trails (query points stay)
  bool show_occluded = true;     // false: occluded estimates are hidden (no marker; the trail skips them)
  int trail_before_frames = 10;  // trail through this many frames before the shown one (0 = none)
  int trail_after_frames = 0;    // and after it (drawn dashed: where the point is going)

  /// Clamps the trail lengths into [0, max_trail_frames].
  TrackOverlayOptions clamped() const;
  bool operator==(const TrackOverlayOptions&) const = default;
};

inline constexpr int kMaxAntialiasedTrails = 500;

using WidgetFromImage = std::function<QPointF(QPointF point_in_image)>;

/// Draws every track of `annotation` at frame `frame` (see the header comment). `selected` gets a white ring.
/// Scale: markers outside the painter's device are skipped; with more than kMaxLabelledMarkers markers on screen
/// only the selected one is labelled, and with more than kMaxAntialiasedTrails trails they are drawn without
/// antialiasing, so that a project of 10,000 tracked points still paints in a fraction of a second.
void paint_track_overlay(QPainter& painter, const core::Annotation& annotation, int64_t frame,
                         const TrackOverlayOptions& options, const WidgetFromImage& to_widget,
                         double marker_radius_widget_px, std::optional<core::PointId> selected);

/// The colour of motion in direction (dx, dy) (image coordinates, y down): hue = direction angle.
QColor direction_colour(double dx, double dy);

/// The state of a point's track on one frame, as the point list shows it.
enum class TrackState {
  not_tracked,  // no track, or the track does not cover the frame
  visible,
  occluded,
};

struct TrackStateAtFrame {
  TrackState state = TrackState::not_tracked;
  float p_occluded = 0.0f;  // meaningful unless not_tracked
  float p_far = 0.0f;
};

TrackStateAtFrame track_state_at(const core::Annotation& annotation, core::PointId id, int64_t frame);

}  // namespace trackscope::ui
