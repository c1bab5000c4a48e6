#include "ui/annotation_controller.h"

#include <QAction>
#include <QEvent>
#include <QSlider>
#include <QStatusBar>
#include <QStyle>
#include <QStyleOptionSlider>

#include "ui/annotation_editor.h"
#include "ui/settings.h"
#include "ui/timeline.h"
#include "ui/tracking/quality_strip.h"
#include "ui/tracking/track_quality_model.h"
#include "ui/tracking/tracker_service.h"
#include "ui/video_canvas.h"
#include "ui/video_session.h"
#include "ui/workbench_actions.h"

namespace trackscope::ui {

AnnotationController::AnnotationController(const WorkbenchParts& parts, TrackerService* service, QObject* parent)
    : QObject(parent), parts_(parts), service_(service) {
  quality_ = new TrackQualityModel(parts_.editor->observable_annotation(), {}, this);
  // Beside the timeline (the window lays it out below it); never a top-level window, even before it is laid out.
  strip_ = new QualityStrip(parts_.editor, quality_, parts_.timeline->parentWidget());
  strip_->setObjectName("quality_strip");
  parts_.timeline->slider()->installEventFilter(this);
  watched_slider_ = parts_.timeline->slider();
  timeline_widget_ = parts_.timeline;
  if (service != nullptr) {  // null: a workbench without tracking (re-track and the check do nothing)
    connect(service, &TrackerService::consistency_checked, quality_, &TrackQualityModel::set_consistency);
    // The "uncertain" cue uses the thresholds calibrated for the model that made the tracks (its manifest).
    connect(service, &TrackerService::run_completed, quality_,
            [this](const CompletedRun& run) { quality_->use_model(run.tracker); });
  }
  connect_actions();
  set_merge_policy(parts_.settings->merge_policy());
  set_quality_strip_visible(parts_.settings->show_quality_strip());
  update_history_actions();
}

AnnotationController::~AnnotationController() = default;

void AnnotationController::connect_actions() {
  const WorkbenchActions& actions = *parts_.actions;
  AnnotationEditor* editor = parts_.editor;
  connect(actions.undo, &QAction::triggered, editor, &AnnotationEditor::undo);
  connect(actions.redo, &QAction::triggered, editor, &AnnotationEditor::redo);
  connect(editor, &AnnotationEditor::history_changed, this, &AnnotationController::update_history_actions);
  connect(actions.toggle_occluded, &QAction::triggered, this, &AnnotationController::toggle_occluded);
  connect(actions.delete_track_after, &QAction::triggered, this, [this] { delete_track(true); });
  connect(actions.delete_track_before, &QAction::triggered, this, [this] { delete_track(false); });
  connect(actions.next_keyframe, &QAction::triggered, this, [this] { go_to_keyframe(false); });
  connect(actions.previous_keyframe, &QAction::triggered, this, [this] { go_to_keyframe(true); });
  connect(actions.next_suspicious, &QAction::triggered, this, [this] { go_to_suspicious(false); });
  connect(actions.previous_suspicious, &QAction::triggered, this, [this] { go_to_suspicious(true); });
  connect(actions.retrack_forward, &QAction::triggered, this, [this] { retrack(core::RetrackDirection::forward); });
  connect(actions.retrack_backward, &QAction::triggered, this, [this] { retrack(core::RetrackDirection::backward); });
  connect(actions.retrack_both, &QAction::triggered, this, [this] { retrack(core::RetrackDirection::both); });
  connect(actions.merge_overwrite, &QAction::triggered, this,
          [this] { set_merge_policy(core::MergePolicy::overwrite); });
  connect(actions.merge_fill_missing, &QAction::triggered, this,
          [this] { set_merge_policy(core::MergePolicy::fill_missing); });
  connect(actions.check_consistency, &QAction::triggered, this, [this] {
    const std::optional<core::PointId> selected = parts_.editor->selected_point();
    if (service_)
      service_->check_consistency(selected ? std::vector<core::PointId>{*selected} : std::vector<core::PointId>{});
  });
  connect(actions.show_quality_strip, &QAction::toggled, this, &AnnotationController::set_quality_strip_visible);
  connect(strip_, &QualityStrip::frame_requested, this, [this](qint64 frame) { seek(frame); });
  connect(parts_.session, &VideoSession::frame_ready, this, [this](const core::FramePtr& frame) {
    if (frame) strip_->set_current_frame(frame->index);
  });
}

void AnnotationController::on_video_opened() {
  strip_->set_frame_count(parts_.session->frame_count());
  align_strip();
}

void AnnotationController::seek(int64_t frame) {
  parts_.timeline->pause();
  Q_EMIT seek_requested(frame);
}

void AnnotationController::update_history_actions() {
  const WorkbenchActions& actions = *parts_.actions;
  const AnnotationEditor* editor = parts_.editor;
  actions.undo->setEnabled(editor->can_undo());
  actions.redo->setEnabled(editor->can_redo());
  actions.undo->setText(editor->can_undo() ? tr("&Undo %1").arg(editor->undo_label()) : tr("&Undo"));
  actions.redo->setText(editor->can_redo() ? tr("&Redo %1").arg(editor->redo_label()) : tr("&Redo"));
}

bool AnnotationController::eventFilter(QObject* watched, QEvent* event) {
  if (watched_slider_ != nullptr && watched == watched_slider_.data() &&
      (event->type() == QEvent::Resize || event->type() == QEvent::Move)) {
    align_strip();
  }
  return QObject::eventFilter(watched, event);
}

void AnnotationController::align_strip() {
  // The slider's groove runs from half a handle in from each end; frame f sits where the handle centre would.
  auto* slider = qobject_cast<QSlider*>(watched_slider_.data());
  auto* timeline = qobject_cast<QWidget*>(timeline_widget_.data());
  if (slider == nullptr || timeline == nullptr) return;
  QStyleOptionSlider option;
  option.initFrom(slider);
  option.orientation = Qt::Horizontal;
  const int handle = slider->style()->pixelMetric(QStyle::PM_SliderLength, &option, slider);
  const QPoint slider_left = slider->mapTo(timeline, QPoint(0, 0));
  const int left = slider_left.x() + handle / 2;
  const int right = timeline->width() - (slider_left.x() + slider->width()) + handle / 2;
  // The strip spans frames over [left, width - right); widen by one frame so frame centres meet the handle's.
  strip_->set_horizontal_margins(std::max(0, left), std::max(0, right));
}

core::MergePolicy AnnotationController::merge_policy() const {
  return parts_.actions->merge_fill_missing->isChecked() ? core::MergePolicy::fill_missing
                                                         : core::MergePolicy::overwrite;
}

void AnnotationController::set_merge_policy(core::MergePolicy policy) {
  const WorkbenchActions& actions = *parts_.actions;
  actions.merge_overwrite->setChecked(policy == core::MergePolicy::overwrite);
  actions.merge_fill_missing->setChecked(policy == core::MergePolicy::fill_missing);
  parts_.settings->set_merge_policy(policy);
}

void AnnotationController::set_quality_strip_visible(bool visible) {
  strip_->setVisible(visible);
  if (parts_.actions->show_quality_strip->isChecked() != visible)
    parts_.actions->show_quality_strip->setChecked(visible);
  parts_.settings->set_show_quality_strip(visible);
}

int64_t AnnotationController::shown_frame() const { return parts_.canvas->frame_index(); }

void AnnotationController::message(const QString& text) { parts_.status_bar->showMessage(text, kStatusMessageMs); }

bool AnnotationController::retrack(core::RetrackDirection direction) {
  const std::optional<core::PointId> selected = parts_.editor->selected_point();
  if (!selected) {
    message(tr("Select a point first (click it, or pick it in the point list)"));
    return false;
  }
  if (!service_ || shown_frame() < 0) return false;
  return service_->retrack({*selected, shown_frame(), direction, merge_policy()});
}

void AnnotationController::toggle_occluded() {
  AnnotationEditor* editor = parts_.editor;
  const std::optional<core::PointId> selected = editor->selected_point();
  const core::PointTrack* track = selected ? editor->annotation().track(*selected) : nullptr;
  const int64_t frame = shown_frame();
  if (track == nullptr || !track->track.covers(frame)) {
    message(tr("Select a tracked point whose track covers this frame"));
    return;
  }
  editor->set_visibility(*selected, frame, !track->track.at(frame).visible);
}

void AnnotationController::delete_track(bool after) {
  AnnotationEditor* editor = parts_.editor;
  const std::optional<core::PointId> selected = editor->selected_point();
  if (!selected || editor->annotation().track(*selected) == nullptr) {
    message(tr("Select a tracked point first"));
    return;
  }
  const bool changed = after ? editor->delete_track_after(*selected, shown_frame())
                             : editor->delete_track_before(*selected, shown_frame());
  if (!changed) message(tr("Nothing to delete there"));
}

std::optional<int64_t> AnnotationController::go_to_keyframe(bool backward) {
  const std::optional<core::PointId> selected = parts_.editor->selected_point();
  const std::vector<core::PointId> ids =
      selected ? std::vector<core::PointId>{*selected} : std::vector<core::PointId>{};
  const std::optional<int64_t> frame = quality_->next_keyframe(ids, parts_.session->requested_frame(), backward);
  if (!frame) {
    message(backward ? tr("No keyframe before this frame") : tr("No keyframe after this frame"));
    return std::nullopt;
  }
  seek(*frame);
  return frame;
}

std::optional<int64_t> AnnotationController::go_to_suspicious(bool backward) {
  const std::optional<core::PointId> selected = parts_.editor->selected_point();
  const std::vector<core::PointId> ids =
      selected ? std::vector<core::PointId>{*selected} : std::vector<core::PointId>{};
  const std::optional<int64_t> frame =
      quality_->next_suspicious_frame(ids, parts_.session->requested_frame(), backward);
  if (!frame) {
    message(backward ? tr("No suspicious frame before this one") : tr("No suspicious frame after this one"));
    return std::nullopt;
  }
  seek(*frame);
  return frame;
}

}  // namespace trackscope::ui
