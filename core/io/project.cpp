#include "core/io/project.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "core/io/file_names.h"
#include "core/io/json_tracks.h"

namespace trackscope::core::io {

bool is_project_path(const std::filesystem::path& path) { return file_name_ends_with(path, kProjectExtension); }

namespace {

namespace fs = std::filesystem;
using namespace json_detail;

// Trails longer than this are a damaged setting (the workbench offers up to a few hundred frames).
constexpr int kMaxTrailFrames = 100000;

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
  video.fingerprint.size_bytes =
      integer_in(field(value, "size_bytes", where), where + ".size_bytes", 0, std::numeric_limits<int64_t>::max());
  video.fingerprint.sha256 = text(field(value, "fingerprint", where), where + ".fingerprint");
  video.frame_count = integer_in(field(value, "frame_count", where), where + ".frame_count", 0, kMaxFrameIndex);
  video.width = static_cast<int>(integer_in(field(value, "width", where), where + ".width", 0, kMaxImageSidePx));
  video.height = static_cast<int>(integer_in(field(value, "height", where), where + ".height", 0, kMaxImageSidePx));
  video.frames_per_second = number(field(value, "frames_per_second", where), where + ".frames_per_second");
  if (video.frames_per_second < 0.0 || video.frames_per_second > 1e6)
    fail(where + ".frames_per_second",
         fmt::format("{} is not a frame rate (expected 0 to 1e6)", video.frames_per_second));
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
ProjectView view_from_json(const json& value, int64_t frame_count) {
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
    } else if constexpr (std::is_same_v<T, std::optional<int>>) {
      const std::optional<int64_t> v = as_int64(*it);
      if (v && *v >= 0 && *v <= std::numeric_limits<int>::max()) out = static_cast<int>(*v);
    } else {
      // get<T> of an integer beyond T's range would wrap: such values are left at the default.
      const std::optional<int64_t> v = as_int64(*it);
      if (v && *v >= std::numeric_limits<T>::min() && *v <= std::numeric_limits<T>::max()) out = static_cast<T>(*v);
    }
  };
  get("current_frame", view.current_frame);
  get("show_tracks", view.show_tracks);
  get("show_occluded", view.show_occluded);
  get("trail_before_frames", view.trail_before_frames);
  get("trail_after_frames", view.trail_after_frames);
  get("colouring", view.colouring);
  get("show_quality_strip", view.show_quality_strip);
  std::optional<int> selected;
  get("selected_point", selected);
  if (selected && *selected >= 0) view.selected_point = *selected;
  // Out-of-range settings fall back to the nearest sensible value, like missing ones.
  const ProjectView defaults;
  view.current_frame = std::clamp<int64_t>(view.current_frame, 0, std::max<int64_t>(frame_count - 1, 0));
  if (view.trail_before_frames < 0 || view.trail_before_frames > kMaxTrailFrames)
    view.trail_before_frames = defaults.trail_before_frames;
  if (view.trail_after_frames < 0 || view.trail_after_frames > kMaxTrailFrames)
    view.trail_after_frames = defaults.trail_after_frames;
  if (view.colouring != "track" && view.colouring != "direction") view.colouring = defaults.colouring;
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
  const VideoBounds bounds{project.video.width, project.video.height, project.video.frame_count};
  std::set<PointId> ids;
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string where = fmt::format("points[{}]", i);
    const json& entry = points[i];
    ProjectPoint point;
    point.point.id = static_cast<PointId>(integer(field(entry, "id", where), where + ".id"));
    point.point.colour_index = static_cast<int>(integer(field(entry, "colour_index", where), where + ".colour_index"));
    point.point.query = query_from_json(field(entry, "query", where), where + ".query", bounds);
    if (point.point.id < 0 || point.point.id >= project.next_id) fail(where + ".id", "must be in [0, next_id)");
    if (point.point.colour_index < 0 || point.point.colour_index >= (1 << 30))
      fail(where + ".colour_index", "must be in [0, 2^30)");
    if (!ids.insert(point.point.id).second) fail(where + ".id", fmt::format("id {} appears twice", point.point.id));
    if (auto track = entry.find("track"); track != entry.end() && !track->is_null()) {
      point.track = track_from_json(*track, where + ".track", bounds);
    }
    project.points.push_back(std::move(point));
  }
  std::sort(project.points.begin(), project.points.end(),
            [](const ProjectPoint& a, const ProjectPoint& b) { return a.point.id < b.point.id; });
  if (auto view = root.find("view"); view != root.end())
    project.view = view_from_json(*view, project.video.frame_count);
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
  } catch (const json::out_of_range& error) {
    // nlohmann reports a number beyond a double's range (1e999) as out_of_range, not as a parse error.
    return corrupt_data(fmt::format("{} is damaged: it holds a number too large to read ({})", source, error.what()));
  } catch (const json::exception& error) {
    return corrupt_data(fmt::format("{} is not a readable project: {}", source, error.what()));
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
