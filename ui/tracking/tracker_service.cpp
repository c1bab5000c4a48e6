#include "ui/tracking/tracker_service.h"

#include <QMetaObject>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <mutex>

#include "core/limits.h"
#include "core/log.h"
#include "core/tracking/track_quality.h"
#include "ui/annotation_editor.h"

namespace trackscope::ui {

// Written by the tracking thread, read by the GUI thread: the stage samples and the latest progress.
struct TrackerService::LiveState {
  mutable std::mutex mutex;
  bool running = false;
  std::vector<core::StageSample> samples;
  uint64_t run = 0;  // the job generation the samples are of
  core::TrackProgress progress;
  std::atomic<bool> progress_posted{false};
};

// The job in flight: what was asked, so results can be matched to points that still hold that query.
struct TrackerService::RunContext {
  core::TrackingPlan plan;  // what was asked, so results can be matched to points that still hold that query
  uint64_t generation = 0;
  TrackerKey key;
  core::TrackerDescription tracker;
  std::string memory_plan;  // the memory plan's summary
  int tracks_done = 0;
  std::vector<bool> delivered;                        // queries whose final track has arrived (applied or queued)
  std::deque<std::pair<size_t, core::Track>> queued;  // final tracks not applied yet (query index, track)
  bool drain_posted = false;
  bool result_queued = false;  // the job's whole result has been queued
  std::chrono::steady_clock::time_point started;
};

namespace {

QString qstring(const std::string& text) { return QString::fromStdString(text); }

QString describe(const TrackerKey& key) {
  return QObject::tr("model %1 on %2 (%3)")
      .arg(qstring(key.model), qstring(key.device), core::to_string(key.precision));
}

// What the user can do about a failed job, after the tracker's own message.
QString advice_for(const core::Status& status) {
  switch (status.code()) {
    case core::StatusCode::out_of_memory:
      return QObject::tr("Try fewer points, a smaller query chunk, a lower precision, or another device.");
    case core::StatusCode::not_found:
      return QObject::tr("Check that the model weights are installed and the device exists.");
    default: return {};
  }
}

}  // namespace

TrackerService::TrackerService(std::unique_ptr<core::TrackerFactory> factory, AnnotationEditor* editor,
                               TrackerServiceOptions options, QObject* parent)
    : QObject(parent),
      factory_(std::move(factory)),
      editor_(editor),
      options_(std::move(options)),
      scheduler_({}, false),
      live_(std::make_shared<LiveState>()) {
  if (!options_.video_opener)
    options_.video_opener = [](const std::filesystem::path& path) { return core::open_video_file(path); };
  if (factory_) {
    devices_ = factory_->devices();
    runtime_ = factory_->runtime();
  }
  if (devices_.empty()) devices_.push_back({core::DeviceId::cpu().to_string(), "CPU"});
  const core::Expected<core::DeviceId> device = core::DeviceId::parse(options_.tracker.device);
  scheduler_ = core::TrackerScheduler<TrackerKey>(
      {options_.tracker.model, device ? resolve_device(*device) : options_.tracker.device, options_.tracker.precision},
      factory_ != nullptr);
}

TrackerService::~TrackerService() { shutdown(); }

void TrackerService::shutdown() {
  if (scheduler_.is_shut_down()) return;
  scheduler_.shut_down();
  ++generation_;  // results of the job below are dropped
  if (job_) {
    job_->cancel();
    job_.reset();  // joins the tracking thread
    scheduler_.job_finished();
  }
  if (loader_.joinable()) loader_.join();  // a model creation cannot be interrupted; it is short-lived
  {
    std::lock_guard lock(live_->mutex);
    live_->running = false;
  }
  update_state();
}

std::string TrackerService::resolve_device(const core::DeviceId& id) const {
  const core::Expected<core::DeviceInfo> device = core::resolve_device(id, devices_);
  return device ? device->id : id.to_string();
}

void TrackerService::set_video(const std::filesystem::path& path, int64_t frame_count) {
  if (path == video_path_ && frame_count == video_frame_count_) return;
  if (job_) cancel_job(tr("another video was opened"));
  scheduler_.drop_pending();
  video_path_ = path;
  video_frame_count_ = frame_count;
  advance();
}

void TrackerService::clear_video() { set_video({}, 0); }

void TrackerService::set_model(const QString& model) {
  if (model.isEmpty()) return;
  TrackerKey key = selection();
  key.model = model.toStdString();
  switch_selection(key, tr("the model was switched"));
}

void TrackerService::set_device(const core::DeviceId& device_id) {
  TrackerKey key = selection();
  key.device = resolve_device(device_id);
  switch_selection(key, tr("the device was switched to %1").arg(qstring(key.device)));
}

void TrackerService::set_precision(core::Precision precision) {
  TrackerKey key = selection();
  key.precision = precision;
  switch_selection(key, tr("the precision was switched to %1").arg(core::to_string(precision)));
}

void TrackerService::switch_selection(const TrackerKey& key, const QString& reason) {
  // Switching moves the model at once (off the GUI thread), so the next Track does not wait for it.
  if (!scheduler_.select(key)) return;
  Q_EMIT selection_changed();
  if (job_) cancel_job(reason);
  if (!factory_) return;
  if (const auto cached = cache_.find(key); cached != cache_.end()) {
    Q_EMIT tracker_ready(qstring(cached->second->description().model_name) + tr(" on ") + qstring(key.device) +
                         tr(" (already loaded)"));
  }
  advance();
}

bool TrackerService::track(const std::vector<core::PointId>& ids) {
  if (scheduler_.is_shut_down() || !editor_) return false;
  const core::Annotation& annotation = editor_->annotation();
  if (!video_path_.empty() && !core::has_points_to_track(annotation, ids)) {
    Q_EMIT message(tr("Nothing to track: click on the video to add query points first"));
    return false;
  }
  // The same limit the tracker enforces (core/limits.h), refused here before a model is even loaded.
  const size_t points = core::requested_point_count(annotation, ids);
  if (const core::Status allowed = core::check_tracked_point_count(static_cast<int64_t>(points)); !allowed) {
    Q_EMIT error(tr("Too many points to track"),
                 tr("%1\n\nSelect the points to track (Ctrl+Shift+T tracks the selected one). Nothing was changed.")
                     .arg(QString::fromStdString(allowed.message())));
    return false;
  }
  return request_job({JobKind::track, ids, {}});
}

bool TrackerService::retrack(const RetrackRequest& request) {
  if (scheduler_.is_shut_down() || !editor_) return false;
  switch (core::check_retrack(editor_->annotation(), request, video_frame_count_)) {
    case core::RetrackCheck::ok: break;
    case core::RetrackCheck::no_point: Q_EMIT message(tr("Select a point to re-track first")); return false;
    case core::RetrackCheck::not_keyframe:
      Q_EMIT message(tr("Frame %1 is not a keyframe of point %2: drag the point on this frame to correct it, or go "
                        "to a keyframe (K)")
                         .arg(request.keyframe)
                         .arg(request.id));
      return false;
    case core::RetrackCheck::outside_video: return false;
  }
  return request_job({JobKind::retrack, {request.id}, request});
}

bool TrackerService::check_consistency(const std::vector<core::PointId>& ids) {
  if (scheduler_.is_shut_down() || !editor_) return false;
  std::vector<core::PointId> checkable = core::consistency_candidates(editor_->annotation(), ids);
  if (checkable.empty()) {
    Q_EMIT message(tr("Nothing to check: track the points first (the check re-tracks each track from its far end)"));
    return false;
  }
  return request_job({JobKind::consistency, std::move(checkable), {}});
}

bool TrackerService::request_job(core::JobRequest job) {
  switch (scheduler_.admit(std::move(job), !video_path_.empty())) {
    case core::JobAdmission::accepted: break;
    case core::JobAdmission::no_video: Q_EMIT message(tr("Open a video first")); return false;
    case core::JobAdmission::no_tracker:
      Q_EMIT error(tr("No tracker"), tr("This build of Trackscope has no point tracker wired in, so points cannot be "
                                        "tracked. The points are unchanged."));
      return false;
    case core::JobAdmission::busy: Q_EMIT message(tr("Already tracking: cancel the running job first")); return false;
    case core::JobAdmission::shut_down: return false;
  }
  advance();
  return true;
}

void TrackerService::cancel() {
  const bool had_pending = scheduler_.drop_pending();
  if (job_) {
    cancel_job(tr("cancelled by the user"));
  } else if (had_pending) {
    Q_EMIT job_finished(false, tr("Tracking cancelled"));
  }
  update_state();
}

void TrackerService::cancel_job(const QString& reason) {
  if (!job_ || !scheduler_.begin_cancel()) return;
  core::log::info("cancelling the tracking job: {}", reason.toStdString());
  job_->cancel();
  Q_EMIT message(tr("Cancelling tracking: %1 ...").arg(reason));
  update_state();
}

void TrackerService::clear_cache() {
  const TrackerKey* busy = run_ ? &run_->key : nullptr;
  for (auto it = cache_.begin(); it != cache_.end();) {
    it = (busy != nullptr && it->first == *busy) ? std::next(it) : cache_.erase(it);
  }
}

// What happens next (start the waiting job, load a model, or wait) is the scheduler's decision.
void TrackerService::advance() {
  if (scheduler_.is_shut_down()) return;
  core::TrackerStep<TrackerKey> step = scheduler_.next(cache_.count(selection()) > 0);
  switch (step.action) {
    case core::TrackerAction::none: break;
    case core::TrackerAction::start_load: start_load(step.load); break;
    case core::TrackerAction::start_job: start_job(cache_.at(selection()), step.job); break;
  }
  update_state();
}

void TrackerService::start_load(const TrackerKey& key) {
  if (loader_.joinable()) loader_.join();  // the previous creation has posted its result already
  core::TrackerOptions options = options_.tracker;
  options.model = key.model;
  options.device = key.device;
  options.precision = key.precision;
  Q_EMIT message(tr("Loading %1 ...").arg(describe(key)));
  core::log::info("creating the tracker: model {}, device {}, precision {}", key.model, key.device,
                  core::to_string(key.precision));
  core::TrackerFactory* factory = factory_.get();
  loader_ = std::thread([this, factory, options, key] {
    auto result = std::make_shared<CreateResult>(core::internal_error("the tracker was not created"));
    // A factory bug must not take the application down: report it like any failed creation.
    try {
      if (core::Status valid = options.check(); !valid) {
        *result = valid;
      } else {
        *result = factory->create(options);
      }
    } catch (const std::bad_alloc&) {
      *result = core::out_of_memory("out of memory while loading the model");
    } catch (const std::exception& failure) {
      *result = core::internal_error(std::string("loading the model failed: ") + failure.what());
    }
    mailbox_.post([this, key, result] { finish_load(key, result); });
  });
  update_state();
}

void TrackerService::finish_load(const TrackerKey& key, const std::shared_ptr<CreateResult>& result) {
  if (loader_.joinable()) loader_.join();
  const bool created = *result && result->value() != nullptr;
  if (scheduler_.is_shut_down()) {
    scheduler_.load_finished(key, created);
    return;
  }
  std::shared_ptr<core::PointTracker> tracker;
  if (created) {
    tracker = std::move(result->value());
    cache_[key] = tracker;
  }
  const auto outcome = scheduler_.load_finished(key, created);
  if (created && outcome.for_selection) {
    const QString name = qstring(tracker->description().model_name);
    Q_EMIT tracker_ready(tr("%1 on %2 (%3)").arg(name, qstring(key.device), core::to_string(key.precision)));
  } else if (!created && outcome.for_selection) {
    const core::Status status =
        result->has_value() ? core::internal_error("the tracker factory returned no tracker") : result->status();
    update_state();
    QString text = tr("Could not load %1:\n%2").arg(describe(key), qstring(status.message()));
    if (const QString advice = advice_for(status); !advice.isEmpty()) text += "\n\n" + advice;
    if (outcome.dropped_job) text += tr("\n\nNothing was tracked; the points are unchanged.");
    Q_EMIT error(tr("Could not load the tracker"), text);
    if (outcome.dropped_job) Q_EMIT job_finished(false, tr("Tracking failed: the model could not be loaded"));
  }
  // A load of a selection the user has since left is kept in the cache (or dropped if it failed); the current
  // selection may still need its own.
  advance();
}

void TrackerService::start_job(const std::shared_ptr<core::PointTracker>& tracker, const core::JobRequest& job) {
  std::optional<core::TrackingPlan> planned = core::plan_tracking_job(editor_->annotation(), job, video_frame_count_);
  if (!planned) {
    Q_EMIT job_finished(false, tr("Nothing to track: the points were removed or changed"));
    return;
  }
  auto run = std::make_unique<RunContext>();
  core::TrackRequest request = planned->request();
  run->plan = std::move(*planned);
  run->generation = ++generation_;
  run->key = selection();
  run->tracker = tracker->description();
  run->started = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(live_->mutex);
    live_->running = true;
    live_->samples.clear();
    live_->run = run->generation;
    live_->progress = {};
    live_->progress_posted = false;
  }
  const uint64_t generation = run->generation;
  std::shared_ptr<LiveState> live = live_;
  core::TrackingJob::Callbacks callbacks;
  callbacks.on_progress = [this, live, generation](const core::TrackProgress& progress) {
    {
      std::lock_guard lock(live->mutex);
      live->progress = progress;
    }
    // Coalesced: a tracker may report progress per frame; the GUI needs the latest value, once per turn.
    if (!live->progress_posted.exchange(true)) {
      mailbox_.post([this, generation] { on_job_progress(generation); });
    }
  };
  callbacks.on_plan = [this, generation](const core::RunPlan& plan) {
    mailbox_.post([this, generation, headline = QString::fromStdString(plan.headline()), summary = plan.summary()] {
      on_job_plan(generation, headline, summary);
    });
  };
  callbacks.on_stage = [live](const core::StageSample& sample) {
    std::lock_guard lock(live->mutex);
    live->samples.push_back(sample);
  };
  callbacks.on_partial = [this, generation](const core::TrackSet& partial, size_t first_query) {
    mailbox_.post([this, generation, partial = partial, first_query]() mutable {
      on_job_partial(generation, std::move(partial), first_query);
    });
  };
  callbacks.on_video_integrity = [this, generation, path = video_path_](const core::IntegrityReport& report) {
    QList<qint64> indices;
    for (const auto& frame : report.damaged_frames) indices.push_back(frame.index);
    if (indices.isEmpty()) return;
    core::log::warn("{}: {}", path.string(), report.summary());
    mailbox_.post([this, generation, indices] {
      if (generation == generation_) Q_EMIT damaged_frames_found(indices);  // still the same video's job
    });
  };
  callbacks.on_finished = [this, generation](core::Expected<core::TrackSet> result) {
    auto shared = std::make_shared<core::Expected<core::TrackSet>>(std::move(result));
    mailbox_.post([this, generation, shared] { on_job_finished(generation, shared); });
  };
  const int points = static_cast<int>(run->plan.ids.size());
  run_ = std::move(run);
  scheduler_.job_started();
  core::log::info("tracking {} points of {} with {}", points, video_path_.string(), run_->tracker.model_name);
  job_ =
      core::TrackingJob::start(tracker, options_.video_opener(video_path_), std::move(request), std::move(callbacks));
  Q_EMIT job_started(points, run_->plan.range.end_frame - run_->plan.range.first_frame);
  switch (run_->plan.kind) {
    case JobKind::track:
      Q_EMIT message(tr("Tracking %n point(s) with %1 ...", nullptr, points).arg(qstring(run_->tracker.model_name)));
      break;
    case JobKind::retrack:
      Q_EMIT message(tr("Re-tracking point %1 %2 from frame %3 ...")
                         .arg(run_->plan.retrack.id)
                         .arg(core::to_string(run_->plan.retrack.direction))
                         .arg(run_->plan.retrack.keyframe));
      break;
    case JobKind::consistency: Q_EMIT message(tr("Forward-backward check of %n track(s) ...", nullptr, points)); break;
  }
}

