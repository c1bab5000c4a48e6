#include "core/batch/batch_summary.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/io/atomic_file.h"

namespace trackscope::core {
namespace {

using Json = nlohmann::json;

constexpr const char* kClipFormat = "trackscope.batch-clip";
constexpr const char* kPlanFormat = "trackscope.batch-plan";
constexpr const char* kSummaryFormat = "trackscope.batch";
constexpr int kVersion = 1;
constexpr size_t kMaxRecordBytes = size_t{16} << 20;

Json optional_number(const std::optional<double>& value) { return value ? Json(*value) : Json(nullptr); }

Json clip_json(const ClipRecord& r) {
  Json outputs = Json::array();
  for (const ClipOutputRecord& o : r.outputs) {
    outputs.push_back({{"format", o.format}, {"file", o.file}, {"sha256", o.sha256}, {"bytes", o.bytes}});
  }
  return {{"id", r.id},
          {"line", r.line},
          {"video", r.video},
          {"queries", r.queries},
          {"model", r.model},
          {"precision", r.precision},
          {"resize", r.resize},
          {"first", r.first_frame},
          {"end", r.end_frame},
          {"status", r.status},
          {"error", r.error.empty() ? Json(nullptr) : Json(r.error)},
          {"error_code", r.error_code.empty() ? Json(nullptr) : Json(r.error_code)},
          {"points", r.points},
          {"frames", r.frames},
          {"checksum", r.checksum.empty() ? Json(nullptr) : Json(r.checksum)},
          {"outputs", outputs}};
}

Json measurements_json(const ClipMeasurements& m) {
  return {{"device", m.device},
          {"device_name", m.device_name},
          {"worker", m.worker},
          {"host", m.host},
          {"load_seconds", m.load_seconds},
          {"track_seconds", m.track_seconds},
          {"clip_seconds", m.clip_seconds},
          {"points_per_second", m.points_per_second},
          {"peak_device_mib", optional_number(m.peak_device_mib)},
          {"peak_host_rss_mib", m.peak_host_rss_mib},
          {"attempts", m.attempts},
          {"finished_at", m.finished_at}};
}

std::string text_or_empty(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

template <typename T>
T number_or(const Json& object, const char* key, T fallback) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<T>() : fallback;
}

ClipRecord clip_from_json(const Json& c) {
  ClipRecord r;
  r.id = text_or_empty(c, "id");
  r.line = number_or<int>(c, "line", 0);
  r.video = text_or_empty(c, "video");
  r.queries = text_or_empty(c, "queries");
  r.model = text_or_empty(c, "model");
  r.precision = text_or_empty(c, "precision");
  r.resize = text_or_empty(c, "resize");
  r.first_frame = number_or<int64_t>(c, "first", 0);
  r.end_frame = number_or<int64_t>(c, "end", -1);
  r.status = text_or_empty(c, "status");
  r.error = text_or_empty(c, "error");
  r.error_code = text_or_empty(c, "error_code");
  r.points = number_or<int64_t>(c, "points", 0);
  r.frames = number_or<int64_t>(c, "frames", 0);
  r.checksum = text_or_empty(c, "checksum");
  if (const auto it = c.find("outputs"); it != c.end() && it->is_array()) {
    for (const Json& o : *it) {
      r.outputs.push_back({text_or_empty(o, "format"), text_or_empty(o, "file"), text_or_empty(o, "sha256"),
                           number_or<int64_t>(o, "bytes", 0)});
    }
  }
  return r;
}

ClipMeasurements measurements_from_json(const Json& m) {
  ClipMeasurements out;
  out.device = text_or_empty(m, "device");
  out.device_name = text_or_empty(m, "device_name");
  out.worker = number_or<int>(m, "worker", -1);
  out.host = text_or_empty(m, "host");
  out.load_seconds = number_or<double>(m, "load_seconds", 0.0);
  out.track_seconds = number_or<double>(m, "track_seconds", 0.0);
  out.clip_seconds = number_or<double>(m, "clip_seconds", 0.0);
  out.points_per_second = number_or<double>(m, "points_per_second", 0.0);
  if (const auto it = m.find("peak_device_mib"); it != m.end() && it->is_number())
    out.peak_device_mib = it->get<double>();
  out.peak_host_rss_mib = number_or<double>(m, "peak_host_rss_mib", 0.0);
  out.attempts = number_or<int>(m, "attempts", 1);
  out.finished_at = text_or_empty(m, "finished_at");
  return out;
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return quoted + "\"";
}

}  // namespace

ClipRecord record_for(const BatchJobEntry& entry) {
  ClipRecord r;
  r.id = entry.id;
  r.line = entry.line;
  if (entry.error.ok()) {
    const BatchJob& job = entry.job;
    r.video = job.video.string();
    r.queries = job.queries.to_string();
    r.model = job.model;
    r.precision = to_string(job.precision);
    r.resize = to_string(job.resize);
    r.first_frame = job.first_frame;
    r.end_frame = job.end_frame;
  } else {
    r.status = "failed";
    r.error = entry.error.message();
    r.error_code = to_string(entry.error.code());
  }
  return r;
}

std::filesystem::path clip_record_path(const std::filesystem::path& out_dir, const std::string& id) {
  return out_dir / id / "result.json";
}

Status write_clip_record(const std::filesystem::path& out_dir, const ClipRecord& record) {
  Json doc = {{"format", kClipFormat}, {"version", kVersion}, {"clip", clip_json(record)}};
  if (record.measurements) doc["measurements"] = measurements_json(*record.measurements);
  std::error_code error;
  std::filesystem::create_directories(out_dir / record.id, error);
  if (error) return io_error(fmt::format("cannot create {}: {}", (out_dir / record.id).string(), error.message()));
  return io::write_file_atomically(clip_record_path(out_dir, record.id), doc.dump(2) + "\n");
}

Expected<ClipRecord> read_clip_record(const std::filesystem::path& out_dir, const std::string& id) {
  const std::filesystem::path path = clip_record_path(out_dir, id);
  Expected<std::string> text = io::read_file(path, kMaxRecordBytes);
  if (!text) return text.status();
  const Json doc = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || text_or_empty(doc, "format") != kClipFormat || !doc.contains("clip") ||
      !doc["clip"].is_object()) {
    return corrupt_data(fmt::format("{} is not a batch clip record", path.string()));
  }
  ClipRecord record = clip_from_json(doc["clip"]);
  if (record.id != id) return corrupt_data(fmt::format("{} is the record of '{}'", path.string(), record.id));
  if (const auto it = doc.find("measurements"); it != doc.end() && it->is_object()) {
    record.measurements = measurements_from_json(*it);
  }
  return record;
}

