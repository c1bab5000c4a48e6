#pragma once
// The performance profile of tracker runs and its versioned JSON form ("trackscope.profile", documented in
// docs/bench-json-schema.md). One Profile = one machine and device (host, device, runtime versions) and a list of
// cases, each one configuration of a sweep (model size, N, T, precision, chunk) with per-stage statistics over
// repeats, end-to-end times, peak memory, throughput and a telemetry summary. `trackscope-cli bench` writes it, the
// GUI's performance view and `trackscope-cli compare` read it, and a live run in the GUI is one too.
//
//   ProfileCaseBuilder builder(config);                   // the bench: one builder per case
//   for (int r = 0; r < repeats; ++r) builder.add_repeat(stage_samples_of_repeat_r, wall_ms_of_repeat_r);
//   Profile profile = ...;  profile.cases.push_back(builder.build());
//   TRACKSCOPE_RETURN_IF_ERROR(write_profile(profile, "bench.json"));
//   Expected<Profile> back = read_profile("bench.json");  // rejects an unknown major version, ignores unknown fields
//
// Units are in the names: _ms, _bytes, _mhz, _w, _c, _percent. Stage times are per forward pass: the sum over the
// chunks and refinement iterations of one repeat, then statistics over the repeats.
// Threads: plain values; the functions are pure (or do file I/O on the calling thread).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/perf/gpu_specs.h"
#include "core/perf/stage_timing.h"
#include "core/perf/telemetry.h"
#include "core/status.h"
#include "core/tracking/point_tracker.h"

