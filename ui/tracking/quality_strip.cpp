#include "ui/tracking/quality_strip.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

#include "ui/annotation_editor.h"
#include "ui/point_colours.h"
#include "ui/tracking/track_quality_model.h"

namespace trackscope::ui {
namespace {

constexpr int kPaddingPx = 2;
const QColor kStripBackground(34, 34, 38);
const QColor kUntracked(52, 52, 56);
const QColor kLow(28, 40, 60);
const QColor kOccluded(80, 150, 255);
const QColor kFar(255, 150, 40);
const QColor kFlagged(235, 45, 45);

QColor mix(const QColor& low, const QColor& high, double t) {
  t = std::clamp(t, 0.0, 1.0);
  return QColor::fromRgbF(static_cast<float>(low.redF() + (high.redF() - low.redF()) * t),
                          static_cast<float>(low.greenF() + (high.greenF() - low.greenF()) * t),
                          static_cast<float>(low.blueF() + (high.blueF() - low.blueF()) * t));
}

}  // namespace

QualityStrip::QualityStrip(AnnotationEditor* editor, TrackQualityModel* quality, QWidget* parent)
    : QWidget(parent), editor_(editor), annotation_(editor->observable_annotation()), quality_(quality) {
  setAttribute(Qt::WA_OpaquePaintEvent);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  setToolTip(
      tr("Track quality per frame: p_occluded (upper half, blue), p_far (lower half, orange), flagged frames "
         "(red), keyframes (white)"));
  annotation_->add_observer(this);
  connect(quality, &TrackQualityModel::changed, this, qOverload<>(&QWidget::update));
  connect(editor, &AnnotationEditor::selection_changed, this, qOverload<>(&QWidget::update));
  rebuild_rows();
}

QualityStrip::~QualityStrip() { annotation_->remove_observer(this); }

void QualityStrip::set_frame_count(int64_t frame_count) {
  frame_count_ = std::max<int64_t>(0, frame_count);
  update();
}

void QualityStrip::set_current_frame(int64_t frame) {
  if (frame == current_frame_) return;
  current_frame_ = frame;
  update();
}

void QualityStrip::set_horizontal_margins(int left_px, int right_px) {
  if (left_px == left_px_ && right_px == right_px_) return;
  left_px_ = std::max(0, left_px);
  right_px_ = std::max(0, right_px);
  update();
}

int64_t QualityStrip::frame_at(int x) const {
  const int span = std::max(1, width() - left_px_ - right_px_);
  if (frame_count_ <= 0) return 0;
  const int64_t frame = static_cast<int64_t>(std::floor(static_cast<double>(x - left_px_) * frame_count_ / span));
  return std::clamp<int64_t>(frame, 0, frame_count_ - 1);
}

double QualityStrip::x_of(int64_t frame) const {
  const int span = std::max(1, width() - left_px_ - right_px_);
  return left_px_ + (static_cast<double>(frame) + 0.5) * span / static_cast<double>(std::max<int64_t>(1, frame_count_));
}

int QualityStrip::row_height() const {
  if (rows_.empty()) return max_row_height_px;
  const int fitting = (max_height_px - 2 * kPaddingPx) / static_cast<int>(rows_.size());
  return std::clamp(fitting, min_row_height_px, max_row_height_px);
}

std::optional<size_t> QualityStrip::row_at(int y) const {
  if (y < kPaddingPx) return std::nullopt;
  const size_t row = static_cast<size_t>((y - kPaddingPx) / row_height());
  return row < rows_.size() ? std::optional(row) : std::nullopt;
}

QSize QualityStrip::sizeHint() const {
  const int rows = static_cast<int>(rows_.size());
  const int height = rows == 0 ? 0 : std::min(max_height_px, rows * row_height() + 2 * kPaddingPx);
  return {400, height};
}

QSize QualityStrip::minimumSizeHint() const { return {100, sizeHint().height()}; }

void QualityStrip::on_annotation_changed(const core::Annotation& /*annotation*/,
                                         const core::AnnotationChange& /*change*/) {
  rebuild_rows();
}

void QualityStrip::rebuild_rows() {
  std::vector<core::PointId> rows;
  for (const core::QueryPoint& point : *annotation_) {
    if (annotation_->track(point.id) != nullptr) rows.push_back(point.id);
  }
  if (rows != rows_) {
    rows_ = std::move(rows);
    setFixedHeight(sizeHint().height());
    updateGeometry();
  }
  update();
}

void QualityStrip::paintEvent(QPaintEvent* /*event*/) {
  QPainter painter(this);
  painter.fillRect(rect(), kStripBackground);
  if (frame_count_ <= 0) return;
  for (size_t row = 0; row < rows_.size(); ++row) paint_row(painter, row, rows_[row]);
  const double x = x_of(current_frame_);
  painter.setPen(QPen(QColor(255, 255, 255, 220), 1.0));
  painter.drawLine(QPointF(x, 0), QPointF(x, height()));
}

void QualityStrip::paint_row(QPainter& painter, size_t row, core::PointId id) const {
  const core::QueryPoint* point = annotation_->find(id);
  const core::PointTrack* attached = annotation_->track(id);
  if (point == nullptr || attached == nullptr) return;
  const core::Track& track = attached->track;
  const core::TrackQuality* cues = quality_ ? quality_->quality(id) : nullptr;
  const int h = row_height();
  const int top = kPaddingPx + static_cast<int>(row) * h;
  const int inner = std::max(2, h - 1);  // 1 px gap between rows
  const int half = inner / 2;
  const bool selected = editor_ && editor_->selected_point() == id;
  // The point's colour in the left margin (the timeline's play button sits above it).
  if (left_px_ >= 4) {
    painter.fillRect(QRect(std::max(0, left_px_ - 10), top, 6, inner), point_colour(point->colour_index));
    if (selected) painter.fillRect(QRect(std::max(0, left_px_ - 14), top, 3, inner), Qt::white);
  }
  const int span = std::max(1, width() - left_px_ - right_px_);
  for (int x = left_px_; x < left_px_ + span; ++x) {
    const int64_t first = frame_at(x);
    const int64_t last = std::max(first, frame_at(x + 1) - (x + 1 < left_px_ + span ? 1 : 0));
    float p_occluded = -1.0f, p_far = -1.0f;
    bool flagged = false;
    for (int64_t frame = first; frame <= last; ++frame) {
      if (!track.covers(frame)) continue;
      const core::TrackPoint& estimate = track.at(frame);
      p_occluded = std::max(p_occluded, estimate.p_occluded);
      p_far = std::max(p_far, estimate.p_far);
      flagged = flagged || (cues != nullptr && cues->flagged(frame));
    }
    if (p_occluded < 0.0f) {
      painter.fillRect(QRect(x, top, 1, inner), kUntracked);
      continue;
    }
    QColor upper = mix(kLow, kOccluded, p_occluded), lower = mix(kLow, kFar, p_far);
    if (flagged) upper = lower = kFlagged;
    painter.fillRect(QRect(x, top, 1, half), upper);
    painter.fillRect(QRect(x, top + half, 1, inner - half), lower);
  }
  // Keyframes as 2 px white ticks at their frame's centre (the query frame included).
  std::vector<int64_t> keyframes = attached->keyframes;
  keyframes.push_back(track.query.frame);
  for (int64_t keyframe : keyframes) {
    if (!track.covers(keyframe)) continue;
    painter.fillRect(QRectF(x_of(keyframe) - 1.0, top, 2.0, inner), Qt::white);
  }
  if (selected) {
    painter.setPen(QPen(QColor(255, 255, 255, 160), 1.0));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(QRectF(left_px_ - 0.5, top - 0.5, span, inner));
  }
}

void QualityStrip::mousePressEvent(QMouseEvent* event) {
  const QPoint position = event->position().toPoint();
  if (event->button() != Qt::LeftButton || frame_count_ <= 0) {
    QWidget::mousePressEvent(event);
    return;
  }
  if (const std::optional<size_t> row = row_at(position.y()); row && editor_) editor_->select_point(rows_[*row]);
  Q_EMIT frame_requested(frame_at(position.x()));
  event->accept();
}

QString QualityStrip::describe(core::PointId id, int64_t frame) const {
  const core::PointTrack* attached = annotation_->track(id);
  if (attached == nullptr || !attached->track.covers(frame))
    return tr("point %1, frame %2: not tracked").arg(id).arg(frame);
  const core::TrackPoint& estimate = attached->track.at(frame);
  QString text = tr("point %1, frame %2: %3, p_occluded %4, p_far %5")
                     .arg(id)
                     .arg(frame)
                     .arg(estimate.visible ? tr("visible") : tr("occluded"))
                     .arg(estimate.p_occluded, 0, 'f', 2)
                     .arg(estimate.p_far, 0, 'f', 2);
  if (attached->is_keyframe(frame)) text += tr(", keyframe");
  if (const core::TrackQuality* cues = quality_ ? quality_->quality(id) : nullptr) {
    const uint8_t flags = cues->flags_at(frame);
    if (flags & core::quality_velocity_outlier) text += tr(", velocity outlier");
    if (flags & core::quality_uncertain) {
      const core::QualityOptions& o = quality_->options();
      text += tr(", uncertain (p_far >= %1%2, %3 thresholds)")
                  .arg(o.uncertain_p_far, 0, 'f', 2)
                  .arg(o.uncertain_p_occluded < 1.0f ? tr(" or p_occluded >= %1").arg(o.uncertain_p_occluded, 0, 'f', 2)
                                                     : QString())
                  .arg(quality_->options_source().rfind("defaults", 0) == 0 ? tr("default") : tr("calibrated"));
    }
    if (cues->covers(frame) && !cues->consistency_error_px.empty()) {
      const float distance = cues->consistency_error_px[static_cast<size_t>(frame - cues->first_frame)];
      if (std::isfinite(distance)) text += tr(", forward-backward %1 px").arg(distance, 0, 'f', 1);
      if (flags & core::quality_inconsistent) text += tr(" (inconsistent)");
    }
  }
  return text;
}

bool QualityStrip::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    if (const std::optional<size_t> row = row_at(help->pos().y()); row && frame_count_ > 0) {
      QToolTip::showText(help->globalPos(), describe(rows_[*row], frame_at(help->pos().x())), this);
      return true;
    }
  }
  return QWidget::event(event);
}

}  // namespace trackscope::ui
