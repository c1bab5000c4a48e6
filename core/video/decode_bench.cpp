#include "core/video/decode_bench.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <random>
#include <thread>

namespace trackscope::core {
namespace {

using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Process CPU time (all threads).
double cpu_ms_now() { return 1000.0 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

}  // namespace

Status DecodeBenchOptions::check() const {
  if (seeks < 1) return invalid_argument(fmt::format("seeks must be >= 1, got {}", seeks));
  if (decoder_threads < 0)
    return invalid_argument(fmt::format("decoder threads must be >= 0, got {}", decoder_threads));
  return {};
}

double DecodeBench::frames_per_second() const {
  return sequential_ms > 0 ? static_cast<double>(info.frame_count) / (sequential_ms / 1000.0) : 0.0;
}

double DecodeBench::seek_percentile_ms(double fraction) const {
  if (seek_ms.empty()) return 0.0;
  std::vector<double> sorted = seek_ms;
  std::sort(sorted.begin(), sorted.end());
  const auto rank = static_cast<size_t>(std::ceil(fraction * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

Expected<DecodeBench> bench_decode(const std::filesystem::path& video, const DecodeBenchOptions& options) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  DecodeBench bench;
  bench.options = options;
  VideoOpenOptions open_options;
  open_options.decoder_threads = options.decoder_threads;
  const auto open_start = Clock::now();
  Expected<std::unique_ptr<VideoSource>> opened = VideoSource::open(video, open_options);
  if (!opened) return opened.status();
  bench.open_ms = milliseconds_since(open_start);
  VideoSource& source = **opened;
  bench.info = source.info();
  if (bench.info.frame_count <= 0) return corrupt_data(fmt::format("{}: the video has no frames", video.string()));

  const double sequential_cpu_start = cpu_ms_now();
  const auto sequential_start = Clock::now();
  for (int64_t index = 0; index < bench.info.frame_count; ++index) {
    if (Expected<FramePtr> frame = source.read_frame(index); !frame) return frame.status();
  }
  bench.sequential_ms = milliseconds_since(sequential_start);
  bench.sequential_cpu_ms = cpu_ms_now() - sequential_cpu_start;

  std::mt19937_64 random(options.seed);
  const double seek_cpu_start = cpu_ms_now();
  for (int i = 0; i < options.seeks; ++i) {
    const auto index = static_cast<int64_t>(random() % static_cast<uint64_t>(bench.info.frame_count));
    const auto start = Clock::now();
    if (Expected<FramePtr> frame = source.read_frame(index); !frame) return frame.status();
    bench.seek_ms.push_back(milliseconds_since(start));
  }
  bench.seek_cpu_ms = cpu_ms_now() - seek_cpu_start;
  return bench;
}

std::string decode_bench_json(const DecodeBench& bench) {
  const VideoInfo& info = bench.info;
  const double count = static_cast<double>(bench.seek_ms.size());
  double mean_ms = 0.0;
  for (double ms : bench.seek_ms) mean_ms += ms / count;
  const nlohmann::json out = {{"video", info.path.string()},
                              {"codec", info.codec},
                              {"width", info.width},
                              {"height", info.height},
                              {"frame_count", info.frame_count},
                              {"decoder_threads", bench.options.decoder_threads},
                              {"hardware_threads", std::thread::hardware_concurrency()},
                              {"open_ms", bench.open_ms},
                              {"sequential",
                               {{"frames", info.frame_count},
                                {"total_ms", bench.sequential_ms},
                                {"frames_per_s", bench.frames_per_second()},
                                {"cpu_ms", bench.sequential_cpu_ms}}},
                              {"random_seek",
                               {{"count", bench.seek_ms.size()},
                                {"seed", bench.options.seed},
                                {"median_ms", bench.seek_percentile_ms(0.5)},
                                {"p95_ms", bench.seek_percentile_ms(0.95)},
                                {"mean_ms", mean_ms},
                                {"mean_cpu_ms", bench.seek_cpu_ms / count},
                                {"max_ms", *std::max_element(bench.seek_ms.begin(), bench.seek_ms.end())}}}};
  return out.dump(2) + "\n";
}

std::string format_decode_bench(const DecodeBench& bench) {
  const VideoInfo& info = bench.info;
  const double frames = static_cast<double>(info.frame_count);
  return fmt::format("{}: {}x{} {} frames ({}), open {:.1f} ms\n", info.path.string(), info.width, info.height,
                     info.frame_count, info.codec, bench.open_ms) +
         fmt::format("  sequential decode: {:.1f} frames/s ({:.2f} ms/frame, {:.2f} CPU ms/frame)\n",
                     bench.frames_per_second(), bench.sequential_ms / frames, bench.sequential_cpu_ms / frames) +
         fmt::format("  random seek ({} reads, seed {}): median {:.2f} ms, p95 {:.2f} ms, max {:.2f} ms\n",
                     bench.seek_ms.size(), bench.options.seed, bench.seek_percentile_ms(0.5),
                     bench.seek_percentile_ms(0.95), *std::max_element(bench.seek_ms.begin(), bench.seek_ms.end()));
}

}  // namespace trackscope::core
