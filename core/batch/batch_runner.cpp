#include "core/batch/batch_runner.h"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <deque>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "core/io/sha256.h"
#include "core/io/video_fingerprint.h"
#include "core/log.h"
#include "core/perf/gpu_specs.h"
#include "core/perf/process_memory.h"
#include "core/tracking/track_clip.h"

namespace trackscope::core {
namespace {

using Clock = std::chrono::steady_clock;

// How much slower than the rest an unmeasured worker must be estimated to be before it steps aside (the
// estimate, core/perf/gpu_specs.h estimated_fp32_tflops, is a guess within a factor of a few).
constexpr double kPriorMargin = 3.0;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string("unknown");
}

std::string tracker_key(const BatchJob& job) {
  return fmt::format("{}|{}|{}", job.model, to_string(job.precision), to_string(job.resize));
}

// ---- scheduling --------------------------------------------------------------------------------------------

// Which worker runs which clip (see the header). Slots are this run's runnable clips, 0..slots-1.
class Scheduler {
 public:
  struct Assignment {
    size_t slot = 0;
    size_t attempt = 0;
    bool backup = false;  // another worker is on this clip too
    std::stop_token stop;
  };
  enum class Outcome { committed, failed, lost };

  Scheduler(size_t slots, std::vector<std::string> worker_devices, std::vector<double> estimated_tflops,
            bool backup_attempts, const std::vector<std::string>& keys)
      : clips_(slots),
        queues_(worker_devices.size()),
        stats_(worker_devices.size()),
        devices_(std::move(worker_devices)),
        estimated_tflops_(std::move(estimated_tflops)),
        backup_attempts_(backup_attempts) {
    const size_t workers = devices_.size();
    // Sorted by tracker, dealt in contiguous runs: a worker mostly needs one model.
    std::vector<size_t> order(slots);
    for (size_t i = 0; i < slots; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
    for (size_t k = 0; k < slots; ++k) queues_[k * workers / std::max<size_t>(1, slots)].push_back(order[k]);
  }

  std::optional<Assignment> next(size_t worker) {
    std::lock_guard lock(mutex_);
    std::deque<size_t>* source = &queues_[worker];
    bool from_front = true;
    if (source->empty()) {
      source = nullptr;
      for (size_t other = 0; other < queues_.size(); ++other) {
        if (other != worker && !queues_[other].empty() && (!source || queues_[other].size() > source->size())) {
          source = &queues_[other];
        }
      }
      from_front = false;
    }
    if (source != nullptr) {
      if (should_yield(worker)) {
        stats_[worker].exited = true;
        log::info("batch: worker {} stops taking clips: the faster workers finish the rest sooner", worker);
        return std::nullopt;
      }
      const size_t slot = from_front ? source->front() : source->back();
      if (from_front) {
        source->pop_front();
      } else {
        source->pop_back();
      }
      clips_[slot].state = State::running;
      clips_[slot].started = Clock::now();
      return start_attempt(slot, worker, false);
    }
    if (backup_attempts_) {
      if (std::optional<size_t> slot = backup_candidate(worker)) return start_attempt(*slot, worker, true);
    }
    stats_[worker].exited = true;
    return std::nullopt;
  }

  /// The first attempt to finish wins; the others are asked to stop.
  bool try_commit(size_t slot, size_t attempt) {
    std::lock_guard lock(mutex_);
    Clip& clip = clips_[slot];
    if (clip.committed) return false;
    clip.committed = true;
    for (size_t i = 0; i < clip.attempts.size(); ++i) {
      if (i != attempt) clip.attempts[i].stop.request_stop();
    }
    return true;
  }

  /// Whether this attempt's outcome is the clip's (a failure is not while another attempt may still succeed).
  /// A lost attempt counts for its worker's speed with its elapsed time over its progress.
  bool finish(size_t worker, size_t slot, size_t attempt, Outcome outcome, std::optional<double> seconds_per_clip) {
    std::lock_guard lock(mutex_);
    Clip& clip = clips_[slot];
    clip.attempts[attempt].running = false;
    if (outcome == Outcome::lost && !seconds_per_clip) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - clip.attempts[attempt].started).count();
      seconds_per_clip = elapsed / std::max(0.05, clip.attempts[attempt].fraction);
    }
    if (seconds_per_clip) {
      stats_[worker].seconds += *seconds_per_clip;
      ++stats_[worker].clips;
    }
    switch (outcome) {
      case Outcome::committed: clip.state = State::done; return true;
      case Outcome::lost: return false;
      case Outcome::failed:
        if (clip.committed) return false;
        for (const Attempt& a : clip.attempts) {
          if (a.running) return false;
        }
        clip.state = State::done;
        return true;
    }
    return false;
  }

