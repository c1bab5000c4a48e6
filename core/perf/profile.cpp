#include "core/perf/profile.h"

#include "core/io/atomic_file.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <cstdio>
#include <limits>
#include <numeric>
#include <sstream>
#include <string_view>
#include <type_traits>

namespace trackscope::core {

using nlohmann::json;

SampleStatistics compute_statistics(std::span<const double> values_ms) {
  SampleStatistics s;
  s.count = static_cast<int>(values_ms.size());
  if (values_ms.empty()) return s;
  std::vector<double> sorted(values_ms.begin(), values_ms.end());
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  s.min_ms = sorted.front();
  s.max_ms = sorted.back();
  s.mean_ms = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(n);
  s.median_ms = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
  const double rank = 0.9 * static_cast<double>(n - 1);
  const size_t low = static_cast<size_t>(std::floor(rank));
  const size_t high = std::min(low + 1, n - 1);
  s.p90_ms = sorted[low] + (rank - static_cast<double>(low)) * (sorted[high] - sorted[low]);
  return s;
}

const char* to_string(ProfileOrigin origin) {
  switch (origin) {
    case ProfileOrigin::measured: return "measured";
    case ProfileOrigin::predicted: return "predicted";
    case ProfileOrigin::transcribed: return "transcribed";
  }
  return "?";
}

const StageStats* ProfileCase::find_stage(std::string_view wanted) const {
  for (const StageStats& stage : stages) {
    if (stage.name == wanted) return &stage;
  }
  return nullptr;
}

double ProfileCase::stage_sum_ms() const {
  double sum = 0.0;
  for (const StageStats& stage : stages) sum += stage.stats.median_ms;
  return sum;
}

// ---- builder ---------------------------------------------------------------------------------------------

ProfileCaseBuilder::ProfileCaseBuilder(RunConfig config, std::string name)
    : config_(std::move(config)), name_(name.empty() ? default_case_name(config_) : std::move(name)) {}

void ProfileCaseBuilder::add_warmup(std::span<const StageSample> samples, double wall_ms) {
  warmups_.emplace_back(samples.begin(), samples.end());
  warmup_wall_ms_.push_back(wall_ms);
}

void ProfileCaseBuilder::add_repeat(std::span<const StageSample> samples, double wall_ms) {
  repeats_.emplace_back(samples.begin(), samples.end());
  wall_ms_.push_back(wall_ms);
}

ProfileCase ProfileCaseBuilder::build(int64_t peak_device_memory_bytes,
                                      std::optional<TelemetrySummary> telemetry) const {
  ProfileCase result;
  result.name = name_;
  result.config = config_;
  result.config.repeats = static_cast<int>(repeats_.size());
  result.config.warmup = static_cast<int>(warmups_.size());
  result.end_to_end = compute_statistics(wall_ms_);
  result.peak_device_memory_bytes = peak_device_memory_bytes;
  result.telemetry = std::move(telemetry);
  if (result.end_to_end.median_ms > 0.0) {
    result.points_per_second = config_.points / (result.end_to_end.median_ms / 1000.0);
  }
  // The repeat whose wall time is the median one supplies the per-chunk samples.
  size_t median_repeat = 0;
  for (size_t i = 0; i < wall_ms_.size(); ++i) {
    if (std::abs(wall_ms_[i] - result.end_to_end.median_ms) <
        std::abs(wall_ms_[median_repeat] - result.end_to_end.median_ms)) {
      median_repeat = i;
    }
  }
  auto total_of = [](const std::vector<StageSample>& samples, Stage stage, int iteration) {
    double sum = 0.0;
    for (const StageSample& s : samples) {
      if (s.stage == stage && (iteration < 0 || s.iteration == iteration)) sum += s.elapsed_ms;
    }
    return sum;
  };
  for (Stage stage : kAllStages) {
    StageStats stats;
    stats.name = std::string(stage_name(stage));
    int executions = 0, max_iteration = 0;
    bool seen = false;
    if (!repeats_.empty()) {
      for (const StageSample& s : repeats_.front()) {
        if (s.stage != stage) continue;
        seen = true;
        ++executions;
        stats.clock = s.clock;
        stats.flops += s.flops;
        stats.bytes += s.bytes;
        max_iteration = std::max(max_iteration, s.iteration);
      }
    }
    if (!seen) continue;
    stats.executions_per_run = executions;
    for (const auto& repeat : repeats_) stats.repeat_ms.push_back(total_of(repeat, stage, -1));
    for (const auto& warmup : warmups_) stats.warmup_ms.push_back(total_of(warmup, stage, -1));
    stats.stats = compute_statistics(stats.repeat_ms);
    for (int iteration = 1; is_refinement_stage(stage) && iteration <= max_iteration; ++iteration) {
      std::vector<double> per_repeat;
      for (const auto& repeat : repeats_) per_repeat.push_back(total_of(repeat, stage, iteration));
      stats.iterations.push_back({iteration, compute_statistics(per_repeat)});
    }
    for (const StageSample& s : repeats_[median_repeat]) {
      if (s.stage == stage) stats.chunk_samples.push_back({s.chunk, s.iteration, s.elapsed_ms});
    }
    result.stages.push_back(std::move(stats));
  }
  return result;
}

std::string default_case_name(const RunConfig& c) {
  return fmt::format("{}-n{}-t{}-{}{}-c{}", c.model_size, c.points, c.frames, to_string(c.precision),
                     c.precision == Precision::fp32 && (c.tf32_cudnn || c.tf32_matmul) ? "+tf32flags" : "", c.chunk);
}

std::string utc_timestamp_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// ---- JSON ------------------------------------------------------------------------------------------------

namespace {

// A required field missing or mistyped; caught at the top and turned into corrupt_data with the field's path.
struct FieldError {
  std::string message;
};

const json& require(const json& object, const char* key, const std::string& path) {
  if (!object.is_object() || !object.contains(key))
    throw FieldError{fmt::format("missing required field '{}{}'", path, key)};
  return object.at(key);
}

template <typename T>
T typed(const json& value, const std::string& where) {
  // nlohmann converts any number to any arithmetic type with a plain cast (1e300 -> int is undefined, 2^40 -> int
  // wraps): numbers are checked here before they are converted.
  if constexpr (std::is_same_v<T, bool>) {
    if (!value.is_boolean()) throw FieldError{fmt::format("field '{}' must be true or false", where)};
    return value.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    bool fits = false;
    if (value.is_number_unsigned()) {
      fits = value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    } else if (value.is_number_integer()) {
      const int64_t v = value.get<int64_t>();
      fits = v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
             static_cast<uint64_t>(std::max<int64_t>(v, 0)) <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    } else {
      throw FieldError{fmt::format("field '{}' must be an integer, not {}", where, value.type_name())};
    }
    if (!fits) throw FieldError{fmt::format("field '{}' = {} is out of range", where, value.dump())};
    return value.get<T>();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!value.is_number())
      throw FieldError{fmt::format("field '{}' must be a number, not {}", where, value.type_name())};
    const double v = value.get<double>();
    if (!std::isfinite(v)) throw FieldError{fmt::format("field '{}' must be a finite number", where)};
    return static_cast<T>(v);
  } else {
    try {
      return value.get<T>();
    } catch (const json::exception&) {
      throw FieldError{fmt::format("field '{}' has the wrong type ({})", where, value.type_name())};
    }
  }
}

// A list of numbers: each element checked like a single field.
template <>
std::vector<double> typed<std::vector<double>>(const json& value, const std::string& where) {
  if (!value.is_array()) throw FieldError{fmt::format("field '{}' must be an array of numbers", where)};
  std::vector<double> out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) out.push_back(typed<double>(value[i], fmt::format("{}[{}]", where, i)));
  return out;
}

