#include "ui/point_list_panel.h"

#include <QHeaderView>
#include <QItemSelectionModel>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

#include "ui/annotation_editor.h"
#include "ui/point_colours.h"
#include "ui/tracking/track_overlay.h"

namespace trackscope::ui {

PointTableModel::PointTableModel(std::shared_ptr<core::Annotation> annotation, QObject* parent)
    : QAbstractTableModel(parent), annotation_(std::move(annotation)) {
  for (const core::QueryPoint& point : *annotation_) row_ids_.push_back(point.id);
  annotation_->add_observer(this);
}

PointTableModel::~PointTableModel() { annotation_->remove_observer(this); }

int PointTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(row_ids_.size());
}

int PointTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : column_count; }

QVariant PointTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const core::QueryPoint* point = annotation_->find(id_at(index.row()));
  if (point == nullptr) return {};
  if (index.column() == track_column || index.column() == p_occluded_column)
    return track_data(index.column(), *point, role);
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case id_column: return point->id;
      case frame_column: return static_cast<qlonglong>(point->query.frame);
      case x_column: return QString::number(point->query.x_px, 'f', 2);
      case y_column: return QString::number(point->query.y_px, 'f', 2);
      default: return {};
    }
  }
  if (role == Qt::DecorationRole && index.column() == colour_column) return point_colour(point->colour_index);
  if (role == Qt::ToolTipRole && index.column() == colour_column) return point_colour(point->colour_index).name();
  if (role == Qt::TextAlignmentRole && index.column() != colour_column) {
    return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
  }
  return {};
}

QVariant PointTableModel::track_data(int column, const core::QueryPoint& point, int role) const {
  const TrackStateAtFrame at = track_state_at(*annotation_, point.id, current_frame_);
  if (role == Qt::DisplayRole) {
    if (column == p_occluded_column)
      return at.state == TrackState::not_tracked ? QString() : QString::number(at.p_occluded, 'f', 2);
    switch (at.state) {
      case TrackState::not_tracked: return tr("not tracked");
      case TrackState::visible: return tr("visible");
      case TrackState::occluded: return tr("occluded");
    }
  }
  if (role == Qt::ToolTipRole) {
    const core::PointTrack* track = annotation_->track(point.id);
    if (track == nullptr) return tr("Not tracked yet: Tracking > Track (Ctrl+T)");
    return tr("Tracked by %1 on %2 (%3)\nframe %4: p_occluded %5, p_far %6")
        .arg(QString::fromStdString(track->provenance.model), QString::fromStdString(track->provenance.device),
             QString::fromStdString(track->provenance.precision))
        .arg(current_frame_)
        .arg(at.p_occluded, 0, 'f', 3)
        .arg(at.p_far, 0, 'f', 3);
  }
  if (role == Qt::TextAlignmentRole && column == p_occluded_column) {
    return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
  }
  if (role == Qt::ForegroundRole && at.state == TrackState::not_tracked) return QColor(Qt::gray);
  return {};
}

void PointTableModel::set_current_frame(int64_t frame) {
  if (frame == current_frame_) return;
  current_frame_ = frame;
  if (!row_ids_.empty()) Q_EMIT dataChanged(index(0, track_column), index(rowCount() - 1, p_occluded_column));
}

QVariant PointTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::DisplayRole) {
    switch (section) {
      case id_column: return tr("id");
      case frame_column: return tr("frame");
      case x_column: return tr("x");
      case y_column: return tr("y");
      case colour_column: return tr("colour");
      case track_column: return tr("track");
      case p_occluded_column: return tr("p_occ");
      default: return {};
    }
  }
  if (role == Qt::ToolTipRole && section == track_column) return tr("The track's state on the current frame");
  if (role == Qt::ToolTipRole && section == p_occluded_column) {
    return tr("The model's probability that the point is occluded on the current frame");
  }
  if (role == Qt::ToolTipRole && (section == x_column || section == y_column)) {
    return tr("Original-video pixels; pixel (i, j) covers [j, j+1) x [i, i+1)");
  }
  return {};
}

int PointTableModel::row_of(core::PointId id) const {
  auto it = std::lower_bound(row_ids_.begin(), row_ids_.end(), id);
  return it != row_ids_.end() && *it == id ? static_cast<int>(it - row_ids_.begin()) : -1;
}

void PointTableModel::on_annotation_changed(const core::Annotation& annotation, const core::AnnotationChange& change) {
  const bool rows_change =
      change.kind != core::AnnotationChangeKind::moved && change.kind != core::AnnotationChangeKind::track_changed;
  if (rows_change) Q_EMIT rows_about_to_change();
  apply(annotation, change);
  if (rows_change) Q_EMIT rows_changed();
}