  void set_fraction(size_t slot, size_t attempt, double fraction) {
    std::lock_guard lock(mutex_);
    clips_[slot].attempts[attempt].fraction = fraction;
  }

  size_t attempts(size_t slot) {
    std::lock_guard lock(mutex_);
    return clips_[slot].attempts.size();
  }

  /// Done and running clips of this scheduler (finished clips outside it are added by the caller).
  void progress(int64_t& done, int64_t& running, double& running_fraction) {
    std::lock_guard lock(mutex_);
    for (const Clip& clip : clips_) {
      if (clip.state == State::done) ++done;
      if (clip.state != State::running) continue;
      ++running;
      double best = 0.0;
      for (const Attempt& a : clip.attempts) best = std::max(best, a.fraction);
      running_fraction += best;
    }
  }

 private:
  enum class State { queued, running, done };
  struct Attempt {
    size_t worker = 0;
    std::stop_source stop;
    double fraction = 0.0;
    bool running = true;
    Clock::time_point started = Clock::now();
  };
  struct Clip {
    State state = State::queued;
    Clock::time_point started;
    std::vector<Attempt> attempts;
    bool committed = false;
  };
  struct WorkerStats {
    double seconds = 0.0;  // tracked clips' seconds (model loading excluded)
    int clips = 0;
    bool exited = false;
    std::optional<double> seconds_per_clip() const { return clips > 0 ? std::optional(seconds / clips) : std::nullopt; }
  };

  Assignment start_attempt(size_t slot, size_t worker, bool backup) {
    Clip& clip = clips_[slot];
    clip.attempts.push_back(Attempt{worker, {}, 0.0, true, Clock::now()});
    return {slot, clip.attempts.size() - 1, backup, clip.attempts.back().stop.get_token()};
  }

  // A worker's seconds per clip: measured; else its estimated speed relative to the measured worker with the
  // most clips. In `relative` mode (nothing measured yet) the unit is 1 / estimated TFLOP/s instead of seconds.
  std::optional<double> seconds_per_clip(size_t worker, bool relative) const {
    if (relative)
      return estimated_tflops_[worker] > 0.0 ? std::optional(1.0 / estimated_tflops_[worker]) : std::nullopt;
    if (std::optional<double> measured = stats_[worker].seconds_per_clip()) return measured;
    if (estimated_tflops_[worker] <= 0.0) return std::nullopt;
    std::optional<size_t> reference;
    for (size_t other = 0; other < stats_.size(); ++other) {
      if (estimated_tflops_[other] > 0.0 && stats_[other].clips > 0 &&
          (!reference || stats_[other].clips > stats_[*reference].clips)) {
        reference = other;
      }
    }
    if (!reference) return std::nullopt;
    return *stats_[*reference].seconds_per_clip() * estimated_tflops_[*reference] / estimated_tflops_[worker];
  }