template <>
std::vector<std::string> typed<std::vector<std::string>>(const json& value, const std::string& where) {
  if (!value.is_array()) throw FieldError{fmt::format("field '{}' must be an array of strings", where)};
  std::vector<std::string> out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i)
    out.push_back(typed<std::string>(value[i], fmt::format("{}[{}]", where, i)));
  return out;
}

// Sense checks: a time, a count, a size read from a profile. Negative or absurd values are damage or a hand edit;
// the diagnosis would otherwise reason about them ("every stage within 2x" of a negative time).
void check_time(double ms, const std::string& where) {
  if (!(ms >= 0.0)) throw FieldError{fmt::format("field '{}' = {} ms: a time cannot be negative", where, ms)};
  if (ms > 1e9) throw FieldError{fmt::format("field '{}' = {} ms is absurd (over 11 days)", where, ms)};
}

void check_non_negative(double value, const std::string& where) {
  if (!(value >= 0.0)) throw FieldError{fmt::format("field '{}' = {} must be >= 0", where, value)};
}

template <typename T>
T required(const json& object, const char* key, const std::string& path) {
  return typed<T>(require(object, key, path), path + key);
}

// Optional fields: absent or null keep the default.
template <typename T>
void optional_into(const json& object, const char* key, const std::string& path, T& out) {
  if (object.is_object() && object.contains(key) && !object.at(key).is_null())
    out = typed<T>(object.at(key), path + key);
}
template <typename T>
void optional_into(const json& object, const char* key, const std::string& path, std::optional<T>& out) {
  if (object.is_object() && object.contains(key) && !object.at(key).is_null())
    out = typed<T>(object.at(key), path + key);
}

