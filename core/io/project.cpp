#include "core/io/project.h"

#include <map>
#include <set>

#include "core/io/json_tracks.h"

namespace trackscope::core::io {
namespace {

namespace fs = std::filesystem;
using namespace json_detail;

constexpr const char* kCoordinates =
    "raster pixels of the original video: pixel (i, j) covers [j, j+1) x [i, i+1), its centre is (j + 0.5, i + 0.5)";

json video_to_json(const ProjectVideo& video) {
  return {{"path", video.path},
          {"relative_path", video.relative_path},
          {"size_bytes", video.fingerprint.size_bytes},
          {"fingerprint", video.fingerprint.sha256},
          {"fingerprint_method", kFingerprintMethod},
          {"frame_count", video.frame_count},
          {"width", video.width},
          {"height", video.height},
          {"frames_per_second", video.frames_per_second}};
}

ProjectVideo video_from_json(const json& value, const std::string& where) {
  ProjectVideo video;
  video.path = text(field(value, "path", where), where + ".path");
  if (auto it = value.find("relative_path"); it != value.end())
    video.relative_path = text(*it, where + ".relative_path");
  video.fingerprint.size_bytes = integer(field(value, "size_bytes", where), where + ".size_bytes");
  video.fingerprint.sha256 = text(field(value, "fingerprint", where), where + ".fingerprint");
  video.frame_count = integer(field(value, "frame_count", where), where + ".frame_count");
  video.width = static_cast<int>(integer(field(value, "width", where), where + ".width"));
  video.height = static_cast<int>(integer(field(value, "height", where), where + ".height"));
  video.frames_per_second = number(field(value, "frames_per_second", where), where + ".frames_per_second");
  if (video.frame_count < 0 || video.width < 0 || video.height < 0) fail(where, "sizes must be >= 0");
  return video;
}

json view_to_json(const ProjectView& view) {
  json result = {{"current_frame", view.current_frame},           {"show_tracks", view.show_tracks},
                 {"show_occluded", view.show_occluded},           {"trail_before_frames", view.trail_before_frames},
                 {"trail_after_frames", view.trail_after_frames}, {"colouring", view.colouring},
                 {"show_quality_strip", view.show_quality_strip}};
  result["selected_point"] = view.selected_point ? json(*view.selected_point) : json(nullptr);
  return result;
}

// View settings are a convenience: unknown or missing keys fall back to the defaults instead of refusing a file.
ProjectView view_from_json(const json& value) {
  ProjectView view;
  if (!value.is_object()) return view;
  auto get = [&](const char* key, auto& out) {
    auto it = value.find(key);
    if (it == value.end()) return;
    using T = std::decay_t<decltype(out)>;
    if constexpr (std::is_same_v<T, bool>) {
      if (it->is_boolean()) out = it->template get<bool>();
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (it->is_string()) out = it->template get<std::string>();
    } else {
      if (it->is_number_integer()) out = it->template get<T>();
    }
  };
  get("current_frame", view.current_frame);
  get("show_tracks", view.show_tracks);
  get("show_occluded", view.show_occluded);
  get("trail_before_frames", view.trail_before_frames);
  get("trail_after_frames", view.trail_after_frames);
  get("colouring", view.colouring);
  get("show_quality_strip", view.show_quality_strip);
  if (auto it = value.find("selected_point"); it != value.end() && it->is_number_integer())
    view.selected_point = it->get<PointId>();
  return view;
}

Project parse(const json& root, const std::string& source) {
  if (!root.is_object()) fail(source, "not a Trackscope project (expected a JSON object)");
  auto format = root.find("format");
  if (format == root.end() || !format->is_string() || format->get<std::string>() != kProjectFormat) {
    fail(source, fmt::format("not a Trackscope project (\"format\" is not \"{}\")", kProjectFormat));
  }
  Project project;
  const std::string top = "the project";
  project.version = static_cast<int>(integer(field(root, "version", top), "version"));
  if (project.version > kProjectVersion) {
    throw Status(
        unsupported(fmt::format("{} is a version {} project, written by a newer Trackscope; this one reads "
                                "versions up to {}. Open it with a newer Trackscope.",
                                source, project.version, kProjectVersion)));
  }
  if (project.version < 1) fail(source, fmt::format("version {} is not a valid project version", project.version));
  project.video = video_from_json(field(root, "video", top), "video");
  const int64_t next_id = integer(field(root, "next_id", top), "next_id");
  if (next_id < 0 || next_id >= (int64_t{1} << 30)) fail("next_id", "must be in [0, 2^30)");
  project.next_id = static_cast<PointId>(next_id);
  const json& points = field(root, "points", top);
  if (!points.is_array()) fail("points", "expected an array");
  std::set<PointId> ids;
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string where = fmt::format("points[{}]", i);
    const json& entry = points[i];
    ProjectPoint point;
    point.point.id = static_cast<PointId>(integer(field(entry, "id", where), where + ".id"));
    point.point.colour_index = static_cast<int>(integer(field(entry, "colour_index", where), where + ".colour_index"));
    point.point.query = query_from_json(field(entry, "query", where), where + ".query");
    if (point.point.id < 0 || point.point.id >= project.next_id) fail(where + ".id", "must be in [0, next_id)");
    if (point.point.colour_index < 0 || point.point.colour_index >= (1 << 30))
      fail(where + ".colour_index", "must be in [0, 2^30)");
    if (!ids.insert(point.point.id).second) fail(where + ".id", fmt::format("id {} appears twice", point.point.id));
    if (auto track = entry.find("track"); track != entry.end() && !track->is_null()) {
      point.track = track_from_json(*track, where + ".track");
    }
    project.points.push_back(std::move(point));
  }
  std::sort(project.points.begin(), project.points.end(),
            [](const ProjectPoint& a, const ProjectPoint& b) { return a.point.id < b.point.id; });
  if (auto view = root.find("view"); view != root.end()) project.view = view_from_json(*view);
  if (auto recovery = root.find("recovery"); recovery != root.end() && recovery->is_object()) {
    RecoveryInfo info;
    info.project_path = text(field(*recovery, "project_path", "recovery"), "recovery.project_path");
    if (auto at = recovery->find("written_at_utc"); at != recovery->end() && at->is_string())
      info.written_at_utc = at->get<std::string>();
    project.recovery = info;
  }
  return project;
}

}  // namespace

