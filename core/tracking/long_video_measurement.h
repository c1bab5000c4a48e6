#pragma once
// What trackscope-long-video measures (docs/long-videos.md, tools/gpu/long_video.sh): its queries and its JSON
// report. The tracking itself is track_clip's (core/tracking/track_clip.h), the synthetic clip panning_clip's.
//
//   request.queries = spread_queries(64, video->info(), /*end_frame=*/-1, /*random_frames_seed=*/-1);
//   ... track, then fill a LongVideoReport ...
//   std::printf("%s\n", long_video_report_json(report).c_str());
//
// Threads: pure functions.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/tracking/panning_clip.h"
#include "core/tracking/tracks.h"
#include "core/video/video_source.h"

namespace trackscope::core {

/// `points` (>= 1) queries over `video`'s frame: one at the centre, or the first `points` cells (row by row) of a
/// ceil(sqrt(points))-square grid inside a 6% margin; each at the centre of the pixel it falls in. All on frame 0,
/// or, with `random_frames_seed` >= 0, each on a frame drawn uniformly (std::mt19937 seeded with it) from the
/// frames before `end_frame` (-1: every frame of the video).
std::vector<Query> spread_queries(int points, const VideoInfo& video, int64_t end_frame, int random_frames_seed);

struct LongVideoReport {
  std::string video;  // the path, or "synthetic:WxHxFRAMES"
  int64_t frames = 0;
  int points = 0;
  std::string device;
  std::string model;
  std::string precision;
  std::string mode;  // to_string(LongVideoMode) of the plan
  std::string plan;  // RunPlan::summary()
  double seconds = 0.0;
  double peak_rss_mib = 0.0;
  double peak_device_mib = 0.0;
  std::map<std::string, double> stage_ms;
  std::optional<PanningTrackError> error;  // a panning clip's tracks against the truth
};

/// The report as JSON (2-space indent): the fields above under their names, frames_per_second = frames / seconds,
/// and for a panning clip error_px_mean, error_px_median, error_px_p99, within_8px and called_visible.
std::string long_video_report_json(const LongVideoReport& report);

}  // namespace trackscope::core