// "MAJOR.MINOR" with two small non-negative integers (sscanf's %d has undefined behaviour on overflow).
bool parse_major_minor(std::string_view text, int& major, int& minor) {
  const size_t dot = text.find('.');
  if (dot == std::string_view::npos) return false;
  auto number = [](std::string_view part, int& out) {
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), out);
    return error == std::errc() && end == part.data() + part.size() && !part.empty() && out >= 0 && out < 10000;
  };
  return number(text.substr(0, dot), major) && number(text.substr(dot + 1), minor);
}

const json& optional_object(const json& object, const char* key) {
  static const json kEmpty = json::object();
  if (object.is_object() && object.contains(key) && object.at(key).is_object()) return object.at(key);
  return kEmpty;
}

template <typename T>
void put_optional(json& object, const char* key, const std::optional<T>& value) {
  if (value) object[key] = *value;
}

json stats_to_json(const SampleStatistics& s) {
  return {{"samples", s.count}, {"median_ms", s.median_ms}, {"p90_ms", s.p90_ms},
          {"min_ms", s.min_ms}, {"max_ms", s.max_ms},       {"mean_ms", s.mean_ms}};
}

SampleStatistics stats_from_json(const json& j, const std::string& path) {
  SampleStatistics s;
  s.median_ms = required<double>(j, "median_ms", path);
  s.p90_ms = s.min_ms = s.max_ms = s.mean_ms = s.median_ms;
  s.count = 1;
  optional_into(j, "samples", path, s.count);
  optional_into(j, "p90_ms", path, s.p90_ms);
  optional_into(j, "min_ms", path, s.min_ms);
  optional_into(j, "max_ms", path, s.max_ms);
  optional_into(j, "mean_ms", path, s.mean_ms);
  check_non_negative(s.count, path + "samples");
  check_time(s.median_ms, path + "median_ms");
  check_time(s.p90_ms, path + "p90_ms");
  check_time(s.min_ms, path + "min_ms");
  check_time(s.max_ms, path + "max_ms");
  check_time(s.mean_ms, path + "mean_ms");
  // Rounded figures (transcribed tables) may differ in the last digit: a relative slack of 1e-3.
  const double slack = 1e-3 * s.max_ms + 1e-9;
  for (const auto& [name, value] :
       {std::pair{"median_ms", s.median_ms}, {"p90_ms", s.p90_ms}, {"mean_ms", s.mean_ms}}) {
    if (value < s.min_ms - slack || value > s.max_ms + slack) {
      throw FieldError{fmt::format("field '{}{}' = {} lies outside [min_ms, max_ms] = [{}, {}]", path, name, value,
                                   s.min_ms, s.max_ms)};
    }
  }
  return s;
}

