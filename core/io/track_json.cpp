// JSON tracks (read and write) and COCO keypoints (write).
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/io/json_tracks.h"
#include "core/io/track_formats.h"

namespace trackscope::core::io {
namespace {

using namespace json_detail;

constexpr const char* kTracksFormat = "trackscope-tracks";
constexpr int kTracksVersion = 1;

json video_json(const TrackVideo& video) {
  return {{"path", video.path},
          {"width", video.width},
          {"height", video.height},
          {"frame_count", video.frame_count},
          {"frames_per_second", video.frames_per_second}};
}

}  // namespace

std::string tracks_to_json(const TrackTable& table) {
  json tracks = json::array();
  for (const TableTrack& entry : table.tracks) {
    json track = track_to_json(entry.track);
    track["id"] = entry.id;
    track["point_query"] = query_to_json(entry.query);
    tracks.push_back(std::move(track));
  }
  const json root = {
      {"format", kTracksFormat},
      {"version", kTracksVersion},
      {"coordinates",
       "x, y: raster pixels of the original video; pixel (i, j) covers [j, j+1) x [i, i+1), its centre is "
       "(j + 0.5, i + 0.5)"},
      {"fields",
       "per track, one entry per frame from first_frame: x, y, visible (0/1), p_occluded (occlusion "
       "probability), p_far (probability of an error above 6 px at 256x256); keyframes: frames set by hand"},
      {"video", video_json(table.video)},
      {"tracks", std::move(tracks)}};
  return root.dump(1, '\t', false, json::error_handler_t::replace) + "\n";
}

Expected<TrackTable> tracks_from_json(std::string_view text, const std::string& source,
                                      const TrackImportOptions& options) {
  const VideoBounds bounds{options.width, options.height, options.frame_count};
  try {
    const json root = json::parse(text.begin(), text.end());
    auto format = root.find("format");
    if (!root.is_object() || format == root.end() || *format != kTracksFormat) {
      return corrupt_data(
          fmt::format("{} is not a Trackscope tracks file (\"format\" is not \"{}\")", source, kTracksFormat));
    }
    const int64_t version = integer(field(root, "version", source), source + ": version");
    if (version > kTracksVersion) {
      return unsupported(fmt::format("{} is a version {} tracks file, newer than this Trackscope reads ({})", source,
                                     version, kTracksVersion));
    }
    TrackTable table;
    if (auto video = root.find("video"); video != root.end() && video->is_object()) {
      // The file's own record of its video is informational: values that are missing or absurd read as unknown.
      auto whole = [&](const char* key, int64_t high) -> int64_t {
        auto it = video->find(key);
        const std::optional<int64_t> v = it == video->end() ? std::nullopt : as_int64(*it);
        return v && *v >= 0 && *v <= high ? *v : 0;
      };
      if (auto it = video->find("path"); it != video->end() && it->is_string())
        table.video.path = it->get<std::string>();
      table.video.width = static_cast<int>(whole("width", kMaxImageSidePx));
      table.video.height = static_cast<int>(whole("height", kMaxImageSidePx));
      table.video.frame_count = whole("frame_count", kMaxFrameIndex);
      if (auto it = video->find("frames_per_second"); it != video->end() && it->is_number()) {
        const double fps = it->get<double>();
        table.video.frames_per_second = std::isfinite(fps) && fps > 0.0 && fps <= 1e6 ? fps : 0.0;
      }
    }
    const json& tracks = field(root, "tracks", source);
    if (!tracks.is_array()) fail("tracks", "expected an array");
    std::set<PointId> ids;
    for (size_t i = 0; i < tracks.size(); ++i) {
      const std::string where = fmt::format("tracks[{}]", i);
      TableTrack entry;
      entry.id = static_cast<PointId>(
          integer_in(field(tracks[i], "id", where), where + ".id", 0, std::numeric_limits<PointId>::max()));
      if (!ids.insert(entry.id).second) fail(where + ".id", "ids must be unique and >= 0");
      entry.track = track_from_json(tracks[i], where, bounds);
      entry.query = tracks[i].contains("point_query")
                        ? query_from_json(tracks[i]["point_query"], where + ".point_query", bounds)
                        : entry.track.track.query;
      table.tracks.push_back(std::move(entry));
    }
    TRACKSCOPE_RETURN_IF_ERROR(check_imported_tracks(table, options, source));
    return table;
  } catch (const json::parse_error& error) {
    return corrupt_data(fmt::format("{} is not readable JSON{}: {}", source,
                                    error.byte >= text.size() ? " (it ends too early: truncated)" : "", error.what()));
  } catch (const json::out_of_range& error) {
    return corrupt_data(fmt::format("{} is damaged: it holds a number out of range ({})", source, error.what()));
  } catch (const SchemaError& error) {
    return corrupt_data(fmt::format("{} is damaged: {}", source, error.message));
  } catch (const json::exception& error) {
    return corrupt_data(fmt::format("{} is damaged: {}", source, error.what()));
  }
}

std::string tracks_to_coco_json(const TrackTable& table) {
  // One image per frame, one annotation per image holding every track as a keypoint. COCO keypoints use pixel
  // indices (pixel centres at integers), hence x - 0.5; v = 2 visible, 1 labelled but occluded, 0 not tracked.
  int64_t frames = table.video.frame_count;
  for (const TableTrack& entry : table.tracks) frames = std::max(frames, entry.track.track.end_frame());
  json images = json::array(), annotations = json::array(), names = json::array();
  for (const TableTrack& entry : table.tracks) names.push_back(fmt::format("point{}", entry.id));
  auto rounded = [](double value) { return std::round(value * 1e4) / 1e4; };
  for (int64_t frame = 0; frame < frames; ++frame) {
    images.push_back({{"id", frame + 1},
                      {"file_name", fmt::format("frame_{:06d}.png", frame)},
                      {"width", table.video.width},
                      {"height", table.video.height},
                      {"frame_index", frame}});
    json keypoints = json::array();
    int labelled = 0;
    double min_x = std::numeric_limits<double>::max(), min_y = min_x, max_x = -min_x, max_y = -min_x;
    for (const TableTrack& entry : table.tracks) {
      if (!entry.track.track.covers(frame)) {
        keypoints.insert(keypoints.end(), {0, 0, 0});
        continue;
      }
      const TrackPoint& p = entry.track.track.at(frame);
      const double x = rounded(p.x_px - 0.5), y = rounded(p.y_px - 0.5);
      keypoints.insert(keypoints.end(), {json(x), json(y), json(p.visible ? 2 : 1)});
      ++labelled;
      if (p.visible) {
        min_x = std::min(min_x, x), max_x = std::max(max_x, x);
        min_y = std::min(min_y, y), max_y = std::max(max_y, y);
      }
    }
    const bool has_box = max_x >= min_x;
    const double w = has_box ? max_x - min_x : 0.0, h = has_box ? max_y - min_y : 0.0;
    annotations.push_back({{"id", frame + 1},
                           {"image_id", frame + 1},
                           {"category_id", 1},
                           {"keypoints", std::move(keypoints)},
                           {"num_keypoints", labelled},
                           {"bbox", has_box ? json::array({min_x, min_y, w, h}) : json::array({0, 0, 0, 0})},
                           {"area", w * h},
                           {"iscrowd", 0}});
  }
  const json root = {{"info",
                      {{"description",
                        "Trackscope tracks as COCO keypoints: one image per video frame, one annotation per image "
                        "holding every track as a keypoint; x, y in pixel indices (pixel centres at integers, i.e. "
                        "Trackscope's raster coordinate minus 0.5); v = 2 visible, 1 occluded, 0 not tracked"},
                       {"video", table.video.path},
                       {"frames_per_second", table.video.frames_per_second}}},
                     {"images", std::move(images)},
                     {"annotations", std::move(annotations)},
                     {"categories", json::array({{{"id", 1},
                                                  {"name", "tracked_points"},
                                                  {"supercategory", "trackscope"},
                                                  {"keypoints", names},
                                                  {"skeleton", json::array()}}})}};
  return root.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace trackscope::core::io
