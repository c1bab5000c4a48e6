#pragma once
// What a batch leaves in its output folder, and the summary built from it.
//
//   DIR/batch.json           the plan: the job file's path and text (format "trackscope.batch-plan")
//   DIR/<id>/<id>.csv ...    a clip's outputs (core/tracking/track_clip.h)
//   DIR/<id>/result.json     the clip's record (format "trackscope.batch-clip"), written last: a clip without
//                            one, or with another checksum, is not finished and is tracked again
//   DIR/summary.json         every clip of the plan, in job order, with its record (format "trackscope.batch")
//   DIR/summary.csv          the same, one row per clip
//
// A record has a deterministic part (what was asked, the outcome, the checksum of inputs and options, the
// outputs with their SHA-256) and "measurements" (device, worker, host, times, points/s, peak memory, when).
// summary.json keeps the measurements under one key, "measurements", so that two runs of the same jobs (local,
// or Slurm shards gathered by collect_batch) have identical summaries once that key is removed.
//
//   Expected<BatchSummary> summary = collect_batch(out_dir);         // plan + every result.json
//   TRACKSCOPE_RETURN_IF_ERROR(write_batch_summary(out_dir, *summary));
//
// Every file is written atomically (core/io/atomic_file.h). Threads: pure functions plus file I/O; different
// clips' records may be written from different threads.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/batch/batch_jobs.h"
#include "core/status.h"

namespace trackscope::core {

struct ClipOutputRecord {
  std::string format;  // "csv", "npz", ... (ClipOutput::format_name)
  std::string file;    // relative to the output folder, '/'-separated: "bees/bees.csv"
  std::string sha256;
  int64_t bytes = 0;
  bool operator==(const ClipOutputRecord&) const = default;
};

struct ClipMeasurements {
  std::string device;       // "cpu", "cuda:0"
  std::string device_name;  // "NVIDIA H200", "CPU (16 threads)"
  int worker = -1;          // index in --devices
  std::string host;
  double load_seconds = 0.0;   // loading the model, when this clip needed it (0: the worker had it)
  double track_seconds = 0.0;  // the tracker's track() call (decoding included)
  double clip_seconds = 0.0;   // everything for the clip: open, checksum, load, track, write
  double points_per_second = 0.0;
  std::optional<double> peak_device_mib;  // CUDA allocator peak during the clip; none on the CPU
  double peak_host_rss_mib = 0.0;         // the process's peak resident memory so far
  int attempts = 1;                       // > 1 when idle workers ran the clip too (the first to finish won)
  std::string finished_at;                // UTC, ISO 8601
};

struct ClipRecord {
  std::string id;
  int line = 0;
  std::string video;
  std::string queries;
  std::string model;
  std::string precision;
  std::string resize;
  int64_t first_frame = 0;
  int64_t end_frame = -1;
  std::string status;  // "ok", "failed", "not_run"
  std::string error;   // empty when ok
  std::string error_code;
  int64_t points = 0;
  int64_t frames = 0;
  std::string checksum;  // SHA-256 of the inputs and options (batch_runner.h); empty when unknown
  std::vector<ClipOutputRecord> outputs;
  std::optional<ClipMeasurements> measurements;
};

/// A record of what `entry` asks (status and outcome left for the caller).
ClipRecord record_for(const BatchJobEntry& entry);

/// DIR/<id>/result.json.
std::filesystem::path clip_record_path(const std::filesystem::path& out_dir, const std::string& id);
Status write_clip_record(const std::filesystem::path& out_dir, const ClipRecord& record);
/// not_found when the clip has no record yet, corrupt_data when it cannot be read.
Expected<ClipRecord> read_clip_record(const std::filesystem::path& out_dir, const std::string& id);

/// DIR/batch.json: the plan of a batch, so that `--collect DIR` knows every clip and its order.
Status write_batch_plan(const std::filesystem::path& out_dir, const BatchJobList& jobs);
Expected<BatchJobList> read_batch_plan(const std::filesystem::path& out_dir);

struct BatchSummary {
  std::filesystem::path jobs_file;
  std::vector<ClipRecord> clips;  // job order
  int64_t ok = 0;
  int64_t failed = 0;
  int64_t not_run = 0;
};

/// Every clip of the plan with its record: "not_run" for a clip without one, "failed" with the reason for a
/// line that could not be parsed.
Expected<BatchSummary> collect_batch(const std::filesystem::path& out_dir);
/// summary.json (measurements under "measurements") and summary.csv, atomically.
Status write_batch_summary(const std::filesystem::path& out_dir, const BatchSummary& summary);
std::string batch_summary_json(const BatchSummary& summary);
std::string batch_summary_csv(const BatchSummary& summary);
/// A text table: one row per clip (id, status, device, frames, points, seconds, points/s, peak memory), then the
/// errors in full.
std::string format_batch_summary(const BatchSummary& summary);

}  // namespace trackscope::core