json peaks_to_json(const MeasuredPeaks& p) {
  json j = json::object();
  put_optional(j, "fp32_tflops", p.fp32_tflops);
  put_optional(j, "tf32_tflops", p.tf32_tflops);
  put_optional(j, "bf16_tflops", p.bf16_tflops);
  put_optional(j, "fp16_tflops", p.fp16_tflops);
  put_optional(j, "bandwidth_gbps", p.bandwidth_gbps);
  return j;
}

json telemetry_to_json(const TelemetrySummary& t) {
  json j = {{"samples", t.samples}, {"throttle_reasons_seen", t.throttle_reasons_seen_names}};
  put_optional(j, "sm_clock_min_mhz", t.sm_clock_min_mhz);
  put_optional(j, "sm_clock_median_mhz", t.sm_clock_median_mhz);
  put_optional(j, "sm_clock_max_mhz", t.sm_clock_max_mhz);
  put_optional(j, "memory_clock_min_mhz", t.memory_clock_min_mhz);
  put_optional(j, "memory_clock_median_mhz", t.memory_clock_median_mhz);
  put_optional(j, "power_median_w", t.power_median_w);
  put_optional(j, "power_max_w", t.power_max_w);
  put_optional(j, "power_limit_w", t.power_limit_w);
  put_optional(j, "temperature_median_c", t.temperature_median_c);
  put_optional(j, "temperature_max_c", t.temperature_max_c);
  put_optional(j, "gpu_utilisation_median_percent", t.gpu_utilisation_median_percent);
  put_optional(j, "memory_used_max_bytes", t.memory_used_max_bytes);
  put_optional(j, "cpu_utilisation_median_percent", t.cpu_utilisation_median_percent);
  put_optional(j, "cpu_threads", t.cpu_threads);
  put_optional(j, "pcie_generation", t.pcie_generation);
  put_optional(j, "pcie_width", t.pcie_width);
  return j;
}

TelemetrySummary telemetry_from_json(const json& j, const std::string& path) {
  TelemetrySummary t;
  optional_into(j, "samples", path, t.samples);
  optional_into(j, "sm_clock_min_mhz", path, t.sm_clock_min_mhz);
  optional_into(j, "sm_clock_median_mhz", path, t.sm_clock_median_mhz);
  optional_into(j, "sm_clock_max_mhz", path, t.sm_clock_max_mhz);
  optional_into(j, "memory_clock_min_mhz", path, t.memory_clock_min_mhz);
  optional_into(j, "memory_clock_median_mhz", path, t.memory_clock_median_mhz);
  optional_into(j, "power_median_w", path, t.power_median_w);
  optional_into(j, "power_max_w", path, t.power_max_w);
  optional_into(j, "power_limit_w", path, t.power_limit_w);
  optional_into(j, "temperature_median_c", path, t.temperature_median_c);
  optional_into(j, "temperature_max_c", path, t.temperature_max_c);
  optional_into(j, "gpu_utilisation_median_percent", path, t.gpu_utilisation_median_percent);
  optional_into(j, "memory_used_max_bytes", path, t.memory_used_max_bytes);
  optional_into(j, "cpu_utilisation_median_percent", path, t.cpu_utilisation_median_percent);
  optional_into(j, "cpu_threads", path, t.cpu_threads);
  optional_into(j, "pcie_generation", path, t.pcie_generation);
  optional_into(j, "pcie_width", path, t.pcie_width);
  optional_into(j, "throttle_reasons_seen", path, t.throttle_reasons_seen_names);
  t.throttle_reasons_seen = encode_throttle_reasons(t.throttle_reasons_seen_names);
  t.throttle_reasons_seen_names = decode_throttle_reasons(t.throttle_reasons_seen);
  return t;
}