void TrackerService::on_job_progress(uint64_t generation) {
  core::TrackProgress progress;
  {
    std::lock_guard lock(live_->mutex);
    progress = live_->progress;
    live_->progress_posted = false;
  }
  if (generation != generation_ || !job_) return;
  Q_EMIT progress_changed(progress.fraction, qstring(progress.phase));
}

void TrackerService::on_job_partial(uint64_t generation, core::TrackSet partial, size_t first_query) {
  // Re-tracks and checks are applied whole when they finish (one undo step, one comparison).
  if (generation != generation_ || !run_ || run_->plan.kind != JobKind::track) return;
  queue_tracks(*run_, std::move(partial), first_query);
  if (!run_->drain_posted) {
    run_->drain_posted = true;
    QMetaObject::invokeMethod(
        this, [this, generation] { drain_tracks(generation); }, Qt::QueuedConnection);
  }
}

void TrackerService::queue_tracks(RunContext& run, core::TrackSet tracks, size_t first_query) {
  run.delivered.resize(run.plan.ids.size(), false);
  for (size_t i = 0; i < tracks.tracks.size(); ++i) {
    const size_t query = first_query + i;
    if (query >= run.plan.ids.size()) break;
    // Partial results are final (TrackObserver::on_partial): the job's whole result queues only the rest.
    if (run.delivered[query]) continue;
    run.delivered[query] = true;
    run.queued.emplace_back(query, std::move(tracks.tracks[i]));
  }
}

