#include "core/video/video_report.h"

#include <nlohmann/json.hpp>

namespace trackscope::core {
namespace {

using Json = nlohmann::json;

Json info_json(const VideoInfo& info) {
  return {{"path", info.path.string()},
          {"container", info.container},
          {"codec", info.codec},
          {"width", info.width},
          {"height", info.height},
          {"frame_rate",
           {{"num", info.frame_rate.num}, {"den", info.frame_rate.den}, {"fps", info.frame_rate.to_double()}}},
          {"frame_count", info.frame_count},
          {"duration_us", info.duration_us},
          {"rotation_deg", info.rotation_deg},
          {"variable_frame_rate", info.variable_frame_rate},
          {"pixel_format", info.pixel_format},
          {"color_matrix", info.color_matrix},
          {"color_range", info.color_range},
          {"rgb_conversion", info.rgb_conversion}};
}

Json integrity_json(const IntegrityReport& report, bool scanned, double scan_ms) {
  Json damaged = Json::array();
  for (const auto& frame : report.damaged_frames) {
    damaged.push_back({{"index", frame.index},
                       {"decoder_errors", frame.integrity.decoder_errors},
                       {"concealed", frame.integrity.concealed},
                       {"detail", frame.detail}});
  }
  auto problems = [](const std::vector<IntegrityReport::ImageProblem>& list) {
    Json out = Json::array();
    for (const auto& problem : list) out.push_back({{"file", problem.file.string()}, {"reason", problem.reason}});
    return out;
  };
  Json json = {{"scanned", scanned},
               {"checked_frames", report.checked_frames},
               {"clean", report.clean()},
               {"damaged_frame_count", report.damaged_frames.size()},
               {"damaged_frames", damaged},
               {"unattributed_errors", report.unattributed_errors},
               {"stream_error", report.stream_error},
               {"skipped_images", problems(report.skipped_images)},
               {"resized_images", problems(report.resized_images)},
               {"summary", report.summary()}};
  if (scanned) json["scan_ms"] = scan_ms;
  return json;
}

}  // namespace

std::string video_report_json(const VideoInfo& info, const IntegrityReport& integrity, bool scanned, double scan_ms) {
  Json json = info_json(info);
  json["integrity"] = integrity_json(integrity, scanned, scan_ms);
  return json.dump(2);
}

}  // namespace trackscope::core