  // The others would finish every queued clip before this worker finishes one (by a margin, when this worker's
  // speed is only estimated).
  bool should_yield(size_t worker) const {
    bool relative = true;  // nothing measured yet: compare the estimates alone
    for (const WorkerStats& s : stats_) relative = relative && s.clips == 0;
    const std::optional<double> mine = seconds_per_clip(worker, relative);
    if (!mine) return false;
    double others_rate = 0.0;  // clips per unit
    for (size_t other = 0; other < stats_.size(); ++other) {
      if (other == worker || stats_[other].exited) continue;
      const std::optional<double> theirs = seconds_per_clip(other, relative);
      if (!theirs || *theirs <= 0.0) return false;  // an unknown worker: no basis to step aside
      others_rate += 1.0 / *theirs;
    }
    if (others_rate <= 0.0) return false;
    size_t queued = 0;
    for (const auto& queue : queues_) queued += queue.size();
    const double margin = stats_[worker].clips > 0 ? 1.0 : kPriorMargin;
    return *mine > margin * static_cast<double>(queued) / others_rate;
  }

  // A running clip (one attempt, not committed, on another device) that this worker expects to finish in less
  // than half of its estimated remaining time; the one with the most time left. Never on the same device: its
  // workers share the cores or the GPU, so a second attempt there only slows the first.
  std::optional<size_t> backup_candidate(size_t worker) const {
    const std::optional<double> mine = seconds_per_clip(worker, false);
    constexpr double kUnknown = std::numeric_limits<double>::infinity();
    std::optional<size_t> best;
    double best_remaining = 0.0;
    for (size_t slot = 0; slot < clips_.size(); ++slot) {
      const Clip& clip = clips_[slot];
      if (clip.state != State::running || clip.committed || clip.attempts.size() != 1) continue;
      const Attempt& primary = clip.attempts.front();
      if (!primary.running || devices_[primary.worker] == devices_[worker]) continue;
      const double elapsed = std::chrono::duration<double>(Clock::now() - clip.started).count();
      double remaining = kUnknown;
      if (primary.fraction >= 0.05) {
        remaining = elapsed * (1.0 - primary.fraction) / primary.fraction;
      } else if (const std::optional<double> theirs = stats_[primary.worker].seconds_per_clip()) {
        remaining = std::max(0.0, *theirs - elapsed);
      }
      const bool worth_it = mine ? *mine < 0.5 * remaining : remaining == kUnknown;
      if (worth_it && (!best || remaining > best_remaining)) {
        best = slot;
        best_remaining = remaining;
      }
    }
    return best;
  }

  std::mutex mutex_;
  std::vector<Clip> clips_;
  std::vector<std::deque<size_t>> queues_;
  std::vector<WorkerStats> stats_;
  std::vector<std::string> devices_;
  std::vector<double> estimated_tflops_;
  bool backup_attempts_;
};

// ---- the run -----------------------------------------------------------------------------------------------

// The trackers one worker keeps loaded, least recently used last.
class TrackerCache {
 public:
  explicit TrackerCache(size_t capacity) : capacity_(std::max<size_t>(1, capacity)) {}

  // The tracker for `job` on `worker`, loading it (through the shared factory) when needed. `load_seconds` is
  // set to the loading time, 0 when it was loaded already.
  Expected<PointTracker*> get(const BatchJob& job, const BatchWorkerSpec& worker, TrackerFactory& factory,
                              std::mutex& factory_mutex, double& load_seconds) {
    load_seconds = 0.0;
    const std::string key = tracker_key(job);
    for (auto it = trackers_.begin(); it != trackers_.end(); ++it) {
      if (it->first == key) {
        trackers_.splice(trackers_.begin(), trackers_, it);
        return trackers_.front().second.get();
      }
    }
    while (trackers_.size() >= capacity_) trackers_.pop_back();  // free its memory before loading another
    TrackerOptions options;
    options.model = job.model;
    options.device = worker.device;
    options.precision = job.precision;
    options.resize = job.resize;
    options.memory_budget_mb = worker.memory_budget_mb;
    options.query_chunk = worker.query_chunk;
    const auto start = Clock::now();
    Expected<std::unique_ptr<PointTracker>> tracker = [&] {
      std::lock_guard lock(factory_mutex);
      return factory.create(options);
    }();
    if (!tracker)
      return tracker.status().with_context(fmt::format("loading model '{}' on {}", job.model, worker.device));
    load_seconds = seconds_since(start);
    trackers_.emplace_front(key, std::move(*tracker));
    return trackers_.front().second.get();
  }