void TrackerService::drain_tracks(uint64_t generation) {
  if (generation != generation_ || !run_) return;
  run_->drain_posted = false;
  apply_queued_tracks(*run_);
  if (!run_->queued.empty()) {
    run_->drain_posted = true;
    QMetaObject::invokeMethod(
        this, [this, generation] { drain_tracks(generation); }, Qt::QueuedConnection);
  }
}

bool TrackerService::apply_queued_tracks(RunContext& run) {
  if (!editor_) {
    run.queued.clear();
    return true;
  }
  const core::TrackProvenance provenance{run.tracker.model_name, run.tracker.device.id,
                                         core::to_string(run.tracker.precision)};
  // A slice of the queue per turn of the event loop: a long clip's tracks (18,000 frames each) take milliseconds
  // apiece, and all of them at once would stall the GUI.
  const auto started = std::chrono::steady_clock::now();
  while (!run.queued.empty() && std::chrono::steady_clock::now() - started < options_.apply_slice) {
    auto [query, track] = std::move(run.queued.front());
    run.queued.pop_front();
    const core::PointId id = run.plan.ids[query];
    // A point moved or deleted while the job ran keeps what the user did; its old query's track is stale.
    if (core::result_staleness(editor_->annotation(), run.plan, query) == core::ResultStaleness::current) {
      editor_->set_track(id, std::move(track), provenance,
                         tr("Track %n point(s)", nullptr, static_cast<int>(run.plan.ids.size())),
                         QStringLiteral("job-%1").arg(run.generation));
    }
    run.tracks_done = std::max(run.tracks_done, static_cast<int>(query + 1));
  }
  Q_EMIT tracks_applied(run.tracks_done, static_cast<int>(run.plan.ids.size()));
  return run.queued.empty();
}

