// The table, the dispatch by format, CSV (read and write) and DeepLabCut CSV. JSON and COCO are in
// track_json.cpp, the TAP-Vid .npz in track_npz.cpp.
#include "core/io/track_formats.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "core/io/atomic_file.h"
#include "core/io/file_names.h"
#include "core/io/input_checks.h"
#include "core/io/json_tracks.h"
#include "core/io/track_table_builder.h"
#include "core/tracking/track_edit.h"

namespace trackscope::core::io {
namespace {

constexpr const char* kCsvColumns = "track_id,frame,time_s,x,y,visible,p_occluded,p_far";
constexpr size_t kMaxTrackFileBytes = size_t{4} << 30;

double time_of(const TrackVideo& video, int64_t frame) {
  return video.frames_per_second > 0.0 ? static_cast<double>(frame) / video.frames_per_second : 0.0;
}

std::vector<std::string_view> split(std::string_view line, char separator) {
  std::vector<std::string_view> cells;
  size_t start = 0;
  while (true) {
    const size_t end = line.find(separator, start);
    cells.push_back(line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return cells;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

template <typename T>
std::optional<T> parse_number(std::string_view text) {
  text = trim(text);
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

const char* to_string(TrackFormat format) {
  switch (format) {
    case TrackFormat::csv: return "csv";
    case TrackFormat::json: return "json";
    case TrackFormat::tapvid_npz: return "tapvid_npz";
    case TrackFormat::deeplabcut_csv: return "deeplabcut_csv";
    case TrackFormat::coco_json: return "coco_json";
  }
  return "?";
}

std::optional<TrackFormat> parse_track_format(std::string_view name) {
  for (TrackFormat format : {TrackFormat::csv, TrackFormat::json, TrackFormat::tapvid_npz, TrackFormat::deeplabcut_csv,
                             TrackFormat::coco_json}) {
    if (name == to_string(format)) return format;
  }
  if (name == "npz") return TrackFormat::tapvid_npz;
  return std::nullopt;
}

const char* default_suffix(TrackFormat format) {
  switch (format) {
    case TrackFormat::csv: return ".csv";
    case TrackFormat::json: return ".json";
    case TrackFormat::tapvid_npz: return ".npz";
    case TrackFormat::deeplabcut_csv: return "_dlc.csv";
    case TrackFormat::coco_json: return "_coco.json";
  }
  return "";
}

std::optional<TrackFormat> track_format_from_path(const std::filesystem::path& path) {
  // Longest endings first: "_dlc.csv" before ".csv", "_coco.json" before ".json".
  for (const TrackFormat format : {TrackFormat::deeplabcut_csv, TrackFormat::coco_json, TrackFormat::csv,
                                   TrackFormat::json, TrackFormat::tapvid_npz}) {
    if (file_name_ends_with(path, default_suffix(format))) return format;
  }
  return std::nullopt;
}

bool can_read(TrackFormat format) {
  return format == TrackFormat::csv || format == TrackFormat::json || format == TrackFormat::tapvid_npz;
}

TrackTable track_table(const Annotation& annotation, const TrackVideo& video) {
  TrackTable table;
  table.video = video;
  for (const QueryPoint& point : annotation) {
    if (const PointTrack* track = annotation.track(point.id); track != nullptr && !track->track.points.empty()) {
      table.tracks.push_back({point.id, point.query, *track});
    }
  }
  return table;
}

std::string tracks_to_csv(const TrackTable& table) {
  const TrackVideo& video = table.video;
  std::string out;
  out += "# Trackscope tracks (csv, format version 1)\n";
  out += fmt::format("# video: {} ({} x {} px, {} frames, {} fps)\n", video.path, video.width, video.height,
                     video.frame_count, video.frames_per_second);
  out +=
      "# coordinates: x, y in raster pixels of the original video; pixel (i, j) covers [j, j+1) x [i, i+1), its "
      "centre is (j + 0.5, i + 0.5)\n";
  out +=
      "# time_s = frame / frames_per_second; visible = 1 when (1 - p_occluded) * (1 - p_far) >= 0.5 (or set by hand "
      "at a keyframe); p_occluded: occlusion probability; p_far: probability of an error above 6 px at 256x256\n";
  out +=
      "# one row per track and covered frame; a '# track {...}' line per track holds its query, keyframes and "
      "provenance\n";
  for (const TableTrack& entry : table.tracks) {
    const json_detail::json meta = {{"id", entry.id},
                                    {"query", json_detail::query_to_json(entry.query)},
                                    {"keyframes", entry.track.keyframes},
                                    {"model", entry.track.provenance.model},
                                    {"device", entry.track.provenance.device},
                                    {"precision", entry.track.provenance.precision}};
    out += "# track " + meta.dump(-1, ' ', false, json_detail::json::error_handler_t::replace) + "\n";
  }
  out += kCsvColumns;
  out += '\n';
  for (const TableTrack& entry : table.tracks) {
    const Track& track = entry.track.track;
    for (size_t i = 0; i < track.points.size(); ++i) {
      const int64_t frame = track.first_frame + static_cast<int64_t>(i);
      const TrackPoint& p = track.points[i];
      out += fmt::format("{},{},{:.6f},{},{},{},{},{}\n", entry.id, frame, time_of(video, frame), p.x_px, p.y_px,
                         p.visible ? 1 : 0, p.p_occluded, p.p_far);
    }
  }
  return out;
}

Expected<TrackTable> tracks_from_csv(std::string_view text, const std::string& source,
                                     const TrackImportOptions& options) {
  text = strip_utf8_bom(text);
  TrackTableBuilder builder(source, options.frame_count);
  std::map<std::string, int> columns;
  int line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(start, end - start));
    start = end + 1;
    ++line_number;
    if (line.empty()) continue;
    if (line.front() == '#') {
      const std::string_view prefix = "# track ";
      if (line.substr(0, prefix.size()) == prefix) {
        if (Status s = builder.add_metadata_json(line.substr(prefix.size()), line_number); !s) return s;
      }
      continue;
    }
    const std::vector<std::string_view> cells = split(line, ',');
    if (columns.empty()) {
      for (size_t i = 0; i < cells.size(); ++i) columns[std::string(trim(cells[i]))] = static_cast<int>(i);
      for (const char* required : {"track_id", "frame", "x", "y"}) {
        if (!columns.count(required)) {
          return corrupt_data(fmt::format("{} line {}: the header has no '{}' column (expected {})", source,
                                          line_number, required, kCsvColumns));
        }
      }
      continue;
    }
    auto cell = [&](const char* name) -> std::optional<std::string_view> {
      auto it = columns.find(name);
      if (it == columns.end() || it->second >= static_cast<int>(cells.size())) return std::nullopt;
      return cells[static_cast<size_t>(it->second)];
    };
    auto bad = [&](const char* what) {
      return corrupt_data(fmt::format("{} line {}: {} is not a valid number", source, line_number, what));
    };
    const auto id = parse_number<int64_t>(cell("track_id").value_or(""));
    const auto frame = parse_number<int64_t>(cell("frame").value_or(""));
    const auto x = parse_number<float>(cell("x").value_or(""));
    const auto y = parse_number<float>(cell("y").value_or(""));
    if (!id || *id < 0 || *id > std::numeric_limits<PointId>::max()) return bad("track_id (an integer >= 0)");
    if (!frame || *frame < 0) return bad("frame");
    if (!x) return bad("x");
    if (!y) return bad("y");
    ImportedEstimate estimate{*frame, {*x, *y, true, 0.0f, 0.0f}};
    const auto p_occluded = cell("p_occluded") ? parse_number<float>(*cell("p_occluded")) : std::optional<float>(0.0f);
    const auto p_far = cell("p_far") ? parse_number<float>(*cell("p_far")) : std::optional<float>(0.0f);
    if (!p_occluded) return bad("p_occluded");
    if (!p_far) return bad("p_far");
    estimate.point.p_occluded = *p_occluded;
    estimate.point.p_far = *p_far;
    if (auto visible = cell("visible")) {
      const auto flag = parse_number<int>(*visible);
      if (!flag || (*flag != 0 && *flag != 1)) return bad("visible (0 or 1)");
      estimate.point.visible = *flag == 1;
    } else {
      estimate.point.visible = visible_from_probabilities(estimate.point.p_occluded, estimate.point.p_far);
    }
    if (Status s = builder.add(static_cast<PointId>(*id), estimate, line_number); !s) return s;
  }
  if (columns.empty()) return corrupt_data(fmt::format("{} has no header line ({})", source, kCsvColumns));
  Expected<TrackTable> table = builder.finish();
  if (!table) return table;
  TRACKSCOPE_RETURN_IF_ERROR(check_imported_tracks(*table, options, source));
  return table;
}

Status check_imported_tracks(const TrackTable& table, const TrackImportOptions& options, const std::string& source) {
  const int64_t frame_count = options.frame_count;
  for (const TableTrack& entry : table.tracks) {
    const Track& track = entry.track.track;
    if (frame_count > 0 && (track.end_frame() > frame_count || entry.query.frame >= frame_count)) {
      return corrupt_data(fmt::format(
          "{}: track {} covers frames [{}, {}) (query on frame {}), but the video has {} frames: are these the "
          "tracks of another video?",
          source, entry.id, track.first_frame, track.end_frame(), entry.query.frame, frame_count));
    }
    if (!plausible_position(entry.query.x_px, entry.query.y_px, options.width, options.height)) {
      return corrupt_data(fmt::format("{}: the query of track {} at ({}, {}) is not plausible: {}", source, entry.id,
                                      entry.query.x_px, entry.query.y_px,
                                      position_bounds_text(options.width, options.height)));
    }
    for (size_t i = 0; i < track.points.size(); ++i) {
      const TrackPoint& p = track.points[i];
      if (!plausible_position(p.x_px, p.y_px, options.width, options.height)) {
        return corrupt_data(fmt::format("{}: track {} on frame {} is at ({}, {}), which is not plausible: {}", source,
                                        entry.id, track.first_frame + static_cast<int64_t>(i), p.x_px, p.y_px,
                                        position_bounds_text(options.width, options.height)));
      }
    }
  }
  return {};
}

std::string tracks_to_deeplabcut_csv(const TrackTable& table, const std::string& scorer) {
  // DeepLabCut's machine-label layout: three header rows (scorer, bodyparts, coords), then one row per frame
  // whose first cell is the frame index; x, y in DLC's pixel-index convention (pixel centres at integers).
  std::string scorers = "scorer", parts = "bodyparts", coords = "coords";
  for (const TableTrack& entry : table.tracks) {
    for (const char* coordinate : {"x", "y", "likelihood"}) {
      scorers += "," + csv_cell(scorer);
      parts += fmt::format(",point{}", entry.id);
      coords += std::string(",") + coordinate;
    }
  }
  std::string out = scorers + "\n" + parts + "\n" + coords + "\n";
  int64_t frames = table.video.frame_count;
  for (const TableTrack& entry : table.tracks) frames = std::max(frames, entry.track.track.end_frame());
  for (int64_t frame = 0; frame < frames; ++frame) {
    out += std::to_string(frame);
    for (const TableTrack& entry : table.tracks) {
      if (!entry.track.track.covers(frame)) {
        out += ",,,";
        continue;
      }
      const TrackPoint& p = entry.track.track.at(frame);
      const double likelihood = (1.0 - p.p_occluded) * (1.0 - p.p_far);
      out += fmt::format(",{:.4f},{:.4f},{:.4f}", p.x_px - 0.5, p.y_px - 0.5, likelihood);
    }
    out += '\n';
  }
  return out;
}

Status write_tracks(const std::filesystem::path& path, const TrackTable& table, TrackFormat format) {
  switch (format) {
    case TrackFormat::csv: return write_file_atomically(path, tracks_to_csv(table));
    case TrackFormat::json: return write_file_atomically(path, tracks_to_json(table));
    case TrackFormat::deeplabcut_csv: return write_file_atomically(path, tracks_to_deeplabcut_csv(table));
    case TrackFormat::coco_json: return write_file_atomically(path, tracks_to_coco_json(table));
    case TrackFormat::tapvid_npz: return write_tracks_npz(path, table);
  }
  return invalid_argument("unknown track format");
}

Expected<TrackTable> read_tracks(const std::filesystem::path& path, TrackFormat format,
                                 const TrackImportOptions& options) {
  if (!can_read(format)) {
    return unsupported(
        fmt::format("{} files can be exported but not imported; import csv, json or npz", to_string(format)));
  }
  if (format == TrackFormat::tapvid_npz) return read_tracks_npz(path, options);
  Expected<std::string> text = read_file(path, kMaxTrackFileBytes);
  if (!text) return text.status();
  return format == TrackFormat::csv ? tracks_from_csv(*text, path.string(), options)
                                    : tracks_from_json(*text, path.string(), options);
}

}  // namespace trackscope::core::io