 private:
  size_t capacity_;
  std::list<std::pair<std::string, std::unique_ptr<PointTracker>>> trackers_;
};

class BatchRunner {
 public:
  BatchRunner(const BatchJobList& jobs, TrackerFactory& factory, const BatchOptions& options,
              const BatchDeviceHooks& hooks, BatchObserver& observer)
      : jobs_(jobs), factory_(factory), options_(options), hooks_(hooks), observer_(observer), host_(host_name()) {}

  Expected<BatchRun> run() {
    TRACKSCOPE_RETURN_IF_ERROR(write_batch_plan(options_.out_dir, jobs_));
    start_ = Clock::now();
    std::vector<std::string> keys;
    for (size_t i = 0; i < jobs_.entries.size(); ++i) {
      if (static_cast<int>(i % static_cast<size_t>(options_.shard_count)) != options_.shard_index) continue;
      const BatchJobEntry& entry = jobs_.entries[i];
      records_.emplace(i, record_for(entry));
      if (!entry.error.ok()) {
        ++failed_;
        ++finished_outside_;
        continue;
      }
      slot_entries_.push_back(i);
      keys.push_back(tracker_key(entry.job));
    }
    total_ = static_cast<int64_t>(records_.size());
    std::vector<std::string> devices;
    std::vector<double> estimated_tflops;
    for (const BatchWorkerSpec& w : options_.workers) {
      devices.push_back(w.device);
      estimated_tflops.push_back(w.estimated_tflops);
    }
    scheduler_ = std::make_unique<Scheduler>(slot_entries_.size(), std::move(devices), std::move(estimated_tflops),
                                             options_.backup_attempts, keys);
    for (const auto& [index, record] : records_) {
      if (record.status == "failed") notify_finished(record, false);
    }
    std::vector<std::thread> threads;
    for (size_t w = 0; w < options_.workers.size(); ++w) threads.emplace_back([this, w] { work(w); });
    for (std::thread& t : threads) t.join();

    BatchRun run;
    for (auto& [index, record] : records_) run.clips.push_back(std::move(record));
    run.progress = progress();
    return run;
  }

 private:
  // Progress of one attempt, into the scheduler (for the overall fraction and the backup estimates).
  class AttemptObserver final : public TrackObserver {
   public:
    AttemptObserver(BatchRunner& runner, size_t slot, size_t attempt)
        : runner_(runner), slot_(slot), attempt_(attempt) {}
    void on_progress(const TrackProgress& progress) override {
      runner_.scheduler_->set_fraction(slot_, attempt_, progress.fraction);
      runner_.notify_progress(false);
    }

   private:
    BatchRunner& runner_;
    size_t slot_;
    size_t attempt_;
  };

  void work(size_t worker) {
    const BatchWorkerSpec& spec = options_.workers[worker];
    if (hooks_.start_worker) hooks_.start_worker(spec);
    TrackerCache cache(static_cast<size_t>(options_.max_cached_trackers));
    while (std::optional<Scheduler::Assignment> assignment = scheduler_->next(worker)) {
      try {
        run_clip(worker, *assignment, cache);
      } catch (const std::exception& e) {
        ClipRecord record = record_for(jobs_.entries[slot_entries_[assignment->slot]]);
        fail(worker, *assignment, record, internal_error(fmt::format("unexpected error: {}", e.what())), {});
      }
    }
  }

