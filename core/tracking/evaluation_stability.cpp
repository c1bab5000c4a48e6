#include "core/tracking/evaluation_stability.h"

#include <fmt/format.h>

#include <chrono>
#include <memory>

namespace trackscope::core {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Maps the progress of run `index` of `count` onto the whole stability evaluation.
class RunProgress final : public TrackObserver {
 public:
  RunProgress(TrackObserver& outer, size_t index, size_t count, std::string name)
      : outer_(outer), index_(index), count_(count), name_(std::move(name)) {}
  void on_progress(const TrackProgress& progress) override {
    TrackProgress mapped = progress;
    mapped.fraction = (static_cast<double>(index_) + progress.fraction) / static_cast<double>(count_);
    mapped.phase = fmt::format("{}: {}", name_, progress.phase);
    outer_.on_progress(mapped);
  }
  void on_stage(const StageSample& sample) override { outer_.on_stage(sample); }

 private:
  TrackObserver& outer_;
  size_t index_;
  size_t count_;
  std::string name_;
};

}  // namespace

Status StabilityOptions::check() const {
  for (int levels : brightness_levels) {
    TRACKSCOPE_RETURN_IF_ERROR((FramePerturbation{PerturbationKind::brightness, levels, 90}.check()));
    if (levels == 0) return invalid_argument("a brightness shift of 0 grey levels changes nothing");
  }
  for (int quality : jpeg_qualities) {
    TRACKSCOPE_RETURN_IF_ERROR((FramePerturbation{PerturbationKind::jpeg, 0, quality}.check()));
  }
  if (brightness_levels.empty() && jpeg_qualities.empty() && precisions.empty()) {
    return invalid_argument("the stability evaluation has nothing to do: no shift, no JPEG quality, no precision");
  }
  return {};
}

Expected<StabilityEvaluation> evaluate_stability(TrackerFactory& factory, const TrackerOptions& tracker_options,
                                                 PointTracker& reference_tracker, VideoSource& video,
                                                 const TrackRequest& request, const TrackSet& reference,
                                                 const StabilityOptions& options, TrackObserver& observer,
                                                 std::stop_token stop) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  if (reference.tracks.size() != request.queries.size()) {
    return invalid_argument(
        fmt::format("the reference has {} tracks for {} queries", reference.tracks.size(), request.queries.size()));
  }
  const Precision reference_precision = reference_tracker.description().precision;
  StabilityEvaluation result;
  result.reference = fmt::format("{} on the original frames", to_string(reference_precision));
  result.tracks = static_cast<int64_t>(request.queries.size());
  result.first_frame = request.first_frame;
  result.end_frame = request.end_frame == -1 ? video.info().frame_count : request.end_frame;

  std::vector<FramePerturbation> inputs;
  for (int levels : options.brightness_levels) inputs.push_back({PerturbationKind::brightness, levels, 90});
  for (int quality : options.jpeg_qualities) inputs.push_back({PerturbationKind::jpeg, 0, quality});
  std::vector<Precision> precisions;
  for (Precision p : options.precisions) {
    if (p != reference_precision) precisions.push_back(p);
  }
  const size_t runs = inputs.size() + precisions.size();
  size_t run = 0;

  auto compare = [&](StabilityRow& row, Expected<TrackSet> tracks) -> Status {
    if (!tracks) return tracks.status().with_context(row.name);
    Expected<TrackChange> change = compute_track_change(reference, *tracks);
    if (!change) return change.status().with_context(row.name);
    row.change = *change;
    return {};
  };
  for (const FramePerturbation& perturbation : inputs) {
    StabilityRow row;
    row.name = perturbation.name();
    row.kind = "input";
    PerturbedVideoSource perturbed(video, perturbation);
    RunProgress progress(observer, run++, runs, row.name);
    const auto start = Clock::now();
    Expected<TrackSet> tracks = reference_tracker.track(perturbed, request, progress, stop);
    row.track_seconds = seconds_since(start);
    TRACKSCOPE_RETURN_IF_ERROR(compare(row, std::move(tracks)));
    result.rows.push_back(std::move(row));
  }
  for (Precision precision : precisions) {
    StabilityRow row;
    row.name = to_string(precision);
    row.kind = "precision";
    TrackerOptions other = tracker_options;
    other.precision = precision;
    other.device = reference_tracker.description().device.id.empty() ? tracker_options.device
                                                                     : reference_tracker.description().device.id;
    Expected<std::unique_ptr<PointTracker>> tracker = factory.create(other);
    RunProgress progress(observer, run++, runs, row.name);
    if (!tracker) {
      if (tracker.status().code() != StatusCode::unsupported) {
        return tracker.status().with_context(fmt::format("loading the model at {}", row.name));
      }
      row.skipped = tracker.status().message();
      result.rows.push_back(std::move(row));
      continue;
    }
    const auto start = Clock::now();
    Expected<TrackSet> tracks = (*tracker)->track(video, request, progress, stop);
    row.track_seconds = seconds_since(start);
    TRACKSCOPE_RETURN_IF_ERROR(compare(row, std::move(tracks)));
    result.rows.push_back(std::move(row));
  }
  return result;
}

}  // namespace trackscope::core