json stage_to_json(const StageStats& s) {
  json j = {{"name", s.name},
            {"clock", s.clock == StageClock::device_events ? "device_events" : "host_steady"},
            {"stats", stats_to_json(s.stats)},
            {"flops", s.flops},
            {"bytes", s.bytes},
            {"executions_per_run", s.executions_per_run}};
  if (!s.repeat_ms.empty()) j["repeat_ms"] = s.repeat_ms;
  if (!s.warmup_ms.empty()) j["warmup_ms"] = s.warmup_ms;
  put_optional(j, "kernel_launches_per_run", s.kernel_launches_per_run);
  for (const IterationStats& it : s.iterations) {
    json entry = stats_to_json(it.stats);
    entry["iteration"] = it.iteration;
    j["iterations"].push_back(entry);
  }
  for (const ChunkSample& c : s.chunk_samples)
    j["chunk_samples"].push_back({{"chunk", c.chunk}, {"iteration", c.iteration}, {"ms", c.ms}});
  return j;
}

StageStats stage_from_json(const json& j, const std::string& path) {
  StageStats s;
  s.name = required<std::string>(j, "name", path);
  s.stats = stats_from_json(require(j, "stats", path), path + "stats.");
  std::string clock = "device_events";
  optional_into(j, "clock", path, clock);
  s.clock = clock == "host_steady" ? StageClock::host_steady : StageClock::device_events;
  optional_into(j, "flops", path, s.flops);
  optional_into(j, "bytes", path, s.bytes);
  optional_into(j, "executions_per_run", path, s.executions_per_run);
  optional_into(j, "kernel_launches_per_run", path, s.kernel_launches_per_run);
  optional_into(j, "repeat_ms", path, s.repeat_ms);
  optional_into(j, "warmup_ms", path, s.warmup_ms);
  check_non_negative(s.flops, path + "flops");
  check_non_negative(s.bytes, path + "bytes");
  check_non_negative(s.executions_per_run, path + "executions_per_run");
  if (s.kernel_launches_per_run)
    check_non_negative(static_cast<double>(*s.kernel_launches_per_run), path + "kernel_launches_per_run");
  for (size_t i = 0; i < s.repeat_ms.size(); ++i) check_time(s.repeat_ms[i], fmt::format("{}repeat_ms[{}]", path, i));
  for (size_t i = 0; i < s.warmup_ms.size(); ++i) check_time(s.warmup_ms[i], fmt::format("{}warmup_ms[{}]", path, i));
  if (j.contains("iterations") && j.at("iterations").is_array()) {
    for (size_t i = 0; i < j.at("iterations").size(); ++i) {
      const std::string where = fmt::format("{}iterations[{}].", path, i);
      const json& entry = j.at("iterations")[i];
      s.iterations.push_back({required<int>(entry, "iteration", where), stats_from_json(entry, where)});
    }
  }
  if (j.contains("chunk_samples") && j.at("chunk_samples").is_array()) {
    for (size_t i = 0; i < j.at("chunk_samples").size(); ++i) {
      const std::string where = fmt::format("{}chunk_samples[{}].", path, i);
      const json& entry = j.at("chunk_samples")[i];
      ChunkSample c;
      c.ms = required<double>(entry, "ms", where);
      check_time(c.ms, where + "ms");
      optional_into(entry, "chunk", where, c.chunk);
      optional_into(entry, "iteration", where, c.iteration);
      s.chunk_samples.push_back(c);
    }
  }
  return s;
}