  Expected<std::string> model_sha256(const std::string& model) {
    std::lock_guard lock(model_mutex_);
    if (auto it = model_sha256_.find(model); it != model_sha256_.end()) return it->second;
    Expected<std::string> sha = hooks_.model_sha256 ? hooks_.model_sha256(model) : Expected<std::string>(model);
    model_sha256_.emplace(model, sha);
    return sha;
  }

  // The clip's finished state from an earlier run: ok, the same checksum, every output there and unchanged.
  bool finished_before(const ClipRecord& wanted, ClipRecord& stored_record) {
    Expected<ClipRecord> stored = read_clip_record(options_.out_dir, wanted.id);
    if (!stored || stored->status != "ok" || stored->checksum != wanted.checksum) return false;
    if (stored->outputs.size() != wanted.outputs.size()) return false;
    for (size_t i = 0; i < stored->outputs.size(); ++i) {
      if (stored->outputs[i].file != wanted.outputs[i].file) return false;
      Expected<std::string> sha = io::sha256_file_hex(options_.out_dir / stored->outputs[i].file);
      if (!sha || *sha != stored->outputs[i].sha256) return false;
    }
    stored_record = std::move(*stored);
    return true;
  }

  void run_clip(size_t worker, const Scheduler::Assignment& a, TrackerCache& cache) {
    const auto clip_start = Clock::now();
    const BatchJobEntry& entry = jobs_.entries[slot_entries_[a.slot]];
    const BatchJob& job = entry.job;
    const BatchWorkerSpec& spec = options_.workers[worker];
    ClipRecord record = record_for(entry);
    ClipMeasurements m;
    m.device = spec.device;
    m.worker = static_cast<int>(worker);
    m.host = host_;

    Expected<std::unique_ptr<VideoSource>> video = VideoSource::open(job.video);
    if (!video) return fail(worker, a, record, video.status(), m, clip_start);
    const VideoInfo& info = (*video)->info();
    Expected<std::vector<Query>> queries = resolve_queries(job.queries, info);
    if (!queries) return fail(worker, a, record, queries.status(), m, clip_start);
    record.points = static_cast<int64_t>(queries->size());
    const int64_t end = job.end_frame == -1 ? info.frame_count : std::min(job.end_frame, info.frame_count);
    if (job.first_frame >= end) {
      return fail(worker, a, record,
                  invalid_argument(fmt::format("frames [{}, {}) are not in the video ({} frames)", job.first_frame,
                                               job.end_frame, info.frame_count)),
                  m, clip_start);
    }
    record.frames = end - job.first_frame;

    Expected<io::VideoFingerprint> fingerprint = io::fingerprint_video(job.video);
    if (!fingerprint) return fail(worker, a, record, fingerprint.status(), m, clip_start);
    Expected<std::string> queries_identity =
        job.queries.is_grid() ? Expected<std::string>(job.queries.to_string()) : io::sha256_file_hex(job.queries.csv);
    if (!queries_identity) return fail(worker, a, record, queries_identity.status(), m, clip_start);
    Expected<std::string> model = model_sha256(job.model);
    if (!model) return fail(worker, a, record, model.status(), m, clip_start);
    record.checksum = clip_checksum(job, fingerprint->sha256, fingerprint->size_bytes, *queries_identity, *model);

    TrackClipRequest request;
    request.video_path = job.video.string();
    request.queries = std::move(*queries);
    request.first_frame = job.first_frame;
    request.end_frame = job.end_frame == -1 ? -1 : end;
    const std::filesystem::path folder = options_.out_dir / record.id;
    for (const std::string& name : job.outputs) {
      Expected<ClipOutput> output = ClipOutput::from_format_name(name, folder, record.id);
      if (!output) return fail(worker, a, record, output.status(), m, clip_start);
      record.outputs.push_back({output->format_name(), record.id + "/" + output->path.filename().string(), "", 0});
      request.outputs.push_back(std::move(*output));
    }

    if (!a.backup) {
      ClipRecord stored;
      if (options_.resume && finished_before(record, stored)) {
        scheduler_->try_commit(a.slot, a.attempt);
        scheduler_->finish(worker, a.slot, a.attempt, Scheduler::Outcome::committed, std::nullopt);
        return finish_record(a.slot, stored, true);
      }
      std::error_code ignored;
      std::filesystem::remove(clip_record_path(options_.out_dir, record.id), ignored);
    }
    std::error_code error;
    std::filesystem::create_directories(folder, error);
    if (error)
      return fail(worker, a, record, io_error(fmt::format("cannot create {}: {}", folder.string(), error.message())), m,
                  clip_start);

    Expected<PointTracker*> tracker = cache.get(job, spec, factory_, factory_mutex_, m.load_seconds);
    if (!tracker) return fail(worker, a, record, tracker.status(), m, clip_start);
    const TrackerDescription& description = (*tracker)->description();
    m.device = description.device.id;
    m.device_name = description.device.name;
    if (hooks_.reset_peak_memory) hooks_.reset_peak_memory(m.device);
    AttemptObserver progress(*this, a.slot, a.attempt);
    Expected<TrackClipResult> result = track_clip_queries(**tracker, **video, request, progress, a.stop);
    if (!result) {
      if (result.status().code() == StatusCode::cancelled && a.stop.stop_requested()) {
        scheduler_->finish(worker, a.slot, a.attempt, Scheduler::Outcome::lost, std::nullopt);
        return;
      }
      return fail(worker, a, record, result.status(), m, clip_start);
    }
    if (!scheduler_->try_commit(a.slot, a.attempt)) {
      scheduler_->finish(worker, a.slot, a.attempt, Scheduler::Outcome::lost, std::nullopt);
      return;
    }
    m.track_seconds = result->track_seconds;
    m.points_per_second = result->points_per_second();
    if (description.device.is_cuda() && hooks_.peak_memory_bytes) {
      m.peak_device_mib = static_cast<double>(hooks_.peak_memory_bytes(m.device)) / (1 << 20);
    }
    m.peak_host_rss_mib = peak_resident_mib();
    record.frames = result->tracks.frame_count;
    Status written = write_clip_outputs(request, *result, info, description);
    for (ClipOutputRecord& output : record.outputs) {
      if (!written) break;
      Expected<std::string> sha = io::sha256_file_hex(options_.out_dir / output.file);
      if (!sha) {
        written = sha.status();
        break;
      }
      output.sha256 = *sha;
      std::error_code size_error;
      output.bytes = static_cast<int64_t>(std::filesystem::file_size(options_.out_dir / output.file, size_error));
    }
    m.attempts = static_cast<int>(scheduler_->attempts(a.slot));
    m.clip_seconds = seconds_since(clip_start);
    m.finished_at = utc_now();
    record.measurements = m;
    if (!written) {
      record.status = "failed";
      record.error = written.message();
      record.error_code = to_string(written.code());
    } else {
      record.status = "ok";
    }
    if (Status s = write_clip_record(options_.out_dir, record); !s && record.status == "ok") {
      record.status = "failed";
      record.error = s.message();
      record.error_code = to_string(s.code());
    }
    scheduler_->finish(worker, a.slot, a.attempt, Scheduler::Outcome::committed,
                       record.status == "ok" ? std::optional(m.track_seconds) : std::nullopt);
    finish_record(a.slot, record, false);
  }