ProjectVideo describe_video(std::string path, const VideoInfo& info) {
  ProjectVideo video;
  video.path = std::move(path);
  video.frame_count = info.frame_count;
  video.width = info.width;
  video.height = info.height;
  video.frames_per_second = info.frame_rate.to_double();
  return video;
}

Project make_project(const Annotation& annotation, ProjectVideo video, ProjectView view) {
  Project project;
  project.video = std::move(video);
  project.view = std::move(view);
  project.next_id = annotation.next_id();
  for (const QueryPoint& point : annotation) {
    ProjectPoint entry{point, std::nullopt};
    if (const PointTrack* track = annotation.track(point.id)) entry.track = *track;
    project.points.push_back(std::move(entry));
  }
  return project;
}

void load_into(const Project& project, Annotation& annotation) {
  // One replacement, one notification: inserting point by point let every observer rescan per point
  // (quadratic; 20,000 points took 13 s in the workbench).
  std::vector<QueryPoint> points;
  std::map<PointId, PointTrack> tracks;
  points.reserve(project.points.size());
  for (const ProjectPoint& point : project.points) {
    points.push_back(point.point);
    if (point.track) tracks.emplace_hint(tracks.end(), point.point.id, *point.track);
  }
  annotation.replace_all(std::move(points), std::move(tracks), project.next_id);
}

std::string project_to_json(const Project& project) {
  json points = json::array();
  for (const ProjectPoint& point : project.points) {
    json entry = {{"id", point.point.id},
                  {"colour_index", point.point.colour_index},
                  {"query", query_to_json(point.point.query)}};
    entry["track"] = point.track ? track_to_json(*point.track) : json(nullptr);
    points.push_back(std::move(entry));
  }
  json root = {{"format", kProjectFormat},          {"version", project.version},
               {"coordinates", kCoordinates},       {"video", video_to_json(project.video)},
               {"next_id", project.next_id},        {"points", std::move(points)},
               {"view", view_to_json(project.view)}};
  if (project.recovery) {
    root["recovery"] = {{"project_path", project.recovery->project_path},
                        {"written_at_utc", project.recovery->written_at_utc}};
  }
  return root.dump(1, '\t', false, json::error_handler_t::replace) + "\n";
}

Expected<Project> project_from_json(std::string_view text, const std::string& source) {
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& error) {
    const bool truncated = error.byte >= text.size();
    return corrupt_data(fmt::format("{} is not a readable project{}: {}", source,
                                    truncated ? " (the file ends too early: it was truncated)" : "", error.what()));
  }
  try {
    return parse(root, source);
  } catch (const SchemaError& error) {
    return corrupt_data(fmt::format("{} is damaged: {}", source, error.message));
  } catch (const Status& status) {
    return status;
  } catch (const json::exception& error) {
    return corrupt_data(fmt::format("{} is damaged: {}", source, error.what()));
  }
}

Status save_project(const fs::path& path, Project project, const AtomicWriteOptions& options) {
  std::error_code error;
  const fs::path folder = fs::absolute(path, error).parent_path();
  const fs::path video = project.video.path;
  project.video.relative_path.clear();
  if (!video.empty() && video.is_absolute()) {
    const fs::path relative = video.lexically_relative(folder);
    if (!relative.empty()) project.video.relative_path = relative.generic_string();
  }
  return write_file_atomically(path, project_to_json(project), options);
}

Expected<Project> load_project(const fs::path& path) {
  Expected<std::string> text = read_file(path, kMaxProjectBytes);
  if (!text) return text.status();
  return project_from_json(*text, path.string());
}

std::optional<fs::path> locate_project_video(const Project& project, const fs::path& project_path) {
  std::error_code error;
  if (!project.video.path.empty() && fs::exists(project.video.path, error)) return fs::path(project.video.path);
  if (!project.video.relative_path.empty()) {
    const fs::path candidate = fs::absolute(project_path, error).parent_path() / project.video.relative_path;
    if (fs::exists(candidate, error)) return candidate.lexically_normal();
  }
  return std::nullopt;
}

Status check_project_video(const Project& project, const fs::path& candidate) {
  Expected<VideoFingerprint> fingerprint = fingerprint_video(candidate);
  if (!fingerprint) return fingerprint.status();
  if (*fingerprint == project.video.fingerprint) return {};
  return corrupt_data(
      fmt::format("'{}' is not the project's video: its fingerprint is {} ({} bytes), the project's "
                  "video had {} ({} bytes)",
                  candidate.string(), fingerprint->sha256.substr(0, 16), fingerprint->size_bytes,
                  project.video.fingerprint.sha256.substr(0, 16), project.video.fingerprint.size_bytes));
}

}  // namespace trackscope::core::io