namespace trackscope::core {

inline constexpr const char* kProfileSchemaName = "trackscope.profile";
inline constexpr int kProfileSchemaMajor = 1;  // incompatible changes
inline constexpr int kProfileSchemaMinor = 1;  // additions that old readers can ignore (1.1: runtime.torch_cuda)

/// median (of the sorted values; mean of the two middle ones for even counts), p90 (linear interpolation between
/// closest ranks, numpy's default), min, max, mean.
struct SampleStatistics {
  int count = 0;
  double median_ms = 0.0;
  double p90_ms = 0.0;
  double min_ms = 0.0;
  double max_ms = 0.0;
  double mean_ms = 0.0;
  bool operator==(const SampleStatistics&) const = default;
};
SampleStatistics compute_statistics(std::span<const double> values_ms);

/// How a profile came to be.
enum class ProfileOrigin {
  measured,     // a bench or a live run
  predicted,    // a what-if computed from another profile and the spec table
  transcribed,  // typed in from a document (e.g. docs/locotrack-spec.md §5.2)
};
const char* to_string(ProfileOrigin origin);

struct ToolInfo {
  std::string name = "trackscope";
  std::string version;
  std::string command;  // the command line of the bench, if any
  bool operator==(const ToolInfo&) const = default;
};

struct RunConfig {
  std::string engine = "trackscope";  // "trackscope", "official-pytorch-eager", ...
  std::string model_size = "small";   // "small" / "base"
  int points = 0;                     // N
  int frames = 0;                     // T
  int resolution = 256;
  Precision precision = Precision::fp32;
  int chunk = 0;             // queries per chunk (0 = all)
  bool tf32_matmul = false;  // torch.backends.cuda.matmul.allow_tf32 / at::globalContext().allowTF32CuBLAS
  bool tf32_cudnn = false;   // torch.backends.cudnn.allow_tf32 (PyTorch's default is true!)
  int repeats = 0;
  int warmup = 0;     // warm-up runs before the repeats (not in the statistics); -1 = not recorded
  std::string video;  // the input (path or description)
  bool operator==(const RunConfig&) const = default;
};

struct IterationStats {
  int iteration = 0;       // 1..refinement iterations
  SampleStatistics stats;  // per repeat: the sum over chunks of this iteration
  bool operator==(const IterationStats&) const = default;
};

struct ChunkSample {
  int chunk = 0;
  int iteration = 0;  // 0 for non-refinement stages
  double ms = 0.0;
  bool operator==(const ChunkSample&) const = default;
};

struct StageStats {
  std::string name;  // canonical stage name (stage_name); unknown names are kept as read
  StageClock clock = StageClock::device_events;
  SampleStatistics stats;         // over repeats, per forward pass
  std::vector<double> repeat_ms;  // the per-repeat totals behind stats (optional)
  std::vector<double> warmup_ms;  // the warm-up repeats' totals, not in stats (optional; cold-start diagnosis)
  int executions_per_run = 0;     // samples per forward pass (chunks x iterations); 0 = unknown
  std::optional<int64_t> kernel_launches_per_run;
  double flops = 0.0;                      // per forward pass
  double bytes = 0.0;                      // minimum device-memory traffic per forward pass
  std::vector<IterationStats> iterations;  // refinement stages
  std::vector<ChunkSample> chunk_samples;  // optional: one repeat's samples (the median one)
  std::optional<Stage> stage() const { return stage_from_name(name); }
  bool operator==(const StageStats&) const = default;
};

struct ProfileCase {
  std::string name;  // "small-n1024-t47-fp32-c256"
  RunConfig config;
  std::vector<StageStats> stages;  // canonical order where known
  SampleStatistics end_to_end;     // wall time of the whole forward (or track call), per repeat
  int64_t peak_device_memory_bytes = 0;
  double points_per_second = 0.0;  // points / median end-to-end seconds (each point tracked over T frames)
  std::optional<int64_t> host_syncs_per_run;
  std::optional<TelemetrySummary> telemetry;
  std::string notes;
  const StageStats* find_stage(std::string_view name) const;
  const StageStats* find_stage(Stage stage) const { return find_stage(stage_name(stage)); }
  /// Sum of the stages' median times.
  double stage_sum_ms() const;
  bool operator==(const ProfileCase&) const = default;
};

struct Profile {
  std::string schema = kProfileSchemaName;
  int schema_major = kProfileSchemaMajor;
  int schema_minor = kProfileSchemaMinor;
  ToolInfo tool;
  std::string created_utc;  // ISO 8601 "2025-01-31T12:00:00Z"
  ProfileOrigin origin = ProfileOrigin::measured;
  std::string origin_note;  // where a transcribed/predicted profile comes from
  HostInfo host;
  DeviceInfo device;
  RuntimeInfo runtime;
  std::vector<ProfileCase> cases;
  bool operator==(const Profile&) const = default;
};

/// Aggregates the StageSamples of repeated runs of one case into a ProfileCase: per stage and repeat the sum over
/// chunks and iterations, then statistics; per iteration likewise; flops and bytes from the samples of the first
/// repeat; the chunk samples of the repeat whose end-to-end time is the median.
class ProfileCaseBuilder {
 public:
  explicit ProfileCaseBuilder(RunConfig config, std::string name = {});
  /// Warm-up repeats are kept apart (cold-start diagnosis) and not counted in the statistics.
  void add_warmup(std::span<const StageSample> samples, double wall_ms);
  void add_repeat(std::span<const StageSample> samples, double wall_ms);
  ProfileCase build(int64_t peak_device_memory_bytes = 0, std::optional<TelemetrySummary> telemetry = {}) const;

 private:
  RunConfig config_;
  std::string name_;
  std::vector<std::vector<StageSample>> warmups_, repeats_;
  std::vector<double> warmup_wall_ms_, wall_ms_;
};

/// A default case name: "small-n1024-t47-fp32-c256".
std::string default_case_name(const RunConfig& config);
/// The current UTC time in ISO 8601.
std::string utc_timestamp_now();

/// JSON text (pretty-printed) of the schema in docs/bench-json-schema.md.
std::string profile_to_json(const Profile& profile);
/// Parses JSON text. corrupt_data for malformed JSON or missing/mistyped required fields (the message names the
/// field), unsupported for another schema or a major version this build does not know. Unknown fields are ignored.
Expected<Profile> profile_from_json(std::string_view text);

Status write_profile(const Profile& profile, const std::filesystem::path& path);
Expected<Profile> read_profile(const std::filesystem::path& path);

}  // namespace trackscope::core
