#pragma once
// Private to core/io: builds a TrackTable from per-frame estimates as row-oriented files (CSV, npz) deliver
// them. Frames of a track missing between two estimates are filled with occluded estimates interpolated
// between them (track_edit.h gap_estimate); a track's query is its metadata's, else its first visible estimate
// (else its first estimate); keyframes outside the imported frames are dropped.
//
//   TrackTableBuilder builder("tracks.csv");
//   builder.add_metadata_json(R"({"id": 3, "query": {...}})", line);
//   builder.add(3, {12, point}, line);
//   Expected<TrackTable> table = builder.finish();

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/io/track_formats.h"

namespace trackscope::core::io {

struct ImportedEstimate {
  int64_t frame = 0;
  TrackPoint point;
};

class TrackTableBuilder {
 public:
  /// `frame_count` > 0: estimates at or after it are refused (the video's length); 0: only kMaxFrameIndex.
  explicit TrackTableBuilder(std::string source, int64_t frame_count = 0)
      : source_(std::move(source)), frame_count_(frame_count) {}

  /// A "# track {...}" line of our CSV: {"id", "query", "keyframes", "model", "device", "precision"}.
  Status add_metadata_json(std::string_view json_text, int line);
  void set_metadata(PointId id, std::optional<Query> query, std::vector<int64_t> keyframes, TrackProvenance provenance);
  /// One estimate; `line` (or entry index) for messages. A second estimate of one track and frame is an error,
  /// as is a frame past the video's end or a non-finite position.
  Status add(PointId id, const ImportedEstimate& estimate, int64_t line);
  /// The tracks, gaps filled. corrupt_data when they would span more than kMaxTrackEstimates frames in total
  /// (checked before anything is allocated for them).
  Expected<TrackTable> finish();

 private:
  struct Metadata {
    std::optional<Query> query;
    std::vector<int64_t> keyframes;
    TrackProvenance provenance;
  };
  std::string source_;
  int64_t frame_count_ = 0;
  std::map<PointId, std::map<int64_t, TrackPoint>> estimates_;
  std::map<PointId, Metadata> metadata_;
};

}  // namespace trackscope::core::io
