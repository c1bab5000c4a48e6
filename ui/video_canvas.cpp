#include "ui/video_canvas.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "ui/annotation_editor.h"
#include "ui/canvas_markers.h"
#include "ui/point_colours.h"

namespace trackscope::ui {
namespace {

constexpr double kWheelZoomStep = 1.25;  // per wheel notch (120 eighths of a degree)
constexpr double kButtonZoomStep = 1.5;
const QColor kCanvasBackground(40, 40, 44);

}  // namespace

VideoCanvas::VideoCanvas(AnnotationEditor* editor, QWidget* parent)
    : QWidget(parent), editor_(editor), annotation_(editor->observable_annotation()) {
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(false);
  setMinimumSize(160, 120);
  setAutoFillBackground(false);
  setAttribute(Qt::WA_OpaquePaintEvent);
  annotation_->add_observer(this);
  connect(editor, &AnnotationEditor::selection_changed, this, [this] { update(); });
  update_cursor();
}

VideoCanvas::~VideoCanvas() { annotation_->remove_observer(this); }

void VideoCanvas::set_frame(const core::FramePtr& frame) {
  if (!frame) {
    clear_frame();
    return;
  }
  const bool new_size = !frame_ || frame_->width != frame->width || frame_->height != frame->height;
  frame_ = frame;
  // RGB888 rows are not 4-byte aligned in general; QImage wants the stride, and converting once to RGB32 makes
  // every later scaled paint several times cheaper than painting RGB888.
  image_ = QImage(frame->rgb.data(), frame->width, frame->height, frame->width * 3, QImage::Format_RGB888)
               .convertToFormat(QImage::Format_RGB32);
  if (new_size) fit_to_window();
  update_cursor();
  update();
}

void VideoCanvas::clear_frame() {
  frame_.reset();
  image_ = QImage();
  drag_ = Drag::none;
  update_cursor();
  update();
}

QPointF VideoCanvas::image_from_widget(QPointF point_in_widget) const {
  return (point_in_widget - pan_offset_) / zoom_;
}

QPointF VideoCanvas::widget_from_image(QPointF point_in_image) const { return point_in_image * zoom_ + pan_offset_; }

void VideoCanvas::fit_to_window() {
  fit_active_ = true;
  apply_fit();
  Q_EMIT view_changed();
  update();
}

void VideoCanvas::apply_fit() {
  if (image_.isNull() || width() <= 0 || height() <= 0) return;
  zoom_ = std::clamp(
      std::min(width() / static_cast<double>(image_.width()), height() / static_cast<double>(image_.height())),
      min_zoom, max_zoom);
  pan_offset_ = QPointF((width() - image_.width() * zoom_) / 2.0, (height() - image_.height() * zoom_) / 2.0);
}

void VideoCanvas::zoom_by(double factor, QPointF anchor_in_widget) {
  if (image_.isNull() || !(factor > 0.0)) return;
  const QPointF anchor_in_image = image_from_widget(anchor_in_widget);
  zoom_ = std::clamp(zoom_ * factor, min_zoom, max_zoom);
  pan_offset_ = anchor_in_widget - anchor_in_image * zoom_;
  fit_active_ = false;
  Q_EMIT view_changed();
  update();
}

void VideoCanvas::set_zoom(double zoom) { zoom_by(zoom / zoom_, QPointF(width() / 2.0, height() / 2.0)); }
void VideoCanvas::zoom_in() { zoom_by(kButtonZoomStep, QPointF(width() / 2.0, height() / 2.0)); }
void VideoCanvas::zoom_out() { zoom_by(1.0 / kButtonZoomStep, QPointF(width() / 2.0, height() / 2.0)); }

void VideoCanvas::pan_by(QPointF delta_in_widget) {
  if (image_.isNull()) return;
  pan_offset_ += delta_in_widget;
  fit_active_ = false;
  Q_EMIT view_changed();
  update();
}

void VideoCanvas::set_track_overlay(const TrackOverlayOptions& options) {
  const TrackOverlayOptions bounded = options.clamped();
  if (bounded == track_overlay_) return;
  track_overlay_ = bounded;
  update();
}

void VideoCanvas::on_annotation_changed(const core::Annotation& /*annotation*/, const core::AnnotationChange& change) {
  if ((drag_ == Drag::move_point || drag_ == Drag::move_estimate) &&
      (change.kind == core::AnnotationChangeKind::cleared ||
       (change.kind == core::AnnotationChangeKind::removed && change.before.id == drag_point_))) {
    drag_ = Drag::none;  // the dragged point vanished (Delete during a drag, new video)
  }
  update();
}

bool VideoCanvas::event(QEvent* event) {
  // Space must reach keyPressEvent (hold to pan) instead of triggering the window's play/pause shortcut;
  // a Space tap without a pan still toggles playback, on release.
  if (event->type() == QEvent::ShortcutOverride) {
    auto* key = static_cast<QKeyEvent*>(event);
    if (key->key() == Qt::Key_Space && key->modifiers() == Qt::NoModifier && !image_.isNull()) {
      event->accept();
      return true;
    }
  }
  return QWidget::event(event);
}

void VideoCanvas::paintEvent(QPaintEvent* /*event*/) {
  QPainter painter(this);
  painter.fillRect(rect(), kCanvasBackground);
  if (image_.isNull()) {
    painter.setPen(QColor(200, 200, 200));
    painter.drawText(rect(), Qt::AlignCenter, tr("Open a video (Ctrl+O) or drop a file here"));
    return;
  }
  paint_frame(painter);
  paint_track_overlay(
      painter, *annotation_, frame_index(), track_overlay_,
      [this](QPointF point_in_image) { return widget_from_image(point_in_image); }, point_radius_widget_px,
      editor_ ? editor_->selected_point() : std::nullopt);
  paint_points(painter);
}

void VideoCanvas::paint_frame(QPainter& painter) const {
  // Draw only the visible part of the image: at high zoom the full target rectangle would be enormous.
  const QRectF visible_in_image =
      QRectF(image_from_widget(QPointF(0, 0)), image_from_widget(QPointF(width(), height())))
          .intersected(QRectF(0, 0, image_.width(), image_.height()));
  if (visible_in_image.isEmpty()) return;
  const QRectF source(std::floor(visible_in_image.left()), std::floor(visible_in_image.top()),
                      std::ceil(visible_in_image.right()) - std::floor(visible_in_image.left()),
                      std::ceil(visible_in_image.bottom()) - std::floor(visible_in_image.top()));
  const QRectF target(widget_from_image(source.topLeft()), widget_from_image(source.bottomRight()));
  // Magnified pixels stay crisp squares (the raster the points refer to); minified frames are smoothed.
  painter.setRenderHint(QPainter::SmoothPixmapTransform, zoom_ < 1.0);
  painter.drawImage(target, image_, source);
}

void VideoCanvas::paint_points(QPainter& painter) const {
  const std::optional<core::PointId> selected = editor_ ? editor_->selected_point() : std::nullopt;
  const int64_t frame = frame_index();
  const QRectF shown = QRectF(rect()).adjusted(-40, -40, 40, 40);  // a marker's ring and label reach this far
  std::vector<std::pair<const core::QueryPoint*, QPointF>> markers;
  for (const core::QueryPoint& point : *annotation_) {
    if (point.query.frame != frame) continue;
    const QPointF centre = widget_from_image(QPointF(point.query.x_px, point.query.y_px));
    if (shown.contains(centre)) markers.emplace_back(&point, centre);
  }
  const bool labels = markers.size() <= static_cast<size_t>(kMaxLabelledMarkers);
  for (const auto& [point, centre] : markers) {
    MarkerStyle style;
    style.radius_widget_px = point_radius_widget_px;
    style.selected = selected == point->id;
    paint_marker(painter, centre, point_colour(point->colour_index), style,
                 labels || style.selected ? QString::number(point->id) : QString());
  }
}

void VideoCanvas::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  if (fit_active_) {
    apply_fit();
    Q_EMIT view_changed();
  }
}