void TrackerService::on_job_plan(uint64_t generation, const QString& headline, const std::string& summary) {
  if (generation != generation_ || !run_) return;
  run_->memory_plan = summary;
  Q_EMIT plan_chosen(headline);
}

void TrackerService::on_job_finished(uint64_t generation,
                                     const std::shared_ptr<core::Expected<core::TrackSet>>& result) {
  if (generation != generation_ || !run_) return;
  // The tracks go into the annotation a slice at a time (the job stays "tracking" until they are all in).
  if (run_->plan.kind == JobKind::track) {
    if (*result && !run_->result_queued) {
      run_->result_queued = true;
      queue_tracks(*run_, std::move(**result), 0);  // keeps frame_count
    }
    if (!apply_queued_tracks(*run_)) {  // also the partial results of a cancelled or failed job
      QMetaObject::invokeMethod(
          this, [this, generation, result] { on_job_finished(generation, result); }, Qt::QueuedConnection);
      return;
    }
  }
  job_.reset();  // the thread has delivered its result; joining returns at once
  const bool was_cancelled = scheduler_.job_finished();
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - run_->started).count();
  std::vector<core::StageSample> samples;
  {
    std::lock_guard lock(live_->mutex);
    live_->running = false;
    samples = live_->samples;
  }
  std::unique_ptr<RunContext> run = std::move(run_);
  if (*result) {
    if (run->plan.kind != JobKind::track) finish_special_run(*run, **result);
    CompletedRun completed;
    completed.tracker = run->tracker;
    completed.samples = std::move(samples);
    completed.wall_ms = wall_ms;
    completed.points = static_cast<int>(run->plan.ids.size());
    completed.frames = (*result)->frame_count > 0 ? (*result)->frame_count : video_frame_count_;
    completed.query_chunk = options_.tracker.query_chunk;
    completed.video = video_path_.string();
    completed.run_number = ++run_count_;
    completed.plan = run->memory_plan;
    Q_EMIT run_completed(completed);
    const QString seconds = QString::number(wall_ms / 1000.0, 'f', 1);
    switch (run->plan.kind) {
      case JobKind::track:
        Q_EMIT job_finished(true, tr("Tracked %n point(s) over %1 frames in %2 s", nullptr, completed.points)
                                      .arg(completed.frames)
                                      .arg(seconds));
        break;
      case JobKind::retrack:
        Q_EMIT job_finished(true, tr("Re-tracked point %1 %2 from frame %3 in %4 s")
                                      .arg(run->plan.retrack.id)
                                      .arg(core::to_string(run->plan.retrack.direction))
                                      .arg(run->plan.retrack.keyframe)
                                      .arg(seconds));
        break;
      case JobKind::consistency:
        Q_EMIT job_finished(
            true, tr("Forward-backward check of %n track(s) done in %1 s", nullptr, completed.points).arg(seconds));
        break;
    }
  } else if (result->status().code() == core::StatusCode::cancelled || was_cancelled) {
    Q_EMIT job_finished(false, tr("Tracking cancelled (%1 of %2 tracks were finished and kept)")
                                   .arg(run->tracks_done)
                                   .arg(run->plan.ids.size()));
  } else {
    const core::Status status = result->status();
    QString text = tr("Tracking %n point(s) with %1 on %2 failed:\n%3", nullptr, static_cast<int>(run->plan.ids.size()))
                       .arg(qstring(run->tracker.model_name), qstring(run->key.device), qstring(status.message()));
    if (const QString advice = advice_for(status); !advice.isEmpty()) text += "\n\n" + advice;
    text += run->tracks_done > 0 ? tr("\n\nThe query points are unchanged; the tracks of %1 points finished before the "
                                      "failure were kept.")
                                       .arg(run->tracks_done)
                                 : tr("\n\nThe points are unchanged.");
    update_state();
    Q_EMIT error(tr("Tracking failed"), text);
    Q_EMIT job_finished(false, tr("Tracking failed"));
  }
  advance();
}

