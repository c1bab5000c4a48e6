#pragma once
// Batch tracking: every clip of a job list (core/batch/batch_jobs.h) on a set of workers, one per device
// (a device may have several: "cpu*3"), each keeping its loaded trackers.
//
//   BatchOptions options;
//   options.out_dir = "out";
//   options.workers = {{.device = "cuda:0"}, {.device = "cpu", .cpu_threads = 8}};
//   Expected<BatchRun> run = run_batch(*jobs, factory, options, hooks, observer);
//   Expected<BatchSummary> summary = collect_batch(options.out_dir);       // batch_summary.h
//
// Scheduling. The clips are sorted by tracker (model, precision, resize) and dealt to the workers' queues in
// contiguous runs, so that a worker mostly needs one model. A worker takes the front of its own queue; with its
// queue empty it steals from the back of the longest other queue (work stealing), so a fast device does more
// clips. A worker whose seconds per clip exceed the time the other workers need, at their speeds, for every clip
// still queued, stops taking clips (a CPU next to a GPU does not hold the batch's end with one slow clip). Speeds
// are measured (a clip's tracking time); before a worker has finished a clip, its speed is estimated from the
// workers' `estimated_tflops` (scaled by a measured worker's seconds when there is one), and it steps aside only
// when the estimate says so by a wide margin (the estimate is a guess): so a CPU beside a fast GPU
// does not take its first clip when the GPU would finish the whole batch sooner. With nothing left to take, an idle
// worker runs a clip that another worker is still on when it expects to finish it in less than half of that clip's
// estimated remaining time (a backup attempt): the first attempt to finish writes the outputs, the other is cancelled
// at its next chunk. An attempt that lost counts for its worker's speed as its elapsed time over its progress, so a
// slow worker learns to step aside.
//
// Memory. Each worker's trackers plan their memory within the worker's budget (core/perf/memory_model.h), and a
// worker keeps at most `max_cached_trackers` trackers loaded (least recently used first out).
//
// Resuming. A clip's checksum is the SHA-256 of its inputs and options: the video's fingerprint
// (core/io/video_fingerprint.h), the queries (the CSV's SHA-256, or the grid), the model's weights (SHA-256,
// from hooks.model_sha256), precision, resize, frames and output formats. A clip whose result.json says "ok"
// with the same checksum, and whose outputs are all there with their recorded SHA-256, is skipped; any other is
// tracked again (its old record is removed first, its outputs are replaced atomically).
//
// Errors. A clip's failure (an unreadable or corrupt video, bad queries, a model that does not load, out of
// memory) is recorded in its result.json with the reason and never stops the other clips.
//
// Threads: run_batch blocks; it starts one thread per worker. Observer callbacks come from those threads, one at
// a time. The factory's create() is called from the worker threads, one call at a time.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/batch/batch_jobs.h"
#include "core/batch/batch_summary.h"
#include "core/status.h"
#include "core/tracking/point_tracker.h"