Status write_batch_plan(const std::filesystem::path& out_dir, const BatchJobList& jobs) {
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) return io_error(fmt::format("cannot create {}: {}", out_dir.string(), error.message()));
  const Json doc = {
      {"format", kPlanFormat}, {"version", kVersion}, {"jobs_file", jobs.path.string()}, {"jobs_text", jobs.text}};
  return io::write_file_atomically(out_dir / "batch.json", doc.dump(2) + "\n");
}

Expected<BatchJobList> read_batch_plan(const std::filesystem::path& out_dir) {
  const std::filesystem::path path = out_dir / "batch.json";
  Expected<std::string> text = io::read_file(path, size_t{64} << 20);
  if (!text) {
    return text.status().with_context(fmt::format("{} is not a batch output folder (no batch.json)", out_dir.string()));
  }
  const Json doc = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || text_or_empty(doc, "format") != kPlanFormat) {
    return corrupt_data(fmt::format("{} is not a batch plan", path.string()));
  }
  BatchJobList jobs;
  jobs.path = text_or_empty(doc, "jobs_file");
  jobs.text = text_or_empty(doc, "jobs_text");
  jobs.entries = parse_batch_jobs(jobs.text, jobs.path.parent_path());
  return jobs;
}

Expected<BatchSummary> collect_batch(const std::filesystem::path& out_dir) {
  Expected<BatchJobList> plan = read_batch_plan(out_dir);
  if (!plan) return plan.status();
  BatchSummary summary;
  summary.jobs_file = plan->path;
  for (const BatchJobEntry& entry : plan->entries) {
    ClipRecord record = record_for(entry);
    if (entry.error.ok()) {
      Expected<ClipRecord> stored = read_clip_record(out_dir, entry.id);
      if (stored) {
        record = std::move(*stored);
      } else if (stored.status().code() == StatusCode::not_found) {
        record.status = "not_run";
      } else {
        record.status = "failed";
        record.error = stored.status().message();
        record.error_code = to_string(stored.status().code());
      }
    }
    if (record.status == "ok") ++summary.ok;
    if (record.status == "failed") ++summary.failed;
    if (record.status == "not_run") ++summary.not_run;
    summary.clips.push_back(std::move(record));
  }
  return summary;
}

