#pragma once
// The point list: one row per query point, in id order, with columns id, frame, x, y (original-video raster
// pixels, 2 decimals), a colour swatch, and the state of the point's track on the current frame ("not tracked",
// "visible", "occluded") with the model's occlusion probability. Selecting a row selects the point (and the main
// window shows its frame); selecting a point elsewhere selects its row.
//
//   PointListPanel panel(editor, parent);
//   connect(&panel, &PointListPanel::point_activated, ...);   // a row was chosen by the user
//
// Threads: GUI thread only.

#include <QAbstractTableModel>
#include <QPointer>
#include <QWidget>

#include <memory>
#include <vector>

#include "core/tracking/annotation.h"

class QTableView;

namespace trackscope::ui {

class AnnotationEditor;

/// A Qt table model over core::Annotation. Keeps its own copy of the row order (ids) so that it can announce
/// inserted and removed rows precisely although the annotation reports changes after they happened.
class PointTableModel : public QAbstractTableModel, public core::AnnotationObserver {
  Q_OBJECT
 public:
  enum Column {
    id_column,
    frame_column,
    x_column,
    y_column,
    colour_column,
    track_column,
    p_occluded_column,
    column_count
  };

  PointTableModel(std::shared_ptr<core::Annotation> annotation, QObject* parent);
  ~PointTableModel() override;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  /// The frame whose track state the track columns show (the playhead). Updates those columns.
  void set_current_frame(int64_t frame);
  int64_t current_frame() const { return current_frame_; }

  /// Row of point `id`, -1 if absent.
  int row_of(core::PointId id) const;
  core::PointId id_at(int row) const { return row_ids_.at(static_cast<size_t>(row)); }

  void on_annotation_changed(const core::Annotation& annotation, const core::AnnotationChange& change) override;

 Q_SIGNALS:
  /// Around every insertion, removal or reset of rows, before and after the model's own signals.
  void rows_about_to_change();
  void rows_changed();

 private:
  void apply(const core::Annotation& annotation, const core::AnnotationChange& change);
  QVariant track_data(int column, const core::QueryPoint& point, int role) const;

  std::shared_ptr<core::Annotation> annotation_;
  std::vector<core::PointId> row_ids_;  // sorted, mirrors annotation_
  int64_t current_frame_ = 0;
};

class PointListPanel : public QWidget {
  Q_OBJECT
 public:
  PointListPanel(AnnotationEditor* editor, QWidget* parent);

  QSize sizeHint() const override;
  QTableView* table() const { return table_; }
  PointTableModel* model() const { return model_; }

 Q_SIGNALS:
  /// The user selected the row of point `id`.
  void point_activated(int id);

 private:
  void on_row_selected();
  void on_editor_selection(int id);

  QPointer<AnnotationEditor> editor_;
  PointTableModel* model_ = nullptr;
  QTableView* table_ = nullptr;
  bool syncing_selection_ = false;
};

}  // namespace trackscope::ui
