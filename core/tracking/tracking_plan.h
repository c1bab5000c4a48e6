#pragma once
// Tracking plans: the rules behind the workbench's three kinds of tracking job, as plain code (no Qt, no
// threads), so that ui/tracking/tracker_service.h is only the Qt hand-off around them.
//  * track: the annotation's query points (all, or some) over the whole clip;
//  * retrack: one point from one of its keyframes, forward ([keyframe, end)), backward ([0, keyframe + 1)) or
//    both: the only query is the point's position at the keyframe (core/tracking/track_edit.h);
//  * consistency: the forward-backward check of some tracks: each is tracked again from its own estimate at the
//    frame farthest from its query (core/tracking/track_quality.h).
//
//   if (check_retrack(annotation, request, frame_count) == RetrackCheck::ok) { ... }
//   std::optional<TrackingPlan> plan = plan_tracking_job(annotation, {.kind = TrackingJobKind::track}, 96);
//   TrackRequest request = plan->request();              // queries and frame range for the tracker
//   ... the job runs; the user keeps editing ...
//   if (result_staleness(annotation, *plan, i) == ResultStaleness::current) apply(plan->ids[i], result.tracks[i]);
//
// Staleness: a result answers the question asked when the job started. It is stale when its point was removed,
// when the point's query moved (track), when the keyframe's position changed (retrack), or when the track to
// compare against was removed (consistency); stale results change nothing.
//
// TrackerScheduler: what the tracker service does next, as a state machine over its selection (model, device,
// precision: a Key), the model being created, the job asked for and the job running. It decides; the caller
// acts (creates the model, starts the job) and reports back. Key is the caller's selection type (compared with
// ==), so this layer needs no knowledge of how devices or precisions are named.
//
//   TrackerScheduler<TrackerKey> scheduler(initial_key, /*has_factory=*/true);
//   scheduler.admit(request, /*has_video=*/true);                // JobAdmission::accepted: the request waits
//   TrackerStep step = scheduler.next(cache.contains(scheduler.selection()));
//   // step.action == start_load: create step.load on the loader thread, then load_finished(key, ok)
//   // step.action == start_job: plan step.job and start it, then job_started(); job_finished() at its end
//
// Threads: none of its own; one thread (the GUI thread) uses a scheduler.

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/tracking/annotation.h"
#include "core/tracking/point_tracker.h"
#include "core/tracking/track_edit.h"

namespace trackscope::core {

enum class TrackingJobKind { track, retrack, consistency };

/// A re-track of one point from one of its keyframes (its query frame, or a frame the user corrected).
struct RetrackRequest {
  PointId id = 0;
  int64_t keyframe = 0;
  RetrackDirection direction = RetrackDirection::both;
  MergePolicy policy = MergePolicy::overwrite;
};

/// What the user asked for; it may wait for a model before it is planned against the annotation of that time.
struct JobRequest {
  TrackingJobKind kind = TrackingJobKind::track;
  std::vector<PointId> ids;  // track: the points (empty: every point); retrack: {id}; consistency: the tracks
  RetrackRequest retrack;    // kind retrack only
};

/// True when `ids` (empty: every point) names at least one point of `annotation`.
bool has_points_to_track(const Annotation& annotation, const std::vector<PointId>& ids);
/// The number of points a track of `ids` asks for (what core::check_tracked_point_count limits): the size of
/// `ids`, or of the annotation when `ids` is empty.
size_t requested_point_count(const Annotation& annotation, const std::vector<PointId>& ids);

enum class RetrackCheck {
  ok,
  no_point,       // no point `id`
  not_keyframe,   // `keyframe` is neither the point's query frame nor a keyframe of its track
  outside_video,  // `keyframe` is not a frame of the video (frame_count > 0 only)
};
/// Whether `request` may be re-tracked now (checked in this order).
RetrackCheck check_retrack(const Annotation& annotation, const RetrackRequest& request, int64_t frame_count);

/// The query a re-track of point `id` from `keyframe` starts from: the point's own query on its query frame,
/// else its track's estimate there (keyframe_query); nullopt when there is neither.
std::optional<Query> retrack_query(const Annotation& annotation, PointId id, int64_t keyframe);

/// The points among `ids` (empty: every point), in id order, whose track can be checked forward-backward (a
/// visible frame away from the query: consistency_anchor).
std::vector<PointId> consistency_candidates(const Annotation& annotation, const std::vector<PointId>& ids);

/// A job planned against the annotation when it starts: what is tracked, from which queries, over which frames.
struct TrackingPlan {
  TrackingJobKind kind = TrackingJobKind::track;
  RetrackRequest retrack;    // kind retrack: what was asked
  FrameRange range;          // the frames tracked: the whole clip, or retrack_range()
  std::vector<PointId> ids;  // one per query, in order
  std::vector<Query> queries;

