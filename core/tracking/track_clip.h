#pragma once
// Tracking one clip into output files: what `trackscope-cli track` does, and what `trackscope-cli batch` does for
// each clip with a tracker it keeps loaded.
//
//   Expected<ClipOutput> out = ClipOutput::from_path("bees_dlc.csv");          // the format from the file name
//   TrackClipRequest request{.video_path = "bees.mp4", .queries = *queries, .outputs = {*out}};
//   Expected<TrackClipResult> result = track_clip(*tracker, *video, request, progress, stop);
//
// Every output is written atomically (core/io/atomic_file.h): a crash leaves each file complete or absent.
// Threads: runs on the caller's thread (the tracker's owner); observer callbacks on the same thread.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "core/io/track_formats.h"
#include "core/status.h"
#include "core/tracking/point_tracker.h"

namespace trackscope::core {

/// One file a clip's tracks are written to: a track format (core/io/track_formats.h) or, without one, a
/// .trackscope project the GUI opens.
struct ClipOutput {
  std::filesystem::path path;
  std::optional<io::TrackFormat> format;  // nullopt: a project

  /// By the file name (io::track_format_from_path, or the project extension). invalid_argument naming the
  /// endings that work.
  static Expected<ClipOutput> from_path(const std::filesystem::path& path);
  /// The file `stem + suffix` in `folder` for a format name as a batch job gives it ("csv", "json", "npz",
  /// "dlc", "coco", "trackscope"; io::parse_track_format's names work too).
  static Expected<ClipOutput> from_format_name(std::string_view name, const std::filesystem::path& folder,
                                               const std::string& stem);
  /// "csv", "json", "npz", "dlc", "coco" or "trackscope".
  std::string format_name() const;
};

struct TrackClipRequest {
  std::string video_path;  // as written into the exports' header and the project (a project stores it absolute)
  std::vector<Query> queries;
  int64_t first_frame = 0;
  int64_t end_frame = -1;  // one past the last frame; -1: to the end
  std::vector<ClipOutput> outputs;
  int64_t view_frame = 0;  // the frame a project opens on (clamped to the video)
};

/// Where a clip's time went, by phase, from the tracker's stage samples and the writes (seconds). decode and
/// resize run on the tracker's frame-prefetch thread, overlapped with the rest (their sum with compute can exceed
/// the wall time); device stages count their device time.
struct ClipPhaseTimes {
  double decode_s = 0.0;   // Stage::decode
  double resize_s = 0.0;   // Stage::resize_normalize (host Lanczos and/or the device's resize + normalise)
  double upload_s = 0.0;   // Stage::upload
  double compute_s = 0.0;  // the model: backbone .. refine_transformer, assembly, download
  double write_s = 0.0;    // writing the outputs
  static ClipPhaseTimes from_stages(const std::vector<StageSample>& samples);
  /// "decode 1.20 s, resize 0.31 s, upload 0.05 s, compute 2.40 s, write 0.02 s".
  std::string summary() const;
};

struct TrackClipResult {
  TrackSet tracks;
  double track_seconds = 0.0;       // wall time of the tracker's track() call
  std::vector<StageSample> stages;  // every stage sample the tracker reported, in order
  ClipPhaseTimes phases;            // from `stages`, plus write_s once the outputs are written
  std::optional<RunPlan> plan;      // the tracker's memory plan, when it reported one (TrackObserver::on_plan)
  /// Milliseconds per stage, summed over `stages`, by stage_name ("backbone": 1234.5, ...).
  std::map<std::string, double> stage_ms() const;
  /// Points per second: queries / track_seconds, each point tracked over tracks.frame_count frames (as bench).
  double points_per_second() const;
};

/// Tracks `request.queries` through `video` with `tracker` and writes every output. Every observer callback is
/// passed on to `observer`. The tracker's errors come
/// back unchanged (cancelled, out_of_memory, invalid_argument for queries outside the frames); a failed write
/// is an io_error naming the file.
Expected<TrackClipResult> track_clip(PointTracker& tracker, VideoSource& video, const TrackClipRequest& request,
                                     TrackObserver& observer, std::stop_token stop = {});

/// The two halves of track_clip(), for callers that decide between tracking and writing (the batch command
/// writes only the first of several attempts at a clip to finish).
Expected<TrackClipResult> track_clip_queries(PointTracker& tracker, VideoSource& video, const TrackClipRequest& request,
                                             TrackObserver& observer, std::stop_token stop = {});
Status write_clip_outputs(const TrackClipRequest& request, const TrackClipResult& result, const VideoInfo& video,
                          const TrackerDescription& tracker);

}  // namespace trackscope::core
