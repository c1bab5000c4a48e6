#pragma once
// The decoder benchmark behind `trackscope-cli bench-video`: sequential decode speed of every frame, then the
// latency of random frame reads (seeks), of one VideoSource.
//
//   Expected<DecodeBench> bench = bench_decode("bees.mp4", {.seeks = 100});
//   std::cout << decode_bench_json(*bench);           // the JSON the command prints and writes
//
// Wall and process CPU times are both reported: with other processes competing for the cores, wall time alone
// overstates the cost; CPU time shows what decoding itself takes. Threads: runs on the caller's thread.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/video/video_source.h"

namespace trackscope::core {

struct DecodeBenchOptions {
  int seeks = 100;          // random frame reads, >= 1
  uint64_t seed = 1;        // of the random frame indices
  int decoder_threads = 0;  // 0 = FFmpeg's choice

  Status check() const;
};

struct DecodeBench {
  DecodeBenchOptions options;
  VideoInfo info;
  double open_ms = 0.0;
  double sequential_ms = 0.0;      // wall time to decode every frame in order
  double sequential_cpu_ms = 0.0;  // process CPU time of the same
  std::vector<double> seek_ms;     // wall time of each random read
  double seek_cpu_ms = 0.0;        // process CPU time of all random reads

  double frames_per_second() const;
  /// Nearest rank: the smallest seek time with at least `fraction` of the samples at or below it.
  double seek_percentile_ms(double fraction) const;
};

/// Opens the video and measures it. The video's errors (not_found, unsupported, corrupt_data) come back.
Expected<DecodeBench> bench_decode(const std::filesystem::path& video, const DecodeBenchOptions& options);

/// The JSON document (2-space indented, newline-terminated): video, codec, size, frame count, open_ms,
/// "sequential" {frames, total_ms, frames_per_s, cpu_ms}, "random_seek" {count, seed, median_ms, p95_ms,
/// mean_ms, mean_cpu_ms, max_ms}.
std::string decode_bench_json(const DecodeBench& bench);
/// Three human-readable lines: the video, sequential decode, random seek.
std::string format_decode_bench(const DecodeBench& bench);

}  // namespace trackscope::core
