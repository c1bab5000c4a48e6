#pragma once
// Exporting and importing tracks. Every format states its coordinate convention in its header, schema or
// documentation (docs/annotation.md):
//
// | format          | write | read | coordinates                                                               |
// |-----------------|-------|------|---------------------------------------------------------------------------|
// | csv             | yes   | yes  | raster pixels of the original video (pixel centre at j + 0.5)             |
// | json            | yes   | yes  | the same                                                                  |
// | tapvid_npz      | yes   | yes  | normalised: x / width, y / height in [0, 1] (0 = left/top image edge)     |
// | deeplabcut_csv  | yes   | no   | DeepLabCut's pixel-index convention: pixel centres at integers (x - 0.5)  |
// | coco_json       | yes   | no   | COCO keypoints: pixel centres at integers (x - 0.5), v = 0 / 1 / 2        |
//
//   TrackTable table = track_table(annotation, video);
//   TRACKSCOPE_RETURN_IF_ERROR(io::write_tracks("out.csv", table, TrackFormat::csv));
//   Expected<TrackTable> back = io::read_tracks("out.csv", TrackFormat::csv, {.width = 640, .height = 480});
//
// Precision: csv and json write every float in its shortest exact form (reading gives the same float back);
// npz stores float32 normalised coordinates, so pixel positions come back within 1e-3 px for videos up to
// 8192 px wide; deeplabcut_csv and coco_json round to 1e-4 px.
// Threads: pure functions, thread-safe.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tracking/annotation.h"

namespace trackscope::core::io {

enum class TrackFormat { csv, json, tapvid_npz, deeplabcut_csv, coco_json };
const char* to_string(TrackFormat format);
/// "csv", "json", "npz" (tapvid), "dlc.csv"-style names are not guessed: callers pick the format.
std::optional<TrackFormat> parse_track_format(std::string_view name);
/// The usual file name suffix (".csv", ".json", ".npz", "_dlc.csv", "_coco.json").
const char* default_suffix(TrackFormat format);
/// The format of a file name (the CLI's --out, batch outputs, the GUI's import) by the one rule of
/// core/io/file_names.h: the name's ending, compared case-insensitively, longest ending first, so "x_dlc.csv" is
/// deeplabcut_csv and "x.csv" csv, "x_coco.json" coco_json and "x.json" json, "x.npz" tapvid_npz. nullopt for any other
/// name (a .trackscope project is not a track format: core/io/project.h).
std::optional<TrackFormat> track_format_from_path(const std::filesystem::path& path);
bool can_read(TrackFormat format);

/// The video the tracks belong to, written into every export's header.
struct TrackVideo {
  std::string path;
  int width = 0;
  int height = 0;
  int64_t frame_count = 0;
  double frames_per_second = 0.0;  // time_s = frame / frames_per_second (0: time_s is written as 0)
};

/// One exported track: the point's id, its query and its PointTrack.
struct TableTrack {
  PointId id = 0;
  Query query;
  PointTrack track;
};

struct TrackTable {
  TrackVideo video;
  std::vector<TableTrack> tracks;
};

/// Every point of `annotation` that has a track, in id order.
TrackTable track_table(const Annotation& annotation, const TrackVideo& video);

/// The video the tracks are imported into. Every reader checks the tracks against it (sense checks): frames
/// within [0, frame_count), positions plausible for width x height (input_checks.h: finite, at most 4 image
/// sizes outside the image). Zero members are unknown; then only the absolute bounds apply.
struct TrackImportOptions {
  /// The size of the video the tracks are for (needed by the npz reader when the file has no video_size).
  int width = 0;
  int height = 0;
  int64_t frame_count = 0;
};

std::string tracks_to_csv(const TrackTable& table);
/// A UTF-8 byte order mark before the header is accepted.
Expected<TrackTable> tracks_from_csv(std::string_view text, const std::string& source,
                                     const TrackImportOptions& options = {});
std::string tracks_to_json(const TrackTable& table);
Expected<TrackTable> tracks_from_json(std::string_view text, const std::string& source,
                                      const TrackImportOptions& options = {});
std::string tracks_to_deeplabcut_csv(const TrackTable& table, const std::string& scorer = "Trackscope");
std::string tracks_to_coco_json(const TrackTable& table);
/// TAP-Vid style .npz (see track_npz.cpp for the arrays). Needs video.width and video.height > 0.
Status write_tracks_npz(const std::filesystem::path& path, const TrackTable& table);
Expected<TrackTable> read_tracks_npz(const std::filesystem::path& path, const TrackImportOptions& options);
/// The same from the bytes of an .npz file; `source` names them in messages.
Expected<TrackTable> tracks_from_npz(std::string_view bytes, const std::string& source,
                                     const TrackImportOptions& options);

/// The sense checks of an imported table against `options` (see TrackImportOptions); corrupt_data naming the
/// track, the frame and the bound. The readers above call it; exposed for tests.
Status check_imported_tracks(const TrackTable& table, const TrackImportOptions& options, const std::string& source);

/// Writes `table` to `path` in `format` (text formats atomically).
Status write_tracks(const std::filesystem::path& path, const TrackTable& table, TrackFormat format);
/// Reads tracks from `path` (csv, json, tapvid_npz). unsupported for the write-only formats.
Expected<TrackTable> read_tracks(const std::filesystem::path& path, TrackFormat format,
                                 const TrackImportOptions& options = {});

}  // namespace trackscope::core::io