  void fail(size_t worker, const Scheduler::Assignment& a, ClipRecord& record, const Status& status, ClipMeasurements m,
            Clock::time_point clip_start = Clock::now()) {
    if (!scheduler_->finish(worker, a.slot, a.attempt, Scheduler::Outcome::failed, std::nullopt)) return;
    record.status = "failed";
    record.error = status.message();
    record.error_code = to_string(status.code());
    record.outputs.clear();
    m.attempts = static_cast<int>(scheduler_->attempts(a.slot));
    m.finished_at = utc_now();
    m.peak_host_rss_mib = peak_resident_mib();
    m.clip_seconds = seconds_since(clip_start);
    record.measurements = m;
    if (Status s = write_clip_record(options_.out_dir, record); !s) {
      log::warn("batch: the record of {} could not be written: {}", record.id, s.message());
    }
    finish_record(a.slot, record, false);
  }

  void finish_record(size_t slot, const ClipRecord& record, bool skipped) {
    {
      std::lock_guard lock(records_mutex_);
      if (record.status == "failed") ++failed_;
      if (skipped) ++skipped_;
      records_[slot_entries_[slot]] = record;
    }
    notify_finished(record, skipped);
  }

  BatchProgress progress() {
    BatchProgress p;
    p.clips = total_;
    double running_fraction = 0.0;
    scheduler_->progress(p.done, p.running, running_fraction);
    {
      std::lock_guard lock(records_mutex_);
      p.done += finished_outside_;
      p.failed = failed_;
      p.skipped = skipped_;
    }
    p.fraction = total_ > 0 ? (static_cast<double>(p.done) + running_fraction) / static_cast<double>(total_) : 1.0;
    p.elapsed_seconds = seconds_since(start_);
    // The rate comes from the clips tracked in this run: skipped and failed clips (mostly unreadable videos)
    // take next to no time and would make the estimate far too short.
    const double tracked = static_cast<double>(p.done - p.failed - p.skipped) + running_fraction;
    if (tracked > 0.0 && p.fraction < 1.0) {
      const double left = static_cast<double>(total_) * (1.0 - p.fraction);
      p.eta_seconds = p.elapsed_seconds * left / tracked;
    }
    if (p.fraction >= 1.0) p.eta_seconds = 0.0;
    return p;
  }