void TrackerService::finish_special_run(RunContext& run, const core::TrackSet& result) {
  if (!editor_) return;
  const core::TrackProvenance provenance{run.tracker.model_name, run.tracker.device.id,
                                         core::to_string(run.tracker.precision)};
  for (size_t i = 0; i < run.plan.ids.size() && i < result.tracks.size(); ++i) {
    const core::PointId id = run.plan.ids[i];
    const core::ResultStaleness staleness = core::result_staleness(editor_->annotation(), run.plan, i);
    if (run.plan.kind == JobKind::retrack) {
      if (staleness == core::ResultStaleness::query_changed) {
        Q_EMIT message(tr("Point %1 changed during re-tracking; the result was dropped").arg(id));
      }
      if (staleness != core::ResultStaleness::current) continue;
      editor_->apply_retracked(id, result.tracks[i], run.plan.retrack.policy, provenance,
                               tr("Re-track point %1 %2 from frame %3 (%4)")
                                   .arg(id)
                                   .arg(core::to_string(run.plan.retrack.direction))
                                   .arg(run.plan.retrack.keyframe)
                                   .arg(core::to_string(run.plan.retrack.policy)));
    } else if (staleness == core::ResultStaleness::current) {
      const std::vector<float> distance =
          core::consistency_error(editor_->annotation().track(id)->track, result.tracks[i]);
      Q_EMIT consistency_checked(id, QList<float>(distance.begin(), distance.end()));
    }
  }
}

LiveRunSnapshot TrackerService::live_snapshot() const {
  std::lock_guard lock(live_->mutex);
  return {live_->running, live_->samples, live_->run};
}

void TrackerService::update_state() {
  const TrackingState state = scheduler_.state();
  if (state == state_) return;
  state_ = state;
  Q_EMIT state_changed();
}

}  // namespace trackscope::ui
