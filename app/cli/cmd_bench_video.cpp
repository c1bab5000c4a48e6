// trackscope-cli bench-video VIDEO: sequential decode speed and random-seek latency of a VideoSource.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <chrono>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>

#include "cli/commands.h"
#include "core/io/atomic_file.h"
#include "core/limits.h"
#include "core/video/video_source.h"

namespace trackscope::app {

namespace {

using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Process CPU time (all threads): with other processes competing for the cores, wall time alone overstates
// the cost; CPU time shows what decoding itself takes.
double cpu_ms_now() { return 1000.0 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

double percentile(std::vector<double> values, double fraction) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  // Nearest rank: the smallest value with at least `fraction` of the samples at or below it.
  const auto rank = static_cast<size_t>(std::ceil(fraction * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace

void add_bench_video_command(CLI::App& app, CliContext& context) {
  CLI::App* command = app.add_subcommand(
      "bench-video", "measure sequential decode frames/s and random-seek latency (median, p95) of a video");
  struct Arguments {
    std::string video;
    int seeks = 100;
    uint64_t seed = 1;
    int threads = 0;
    std::string json;
  };
  auto arguments = std::make_shared<Arguments>();
  command->add_option("video", arguments->video, "video file, image folder or image pattern")->required();
  command->add_option("--seeks", arguments->seeks, "number of random frame reads (default 100)")
      ->check(CLI::Range(1, 100000));
  command->add_option("--seed", arguments->seed, "seed of the random frame indices (default 1)");
  command->add_option("--threads", arguments->threads, "decoder threads (0 = FFmpeg's choice)")
      ->check(CLI::Range(0, 64));
  command->add_option("--json", arguments->json, "also write the results to this JSON file");
  command->callback([&context, arguments] {
    context.exit_code = 1;
    core::Expected<core::ThreadCount> threads = core::cap_thread_count(arguments->threads, "--threads");
    if (!threads) {
      std::cerr << "trackscope-cli: error: " << threads.status().message() << "\n";
      return;
    }
    if (!threads->notice.empty()) std::cerr << "trackscope-cli bench-video: " << threads->notice << "\n";
    if (!arguments->json.empty()) {
      if (const core::Status writable = core::io::check_writable(arguments->json); !writable) {
        std::cerr << "trackscope-cli: error: " << writable.message() << "\n";
        return;
      }
    }
    core::VideoOpenOptions options;
    options.decoder_threads = threads->threads;
    const auto open_start = Clock::now();
    auto opened = core::VideoSource::open(arguments->video, options);
    if (!opened) {
      std::cerr << "trackscope-cli: error: " << opened.status().message() << "\n";
      return;
    }
    const double open_ms = milliseconds_since(open_start);
    core::VideoSource& source = **opened;
    const core::VideoInfo& info = source.info();

    const double sequential_cpu_start = cpu_ms_now();
    const auto sequential_start = Clock::now();
    for (int64_t index = 0; index < info.frame_count; ++index) {
      if (auto frame = source.read_frame(index); !frame) {
        std::cerr << "trackscope-cli: error: " << frame.status().message() << "\n";
        return;
      }
    }
    const double sequential_ms = milliseconds_since(sequential_start);
    const double sequential_cpu_ms = cpu_ms_now() - sequential_cpu_start;

    std::mt19937_64 random(arguments->seed);
    std::vector<double> seek_ms;
    const double seek_cpu_start = cpu_ms_now();
    for (int i = 0; i < arguments->seeks; ++i) {
      const auto index = static_cast<int64_t>(random() % static_cast<uint64_t>(info.frame_count));
      const auto start = Clock::now();
      if (auto frame = source.read_frame(index); !frame) {
        std::cerr << "trackscope-cli: error: " << frame.status().message() << "\n";
        return;
      }
      seek_ms.push_back(milliseconds_since(start));
    }
    const double seek_cpu_ms = cpu_ms_now() - seek_cpu_start;
    double mean_ms = 0.0;
    for (double ms : seek_ms) mean_ms += ms / static_cast<double>(seek_ms.size());

    const double fps = static_cast<double>(info.frame_count) / (sequential_ms / 1000.0);
    nlohmann::json out = {{"video", info.path.string()},
                          {"codec", info.codec},
                          {"width", info.width},
                          {"height", info.height},
                          {"frame_count", info.frame_count},
                          {"decoder_threads", arguments->threads},
                          {"hardware_threads", std::thread::hardware_concurrency()},
                          {"open_ms", open_ms},
                          {"sequential",
                           {{"frames", info.frame_count},
                            {"total_ms", sequential_ms},
                            {"frames_per_s", fps},
                            {"cpu_ms", sequential_cpu_ms}}},
                          {"random_seek",
                           {{"count", seek_ms.size()},
                            {"seed", arguments->seed},
                            {"median_ms", percentile(seek_ms, 0.5)},
                            {"p95_ms", percentile(seek_ms, 0.95)},
                            {"mean_ms", mean_ms},
                            {"mean_cpu_ms", seek_cpu_ms / static_cast<double>(seek_ms.size())},
                            {"max_ms", *std::max_element(seek_ms.begin(), seek_ms.end())}}}};
    std::cerr << fmt::format("{}: {}x{} {} frames ({}), open {:.1f} ms\n", info.path.string(), info.width, info.height,
                             info.frame_count, info.codec, open_ms)
              << fmt::format("  sequential decode: {:.1f} frames/s ({:.2f} ms/frame, {:.2f} CPU ms/frame)\n", fps,
                             sequential_ms / static_cast<double>(info.frame_count),
                             sequential_cpu_ms / static_cast<double>(info.frame_count))
              << fmt::format("  random seek ({} reads, seed {}): median {:.2f} ms, p95 {:.2f} ms, max {:.2f} ms\n",
                             seek_ms.size(), arguments->seed, percentile(seek_ms, 0.5), percentile(seek_ms, 0.95),
                             *std::max_element(seek_ms.begin(), seek_ms.end()));
    std::cout << out.dump(2) << "\n";
    if (!arguments->json.empty()) {
      if (const core::Status written = core::io::write_file_atomically(arguments->json, out.dump(2) + "\n"); !written) {
        std::cerr << "trackscope-cli: error: " << written.message() << "\n";
        return;
      }
    }
    context.exit_code = 0;
  });
}

}  // namespace trackscope::app