json case_to_json(const ProfileCase& c) {
  const RunConfig& k = c.config;
  json j = {{"name", c.name},
            {"config",
             {{"engine", k.engine},
              {"model_size", k.model_size},
              {"points", k.points},
              {"frames", k.frames},
              {"resolution", k.resolution},
              {"precision", to_string(k.precision)},
              {"chunk", k.chunk},
              {"tf32_matmul", k.tf32_matmul},
              {"tf32_cudnn", k.tf32_cudnn},
              {"repeats", k.repeats},
              {"warmup", k.warmup},
              {"video", k.video}}},
            {"end_to_end", stats_to_json(c.end_to_end)},
            {"peak_device_memory_bytes", c.peak_device_memory_bytes},
            {"points_per_second", c.points_per_second},
            {"stages", json::array()}};
  put_optional(j, "host_syncs_per_run", c.host_syncs_per_run);
  for (const StageStats& s : c.stages) j["stages"].push_back(stage_to_json(s));
  if (c.telemetry) j["telemetry"] = telemetry_to_json(*c.telemetry);
  if (!c.notes.empty()) j["notes"] = c.notes;
  return j;
}

ProfileCase case_from_json(const json& j, const std::string& path) {
  ProfileCase c;
  optional_into(j, "name", path, c.name);
  const std::string cpath = path + "config.";
  const json& k = require(j, "config", path);
  c.config.model_size = required<std::string>(k, "model_size", cpath);
  c.config.points = required<int>(k, "points", cpath);
  c.config.frames = required<int>(k, "frames", cpath);
  const std::string precision = required<std::string>(k, "precision", cpath);
  Expected<Precision> parsed = parse_precision(precision);
  if (!parsed) throw FieldError{fmt::format("field '{}precision': {}", cpath, parsed.status().message())};
  c.config.precision = *parsed;
  optional_into(k, "engine", cpath, c.config.engine);
  optional_into(k, "resolution", cpath, c.config.resolution);
  optional_into(k, "chunk", cpath, c.config.chunk);
  optional_into(k, "tf32_matmul", cpath, c.config.tf32_matmul);
  optional_into(k, "tf32_cudnn", cpath, c.config.tf32_cudnn);
  optional_into(k, "repeats", cpath, c.config.repeats);
  optional_into(k, "warmup", cpath, c.config.warmup);
  optional_into(k, "video", cpath, c.config.video);
  if (c.name.empty()) c.name = default_case_name(c.config);
  if (j.contains("end_to_end") && j.at("end_to_end").is_object())
    c.end_to_end = stats_from_json(j.at("end_to_end"), path + "end_to_end.");
  optional_into(j, "peak_device_memory_bytes", path, c.peak_device_memory_bytes);
  optional_into(j, "points_per_second", path, c.points_per_second);
  optional_into(j, "host_syncs_per_run", path, c.host_syncs_per_run);
  optional_into(j, "notes", path, c.notes);
  check_non_negative(c.config.points, cpath + "points");
  check_non_negative(c.config.frames, cpath + "frames");
  check_non_negative(c.config.resolution, cpath + "resolution");
  check_non_negative(c.config.chunk, cpath + "chunk");
  check_non_negative(c.config.repeats, cpath + "repeats");
  if (c.config.warmup < -1) throw FieldError{fmt::format("field '{}warmup' must be >= 0 (or -1: not recorded)", cpath)};
  check_non_negative(static_cast<double>(c.peak_device_memory_bytes), path + "peak_device_memory_bytes");
  check_non_negative(c.points_per_second, path + "points_per_second");
  if (c.host_syncs_per_run) check_non_negative(static_cast<double>(*c.host_syncs_per_run), path + "host_syncs_per_run");
  const json& stages = require(j, "stages", path);
  if (!stages.is_array()) throw FieldError{fmt::format("field '{}stages' must be an array", path)};
  for (size_t i = 0; i < stages.size(); ++i)
    c.stages.push_back(stage_from_json(stages[i], fmt::format("{}stages[{}].", path, i)));
  if (j.contains("telemetry") && j.at("telemetry").is_object())
    c.telemetry = telemetry_from_json(j.at("telemetry"), path + "telemetry.");
  return c;
}

}  // namespace