  /// The tracker's request: the queries and, for a re-track, its frame range (else the whole clip: end -1).
  TrackRequest request() const;
};

/// Plans `job` over a clip of `frame_count` frames. nullopt when nothing is left to track (the points were
/// removed, the keyframe is gone, no track has a consistency anchor any more).
///  * track: every point of `job.ids` (empty: every point) that still exists, in id order, from its query;
///  * retrack: the point from retrack_query() at the keyframe, over retrack_range();
///  * consistency: each of `job.ids` whose track still has a consistency_anchor(), from that anchor.
std::optional<TrackingPlan> plan_tracking_job(const Annotation& annotation, const JobRequest& job, int64_t frame_count);

enum class ResultStaleness {
  current,        // apply it
  point_removed,  // the point is gone
  query_changed,  // track: the point's query moved; retrack: the keyframe's position changed
  track_removed,  // consistency: the track to compare against is gone
};
/// Whether the result for query `index` of `plan` still answers the annotation as it is now (see the header).
ResultStaleness result_staleness(const Annotation& annotation, const TrackingPlan& plan, size_t index);

enum class TrackingState {
  idle,
  loading_model,  // a model is being created (a job may be waiting for it)
  tracking,       // a job runs
  cancelling,     // a job was cancelled and has not reached its next chunk boundary yet
};
const char* to_string(TrackingState state);

enum class JobAdmission {
  accepted,    // the request waits for the selection's model (or runs as soon as it is loaded)
  no_video,    // nothing to track over
  no_tracker,  // the build has no tracker factory
  busy,        // a job runs and is not being cancelled
  shut_down,
};

enum class TrackerAction { none, start_load, start_job };

template <typename Key>
struct TrackerStep {
  TrackerAction action = TrackerAction::none;
  Key load;        // start_load: the key to create
  JobRequest job;  // start_job: the request, taken from the scheduler
};

template <typename Key>
class TrackerScheduler {
 public:
  TrackerScheduler(Key selection, bool has_factory) : wanted_(std::move(selection)), has_factory_(has_factory) {}

  const Key& selection() const { return wanted_; }
  bool has_factory() const { return has_factory_; }
  bool job_running() const { return job_running_; }
  bool cancelling() const { return cancelling_; }
  bool has_pending_job() const { return has_pending_; }
  bool is_shut_down() const { return shut_down_; }

  /// idle, loading_model (a creation runs for the selection, or a job waits for one), tracking or cancelling.
  TrackingState state() const {
    if (job_running_) return cancelling_ ? TrackingState::cancelling : TrackingState::tracking;
    if (loading_ && (has_pending_ || *loading_ == wanted_)) return TrackingState::loading_model;
    return TrackingState::idle;
  }

  /// Switches the selection. False (nothing changed) when shut down or `key` is the selection already. The
  /// caller then cancels a running job (begin_cancel) and calls next(): the new selection is loaded at once
  /// (when there is a factory), so the next job does not wait for it.
  bool select(const Key& key) {
    if (shut_down_ || key == wanted_) return false;
    wanted_ = key;
    if (has_factory_) load_wanted_ = true;
    return true;
  }

  /// Admits a request: it waits until the selection's model is there (next() returns it). A request admitted
  /// while a job is being cancelled replaces any earlier waiting one and runs after the cancelled job ends.
  JobAdmission admit(JobRequest job, bool has_video) {
    if (shut_down_) return JobAdmission::shut_down;
    if (!has_video) return JobAdmission::no_video;
    if (!has_factory_) return JobAdmission::no_tracker;
    if (job_running_ && !cancelling_) return JobAdmission::busy;
    pending_ = std::move(job);
    has_pending_ = true;
    load_wanted_ = true;
    return JobAdmission::accepted;
  }

  /// Drops a waiting request. True when there was one.
  bool drop_pending() {
    const bool had = has_pending_;
    has_pending_ = false;
    pending_ = {};
    return had;
  }

  /// Marks the running job as being cancelled. False when no job runs or it is being cancelled already.
  bool begin_cancel() {
    if (!job_running_ || cancelling_) return false;
    cancelling_ = true;
    return true;
  }

  /// What to do next, given whether the cache holds a tracker for the selection: start the waiting job (with
  /// that tracker), create the selection's tracker (one creation at a time), or nothing (a job runs, a creation
  /// runs, or nothing is wanted). Taking start_job removes the request from the scheduler.
  TrackerStep<Key> next(bool selection_cached) {
    TrackerStep<Key> step;
    if (shut_down_ || job_running_ || !has_factory_) return step;
    if (has_pending_ && selection_cached) {
      step.action = TrackerAction::start_job;
      step.job = std::exchange(pending_, {});
      has_pending_ = false;
    } else if (load_wanted_ && !selection_cached && !loading_) {
      step.action = TrackerAction::start_load;
      step.load = wanted_;
      loading_ = wanted_;
    } else if (selection_cached) {
      load_wanted_ = false;
    }
    return step;
  }

  struct LoadOutcome {
    bool for_selection = false;  // the key is still the selection (a load the user has left is just cached)
    bool dropped_job = false;    // it failed and a waiting request was dropped with it
  };
  /// The creation of `key` ended (`ok`: the tracker is in the caller's cache now).
  LoadOutcome load_finished(const Key& key, bool ok) {
    loading_.reset();
    LoadOutcome outcome;
    if (shut_down_ || !(key == wanted_)) return outcome;
    outcome.for_selection = true;
    load_wanted_ = false;
    if (!ok) outcome.dropped_job = drop_pending();
    return outcome;
  }

  void job_started() {
    job_running_ = true;
    cancelling_ = false;
  }
  /// The running job delivered its result. Returns true when it had been cancelled.
  bool job_finished() {
    const bool was_cancelled = cancelling_;
    job_running_ = false;
    cancelling_ = false;
    return was_cancelled;
  }

  /// Ignores every request afterwards; a waiting request is dropped.
  void shut_down() {
    shut_down_ = true;
    (void)drop_pending();
  }

 private:
  Key wanted_;
  bool has_factory_ = false;
  std::optional<Key> loading_;  // the key being created
  bool load_wanted_ = false;    // the selection should be loaded (a switch or a job asked)
  // A job waiting for a model or a cancel (a flag beside the value: GCC 12 warns falsely about a moved-from
  // std::optional<JobRequest>).
  bool has_pending_ = false;
  JobRequest pending_;
  bool job_running_ = false;
  bool cancelling_ = false;
  bool shut_down_ = false;
};

}  // namespace trackscope::core