void VideoCanvas::wheelEvent(QWheelEvent* event) {
  const double notches = event->angleDelta().y() / 120.0;
  if (image_.isNull() || notches == 0.0) {
    event->ignore();
    return;
  }
  zoom_by(std::pow(kWheelZoomStep, notches), pointer_in_widget(event->position()));
  event->accept();
}

void VideoCanvas::mousePressEvent(QMouseEvent* event) {
  if (image_.isNull() || drag_ != Drag::none) {
    event->ignore();
    return;
  }
  const QPointF pointer = pointer_in_widget(event->position());
  const bool pan_gesture =
      event->button() == Qt::MiddleButton ||
      (event->button() == Qt::LeftButton && (space_held_ || event->modifiers() & Qt::ShiftModifier));
  if (pan_gesture) {
    drag_ = Drag::pan;
    drag_last_in_widget_ = pointer;
    if (space_held_) space_used_for_pan_ = true;
    update_cursor();
    event->accept();
    return;
  }
  if (event->button() != Qt::LeftButton || !editor_) {
    event->ignore();
    return;
  }
  const QPointF pointer_in_image = image_from_widget(pointer);
  const std::optional<core::PointId> hit = annotation_->find_nearest(
      frame_index(), pointer_in_image.x(), pointer_in_image.y(), grab_radius_widget_px / zoom_);
  const std::optional<core::PointId> estimate = hit ? std::nullopt : estimate_at(pointer_in_image);
  if (hit) {
    const core::QueryPoint* point = annotation_->find(*hit);
    drag_grab_offset_in_image_ = QPointF(point->query.x_px, point->query.y_px) - pointer_in_image;
    drag_point_ = *hit;
    editor_->select_point(*hit);
  } else if (estimate) {
    const core::TrackPoint& at = annotation_->track(*estimate)->track.at(frame_index());
    drag_grab_offset_in_image_ = QPointF(at.x_px, at.y_px) - pointer_in_image;
    drag_point_ = *estimate;
    editor_->select_point(*estimate);
    drag_ = Drag::move_estimate;
    update_cursor();
    event->accept();
    return;
  } else if (inside_image(pointer_in_image)) {
    drag_grab_offset_in_image_ = QPointF(0, 0);
    drag_point_ = editor_->add_point({frame_index(), pointer_in_image.x(), pointer_in_image.y()}, true);
  } else {
    editor_->select_point(std::nullopt);
    event->accept();
    return;
  }
  drag_ = Drag::move_point;
  update_cursor();
  event->accept();
}

