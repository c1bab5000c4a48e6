#include "core/io/track_table_builder.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/io/input_checks.h"
#include "core/io/json_tracks.h"
#include "core/tracking/track_edit.h"

namespace trackscope::core::io {

using namespace json_detail;

Status TrackTableBuilder::add_metadata_json(std::string_view json_text, int line) {
  try {
    const json meta = json::parse(json_text.begin(), json_text.end());
    const std::string where = fmt::format("{} line {}", source_, line);
    const PointId id = static_cast<PointId>(
        integer_in(field(meta, "id", where), where + ": id", 0, std::numeric_limits<PointId>::max()));
    std::optional<Query> query;
    if (auto it = meta.find("query"); it != meta.end()) query = query_from_json(*it, where + ": query");
    std::vector<int64_t> keyframes;
    if (auto it = meta.find("keyframes"); it != meta.end() && it->is_array()) {
      for (const json& frame : *it) keyframes.push_back(integer(frame, where + ": keyframes"));
    }
    TrackProvenance provenance;
    auto string_of = [&](const char* key) {
      auto it = meta.find(key);
      return it != meta.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    provenance.model = string_of("model");
    provenance.device = string_of("device");
    provenance.precision = string_of("precision");
    set_metadata(id, query, std::move(keyframes), std::move(provenance));
    return {};
  } catch (const SchemaError& error) {
    return corrupt_data(error.message);
  } catch (const json::exception& error) {
    return corrupt_data(fmt::format("{} line {}: the track line is not valid JSON: {}", source_, line, error.what()));
  }
}

void TrackTableBuilder::set_metadata(PointId id, std::optional<Query> query, std::vector<int64_t> keyframes,
                                     TrackProvenance provenance) {
  metadata_[id] = Metadata{query, std::move(keyframes), std::move(provenance)};
}

Status TrackTableBuilder::add(PointId id, const ImportedEstimate& estimate, int64_t line) {
  const TrackPoint& p = estimate.point;
  if (estimate.frame < 0) {
    return corrupt_data(
        fmt::format("{} entry {}: frame {} of track {} is negative", source_, line, estimate.frame, id));
  }
  if (frame_count_ > 0 && estimate.frame >= frame_count_) {
    return corrupt_data(fmt::format(
        "{} entry {}: track {} has an estimate on frame {}, but the video has {} frames: are these the tracks of "
        "another video?",
        source_, line, id, estimate.frame, frame_count_));
  }
  if (estimate.frame >= kMaxFrameIndex) {
    return corrupt_data(fmt::format("{} entry {}: frame {} of track {} is absurd (frames must be below {})", source_,
                                    line, estimate.frame, id, kMaxFrameIndex));
  }
  if (!std::isfinite(p.x_px) || !std::isfinite(p.y_px)) {
    return corrupt_data(fmt::format("{} entry {}: the position of track {} on frame {} is not finite", source_, line,
                                    id, estimate.frame));
  }
  if (!(p.p_occluded >= 0.0f && p.p_occluded <= 1.0f && p.p_far >= 0.0f && p.p_far <= 1.0f)) {
    return corrupt_data(fmt::format("{} entry {}: probabilities must lie in [0, 1]", source_, line));
  }
  if (id < 0) return corrupt_data(fmt::format("{} entry {}: track ids must be >= 0 (got {})", source_, line, id));
  if (!estimates_[id].emplace(estimate.frame, p).second) {
    return corrupt_data(
        fmt::format("{} entry {}: track {} has two estimates for frame {}", source_, line, id, estimate.frame));
  }
  return {};
}

Expected<TrackTable> TrackTableBuilder::finish() {
  int64_t total_span = 0;
  for (const auto& [id, by_frame] : estimates_) {
    if (!by_frame.empty()) total_span += by_frame.rbegin()->first - by_frame.begin()->first + 1;
    if (total_span > kMaxTrackEstimates) {
      return corrupt_data(
          fmt::format("{}: the tracks span more than {} frames in total (track {} alone spans frames {} to {}): a "
                      "frame number is probably wrong",
                      source_, kMaxTrackEstimates, id, by_frame.begin()->first, by_frame.rbegin()->first));
    }
  }
  TrackTable table;
  for (auto& [id, by_frame] : estimates_) {
    if (by_frame.empty()) continue;
    TableTrack entry;
    entry.id = id;
    Track& track = entry.track.track;
    track.first_frame = by_frame.begin()->first;
    const int64_t last = by_frame.rbegin()->first;
    track.points.resize(static_cast<size_t>(last - track.first_frame + 1));
    auto previous = by_frame.begin();
    for (auto it = by_frame.begin(); it != by_frame.end(); ++it) {
      for (int64_t frame = previous->first + 1; frame < it->first; ++frame) {
        const double fraction =
            static_cast<double>(frame - previous->first) / static_cast<double>(it->first - previous->first);
        track.at(frame) = gap_estimate(previous->second, it->second, fraction);
      }
      track.at(it->first) = it->second;
      previous = it;
    }
    const Metadata meta = metadata_.count(id) ? metadata_[id] : Metadata{};
    if (meta.query) {
      entry.query = *meta.query;
    } else {
      auto visible = std::find_if(by_frame.begin(), by_frame.end(), [](const auto& e) { return e.second.visible; });
      if (visible == by_frame.end()) visible = by_frame.begin();
      entry.query = Query{visible->first, visible->second.x_px, visible->second.y_px};
    }
    track.query = entry.query;
    for (int64_t keyframe : meta.keyframes) {
      if (by_frame.count(keyframe) && keyframe != track.query.frame) {
        entry.track.keyframes.push_back(keyframe);
      }
    }
    std::sort(entry.track.keyframes.begin(), entry.track.keyframes.end());
    entry.track.keyframes.erase(std::unique(entry.track.keyframes.begin(), entry.track.keyframes.end()),
                                entry.track.keyframes.end());
    entry.track.provenance = meta.provenance;
    table.tracks.push_back(std::move(entry));
  }
  if (table.tracks.empty()) return corrupt_data(fmt::format("{} holds no track estimates", source_));
  return table;
}

}  // namespace trackscope::core::io