std::string profile_to_json(const Profile& p) {
  const DeviceInfo& d = p.device;
  json device = {{"id", d.id},
                 {"name", d.name},
                 {"multiprocessors", d.multiprocessors},
                 {"memory_bytes", d.memory_bytes},
                 {"compute_capability", fmt::format("{}.{}", d.compute_capability_major, d.compute_capability_minor)},
                 {"sm_clock_max_mhz", d.sm_clock_max_mhz},
                 {"memory_clock_max_mhz", d.memory_clock_max_mhz},
                 {"l2_cache_bytes", d.l2_cache_bytes},
                 {"pci_bus_id", d.pci_bus_id},
                 {"spec_key", d.spec_key}};
  if (!d.measured_peaks.empty()) device["measured_peaks"] = peaks_to_json(d.measured_peaks);
  json j = {{"schema", p.schema},
            {"schema_version", fmt::format("{}.{}", p.schema_major, p.schema_minor)},
            {"tool", {{"name", p.tool.name}, {"version", p.tool.version}, {"command", p.tool.command}}},
            {"created_utc", p.created_utc},
            {"origin", {{"kind", to_string(p.origin)}, {"note", p.origin_note}}},
            {"host",
             {{"cpu_model", p.host.cpu_model},
              {"threads", p.host.threads},
              {"hostname", p.host.hostname},
              {"os", p.host.os}}},
            {"device", device},
            {"runtime",
             {{"libtorch", p.runtime.libtorch},
              {"cuda_runtime", p.runtime.cuda_runtime},
              {"cudnn", p.runtime.cudnn},
              {"driver", p.runtime.driver},
              {"torch_cuda", p.runtime.torch_cuda},
              {"trackscope_kernels", p.runtime.trackscope_kernels}}},
            {"cases", json::array()}};
  for (const ProfileCase& c : p.cases) j["cases"].push_back(case_to_json(c));
  return j.dump(2) + "\n";
}

