// TAP-Vid style .npz tracks. Arrays (N tracks, T frames of the video):
//   points      [N, T, 2] float32  (x / width, y / height): Trackscope's raster coordinates normalised, so 0 is the
//                                  left/top edge of the image and 1 the right/bottom edge (TAP-Vid's convention)
//   occluded    [N, T]    bool     true where the estimate is occluded or the frame is not tracked
// and, beyond TAP-Vid, so that a Trackscope export reads back completely:
//   tracked     [N, T]    bool     the frame is covered by the track
//   p_occluded  [N, T]    float32  occlusion probability (1 where not tracked)
//   p_far       [N, T]    float32  probability of an error above 6 px at 256x256 (1 where not tracked)
//   keyframe    [N, T]    bool     the estimate was set by hand
//   track_ids   [N]       int32
//   queries     [N, 3]    float64  (frame, x_px, y_px) of each track's query, raster pixels
//   video_size  [2]       int32    (width, height) in pixels
// Untracked frames hold the nearest tracked position in `points`. Files from other tools need only
// `points` and `occluded` (and the video's size from the caller).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "core/io/input_checks.h"
#include "core/io/npz.h"
#include "core/io/track_formats.h"
#include "core/io/track_table_builder.h"

namespace trackscope::core::io {

Status write_tracks_npz(const std::filesystem::path& path, const TrackTable& table) {
  const int width = table.video.width, height = table.video.height;
  if (width <= 0 || height <= 0) return invalid_argument("the TAP-Vid export needs the video's size");
  int64_t frames = table.video.frame_count;
  for (const TableTrack& entry : table.tracks) frames = std::max(frames, entry.track.track.end_frame());
  const size_t n = table.tracks.size(), t = static_cast<size_t>(frames);
  std::vector<float> points(n * t * 2), p_occluded(n * t, 1.0f), p_far(n * t, 1.0f);
  std::vector<bool> occluded(n * t, true), tracked(n * t, false), keyframe(n * t, false);
  std::vector<int32_t> ids(n);
  std::vector<double> queries(n * 3);
  for (size_t i = 0; i < n; ++i) {
    const TableTrack& entry = table.tracks[i];
    const Track& track = entry.track.track;
    ids[i] = entry.id;
    queries[i * 3 + 0] = static_cast<double>(entry.query.frame);
    queries[i * 3 + 1] = entry.query.x_px;
    queries[i * 3 + 2] = entry.query.y_px;
    if (track.points.empty()) continue;
    for (size_t f = 0; f < t; ++f) {
      const int64_t frame = static_cast<int64_t>(f);
      const int64_t nearest = std::clamp(frame, track.first_frame, track.end_frame() - 1);
      const TrackPoint& p = track.at(nearest);
      points[(i * t + f) * 2 + 0] = p.x_px / static_cast<float>(width);
      points[(i * t + f) * 2 + 1] = p.y_px / static_cast<float>(height);
      if (!track.covers(frame)) continue;
      const size_t k = i * t + f;
      occluded[k] = !p.visible;
      tracked[k] = true;
      p_occluded[k] = p.p_occluded;
      p_far[k] = p.p_far;
      keyframe[k] = std::binary_search(entry.track.keyframes.begin(), entry.track.keyframes.end(), frame);
    }
  }
  return write_npz(path, {NpyArray::of("points", {n, t, 2}, points), NpyArray::of("occluded", {n, t}, occluded),
                          NpyArray::of("tracked", {n, t}, tracked), NpyArray::of("p_occluded", {n, t}, p_occluded),
                          NpyArray::of("p_far", {n, t}, p_far), NpyArray::of("keyframe", {n, t}, keyframe),
                          NpyArray::of("track_ids", {n}, ids), NpyArray::of("queries", {n, 3}, queries),
                          NpyArray::of("video_size", {2}, std::vector<int32_t>{width, height})});
}

namespace {

Expected<TrackTable> tracks_from_arrays(const std::vector<NpyArray>& arrays, const std::string& source,
                                        const TrackImportOptions& options) {
  std::map<std::string, const NpyArray*> by_name;
  for (const NpyArray& array : arrays) by_name[array.name] = &array;
  auto optional = [&](const char* name) { return by_name.count(name) ? by_name[name] : nullptr; };
  const NpyArray* points = optional("points");
  const NpyArray* occluded = optional("occluded");
  if (points == nullptr || occluded == nullptr) {
    return corrupt_data(fmt::format("{} has no 'points' and 'occluded' arrays (TAP-Vid layout)", source));
  }
  if (points->shape.size() != 3 || points->shape[2] != 2) {
    return corrupt_data(fmt::format("{}: 'points' must have shape [N, T, 2]", source));
  }
  const size_t n = points->shape[0], t = points->shape[1];
  if (n == 0 || t == 0)
    return corrupt_data(fmt::format("{} holds no track estimates ('points' is [{}, {}, 2])", source, n, t));
  // Checked before anything of size n x t is allocated (an empty axis makes the product of the others free).
  if (t >= static_cast<size_t>(kMaxFrameIndex) || n > static_cast<size_t>(kMaxTrackEstimates) ||
      n * t > static_cast<size_t>(kMaxTrackEstimates)) {
    return corrupt_data(fmt::format("{}: 'points' is [{}, {}, 2], more than the {} estimates this build reads", source,
                                    n, t, kMaxTrackEstimates));
  }
  if (options.frame_count > 0 && static_cast<int64_t>(t) > options.frame_count) {
    return corrupt_data(
        fmt::format("{} holds tracks over {} frames, but the video has {}: are these the tracks of "
                    "another video?",
                    source, t, options.frame_count));
  }
  auto matches = [&](const NpyArray* array, std::vector<size_t> shape) {
    return array == nullptr || array->shape == shape;
  };
  if (occluded->shape != std::vector<size_t>{n, t})
    return corrupt_data(fmt::format("{}: 'occluded' must have shape [N, T]", source));
  const NpyArray *tracked = optional("tracked"), *p_occluded = optional("p_occluded"), *p_far = optional("p_far"),
                 *keyframe = optional("keyframe"), *ids = optional("track_ids"), *queries = optional("queries"),
                 *size = optional("video_size");
  if (!matches(tracked, {n, t}) || !matches(p_occluded, {n, t}) || !matches(p_far, {n, t}) ||
      !matches(keyframe, {n, t}) || !matches(ids, {n}) || !matches(queries, {n, 3}) || !matches(size, {2})) {
    return corrupt_data(fmt::format("{}: an array's shape does not match 'points' [{}, {}, 2]", source, n, t));
  }
  double width = options.width, height = options.height;
  if (size != nullptr) {
    const std::vector<double> wh = size->as_doubles();
    width = wh[0];
    height = wh[1];
    if (!(width >= 1.0 && width <= kMaxImageSidePx && height >= 1.0 && height <= kMaxImageSidePx)) {
      return corrupt_data(fmt::format("{}: video_size ({}, {}) is not an image size (1 to {} px)", source, width,
                                      height, kMaxImageSidePx));
    }
  }
  if (!(width > 0.0 && height > 0.0)) {
    return invalid_argument(
        fmt::format("{} has no video_size: open its video first so that its normalised points can "
                    "be turned into pixels",
                    source));
  }
  const std::vector<double> xy = points->as_doubles(), occ = occluded->as_doubles();
  const std::vector<double> covered = tracked ? tracked->as_doubles() : std::vector<double>(n * t, 1.0);
  const std::vector<double> po = p_occluded ? p_occluded->as_doubles() : std::vector<double>();
  const std::vector<double> pf = p_far ? p_far->as_doubles() : std::vector<double>();
  const std::vector<double> hand = keyframe ? keyframe->as_doubles() : std::vector<double>(n * t, 0.0);
  const std::vector<double> id_values = ids ? ids->as_doubles() : std::vector<double>();
  const std::vector<double> query_values = queries ? queries->as_doubles() : std::vector<double>();
  const int file_width = static_cast<int>(width), file_height = static_cast<int>(height);
  auto probability = [](double p) { return p >= 0.0 && p <= 1.0; };

  TrackTableBuilder builder(source, options.frame_count);
  for (size_t i = 0; i < n; ++i) {
    if (ids && !(id_values[i] >= 0.0 && id_values[i] <= std::numeric_limits<PointId>::max() &&
                 id_values[i] == std::floor(id_values[i]))) {
      return corrupt_data(
          fmt::format("{}: track_ids[{}] = {} is not a track id (an integer >= 0)", source, i, id_values[i]));
    }
    const PointId id = ids ? static_cast<PointId>(id_values[i]) : static_cast<PointId>(i);
    std::vector<int64_t> keyframes;
    for (size_t f = 0; f < t; ++f) {
      const size_t k = i * t + f;
      if (covered[k] == 0.0) continue;
      if (hand[k] != 0.0) keyframes.push_back(static_cast<int64_t>(f));
      // Checked as doubles: a value beyond float's range has no float to become.
      const double x = xy[k * 2] * width, y = xy[k * 2 + 1] * height;
      if (!plausible_position(x, y, file_width, file_height)) {
        return corrupt_data(fmt::format("{}: track {} on frame {} is at ({}, {}) px, which is not plausible: {}",
                                        source, id, f, x, y, position_bounds_text(file_width, file_height)));
      }
      if ((!po.empty() && !probability(po[k])) || (!pf.empty() && !probability(pf[k]))) {
        return corrupt_data(fmt::format("{}: track {} on frame {}: probabilities must lie in [0, 1]", source, id, f));
      }
      TrackPoint point;
      point.x_px = static_cast<float>(x);
      point.y_px = static_cast<float>(y);
      point.visible = occ[k] == 0.0;
      // Without probabilities, the flag is all there is: certain either way.
      point.p_occluded = po.empty() ? (point.visible ? 0.0f : 1.0f) : static_cast<float>(po[k]);
      point.p_far = pf.empty() ? 0.0f : static_cast<float>(pf[k]);
      if (Status s = builder.add(id, {static_cast<int64_t>(f), point}, static_cast<int64_t>(k)); !s) return s;
    }
    std::optional<Query> query;
    if (queries) {
      const double frame = query_values[i * 3], qx = query_values[i * 3 + 1], qy = query_values[i * 3 + 2];
      if (!(frame >= 0.0 && frame < static_cast<double>(t) && frame == std::floor(frame)) ||
          !plausible_position(qx, qy, file_width, file_height)) {
        return corrupt_data(
            fmt::format("{}: the query of track {} (frame {}, x {}, y {}) is not plausible: frames in "
                        "[0, {}), {}",
                        source, id, frame, qx, qy, t, position_bounds_text(file_width, file_height)));
      }
      query = Query{static_cast<int64_t>(frame), qx, qy};
    }
    builder.set_metadata(id, query, std::move(keyframes), {});
  }
  Expected<TrackTable> table = builder.finish();
  if (!table) return table.status();
  table->video.width = file_width;
  table->video.height = file_height;
  table->video.frame_count = static_cast<int64_t>(t);
  TRACKSCOPE_RETURN_IF_ERROR(check_imported_tracks(*table, options, source));
  return table;
}

}  // namespace

Expected<TrackTable> read_tracks_npz(const std::filesystem::path& path, const TrackImportOptions& options) {
  Expected<std::vector<NpyArray>> arrays = read_npz(path);
  if (!arrays) return arrays.status();
  return tracks_from_arrays(*arrays, path.string(), options);
}

Expected<TrackTable> tracks_from_npz(std::string_view bytes, const std::string& source,
                                     const TrackImportOptions& options) {
  Expected<std::vector<NpyArray>> arrays = parse_npz(bytes, source);
  if (!arrays) return arrays.status();
  return tracks_from_arrays(*arrays, source, options);
}

}  // namespace trackscope::core::io
