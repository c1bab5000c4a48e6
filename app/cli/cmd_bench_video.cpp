// trackscope-cli bench-video VIDEO: sequential decode speed and random-seek latency of a VideoSource
// (core/video/decode_bench.h). Human-readable lines on stderr, the JSON on stdout and optionally into --json.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/io/atomic_file.h"
#include "core/limits.h"
#include "core/video/decode_bench.h"

namespace trackscope::app {

void add_bench_video_command(CLI::App& app, CliContext& context) {
  CLI::App* command = app.add_subcommand(
      "bench-video", "measure sequential decode frames/s and random-seek latency (median, p95) of a video");
  struct Arguments {
    std::string video;
    core::DecodeBenchOptions options;
    std::string json;
  };
  auto arguments = std::make_shared<Arguments>();
  command->add_option("video", arguments->video, "video file, image folder or image pattern")->required();
  command->add_option("--seeks", arguments->options.seeks, "number of random frame reads (default 100)")
      ->check(CLI::Range(1, 100000));
  command->add_option("--seed", arguments->options.seed, "seed of the random frame indices (default 1)");
  command->add_option("--threads", arguments->options.decoder_threads,
                      "decoder threads (0 = FFmpeg's choice; at most the machine's)");
  command->add_option("--json", arguments->json, "also write the results to this JSON file");
  command->callback([&context, arguments] {
    context.exit_code = 1;
    auto fail = [](const core::Status& status) {
      std::fprintf(stderr, "trackscope-cli: error: %s\n", status.message().c_str());
    };
    core::Expected<core::ThreadCount> threads = core::cap_thread_count(arguments->options.decoder_threads, "--threads");
    if (!threads) return fail(threads.status());
    if (!threads->notice.empty()) std::fprintf(stderr, "trackscope-cli bench-video: %s\n", threads->notice.c_str());
    // Checked before the benchmark runs, not after it.
    if (!arguments->json.empty()) {
      if (core::Status writable = core::io::check_writable(arguments->json); !writable) return fail(writable);
    }
    core::DecodeBenchOptions options = arguments->options;
    options.decoder_threads = threads->threads;
    core::Expected<core::DecodeBench> bench = core::bench_decode(arguments->video, options);
    if (!bench) return fail(bench.status());
    const std::string json = core::decode_bench_json(*bench);
    std::fputs(core::format_decode_bench(*bench).c_str(), stderr);
    std::fputs(json.c_str(), stdout);
    if (!arguments->json.empty()) {
      if (core::Status written = core::io::write_file_atomically(arguments->json, json); !written) {
        return fail(written);
      }
    }
    context.exit_code = 0;
  });
}

}  // namespace trackscope::app
