#pragma once
// TrackerService: the GUI's Qt adapter around the tracker. It owns the injected core::TrackerFactory, a cache
// of the trackers it created (one per model, device and precision: switching back reuses the loaded model), and
// at most one core::TrackingJob of one of three kinds (track, retrack, consistency). What a job covers, when a
// result is stale and what happens next (load a model, start the waiting job) are decided by core's plain code
// (core/tracking/tracking_plan.h: plan_tracking_job, result_staleness, TrackerScheduler); this class creates
// models and jobs on their threads, hands their callbacks back to the GUI thread, and turns results into edits:
//  * track: finished tracks are attached to the points through the AnnotationEditor (one undo step per job),
//    with their provenance;
//  * retrack: the result is merged into the point's track by a MergePolicy (core/tracking/track_edit.h),
//    keyframes kept, as one undo step;
//  * consistency: consistency_checked() reports the distance per frame. The tracks themselves are not changed.
//
//   TrackerService service(std::move(factory), editor, {}, parent);
//   service.set_video("clip.mp4", 96);
//   connect(&service, &TrackerService::state_changed, ...);   // idle / loading_model / tracking / cancelling
//   connect(&service, &TrackerService::error, window, &MainWindow::report_error);
//   service.track({});                 // every point (or service.track({3, 7}))
//   service.retrack({.id = 3, .keyframe = 20, .direction = core::RetrackDirection::forward});
//   service.check_consistency({3});    // -> consistency_checked(3, distances)
//   service.set_device(core::DeviceId::cuda(1));  // cancels a running job; loads (or reuses) the model on cuda:1
//   service.cancel();
//   LiveRunSnapshot live = service.live_snapshot();           // the dock's 10 Hz timer pulls stage samples
//
// Threads and hand-off:
//  * Every method is called on the GUI thread, and every signal is emitted on it.
//  * The model is created (factory->create) on a loader thread of the service, one creation at a time; a job
//    runs on the TrackingJob's thread. Their callbacks are posted to this object's GUI thread through a
//    ThreadMailbox (never a blocking call). Progress is coalesced (one posted call in flight);
//    partial results are delivered chunk by chunk and applied a slice of tracks per turn of the event loop (a
//    long clip's tracks never stall the GUI; the job stays in state tracking until every track is applied);
//    stage samples go into a mutex-protected snapshot only (no per-sample signal) that live_snapshot() copies.
//  * Results are applied only if the point still exists with the query that was tracked (a point moved or
//    deleted during the job keeps its new state; a re-track is dropped when its keyframe moved). Errors (no
//    model installed, device missing, out of memory) are reported through error() and change no point.
//  * A model, device or precision switch while a job runs cancels the job first, then loads or reuses the
//    tracker of the new selection.
// Shutdown: shutdown() (and the destructor) cancels and joins the job and waits for a model creation in
// progress; the owner calls it before destroying the widgets that show results.

#include <QList>
#include <QObject>
#include <QPointer>
#include <QString>

#include <chrono>
#include <compare>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/tracking/annotation.h"
#include "core/tracking/point_tracker.h"
#include "core/tracking/track_edit.h"
#include "core/tracking/tracking_job.h"
#include "core/tracking/tracking_plan.h"
#include "ui/perf/live_run.h"
#include "ui/thread_mailbox.h"
#include "ui/tracking/run_profile.h"

namespace trackscope::ui {

class AnnotationEditor;

/// Opens the tracking thread's own decoder for a video path (tests inject fakes).
using VideoOpenerFactory = std::function<core::VideoOpener(const std::filesystem::path& path)>;

/// A cached tracker: which model, on which device, at which precision.
struct TrackerKey {
  std::string model;
  std::string device;  // resolved: "cpu", "cuda:0" (never "auto")
  core::Precision precision = core::Precision::fp32;
  auto operator<=>(const TrackerKey&) const = default;
};

// The job kinds, requests and states are core's (core/tracking/tracking_plan.h), named here for ui code.
using TrackingState = core::TrackingState;
using RetrackRequest = core::RetrackRequest;
using JobKind = core::TrackingJobKind;

struct TrackerServiceOptions {
  core::TrackerOptions tracker;     // the initial model, device ("auto" allowed), precision, chunk and budget
  VideoOpenerFactory video_opener;  // empty: core::open_video_file
  /// How long the GUI thread applies finished tracks per turn of the event loop (a long clip's 64 tracks take most
  /// of a second in all); the rest waits for the next turn.
  std::chrono::milliseconds apply_slice{15};
};

class TrackerService : public QObject {
  Q_OBJECT
 public:
  /// `factory` may be null (a build without a tracker): Track then reports that. `editor` receives the tracks.
  TrackerService(std::unique_ptr<core::TrackerFactory> factory, AnnotationEditor* editor, TrackerServiceOptions options,
                 QObject* parent);
  ~TrackerService() override;

  /// The factory's devices (read once at construction), the CPU first. Just the CPU without a factory.
  const std::vector<core::DeviceInfo>& devices() const { return devices_; }
  /// The factory's runtime (read once at construction; the precision selector's support table needs it).
  const core::RuntimeInfo& runtime() const { return runtime_; }
  /// The selected model, device and precision (device resolved from "auto").
  const TrackerKey& selection() const { return scheduler_.selection(); }
  TrackingState state() const { return state_; }
  bool has_factory() const { return scheduler_.has_factory(); }

  /// The video the next job tracks over (the whole clip). Cancels a running job of another video.
  void set_video(const std::filesystem::path& path, int64_t frame_count);
  void clear_video();

