#include "core/tracking/long_video_measurement.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <random>

namespace trackscope::core {

std::vector<Query> spread_queries(int points, const VideoInfo& video, int64_t end_frame, int random_frames_seed) {
  std::vector<Query> queries;
  const int side = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(points))));
  std::mt19937 random(static_cast<unsigned>(std::max(0, random_frames_seed)));
  const int64_t last_frame = (end_frame > 0 ? std::min(end_frame, video.frame_count) : video.frame_count) - 1;
  std::uniform_int_distribution<int64_t> frame_of(0, std::max<int64_t>(0, last_frame));
  for (int i = 0; i < points; ++i) {
    const int column = i % side, row = i / side;
    const double u = points == 1 ? 0.5 : 0.06 + 0.88 * (column + 0.5) / side;
    const double v = points == 1 ? 0.5 : 0.06 + 0.88 * (row + 0.5) / side;
    const int64_t frame = random_frames_seed >= 0 ? frame_of(random) : 0;
    queries.push_back({frame, std::floor(u * video.width) + 0.5, std::floor(v * video.height) + 0.5});
  }
  return queries;
}

std::string long_video_report_json(const LongVideoReport& report) {
  nlohmann::json json;
  json["video"] = report.video;
  json["frames"] = report.frames;
  json["points"] = report.points;
  json["device"] = report.device;
  json["model"] = report.model;
  json["precision"] = report.precision;
  json["mode"] = report.mode;
  json["plan"] = report.plan;
  json["seconds"] = report.seconds;
  json["frames_per_second"] = static_cast<double>(report.frames) / report.seconds;
  json["peak_rss_mib"] = report.peak_rss_mib;
  json["peak_device_mib"] = report.peak_device_mib;
  json["stage_ms"] = report.stage_ms;
  if (report.error) {
    json["error_px_mean"] = report.error->mean_px;
    json["error_px_median"] = report.error->median_px;
    json["error_px_p99"] = report.error->p99_px;
    json["within_8px"] = report.error->within_8px;
    json["called_visible"] = report.error->called_visible;
  }
  return json.dump(2);
}

}  // namespace trackscope::core