void PointTableModel::apply(const core::Annotation& annotation, const core::AnnotationChange& change) {
  switch (change.kind) {
    case core::AnnotationChangeKind::added: {
      auto position = std::lower_bound(row_ids_.begin(), row_ids_.end(), change.after.id);
      const int row = static_cast<int>(position - row_ids_.begin());
      beginInsertRows({}, row, row);
      row_ids_.insert(position, change.after.id);
      endInsertRows();
      break;
    }
    case core::AnnotationChangeKind::moved:
    case core::AnnotationChangeKind::track_changed: {
      const int row = row_of(change.after.id);
      if (row >= 0) Q_EMIT dataChanged(index(row, 0), index(row, column_count - 1));
      break;
    }
    case core::AnnotationChangeKind::removed: {
      const int row = row_of(change.before.id);
      if (row < 0) break;
      beginRemoveRows({}, row, row);
      row_ids_.erase(row_ids_.begin() + row);
      endRemoveRows();
      break;
    }
    case core::AnnotationChangeKind::cleared:
      beginResetModel();
      row_ids_.clear();
      for (const core::QueryPoint& point : annotation) row_ids_.push_back(point.id);
      endResetModel();
      break;
  }
}

PointListPanel::PointListPanel(AnnotationEditor* editor, QWidget* parent) : QWidget(parent), editor_(editor) {
  model_ = new PointTableModel(editor->observable_annotation(), this);
  table_ = new QTableView(this);
  table_->setModel(model_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(false);
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  // Fixed widths wide enough for typical values (frame 99999, x 9999.99): they do not jitter while a point
  // is dragged, and the user can still resize them.
  QHeaderView* header = table_->horizontalHeader();
  header->setSectionResizeMode(QHeaderView::Interactive);
  header->setStretchLastSection(false);
  const QFontMetrics metrics = table_->fontMetrics();
  const int padding = 12;
  header->resizeSection(PointTableModel::id_column, metrics.horizontalAdvance(QStringLiteral("0000")) + padding);
  header->resizeSection(PointTableModel::frame_column, metrics.horizontalAdvance(QStringLiteral("frame")) + padding);
  header->resizeSection(PointTableModel::x_column, metrics.horizontalAdvance(QStringLiteral("0000.00")) + padding);
  header->resizeSection(PointTableModel::y_column, metrics.horizontalAdvance(QStringLiteral("0000.00")) + padding);
  header->resizeSection(PointTableModel::colour_column, metrics.horizontalAdvance(QStringLiteral("colour")) + padding);
  header->resizeSection(PointTableModel::track_column,
                        metrics.horizontalAdvance(QStringLiteral("not tracked")) + padding);
  header->resizeSection(PointTableModel::p_occluded_column,
                        metrics.horizontalAdvance(QStringLiteral("p_occ")) + padding);
  table_->setAlternatingRowColors(true);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(table_);

  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &PointListPanel::on_row_selected);
  connect(editor, &AnnotationEditor::selection_changed, this, &PointListPanel::on_editor_selection);
  // The view moves its current row and selection by itself when rows come and go (removing the selected row
  // would select the next point). The editor owns the selection: ignore those moves and re-apply its choice.
  // The model's own signals come too late for this (the view reacts to rowsAboutToBeRemoved first).
  connect(model_, &PointTableModel::rows_about_to_change, this, [this] { syncing_selection_ = true; });
  connect(model_, &PointTableModel::rows_changed, this, [this] {
    syncing_selection_ = false;
    if (editor_) on_editor_selection(editor_->selected_point().value_or(-1));
  });
}

QSize PointListPanel::sizeHint() const {
  // Wide enough to show every column without a horizontal scroll bar.
  const int width =
      table_->horizontalHeader()->length() + table_->verticalScrollBar()->sizeHint().width() + 2 * table_->frameWidth();
  return {width, QWidget::sizeHint().height()};
}

void PointListPanel::on_row_selected() {
  if (syncing_selection_ || !editor_) return;
  const QModelIndexList rows = table_->selectionModel()->selectedRows();
  if (rows.isEmpty()) {
    editor_->select_point(std::nullopt);
    return;
  }
  const core::PointId id = model_->id_at(rows.front().row());
  editor_->select_point(id);
  Q_EMIT point_activated(id);
}

void PointListPanel::on_editor_selection(int id) {
  const int row = id >= 0 ? model_->row_of(id) : -1;
  syncing_selection_ = true;
  if (row < 0) {
    table_->clearSelection();
  } else {
    table_->selectRow(row);
    table_->scrollTo(model_->index(row, 0));
  }
  syncing_selection_ = false;
}

}  // namespace trackscope::ui
