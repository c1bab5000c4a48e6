#pragma once
// The job list of `trackscope-cli batch`: a JSON Lines file, one clip per line.
//
//   {"video": "clips/bees.mp4", "queries": "grid:16x16@frame0", "outputs": ["csv", "npz"]}
//   {"id": "camel-fp16", "video": "/data/camel.mp4", "queries": "camel_points.csv", "model": "small",
//    "precision": "fp16", "resize": "bilinear", "first": 0, "end": 120, "outputs": "csv,trackscope"}
//
// Keys: "video" and "queries" (a CSV file or a grid, core/tracking/query_spec.h) are required; "id" (the clip's
// output folder name, default: the video's file name without extension), "model" (default "default"),
// "precision" (fp32), "resize" (bilinear), "first" (0), "end" (-1 = to the end), "outputs" (["csv"]: a list or
// a comma-separated text of csv, json, npz, dlc, coco, trackscope). Relative paths are relative to the job file's
// folder. Empty lines and lines starting with '#' are skipped. Unknown keys are errors (a typo must not be
// ignored silently).
//
// A bad line does not spoil the others: it becomes an entry with an error (and the id "line-N" when it has no
// usable id), which the batch reports as a failed clip. Ids are unique: a repeated id is an error of the later
// line.
//
//   Expected<BatchJobList> jobs = read_batch_jobs("jobs.jsonl");
//   for (const BatchJobEntry& entry : jobs->entries) if (!entry.error.ok()) ...
//
// Threads: pure functions (read_batch_jobs reads the file).

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tracking/point_tracker.h"
#include "core/tracking/query_spec.h"

namespace trackscope::core {

struct BatchJob {
  std::string id;
  std::filesystem::path video;  // resolved against the job file's folder
  QuerySpec queries;            // a CSV path is resolved likewise
  std::string model = "default";
  Precision precision = Precision::fp32;
  InputResize resize = InputResize::bilinear;
  int64_t first_frame = 0;
  int64_t end_frame = -1;
  std::vector<std::string> outputs = {"csv"};  // format names (ClipOutput::from_format_name)
};

struct BatchJobEntry {
  int line = 0;  // 1-based line of the job file
  std::string id;
  BatchJob job;  // meaningful when error is ok
  Status error;  // why the line cannot be run (the message does not repeat the line number)
};

struct BatchJobList {
  std::filesystem::path path;  // the job file, absolute
  std::string text;            // its content, as read
  std::vector<BatchJobEntry> entries;
};

/// Parses `text` (the content of a job file in `base_dir`). Never fails as a whole: bad lines are entries with
/// an error.
std::vector<BatchJobEntry> parse_batch_jobs(std::string_view text, const std::filesystem::path& base_dir);

/// Reads and parses a job file. not_found / io_error when it cannot be read, invalid_argument when it holds no
/// job at all.
Expected<BatchJobList> read_batch_jobs(const std::filesystem::path& path);

/// A file or folder name made of [A-Za-z0-9._-] (other characters become '_'); "clip" for an empty name.
std::string sanitized_id(std::string_view name);

}  // namespace trackscope::core
