#pragma once
// QualityStrip: the strip under the timeline that shows, per track (one row each, in id order) and per frame,
// the model's p_occluded (upper half of the row: dark to blue) and p_far (lower half: dark to orange), frames
// the quality cues flag (red: velocity outlier, inconsistent forward-backward, or uncertain), keyframes (white)
// and the playhead. Frames map to x like the timeline's slider (set_horizontal_margins aligns the two); where a
// pixel column holds several frames it shows their maximum. Clicking a row selects its track and asks for the
// frame under the pointer; hovering tells the values.
//
//   auto* strip = new QualityStrip(editor, quality_model, parent);
//   strip->set_frame_count(277);
//   strip->set_current_frame(12);
//   connect(strip, &QualityStrip::frame_requested, window, ...);
//
// Threads: GUI thread only.

#include <QPointer>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/tracking/annotation.h"

namespace trackscope::ui {

class AnnotationEditor;
class TrackQualityModel;

class QualityStrip : public QWidget, public core::AnnotationObserver {
  Q_OBJECT
 public:
  static constexpr int max_row_height_px = 10;
  static constexpr int min_row_height_px = 3;
  static constexpr int max_height_px = 96;

  QualityStrip(AnnotationEditor* editor, TrackQualityModel* quality, QWidget* parent);
  ~QualityStrip() override;

  void set_frame_count(int64_t frame_count);
  void set_current_frame(int64_t frame);
  /// Frames span [left, width - right) of the widget (the timeline slider's groove).
  void set_horizontal_margins(int left_px, int right_px);

  /// The tracked points shown, one row each, top to bottom.
  const std::vector<core::PointId>& rows() const { return rows_; }
  /// The frame at widget x (clamped), and the centre x of a frame.
  int64_t frame_at(int x) const;
  double x_of(int64_t frame) const;
  /// The row at widget y, nullopt when none.
  std::optional<size_t> row_at(int y) const;
  int row_height() const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;
  void on_annotation_changed(const core::Annotation& annotation, const core::AnnotationChange& change) override;

 Q_SIGNALS:
  void frame_requested(qint64 frame);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  void rebuild_rows();
  void paint_row(QPainter& painter, size_t row, core::PointId id) const;
  QString describe(core::PointId id, int64_t frame) const;

  QPointer<AnnotationEditor> editor_;
  std::shared_ptr<core::Annotation> annotation_;
  QPointer<TrackQualityModel> quality_;
  std::vector<core::PointId> rows_;
  int64_t frame_count_ = 0;
  int64_t current_frame_ = 0;
  int left_px_ = 0;
  int right_px_ = 0;
};

}  // namespace trackscope::ui
