// trackscope-make-sample OUTPUT: renders the bundled sample clip (core only; used by the build).
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>

#include "cli/argument_checks.h"
#include "core/video/sample_clip.h"

int main(int argc, char** argv) {
  using namespace trackscope;
  CLI::App app{"trackscope-make-sample: render Trackscope's procedural sample clip (shapes over a panning background)"};
  std::string output;
  std::string size = "640x360";
  core::SampleClipOptions options;
  int fps = 24;
  app.add_option("output", output, "output video (.mp4: H.264, .webm: VP9, .avi: MJPEG)")->required();
  app.add_option("--size", size, "frame size WxH (default 640x360)")->check(app::frame_size_check());
  app.add_option("--frames", options.frame_count, "number of frames (default 96)");
  app.add_option("--fps", fps, "frames per second (default 24)");
  CLI11_PARSE(app, argc, argv);
  const core::FrameSize frame_size = *core::parse_frame_size(size, "--size");  // checked while parsing
  options.width = frame_size.width;
  options.height = frame_size.height;
  options.frame_rate = {fps, 1};
  const auto start = std::chrono::steady_clock::now();
  if (core::Status status = core::write_sample_clip(output, options); !status) {
    std::fprintf(stderr, "trackscope-make-sample: error: %s\n", status.message().c_str());
    return 1;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("wrote %s (%d frames, %dx%d, %d fps) in %.1f s\n", output.c_str(), options.frame_count, options.width,
              options.height, fps, seconds);
  return 0;
}
