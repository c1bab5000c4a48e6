// trackscope-cli info VIDEO: the video's metadata as JSON.
#include <nlohmann/json.hpp>

#include <iostream>

#include "cli/commands.h"
#include "core/video/video_source.h"

namespace trackscope::app {

namespace {

nlohmann::json video_info_json(const core::VideoInfo& info) {
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
          {"variable_frame_rate", info.variable_frame_rate}};
}

}  // namespace

void add_info_command(CLI::App& app, CliContext& context) {
  CLI::App* command =
      app.add_subcommand("info", "print a video's metadata (size, frame rate, exact frame count, ...) as JSON");
  auto video = std::make_shared<std::string>();
  command->add_option("video", *video, "video file, image folder or image pattern (dir/%05d.jpg)")->required();
  command->callback([&context, video] {
    auto source = core::VideoSource::open(*video);
    if (!source) {
      std::cerr << "trackscope-cli: error: " << source.status().message() << "\n";
      context.exit_code = 1;
      return;
    }
    std::cout << video_info_json((*source)->info()).dump(2) << "\n";
    context.exit_code = 0;
  });
}

}  // namespace trackscope::app
