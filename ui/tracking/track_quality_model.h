#pragma once
// TrackQualityModel: the quality cues of every track (core/tracking/track_quality.h), kept up to date with the
// annotation, for the quality strip and the "next suspicious frame" / "next keyframe" navigation. Cues are
// computed lazily per track and dropped when the track changes; forward-backward distances arrive from the
// tracker service's on-demand check (set_consistency) and are dropped when their track changes afterwards.
// The "uncertain" thresholds are the model's calibrated ones once a run tells which model made the tracks
// (use_model: the manifest beside its weights, core::quality_options_for_weights), the constructor's otherwise.
//
//   TrackQualityModel quality(editor->observable_annotation(), {}, parent);
//   connect(service, &TrackerService::consistency_checked, &quality, &TrackQualityModel::set_consistency);
//   connect(service, &TrackerService::run_completed, &quality, [&](const CompletedRun& r) {
//   quality.use_model(r.tracker); }); const core::TrackQuality* cues = quality.quality(id);          // null: no track
//   std::optional<int64_t> next = quality.next_suspicious_frame({id}, current_frame);
//
// Threads: GUI thread only.

#include <QList>
#include <QObject>

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "core/tracking/annotation.h"
#include "core/tracking/point_tracker.h"
#include "core/tracking/track_quality.h"

namespace trackscope::ui {

class TrackQualityModel : public QObject, public core::AnnotationObserver {
  Q_OBJECT
 public:
  TrackQualityModel(std::shared_ptr<core::Annotation> annotation, core::QualityOptions options, QObject* parent);
  ~TrackQualityModel() override;

  const core::QualityOptions& options() const { return options_; }
  /// Where the thresholds in use came from: a manifest's path, or "defaults (...)".
  const std::string& options_source() const { return options_source_; }
  /// Uses `options` from now on (every track's cues are recomputed; changed() is emitted when they differ).
  void set_options(const core::QualityOptions& options, std::string source = "set by the caller");
  /// Uses the calibrated thresholds of the model that made the tracks (the manifest beside its weights), or the
  /// constructor's options when it has none.
  void use_model(const core::TrackerDescription& tracker);
  /// The cues of point `id`'s track (null when it has none). Valid until the annotation changes.
  const core::TrackQuality* quality(core::PointId id) const;
  /// True when the forward-backward check ran on the track as it is now.
  bool has_consistency(core::PointId id) const { return consistency_.count(id) > 0; }

  /// The nearest flagged frame after `frame` (before it when `backward`) over the tracks of `ids` (empty: all).
  std::optional<int64_t> next_suspicious_frame(const std::vector<core::PointId>& ids, int64_t frame,
                                               bool backward) const;
  /// The nearest keyframe (query frames included) after / before `frame` over the tracks of `ids` (empty: all).
  std::optional<int64_t> next_keyframe(const std::vector<core::PointId>& ids, int64_t frame, bool backward) const;

  void on_annotation_changed(const core::Annotation& annotation, const core::AnnotationChange& change) override;

 public Q_SLOTS:
  /// Forward-backward distances of point `id`'s current track (one per frame from its first_frame).
  void set_consistency(int id, const QList<float>& distance_px);

 Q_SIGNALS:
  /// Some track's cues changed (the strip repaints).
  void changed();

 private:
  std::vector<core::PointId> selected_ids(const std::vector<core::PointId>& ids) const;

  std::shared_ptr<core::Annotation> annotation_;
  core::QualityOptions fallback_;
  core::QualityOptions options_;
  std::string options_source_ = "defaults";
  mutable std::map<core::PointId, core::TrackQuality> cache_;
  std::map<core::PointId, std::vector<float>> consistency_;
};

}  // namespace trackscope::ui
