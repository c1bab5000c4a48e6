#include "core/batch/batch_jobs.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <sstream>

#include "core/io/atomic_file.h"
#include "core/tracking/track_clip.h"

namespace trackscope::core {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxJobFileBytes = size_t{64} << 20;
const std::set<std::string> kKeys = {"id",     "video", "queries", "model",  "precision",
                                     "resize", "first", "end",     "outputs"};

std::filesystem::path resolved(const std::string& path, const std::filesystem::path& base_dir) {
  const std::filesystem::path p(path);
  return p.is_absolute() ? p : (base_dir / p).lexically_normal();
}

Expected<std::string> text_field(const Json& object, const char* key, std::string fallback, bool required) {
  const auto it = object.find(key);
  if (it == object.end()) {
    if (required) return invalid_argument(fmt::format("\"{}\" is missing", key));
    return fallback;
  }
  if (!it->is_string() || it->get<std::string>().empty()) {
    return invalid_argument(fmt::format("\"{}\" must be a non-empty text", key));
  }
  return it->get<std::string>();
}

Expected<int64_t> integer_field(const Json& object, const char* key, int64_t fallback, int64_t minimum) {
  const auto it = object.find(key);
  if (it == object.end()) return fallback;
  if (!it->is_number_integer() || it->get<int64_t>() < minimum) {
    return invalid_argument(fmt::format("\"{}\" must be an integer >= {}", key, minimum));
  }
  return it->get<int64_t>();
}

Expected<std::vector<std::string>> outputs_field(const Json& object) {
  const auto it = object.find("outputs");
  if (it == object.end()) return std::vector<std::string>{"csv"};
  std::vector<std::string> names;
  if (it->is_string()) {
    std::stringstream in(it->get<std::string>());
    for (std::string name; std::getline(in, name, ',');) {
      if (!name.empty()) names.push_back(name);
    }
  } else if (it->is_array()) {
    for (const Json& name : *it) {
      if (!name.is_string()) return invalid_argument("\"outputs\" must be a list of format names");
      names.push_back(name.get<std::string>());
    }
  } else {
    return invalid_argument("\"outputs\" must be a list of format names or a comma-separated text");
  }
  if (names.empty()) return invalid_argument("\"outputs\" names no format");
  std::set<std::string> seen;
  for (const std::string& name : names) {
    Expected<ClipOutput> output = ClipOutput::from_format_name(name, ".", "clip");
    if (!output) return output.status();
    if (!seen.insert(output->format_name()).second) {
      return invalid_argument(fmt::format("\"outputs\" names {} twice", output->format_name()));
    }
  }
  return names;
}

// The job of one line, or why not. `id` is set as soon as it is known (for the error's entry).
Status parse_line(const std::string& line, const std::filesystem::path& base_dir, BatchJob& job, std::string& id) {
  const Json object = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded() || !object.is_object()) return invalid_argument("not a JSON object");
  for (const auto& [key, value] : object.items()) {
    if (kKeys.count(key) == 0) {
      return invalid_argument(fmt::format(
          "unknown key \"{}\" (keys: id, video, queries, model, precision, resize, first, end, outputs)", key));
    }
  }
  Expected<std::string> video = text_field(object, "video", "", true);
  if (!video) return video.status();
  job.video = resolved(*video, base_dir);
  std::string stem =
      job.video.filename().empty() ? job.video.parent_path().filename().string() : job.video.stem().string();
  Expected<std::string> given_id = text_field(object, "id", stem, false);
  if (!given_id) return given_id.status();
  if (object.contains("id") && sanitized_id(*given_id) != *given_id) {
    return invalid_argument(fmt::format("\"id\" '{}' must be made of letters, digits, '.', '_' and '-'", *given_id));
  }
  job.id = sanitized_id(*given_id);
  if (job.id == "." || job.id == "..") return invalid_argument("\"id\" cannot be '.' or '..'");
  id = job.id;
  Expected<std::string> queries = text_field(object, "queries", "", true);
  if (!queries) return queries.status();
  Expected<QuerySpec> spec = parse_query_spec(*queries);
  if (!spec) return spec.status();
  job.queries = *spec;
  if (!job.queries.is_grid()) job.queries.csv = resolved(job.queries.csv.string(), base_dir);
  Expected<std::string> model = text_field(object, "model", "default", false);
  if (!model) return model.status();
  job.model = *model;
  if (job.model != "default" && job.model != "small" && job.model != "base") {
    job.model = resolved(job.model, base_dir).string();
  }
  Expected<std::string> precision = text_field(object, "precision", "fp32", false);
  if (!precision) return precision.status();
  Expected<Precision> parsed_precision = parse_precision(*precision);
  if (!parsed_precision) return parsed_precision.status();
  job.precision = *parsed_precision;
  Expected<std::string> resize = text_field(object, "resize", "bilinear", false);
  if (!resize) return resize.status();
  Expected<InputResize> parsed_resize = parse_input_resize(*resize);
  if (!parsed_resize) return parsed_resize.status();
  job.resize = *parsed_resize;
  Expected<int64_t> first = integer_field(object, "first", 0, 0);
  if (!first) return first.status();
  job.first_frame = *first;
  Expected<int64_t> end = integer_field(object, "end", -1, -1);
  if (!end) return end.status();
  job.end_frame = *end;
  if (job.end_frame != -1 && job.end_frame <= job.first_frame) {
    return invalid_argument(fmt::format("\"end\" ({}) must be after \"first\" ({})", job.end_frame, job.first_frame));
  }
  Expected<std::vector<std::string>> outputs = outputs_field(object);
  if (!outputs) return outputs.status();
  job.outputs = *outputs;
  return {};
}

}  // namespace

std::string sanitized_id(std::string_view name) {
  std::string id;
  for (const char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    id += ok ? c : '_';
  }
  return id.empty() ? "clip" : id;
}

std::vector<BatchJobEntry> parse_batch_jobs(std::string_view text, const std::filesystem::path& base_dir) {
  std::vector<BatchJobEntry> entries;
  std::map<std::string, int> line_of_id;
  std::istringstream in{std::string(text)};
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    BatchJobEntry entry;
    entry.line = number;
    std::string id;
    entry.error = parse_line(line, base_dir, entry.job, id);
    entry.id = id.empty() ? fmt::format("line-{}", number) : id;
    if (entry.error.ok()) {
      const auto [it, inserted] = line_of_id.emplace(entry.id, number);
      if (!inserted) {
        entry.error = invalid_argument(
            fmt::format("id '{}' is already used by line {}: give this line its own \"id\"", entry.id, it->second));
        entry.id = fmt::format("line-{}", number);
      }
    } else {
      entry.id = fmt::format("line-{}", number);
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

Expected<BatchJobList> read_batch_jobs(const std::filesystem::path& path) {
  Expected<std::string> text = io::read_file(path, kMaxJobFileBytes);
  if (!text) return text.status();
  BatchJobList list;
  list.path = std::filesystem::absolute(path).lexically_normal();
  list.text = std::move(*text);
  list.entries = parse_batch_jobs(list.text, list.path.parent_path());
  if (list.entries.empty()) {
    return invalid_argument(
        fmt::format("{}: no job in it (one JSON object per line, e.g. {{\"video\": \"clip.mp4\", "
                    "\"queries\": \"grid:16x16@frame0\"}})",
                    path.string()));
  }
  return list;
}

}  // namespace trackscope::core
