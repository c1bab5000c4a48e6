// trackscope-cli frames VIDEO --at i,j,k --out DIR [--size WxH]: chosen frames as PNG files.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "cli/argument_checks.h"
#include "cli/commands.h"
#include "core/io/atomic_file.h"
#include "core/video/image_io.h"
#include "core/video/video_source.h"

namespace trackscope::app {

void add_frames_command(CLI::App& app, CliContext& context) {
  CLI::App* command = app.add_subcommand("frames", "write chosen frames of a video as PNG files (frame_000042.png)");
  struct Arguments {
    std::string video;
    std::vector<int64_t> indices;
    std::string out;
    std::string size;
  };
  auto arguments = std::make_shared<Arguments>();
  command->add_option("video", arguments->video, "video file, image folder or image pattern")->required();
  command->add_option("--at", arguments->indices, "frame indices (0-based), comma separated")
      ->required()
      ->delimiter(',');
  command->add_option("--out", arguments->out, "output folder (created if missing)")->required();
  command->add_option("--size", arguments->size, "output size WxH (default: native)")->check(frame_size_check());
  command->callback([&context, arguments] {
    context.exit_code = 1;
    // Checked while parsing (frame_size_check).
    const core::FrameSize size =
        arguments->size.empty() ? core::FrameSize{} : *core::parse_frame_size(arguments->size, "--size");
    std::error_code error;
    std::filesystem::create_directories(arguments->out, error);
    if (error) {
      std::cerr << "trackscope-cli: error: cannot create " << arguments->out << ": " << error.message() << "\n";
      return;
    }
    // Each PNG is written atomically; the folder is checked before any frame is decoded.
    if (core::Status writable = core::io::check_writable(std::filesystem::path(arguments->out) / "frame.png");
        !writable) {
      std::cerr << "trackscope-cli: error: " << writable.message() << "\n";
      return;
    }
    auto source = core::VideoSource::open(arguments->video);
    if (!source) {
      std::cerr << "trackscope-cli: error: " << source.status().message() << "\n";
      return;
    }
    for (int64_t index : arguments->indices) {
      auto frame = (*source)->read_frame(index, size);
      if (!frame) {
        std::cerr << "trackscope-cli: error: " << frame.status().message() << "\n";
        return;
      }
      const auto path = std::filesystem::path(arguments->out) / fmt::format("frame_{:06d}.png", index);
      if (core::Status written = core::write_png(path, **frame); !written) {
        std::cerr << "trackscope-cli: error: " << written.message() << "\n";
        return;
      }
      std::cout << path.string() << "\n";
    }
    context.exit_code = 0;
  });
}

}  // namespace trackscope::app