  void notify_progress(bool force) {
    std::lock_guard lock(observer_mutex_);
    const auto now = Clock::now();
    if (!force && now - last_progress_ < std::chrono::milliseconds(500)) return;
    last_progress_ = now;
    observer_.on_progress(progress());
  }

  void notify_finished(const ClipRecord& record, bool skipped) {
    std::lock_guard lock(observer_mutex_);
    observer_.on_clip_finished(record, skipped, progress());
  }

  const BatchJobList& jobs_;
  TrackerFactory& factory_;
  const BatchOptions& options_;
  const BatchDeviceHooks& hooks_;
  BatchObserver& observer_;
  const std::string host_;
  Clock::time_point start_;
  std::vector<size_t> slot_entries_;  // slot -> index into jobs_.entries
  std::unique_ptr<Scheduler> scheduler_;
  int64_t total_ = 0;

  std::mutex records_mutex_;
  std::map<size_t, ClipRecord> records_;  // by entry index: job order
  int64_t finished_outside_ = 0;          // entries finished without the scheduler (lines that did not parse)
  int64_t failed_ = 0;
  int64_t skipped_ = 0;

  std::mutex factory_mutex_;
  std::mutex model_mutex_;
  std::map<std::string, Expected<std::string>> model_sha256_;

  std::mutex observer_mutex_;
  Clock::time_point last_progress_{};
};

}  // namespace

Status BatchOptions::check() const {
  if (out_dir.empty()) return invalid_argument("the batch needs an output folder");
  if (workers.empty()) return invalid_argument("the batch needs at least one worker (device)");
  if (max_cached_trackers < 1) return invalid_argument("a worker must be able to keep one tracker");
  if (shard_count < 1 || shard_index < 0 || shard_index >= shard_count) {
    return invalid_argument(fmt::format("shard {}/{} does not exist (index 0 to count - 1)", shard_index, shard_count));
  }
  for (const BatchWorkerSpec& w : workers) {
    if (w.memory_budget_mb < 0 || w.cpu_threads < 0) {
      return invalid_argument(fmt::format("worker {}: memory budget and threads must be >= 0", w.device));
    }
  }
  return {};
}

