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
#include <map>

#include <fmt/format.h>

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

Expected<TrackTable> read_tracks_npz(const std::filesystem::path& path, const TrackImportOptions& options) {
  Expected<std::vector<NpyArray>> arrays = read_npz(path);
  if (!arrays) return arrays.status();
  std::map<std::string, const NpyArray*> by_name;
  for (const NpyArray& array : *arrays) by_name[array.name] = &array;
  const std::string source = path.string();
  const NpyArray* points = by_name.count("points") ? by_name["points"] : nullptr;
  const NpyArray* occluded = by_name.count("occluded") ? by_name["occluded"] : nullptr;
  if (points == nullptr || occluded == nullptr) {
    return corrupt_data(fmt::format("{} has no 'points' and 'occluded' arrays (TAP-Vid layout)", source));
  }
  if (points->shape.size() != 3 || points->shape[2] != 2) {
    return corrupt_data(fmt::format("{}: 'points' must have shape [N, T, 2]", source));
  }
  const size_t n = points->shape[0], t = points->shape[1];
  auto matches = [&](const NpyArray* array, std::vector<size_t> shape) {
    return array == nullptr || array->shape == shape;
  };
  if (occluded->shape != std::vector<size_t>{n, t})
    return corrupt_data(fmt::format("{}: 'occluded' must have shape [N, T]", source));
  auto optional = [&](const char* name) { return by_name.count(name) ? by_name[name] : nullptr; };
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

  TrackTableBuilder builder(source);
  for (size_t i = 0; i < n; ++i) {
    const PointId id = ids ? static_cast<PointId>(id_values[i]) : static_cast<PointId>(i);
    std::vector<int64_t> keyframes;
    for (size_t f = 0; f < t; ++f) {
      const size_t k = i * t + f;
      if (covered[k] == 0.0) continue;
      if (hand[k] != 0.0) keyframes.push_back(static_cast<int64_t>(f));
      TrackPoint point;
      point.x_px = static_cast<float>(xy[k * 2] * width);
      point.y_px = static_cast<float>(xy[k * 2 + 1] * height);
      point.visible = occ[k] == 0.0;
      // Without probabilities, the flag is all there is: certain either way.
      point.p_occluded = po.empty() ? (point.visible ? 0.0f : 1.0f) : static_cast<float>(po[k]);
      point.p_far = pf.empty() ? 0.0f : static_cast<float>(pf[k]);
      if (Status s = builder.add(id, {static_cast<int64_t>(f), point}, static_cast<int>(k)); !s) return s;
    }
    std::optional<Query> query;
    if (queries)
      query = Query{static_cast<int64_t>(query_values[i * 3]), query_values[i * 3 + 1], query_values[i * 3 + 2]};
    builder.set_metadata(id, query, std::move(keyframes), {});
  }
  Expected<TrackTable> table = builder.finish();
  if (!table) return table.status();
  table->video.width = static_cast<int>(width);
  table->video.height = static_cast<int>(height);
  table->video.frame_count = static_cast<int64_t>(t);
  return table;
}

}  // namespace trackscope::core::io
