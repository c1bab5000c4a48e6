#pragma once
// VideoCanvas: shows the current video frame scaled into the widget, and the query points on it.
//
// View transform (one uniform scale and an offset, no rotation):
//   point_in_widget = point_in_image * zoom() + pan_offset()
// where image coordinates are raster pixels of the ORIGINAL video: pixel (i, j) covers [j, j+1) x [i, i+1).
// image_from_widget() and widget_from_image() are the only conversions; everything else goes through them.
// A mouse event's position is the top-left corner of the device pixel under the pointer; the canvas uses that
// device pixel's centre (position + 0.5 / devicePixelRatio), so a click at zoom 1 lands on x = j + 0.5.
//
// Interaction:
//   wheel                          zoom about the pointer (the image point under it stays put)
//   middle drag, Shift+left drag,
//   or left drag while Space held  pan
//   left press on a point          select it and drag to move it (its query on its query frame; on any other
//                                  frame its track's estimate: a correction, which makes the frame a keyframe)
//   left press elsewhere on image  add a query point on the shown frame there (and drag to adjust it)
//   Space tapped (canvas focused)  play_pause_requested()
// Edits go through the AnnotationEditor; the canvas repaints when the annotation or selection changes.
// Tracks attached to the points are drawn under the query points (ui/tracking/track_overlay.h): estimates on
// the shown frame (hollow when occluded) and trails, as set_track_overlay() says.
// The view starts in "fit" mode (whole frame visible, centred, refitted on resize) until the user zooms or pans.
//
// Threads: GUI thread only.

#include <QImage>
#include <QPointF>
#include <QPointer>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <optional>

#include "core/tracking/annotation.h"
#include "core/video/video_source.h"
#include "ui/tracking/track_overlay.h"

class QPainter;

namespace trackscope::ui {

class AnnotationEditor;

class VideoCanvas : public QWidget, public core::AnnotationObserver {
  Q_OBJECT
 public:
  /// Radius of a drawn query point in widget pixels (constant on screen, whatever the zoom).
  static constexpr double point_radius_widget_px = 6.0;
  /// A press within this many widget pixels of a point's centre grabs the point.
  static constexpr double grab_radius_widget_px = 9.0;
  static constexpr double min_zoom = 1.0 / 32.0;
  static constexpr double max_zoom = 64.0;

  VideoCanvas(AnnotationEditor* editor, QWidget* parent);
  ~VideoCanvas() override;

  /// Shows `frame` (kept by reference). A frame of a different size than the previous one refits the view.
  void set_frame(const core::FramePtr& frame);
  /// Shows nothing (no video).
  void clear_frame();
  const core::FramePtr& frame() const { return frame_; }
  /// Index of the shown frame; -1 when none. Points are drawn and added on this frame.
  int64_t frame_index() const { return frame_ ? frame_->index : -1; }

  QPointF image_from_widget(QPointF point_in_widget) const;
  QPointF widget_from_image(QPointF point_in_image) const;
  /// Widget pixels per image pixel.
  double zoom() const { return zoom_; }
  /// Where the image origin (its top-left corner) lies in widget coordinates.
  QPointF pan_offset() const { return pan_offset_; }
  bool fit_active() const { return fit_active_; }

  /// Whole frame visible and centred; stays fitted on resize until the next zoom or pan.
  void fit_to_window();
  /// Multiplies the zoom by `factor` (clamped to [min_zoom, max_zoom]) keeping the image point under
  /// `anchor_in_widget` fixed.
  void zoom_by(double factor, QPointF anchor_in_widget);
  /// Sets the zoom about the widget centre (1.0 = one image pixel per widget pixel).
  void set_zoom(double zoom);
  void zoom_in();
  void zoom_out();
  void pan_by(QPointF delta_in_widget);

  /// How tracks are drawn (trail lengths, occluded estimates shown or hidden). Repaints.
  void set_track_overlay(const TrackOverlayOptions& options);
  const TrackOverlayOptions& track_overlay() const { return track_overlay_; }

  void on_annotation_changed(const core::Annotation& annotation, const core::AnnotationChange& change) override;

 Q_SIGNALS:
  void play_pause_requested();
  /// Zoom or pan changed.
  void view_changed();

 protected:
  bool event(QEvent* event) override;
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void keyReleaseEvent(QKeyEvent* event) override;
  void focusOutEvent(QFocusEvent* event) override;

 private:
  enum class Drag { none, pan, move_point, move_estimate };
  /// The point whose track estimate on the shown frame lies within the grab radius (nearest first).
  std::optional<core::PointId> estimate_at(QPointF pointer_in_image) const;

  QPointF pointer_in_widget(const QPointF& event_position) const;
  bool inside_image(QPointF point_in_image) const;
  QPointF clamped_to_image(QPointF point_in_image) const;
  void apply_fit();
  void paint_frame(QPainter& painter) const;
  void paint_points(QPainter& painter) const;
  void update_cursor();

  QPointer<AnnotationEditor> editor_;
  std::shared_ptr<core::Annotation> annotation_;
  core::FramePtr frame_;
  QImage image_;  // frame_ converted once for fast scaled drawing
  double zoom_ = 1.0;
  QPointF pan_offset_;
  bool fit_active_ = true;
  TrackOverlayOptions track_overlay_;

  Drag drag_ = Drag::none;
  QPointF drag_last_in_widget_;
  core::PointId drag_point_ = 0;
  QPointF drag_grab_offset_in_image_;  // point position minus pointer position, so a grabbed point does not jump
  bool space_held_ = false;
  bool space_used_for_pan_ = false;
};

}  // namespace trackscope::ui