  /// Selection switches: a running job is cancelled, then the tracker of the new selection is loaded (or
  /// reused from the cache) off the GUI thread. Unknown precision names are ignored by the caller (the dock).
  void set_model(const QString& model);
  void set_device(const core::DeviceId& device);
  void set_precision(core::Precision precision);

  /// Tracks the points `ids` (empty: every point) over the whole clip. Returns false, with a message(), when
  /// there is nothing to do (no video, no points, a job already running); errors go to error().
  bool track(const std::vector<core::PointId>& ids);
  /// Re-tracks one point from a keyframe (see the header comment). Returns false, with a message(), when the
  /// point has no keyframe there, no video is open or a job runs.
  bool retrack(const RetrackRequest& request);
  /// Runs the forward-backward check of the tracks of `ids` (empty: every tracked point). Returns false, with a
  /// message(), when none of them has a track with a visible frame away from its query.
  bool check_consistency(const std::vector<core::PointId>& ids);
  /// Cancels the running job (it stops at its next chunk boundary) and a Track waiting for a model.
  void cancel();

  /// Stage samples of the job in progress (or of the last one, with running = false). Thread-safe copy.
  LiveRunSnapshot live_snapshot() const;
  /// True when the cache holds a tracker for `key`.
  bool is_cached(const TrackerKey& key) const { return cache_.count(key) > 0; }
  size_t cached_trackers() const { return cache_.size(); }
  /// Drops every cached tracker not used by the running job (frees device memory).
  void clear_cache();

  /// Cancels and joins the job, waits for a model creation in progress, and ignores every request afterwards.
  void shutdown();

 Q_SIGNALS:
  void state_changed();
  /// The selection (model, device or precision) changed.
  void selection_changed();
  /// A tracker for the selection is loaded (or was reused): its description for the status bar.
  void tracker_ready(const QString& description);
  void job_started(int points, qint64 frames);
  /// Progress of the running job: fraction 0..1 and the tracker's phase text.
  void progress_changed(double fraction, const QString& phase);
  /// Tracks were attached to points (partial or final results): `tracks_done` of `tracks_total` so far.
  void tracks_applied(int tracks_done, int tracks_total);
  /// A job succeeded; `run` holds its stage samples and wall time.
  void run_completed(const ui::CompletedRun& run);
  /// A job ended: completed, cancelled or failed (then error() came first). `message` is for the status bar.
  void job_finished(bool completed, const QString& message);
  void error(const QString& title, const QString& message);
  /// The forward-backward check of point `id`'s track: the distance in pixels per frame of the track (from its
  /// first_frame; NaN where unknown), computed against the track as it is now.
  void consistency_checked(int id, const QList<float>& distance_px);
  /// Information for the status bar ("Loading LocoTrack-S on cuda:0 ...").
  void message(const QString& text);
  /// How the running job covers its frames (whole clip, exact streaming or windowed) and why, for the status bar.
  void plan_chosen(const QString& headline);
  /// A job's decoder found these frames damaged (errors concealed): for the timeline's marks.
  void damaged_frames_found(const QList<qint64>& indices);

 private:
  struct LiveState;
  struct RunContext;
  using CreateResult = core::Expected<std::unique_ptr<core::PointTracker>>;

  /// core::resolve_device among devices_ ("auto" -> the first CUDA device, else the CPU); an unknown device keeps
  /// its name, so that creating the tracker reports it.
  std::string resolve_device(const core::DeviceId& id) const;
  void switch_selection(const TrackerKey& key, const QString& reason);
  void advance();
  void start_load(const TrackerKey& key);
  void finish_load(const TrackerKey& key, const std::shared_ptr<CreateResult>& result);
  bool request_job(core::JobRequest job);
  void start_job(const std::shared_ptr<core::PointTracker>& tracker, const core::JobRequest& job);
  void finish_special_run(RunContext& run, const core::TrackSet& result);
  void on_job_progress(uint64_t generation);
  void on_job_plan(uint64_t generation, const QString& headline, const std::string& summary);
  void on_job_partial(uint64_t generation, core::TrackSet partial, size_t first_query);
  void on_job_finished(uint64_t generation, const std::shared_ptr<core::Expected<core::TrackSet>>& result);
  // Final tracks are queued as they arrive and applied a slice (options_.apply_slice) per turn of the event loop.
  void queue_tracks(RunContext& run, core::TrackSet tracks, size_t first_query);
  void drain_tracks(uint64_t generation);
  bool apply_queued_tracks(RunContext& run);  // true when the queue is empty
  void cancel_job(const QString& reason);
  void update_state();

  std::unique_ptr<core::TrackerFactory> factory_;
  QPointer<AnnotationEditor> editor_;
  TrackerServiceOptions options_;
  std::vector<core::DeviceInfo> devices_;
  core::RuntimeInfo runtime_;
  core::TrackerScheduler<TrackerKey> scheduler_;  // every decision: what to load, when a job starts, the state
  std::map<TrackerKey, std::shared_ptr<core::PointTracker>> cache_;

  std::filesystem::path video_path_;
  int64_t video_frame_count_ = 0;

  ThreadMailbox mailbox_;  // the loader's and the tracking thread's posts; before them, so destroyed after them
  std::thread loader_;     // creates one tracker at a time

  std::unique_ptr<core::TrackingJob> job_;
  std::unique_ptr<RunContext> run_;
  std::shared_ptr<LiveState> live_;
  uint64_t generation_ = 0;
  int run_count_ = 0;
  TrackingState state_ = TrackingState::idle;  // the scheduler's state as last signalled (state_changed)
};

}  // namespace trackscope::ui