std::string batch_summary_json(const BatchSummary& summary) {
  Json clips = Json::array();
  Json measurements = Json::array();
  for (const ClipRecord& r : summary.clips) {
    clips.push_back(clip_json(r));
    if (r.measurements) {
      Json m = measurements_json(*r.measurements);
      m["id"] = r.id;
      measurements.push_back(std::move(m));
    }
  }
  const Json doc = {
      {"format", kSummaryFormat},
      {"version", kVersion},
      {"jobs_file", summary.jobs_file.string()},
      {"counts",
       {{"clips", summary.clips.size()}, {"ok", summary.ok}, {"failed", summary.failed}, {"not_run", summary.not_run}}},
      {"clips", clips},
      {"measurements", measurements}};
  return doc.dump(2) + "\n";
}

std::string batch_summary_csv(const BatchSummary& summary) {
  std::string out =
      "id,line,status,device,worker,host,frames,points,track_seconds,points_per_second,load_seconds,clip_seconds,"
      "peak_device_mib,peak_host_rss_mib,attempts,outputs,checksum,error\n";
  for (const ClipRecord& r : summary.clips) {
    std::string outputs;
    for (const ClipOutputRecord& o : r.outputs) outputs += (outputs.empty() ? "" : " ") + o.file;
    const ClipMeasurements m = r.measurements.value_or(ClipMeasurements{});
    const bool measured = r.measurements.has_value();
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_cell(r.id), r.line, r.status,
                       csv_cell(m.device), measured ? std::to_string(m.worker) : "", csv_cell(m.host), r.frames,
                       r.points, measured ? fmt::format("{:.3f}", m.track_seconds) : "",
                       measured ? fmt::format("{:.4g}", m.points_per_second) : "",
                       measured ? fmt::format("{:.3f}", m.load_seconds) : "",
                       measured ? fmt::format("{:.3f}", m.clip_seconds) : "",
                       m.peak_device_mib ? fmt::format("{:.1f}", *m.peak_device_mib) : "",
                       measured ? fmt::format("{:.1f}", m.peak_host_rss_mib) : "",
                       measured ? std::to_string(m.attempts) : "", csv_cell(outputs), r.checksum, csv_cell(r.error));
  }
  return out;
}

Status write_batch_summary(const std::filesystem::path& out_dir, const BatchSummary& summary) {
  TRACKSCOPE_RETURN_IF_ERROR(io::write_file_atomically(out_dir / "summary.json", batch_summary_json(summary)));
  return io::write_file_atomically(out_dir / "summary.csv", batch_summary_csv(summary));
}

std::string format_batch_summary(const BatchSummary& summary) {
  std::string out = fmt::format("{:<24} {:<8} {:<8} {:>6} {:>6} {:>9} {:>9} {:>10} {:>9}\n", "clip", "status", "device",
                                "frames", "points", "track s", "points/s", "peak MiB", "attempts");
  for (const ClipRecord& r : summary.clips) {
    const ClipMeasurements m = r.measurements.value_or(ClipMeasurements{});
    const bool measured = r.measurements.has_value() && r.status == "ok";
    out += fmt::format("{:<24.24} {:<8} {:<8} {:>6} {:>6} {:>9} {:>9} {:>10} {:>9}\n", r.id, r.status,
                       measured ? m.device : "-", r.frames, r.points,
                       measured ? fmt::format("{:.2f}", m.track_seconds) : "-",
                       measured ? fmt::format("{:.3g}", m.points_per_second) : "-",
                       !measured           ? "-"
                       : m.peak_device_mib ? fmt::format("{:.0f} dev", *m.peak_device_mib)
                                           : fmt::format("{:.0f} rss", m.peak_host_rss_mib),
                       measured ? std::to_string(m.attempts) : "-");
  }
  out += fmt::format("{} clips: {} ok, {} failed, {} not run\n", summary.clips.size(), summary.ok, summary.failed,
                     summary.not_run);
  for (const ClipRecord& r : summary.clips) {
    if (r.status == "failed") out += fmt::format("  {} (line {}): {}\n", r.id, r.line, r.error);
  }
  return out;
}

}  // namespace trackscope::core