namespace trackscope::core {

struct BatchWorkerSpec {
  std::string device = "cpu";     // "cpu", "cuda:N"
  int64_t memory_budget_mb = 0;   // the tracker's working-memory budget (0: the tracker's default for the device)
  int cpu_threads = 0;            // LibTorch threads of this worker (0: leave as is)
  int query_chunk = 0;            // queries per chunk (0: from the memory budget); smaller chunks let a backup
                                  // attempt's loser stop sooner (the tracker checks its stop token per chunk)
  double estimated_tflops = 0.0;  // a guess of the device's speed before anything is measured on it (0: none);
                                  // core/perf/gpu_specs.h estimated_fp32_tflops
};

/// What the batch command asks of its workers besides their devices.
struct BatchWorkerRequest {
  int threads = 0;               // LibTorch threads per CPU worker (0: the free cores shared among the CPU workers)
  int64_t memory_budget_mb = 0;  // per worker (0: the device's default shared among the workers on it)
  int available_cpus = 1;        // this process's CPUs (core/limits.h available_cpu_threads)
  /// The device's default working-memory budget (gpu::default_memory_budget_bytes).
  std::function<int64_t(const DeviceInfo&)> default_budget_bytes = {};
};

/// Queries per chunk of a CPU worker beside a GPU worker: small, so that a CPU attempt that lost a clip to a
/// GPU backup notices soon (the tracker checks its stop token per chunk).
inline constexpr int kCpuQueryChunkBesideGpu = 32;

/// One worker per entry of `devices` (a device may appear several times), in order: GPU workers get no CPU
/// threads; CPU workers share the cores not needed to feed the GPUs (one each, for decoding) unless
/// request.threads is set, and beside a GPU take kCpuQueryChunkBesideGpu queries per chunk; the memory budget is
/// request.memory_budget_mb, or the device's default divided among the workers on that device.
std::vector<BatchWorkerSpec> plan_batch_workers(const std::vector<DeviceInfo>& devices,
                                                const BatchWorkerRequest& request);

struct BatchOptions {
  std::filesystem::path out_dir;
  std::vector<BatchWorkerSpec> workers;
  int max_cached_trackers = 2;  // per worker
  bool resume = true;           // skip clips that are finished with the same checksum
  bool backup_attempts = true;  // idle workers may run a slow clip too (the first to finish wins)
  int shard_index = 0;          // run only the clips i with i % shard_count == shard_index (Slurm array tasks)
  int shard_count = 1;

  Status check() const;
};

/// What only the device layer knows; app/ wires gpu/'s functions in. Every hook may be empty.
struct BatchDeviceHooks {
  /// Called first on each worker's thread (e.g. to set the LibTorch thread count of that thread).
  std::function<void(const BatchWorkerSpec& worker)> start_worker;
  /// The SHA-256 of the weights a model name resolves to; not_found when it does not resolve. Called once per
  /// model per run.
  std::function<Expected<std::string>(const std::string& model)> model_sha256;
  /// Peak device memory of "cuda:N" since the last reset (the CPU's is the process's peak RSS, measured here).
  std::function<void(const std::string& device)> reset_peak_memory;
  std::function<int64_t(const std::string& device)> peak_memory_bytes;
};

struct BatchProgress {
  int64_t clips = 0;  // in this run (this shard)
  int64_t done = 0;   // finished: ok, failed or skipped
  int64_t failed = 0;
  int64_t skipped = 0;  // finished before (resumed)
  int64_t running = 0;
  double fraction = 0.0;  // clips done plus the running clips' fractions, over clips
  double elapsed_seconds = 0.0;
  double eta_seconds = -1.0;  // -1 while unknown
};

class BatchObserver {
 public:
  virtual ~BatchObserver() = default;
  virtual void on_progress(const BatchProgress& progress) {}
  /// A clip is finished (`skipped`: it was finished before and its outputs are kept).
  virtual void on_clip_finished(const ClipRecord& record, bool skipped, const BatchProgress& progress) {}
};

struct BatchRun {
  std::vector<ClipRecord> clips;  // this run's clips, in job order
  BatchProgress progress;         // at the end
};

/// Runs every clip of `jobs` (of this shard). Writes DIR/batch.json, each clip's outputs and result.json.
/// invalid_argument for bad options; a clip's failure is in its record, not here.
Expected<BatchRun> run_batch(const BatchJobList& jobs, TrackerFactory& factory, const BatchOptions& options,
                             const BatchDeviceHooks& hooks, BatchObserver& observer);

/// The checksum of a clip (see above) from its parts; `queries_identity` is the CSV's SHA-256 or the grid text.
std::string clip_checksum(const BatchJob& job, const std::string& video_fingerprint_sha256, int64_t video_bytes,
                          const std::string& queries_identity, const std::string& model_sha256);

/// Parses "cuda:0,cuda:1,cpu", "cpu*3" (three workers on the CPU) or a mix; `all_devices` replaces "all".
/// invalid_argument for an empty list, a bad count or an unknown device form.
Expected<std::vector<std::string>> parse_worker_devices(const std::string& text,
                                                        const std::vector<std::string>& all_devices);

}  // namespace trackscope::core