Expected<Profile> profile_from_json(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return corrupt_data("the profile is not valid JSON (truncated or damaged file?)");
  if (!j.is_object()) return corrupt_data("the profile's top level must be a JSON object");
  Profile p;
  try {
    p.schema = required<std::string>(j, "schema", "");
    if (p.schema != kProfileSchemaName) {
      return unsupported(
          fmt::format("not a Trackscope profile: schema '{}' (expected '{}')", p.schema, kProfileSchemaName));
    }
    const std::string version = required<std::string>(j, "schema_version", "");
    int major = 0, minor = 0;
    if (!parse_major_minor(version, major, minor)) {
      return corrupt_data(fmt::format("schema_version '{}' is not MAJOR.MINOR", version.substr(0, 40)));
    }
    if (major != kProfileSchemaMajor) {
      return unsupported(
          fmt::format("profile schema version {} is not supported by this build (it reads {}.x); "
                      "open it with a Trackscope release that writes {}.x",
                      version, kProfileSchemaMajor, major));
    }
    p.schema_major = major;
    p.schema_minor = minor;
    const json& tool = optional_object(j, "tool");
    optional_into(tool, "name", "tool.", p.tool.name);
    optional_into(tool, "version", "tool.", p.tool.version);
    optional_into(tool, "command", "tool.", p.tool.command);
    optional_into(j, "created_utc", "", p.created_utc);
    const json& origin = optional_object(j, "origin");
    std::string kind = "measured";
    optional_into(origin, "kind", "origin.", kind);
    p.origin = kind == "predicted"     ? ProfileOrigin::predicted
               : kind == "transcribed" ? ProfileOrigin::transcribed
                                       : ProfileOrigin::measured;
    optional_into(origin, "note", "origin.", p.origin_note);
    const json& host = optional_object(j, "host");
    optional_into(host, "cpu_model", "host.", p.host.cpu_model);
    optional_into(host, "threads", "host.", p.host.threads);
    optional_into(host, "hostname", "host.", p.host.hostname);
    optional_into(host, "os", "host.", p.host.os);
    const json& device = require(j, "device", "");
    DeviceInfo& d = p.device;
    d.name = required<std::string>(device, "name", "device.");
    optional_into(device, "id", "device.", d.id);
    optional_into(device, "multiprocessors", "device.", d.multiprocessors);
    optional_into(device, "memory_bytes", "device.", d.memory_bytes);
    std::string capability;
    optional_into(device, "compute_capability", "device.", capability);
    if (!capability.empty() && !parse_major_minor(capability, d.compute_capability_major, d.compute_capability_minor)) {
      throw FieldError{fmt::format("field 'device.compute_capability' is '{}', expected MAJOR.MINOR", capability)};
    }
    optional_into(device, "sm_clock_max_mhz", "device.", d.sm_clock_max_mhz);
    optional_into(device, "memory_clock_max_mhz", "device.", d.memory_clock_max_mhz);
    optional_into(device, "l2_cache_bytes", "device.", d.l2_cache_bytes);
    optional_into(device, "pci_bus_id", "device.", d.pci_bus_id);
    optional_into(device, "spec_key", "device.", d.spec_key);
    const json& peaks = optional_object(device, "measured_peaks");
    optional_into(peaks, "fp32_tflops", "device.measured_peaks.", d.measured_peaks.fp32_tflops);
    optional_into(peaks, "tf32_tflops", "device.measured_peaks.", d.measured_peaks.tf32_tflops);
    optional_into(peaks, "bf16_tflops", "device.measured_peaks.", d.measured_peaks.bf16_tflops);
    optional_into(peaks, "fp16_tflops", "device.measured_peaks.", d.measured_peaks.fp16_tflops);
    optional_into(peaks, "bandwidth_gbps", "device.measured_peaks.", d.measured_peaks.bandwidth_gbps);
    const json& runtime = optional_object(j, "runtime");
    optional_into(runtime, "libtorch", "runtime.", p.runtime.libtorch);
    optional_into(runtime, "cuda_runtime", "runtime.", p.runtime.cuda_runtime);
    optional_into(runtime, "cudnn", "runtime.", p.runtime.cudnn);
    optional_into(runtime, "driver", "runtime.", p.runtime.driver);
    optional_into(runtime, "torch_cuda", "runtime.", p.runtime.torch_cuda);
    optional_into(runtime, "trackscope_kernels", "runtime.", p.runtime.trackscope_kernels);
    const json& cases = require(j, "cases", "");
    if (!cases.is_array()) return corrupt_data("field 'cases' must be an array");
    for (size_t i = 0; i < cases.size(); ++i) p.cases.push_back(case_from_json(cases[i], fmt::format("cases[{}].", i)));
  } catch (const FieldError& e) {
    return corrupt_data("invalid profile: " + e.message);
  }
  return p;
}

Status write_profile(const Profile& profile, const std::filesystem::path& path) {
  return io::write_file_atomically(path, profile_to_json(profile));
}

Expected<Profile> read_profile(const std::filesystem::path& path) {
  // A profile of a thousand cases is a few megabytes; a file far larger is not a profile.
  constexpr size_t kMaxProfileBytes = size_t{256} << 20;
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return not_found(fmt::format("cannot open the profile {}", path.string()));
  }
  Expected<std::string> text = io::read_file(path, kMaxProfileBytes);
  if (!text) return text.status();
  Expected<Profile> profile = profile_from_json(*text);
  if (!profile) return profile.status().with_context(path.string());
  return profile;
}

}  // namespace trackscope::core