void VideoCanvas::mouseMoveEvent(QMouseEvent* event) {
  const QPointF pointer = pointer_in_widget(event->position());
  switch (drag_) {
    case Drag::pan:
      pan_by(pointer - drag_last_in_widget_);
      drag_last_in_widget_ = pointer;
      break;
    case Drag::move_point:
      if (editor_) {
        const QPointF target = clamped_to_image(image_from_widget(pointer) + drag_grab_offset_in_image_);
        editor_->move_point(drag_point_, {frame_index(), target.x(), target.y()});
      }
      break;
    case Drag::move_estimate:
      if (editor_) {
        const QPointF target = clamped_to_image(image_from_widget(pointer) + drag_grab_offset_in_image_);
        editor_->move_estimate(drag_point_, frame_index(), target.x(), target.y());
      }
      break;
    case Drag::none: event->ignore(); return;
  }
  event->accept();
}

void VideoCanvas::mouseReleaseEvent(QMouseEvent* event) {
  if (drag_ == Drag::none) {
    event->ignore();
    return;
  }
  const bool pan_button = event->button() == Qt::MiddleButton || event->button() == Qt::LeftButton;
  if (drag_ == Drag::pan && pan_button) {
    drag_ = Drag::none;
  } else if ((drag_ == Drag::move_point || drag_ == Drag::move_estimate) && event->button() == Qt::LeftButton) {
    drag_ = Drag::none;
    if (editor_) editor_->finish_move(drag_point_);
  }
  update_cursor();
  event->accept();
}

void VideoCanvas::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Space && event->modifiers() == Qt::NoModifier) {
    if (!event->isAutoRepeat()) {
      space_held_ = true;
      space_used_for_pan_ = false;
      update_cursor();
    }
    event->accept();
    return;
  }
  QWidget::keyPressEvent(event);
}

void VideoCanvas::keyReleaseEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Space && !event->isAutoRepeat() && space_held_) {
    space_held_ = false;
    update_cursor();
    if (!space_used_for_pan_) Q_EMIT play_pause_requested();
    event->accept();
    return;
  }
  QWidget::keyReleaseEvent(event);
}

void VideoCanvas::focusOutEvent(QFocusEvent* event) {
  space_held_ = false;
  update_cursor();
  QWidget::focusOutEvent(event);
}

std::optional<core::PointId> VideoCanvas::estimate_at(QPointF pointer_in_image) const {
  if (!track_overlay_.show_tracks) return std::nullopt;
  const int64_t frame = frame_index();
  std::optional<core::PointId> best;
  double best_distance = grab_radius_widget_px / zoom_;
  for (const core::QueryPoint& point : *annotation_) {
    const core::PointTrack* attached = annotation_->track(point.id);
    if (attached == nullptr || point.query.frame == frame || !attached->track.covers(frame)) continue;
    const core::TrackPoint& estimate = attached->track.at(frame);
    if (!estimate.visible && !track_overlay_.show_occluded) continue;  // hidden: not grabbable
    const double distance = std::hypot(estimate.x_px - pointer_in_image.x(), estimate.y_px - pointer_in_image.y());
    if (distance < best_distance || (!best && distance <= best_distance)) {
      best = point.id;
      best_distance = distance;
    }
  }
  return best;
}

QPointF VideoCanvas::pointer_in_widget(const QPointF& event_position) const {
  return event_position + QPointF(0.5, 0.5) / devicePixelRatioF();
}

bool VideoCanvas::inside_image(QPointF point_in_image) const {
  return point_in_image.x() >= 0.0 && point_in_image.y() >= 0.0 && point_in_image.x() < image_.width() &&
         point_in_image.y() < image_.height();
}

QPointF VideoCanvas::clamped_to_image(QPointF point_in_image) const {
  // The largest coordinate still inside the raster is just below the width/height (pixel j covers [j, j+1)).
  const double max_x = std::nextafter(static_cast<double>(image_.width()), 0.0);
  const double max_y = std::nextafter(static_cast<double>(image_.height()), 0.0);
  return {std::clamp(point_in_image.x(), 0.0, max_x), std::clamp(point_in_image.y(), 0.0, max_y)};
}

void VideoCanvas::update_cursor() {
  if (image_.isNull()) {
    setCursor(Qt::ArrowCursor);
  } else if (drag_ == Drag::pan) {
    setCursor(Qt::ClosedHandCursor);
  } else if (space_held_) {
    setCursor(Qt::OpenHandCursor);
  } else if (drag_ == Drag::move_point || drag_ == Drag::move_estimate) {
    setCursor(Qt::SizeAllCursor);
  } else {
    setCursor(Qt::CrossCursor);
  }
}

}  // namespace trackscope::ui
