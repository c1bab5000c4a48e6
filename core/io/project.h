#pragma once
// Trackscope project files (".trackscope", JSON, versioned): the video (path, path relative to the project,
// fingerprint, size and frame count), every query point with its track (estimates, keyframes, provenance:
// model, device, precision) and the view settings. The schema is documented in docs/annotation.md.
//
//   Project project = make_project(annotation, video, view);
//   TRACKSCOPE_RETURN_IF_ERROR(io::save_project("bees.trackscope", project));       // atomic
//   Expected<Project> loaded = io::load_project("bees.trackscope");
//   if (!loaded) show(loaded.status().message());     // corrupt, truncated, newer version: nothing changes
//   load_into(*loaded, annotation);
//
// Reading validates everything before anything is built (ids unique and below next_id, arrays of one length,
// keyframes sorted and covered, finite numbers, frames >= 0), so a bad file is reported, never half applied.
// Errors: not_found (no file), corrupt_data (not JSON, truncated, fields missing or invalid, another format),
// unsupported (a newer project version), io_error.
// Recovery files (autosave) are projects with a "recovery" object naming the project they belong to.
// Threads: pure functions, thread-safe.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/io/atomic_file.h"
#include "core/io/video_fingerprint.h"
#include "core/status.h"
#include "core/tracking/annotation.h"
#include "core/video/video_source.h"

namespace trackscope::core::io {

/// The version this build writes and the newest it reads.
inline constexpr int kProjectVersion = 1;
inline constexpr const char* kProjectFormat = "trackscope-project";
inline constexpr const char* kProjectExtension = ".trackscope";
/// A project's file name: ends with kProjectExtension by the rule of core/io/file_names.h (case-insensitive).
bool is_project_path(const std::filesystem::path& path);
/// Projects larger than this are refused (a sanity bound against reading a random huge file).
inline constexpr size_t kMaxProjectBytes = size_t{2} << 30;

struct ProjectVideo {
  std::string path;           // absolute path when saved
  std::string relative_path;  // relative to the project's folder ("" when on another root)
  VideoFingerprint fingerprint;
  int64_t frame_count = 0;
  int width = 0;
  int height = 0;
  double frames_per_second = 0.0;
  bool operator==(const ProjectVideo&) const = default;
};

/// How the workbench showed the project (restored on open).
struct ProjectView {
  int64_t current_frame = 0;
  std::optional<PointId> selected_point;
  bool show_tracks = true;
  bool show_occluded = true;
  int trail_before_frames = 10;
  int trail_after_frames = 0;
  std::string colouring = "track";  // "track" or "direction"
  bool show_quality_strip = true;
  bool operator==(const ProjectView&) const = default;
};

struct ProjectPoint {
  QueryPoint point;
  std::optional<PointTrack> track;
  bool operator==(const ProjectPoint&) const = default;
};

/// Present in recovery (autosave) files only.
struct RecoveryInfo {
  std::string project_path;    // the project the edits belong to ("" for an unsaved one)
  std::string written_at_utc;  // ISO 8601
  bool operator==(const RecoveryInfo&) const = default;
};

struct Project {
  int version = kProjectVersion;
  ProjectVideo video;
  std::vector<ProjectPoint> points;  // id order
  PointId next_id = 0;
  ProjectView view;
  std::optional<RecoveryInfo> recovery;
  bool operator==(const Project&) const = default;
};

/// What a project records of an opened video: `path` as given (callers pass it absolute), size, frame count and
/// rate from `info`. The fingerprint stays empty: fingerprint_video() fills it, and the caller decides what a
/// video without one means.
ProjectVideo describe_video(std::string path, const VideoInfo& info);

/// A project of the annotation's points and tracks.
Project make_project(const Annotation& annotation, ProjectVideo video, ProjectView view);
/// Replaces the annotation's points with the project's (ids, colours, tracks kept). Throws InvariantError
/// only for a project that load_project() would have refused (build projects with load_project or make_project).
void load_into(const Project& project, Annotation& annotation);

std::string project_to_json(const Project& project);
/// `source` names the text in messages (the file path).
Expected<Project> project_from_json(std::string_view text, const std::string& source);

/// Writes the project atomically (atomic_file.h); `video.relative_path` is recomputed for `path`'s folder.
Status save_project(const std::filesystem::path& path, Project project, const AtomicWriteOptions& options = {});
Expected<Project> load_project(const std::filesystem::path& path);

/// Where the project's video is: `video.path` if it exists, else `video.relative_path` from the project's
/// folder if that exists; nullopt when neither does (the video moved: ask the user).
std::optional<std::filesystem::path> locate_project_video(const Project& project,
                                                          const std::filesystem::path& project_path);

/// Checks that the file at `candidate` is the project's video (fingerprint). corrupt_data with both values
/// when it differs.
Status check_project_video(const Project& project, const std::filesystem::path& candidate);

}  // namespace trackscope::core::io
