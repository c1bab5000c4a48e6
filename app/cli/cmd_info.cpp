// trackscope-cli info VIDEO: the video's metadata, how its pixels become RGB, and the damage found by decoding
// every frame, as JSON.
#include <chrono>
#include <iostream>

#include "cli/commands.h"
#include "core/video/video_report.h"
#include "core/video/video_source.h"

namespace trackscope::app {

void add_info_command(CLI::App& app, CliContext& context) {
  CLI::App* command = app.add_subcommand(
      "info",
      "print a video's metadata (size, frame rate, exact frame count, colour tags, ...) and the damage found by "
      "decoding every frame, as JSON");
  auto video = std::make_shared<std::string>();
  auto quick = std::make_shared<bool>(false);
  auto policy = std::make_shared<std::string>("stop");
  auto threads = std::make_shared<int>(0);
  command->add_option("video", *video, "video file, image folder or image pattern (dir/%05d.jpg)")->required();
  command->add_flag("--quick", *quick,
                    "metadata only: do not decode every frame (the integrity section then covers frame 0 and the "
                    "checks made on opening)");
  command
      ->add_option("--bad-images", *policy,
                   "image folders: images that cannot be read or differ in size from the first: stop (fail, naming "
                   "the file), skip (leave them out) or resize (scale other sizes, leave unreadable ones out)")
      ->check(CLI::IsMember({"stop", "skip", "resize"}))
      ->capture_default_str();
  command
      ->add_option("--threads", *threads,
                   "decoder threads for the scan (0 = FFmpeg's choice, as tracking decodes; 1 flags the most frames: "
                   "with frame threads the decoder loses some of its error flags)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  command->callback([&context, video, quick, policy, threads] {
    auto fail = [&context](const core::Status& status) {
      std::cerr << "trackscope-cli info: " << status.message();
      if (status.message().find("image policy") != std::string::npos) std::cerr << " (--bad-images skip|resize)";
      std::cerr << "\n";
      context.exit_code = 1;
    };
    core::VideoOpenOptions options;
    options.decoder_threads = *threads;
    core::Expected<core::ImagePolicy> image_policy = core::parse_image_policy(*policy);
    if (!image_policy) return fail(image_policy.status());
    options.image_policy = *image_policy;
    auto source = core::VideoSource::open(*video, options);
    if (!source) return fail(source.status());
    core::IntegrityReport report = (*source)->integrity();
    double scan_ms = 0.0;
    if (!*quick) {
      const auto start = std::chrono::steady_clock::now();
      core::Expected<core::IntegrityReport> scanned = (*source)->scan_integrity();
      scan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (!scanned) return fail(scanned.status());
      report = std::move(*scanned);
    }
    std::cout << core::video_report_json((*source)->info(), report, !*quick, scan_ms) << "\n";
    if (!report.clean()) std::cerr << "trackscope-cli info: warning: " << report.summary() << "\n";
    context.exit_code = 0;
  });
}

}  // namespace trackscope::app