std::string clip_checksum(const BatchJob& job, const std::string& video_fingerprint_sha256, int64_t video_bytes,
                          const std::string& queries_identity, const std::string& model_sha256) {
  std::string outputs;
  for (const std::string& name : job.outputs) outputs += (outputs.empty() ? "" : ",") + name;
  const std::string text = fmt::format(
      "trackscope batch clip 1\nvideo {} {}\nqueries {}\nmodel {}\nprecision {}\nresize {}\nframes {} {}\n"
      "outputs {}\n",
      video_fingerprint_sha256, video_bytes, queries_identity, model_sha256, to_string(job.precision),
      to_string(job.resize), job.first_frame, job.end_frame, outputs);
  return io::sha256_hex(text);
}

Expected<std::vector<std::string>> parse_worker_devices(const std::string& text,
                                                        const std::vector<std::string>& all_devices) {
  std::vector<std::string> devices;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) continue;
    int count = 1;
    if (const size_t star = item.find('*'); star != std::string::npos) {
      const std::string times = item.substr(star + 1);
      item = item.substr(0, star);
      if (times.empty() || times.size() > 3 || times.find_first_not_of("0123456789") != std::string::npos ||
          std::stoi(times) < 1) {
        return invalid_argument(fmt::format("--devices: '{}*{}': the count after '*' must be 1 to 999", item, times));
      }
      count = std::stoi(times);
    }
    const bool known = item == "all" || DeviceId::parse(item).has_value();
    if (!known) {
      return invalid_argument(
          fmt::format("--devices: unknown device '{}' (cpu, cuda:N, auto, all; DEVICE*N for N workers)", item));
    }
    for (int i = 0; i < count; ++i) {
      if (item == "all") {
        devices.insert(devices.end(), all_devices.begin(), all_devices.end());
      } else {
        devices.push_back(item);
      }
    }
  }
  if (devices.empty()) return invalid_argument("--devices names no device");
  return devices;
}

Expected<BatchRun> run_batch(const BatchJobList& jobs, TrackerFactory& factory, const BatchOptions& options,
                             const BatchDeviceHooks& hooks, BatchObserver& observer) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  BatchRunner runner(jobs, factory, options, hooks, observer);
  return runner.run();
}

std::vector<BatchWorkerSpec> plan_batch_workers(const std::vector<DeviceInfo>& devices,
                                                const BatchWorkerRequest& request) {
  std::map<std::string, int> workers_on;
  for (const DeviceInfo& device : devices) ++workers_on[device.id];
  const int cpu_workers = workers_on.count("cpu") ? workers_on["cpu"] : 0;
  const int gpu_workers = static_cast<int>(devices.size()) - cpu_workers;
  const int threads_per_cpu_worker =
      request.threads > 0 ? request.threads
                          : std::max(1, (request.available_cpus - gpu_workers) / std::max(1, cpu_workers));
  std::vector<BatchWorkerSpec> workers;
  for (const DeviceInfo& device : devices) {
    BatchWorkerSpec spec;
    spec.device = device.id;
    spec.cpu_threads = device.is_cuda() ? 0 : threads_per_cpu_worker;
    if (!device.is_cuda() && gpu_workers > 0) spec.query_chunk = kCpuQueryChunkBesideGpu;
    spec.estimated_tflops = estimated_fp32_tflops(device, spec.cpu_threads);
    spec.memory_budget_mb = request.memory_budget_mb > 0
                                ? request.memory_budget_mb
                                : (request.default_budget_bytes ? request.default_budget_bytes(device) : 0) /
                                      workers_on[device.id] / (1 << 20);
    workers.push_back(spec);
  }
  return workers;
}

}  // namespace trackscope::core
