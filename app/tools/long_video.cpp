// trackscope-long-video: tracks points through a long clip and reports time, throughput and memory peaks as JSON
// (docs/long-videos.md). The clip is a video file, or a procedural one made in memory frame by frame -- no encoder
// needed, which the GPU machine's FFmpeg lacks: a window panning over the sample scene's texture
// (core/tracking/panning_clip.h), so that every point's true position is known and the tracks' error is reported too.
//
//   trackscope-long-video --synthetic 1920x1080x18000 --points 64 --device cuda:0 --memory-budget-mb 24576
//   trackscope-long-video --video pips2_camel.mp4 --points 64 --random-query-frames 7 --long-video exact --out t.csv
//
// Wiring only: the tracking is trackscope-cli track's (the tracker factory, the memory plan, every mode, track_clip),
// the queries and the report core/tracking/long_video_measurement.h's.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli/argument_checks.h"
#include "core/io/atomic_file.h"
#include "core/io/queries_csv.h"
#include "core/perf/process_memory.h"
#include "core/tracking/long_video_measurement.h"
#include "core/tracking/panning_clip.h"
#include "core/tracking/point_tracker.h"
#include "core/tracking/progress_bar.h"
#include "core/tracking/track_clip.h"
#include "core/limits.h"
#include "gpu/cpu_runtime.h"
#include "gpu/devices.h"
#include "gpu/tracker_factory.h"

namespace trackscope {
namespace {

struct Arguments {
  std::string video;
  std::string synthetic;
  int points = 1;
  std::string model = "default";
  std::string device = "auto";
  std::string precision = "fp32";
  std::string long_video = "auto";
  std::string cache_dir;
  int64_t memory_budget_mb = 0;
  int64_t host_memory_budget_mb = 0;
  int window = 0;
  int overlap = 0;
  int threads = 0;
  int64_t end = -1;
  int random_frames_seed = -1;
  std::string queries;
  std::string out;
  std::string json;
};

int run(const Arguments& args) {
  auto fail = [](const std::string& message) {
    std::fprintf(stderr, "trackscope-long-video: %s\n", message.c_str());
    return 1;
  };
  std::unique_ptr<core::VideoSource> video;
  std::optional<core::PanningClipOptions> panning;
  if (!args.synthetic.empty()) {
    panning = *core::parse_panning_clip(args.synthetic, "--synthetic");  // checked while parsing
    video = core::make_panning_clip(*panning);
  } else {
    core::Expected<std::unique_ptr<core::VideoSource>> opened = core::VideoSource::open(args.video);
    if (!opened) return fail(opened.status().message());
    video = std::move(*opened);
  }
  const core::VideoInfo& info = video->info();
  // Queries from a file, or spread over the frame.
  core::TrackClipRequest request;
  request.video_path = panning ? info.path.string() : args.video;
  request.end_frame = args.end;
  if (!args.queries.empty()) {
    core::Expected<std::vector<core::Query>> read = core::read_queries_csv(args.queries);
    if (!read) return fail(read.status().message());
    request.queries = std::move(*read);
  } else {
    request.queries = core::spread_queries(args.points, info, args.end, args.random_frames_seed);
  }
  if (!args.out.empty()) request.outputs = {core::ClipOutput{args.out, core::io::TrackFormat::csv}};

  core::TrackerOptions options;
  options.model = args.model;
  options.device = args.device;
  core::Expected<core::Precision> precision = core::parse_precision(args.precision);
  if (!precision) return fail(precision.status().message());
  options.precision = *precision;
  core::Expected<core::LongVideoMode> mode = core::parse_long_video_mode(args.long_video);
  if (!mode) return fail(mode.status().message());
  options.long_video = *mode;
  options.cache_dir = args.cache_dir;
  options.memory_budget_mb = args.memory_budget_mb;
  options.host_memory_budget_mb = args.host_memory_budget_mb;
  options.window_frames = args.window;
  options.window_overlap = args.overlap;
  if (core::Status s = options.check(); !s) return fail(s.message());
  gpu::keep_freed_host_memory();
  gpu::set_cpu_threads(args.threads > 0 ? args.threads : core::automatic_cpu_threads());
  std::unique_ptr<core::TrackerFactory> factory = gpu::make_tracker_factory({});
  core::Expected<std::unique_ptr<core::PointTracker>> tracker = factory->create(options);
  if (!tracker) return fail(tracker.status().message());
  const core::TrackerDescription& description = (*tracker)->description();
  gpu::reset_peak_device_memory(description.device.id);

  // A line every 10 s with the process's memory (the lines of a log, also on a terminal), and the memory plan.
  core::ProgressBar progress({.mode = core::ProgressBarOptions::Mode::lines,
                              .log_step_percent = 0,
                              .min_interval_s = 10.0,
                              .detail = [] { return core::read_process_memory().summary(); },
                              .print_plan = true});
  core::Expected<core::TrackClipResult> result = core::track_clip_queries(**tracker, *video, request, progress);
  if (!result) return fail(result.status().message());

  core::LongVideoReport report;
  report.video = request.video_path;
  report.frames = result->tracks.frame_count;
  report.points = static_cast<int>(request.queries.size());
  report.device = description.device.id;
  report.model = description.model_name;
  report.precision = args.precision;
  if (result->plan) {
    report.mode = core::to_string(result->plan->mode);
    report.plan = result->plan->summary();
  }
  report.seconds = result->track_seconds;
  report.peak_rss_mib = core::peak_resident_mib();
  report.peak_device_mib = static_cast<double>(gpu::peak_device_memory_bytes(description.device.id)) / (1 << 20);
  report.stage_ms = result->stage_ms();
  if (panning) report.error = core::measure_panning_error(result->tracks, *panning);
  const std::string text = core::long_video_report_json(report);
  std::printf("%s\n", text.c_str());
  if (!args.json.empty()) {
    if (core::Status s = core::io::write_file_atomically(args.json, text + "\n"); !s) return fail(s.message());
  }
  if (core::Status s = core::write_clip_outputs(request, *result, info, description); !s) return fail(s.message());
  return 0;
}

}  // namespace
}  // namespace trackscope

int main(int argc, char** argv) {
  using namespace trackscope;
  CLI::App app{"trackscope-long-video: track points through a long (or synthetic) clip; time, fps, memory as JSON"};
  Arguments args;
  auto* source = app.add_option_group("source");
  source->add_option("--video", args.video, "a video file");
  source->add_option("--synthetic", args.synthetic, "WIDTHxHEIGHTxFRAMES of a procedural panning clip")
      ->check(app::core_check([](const std::string& text) { return core::parse_panning_clip(text, ""); },
                              "WIDTHxHEIGHTxFRAMES"));
  source->require_option(1);
  app.add_option("--points", args.points, "1 (the centre) or N (a grid) on frame 0")->check(CLI::Range(1, 100000));
  app.add_option("--queries", args.queries, "queries from a CSV (frame,x,y) instead of --points");
  app.add_option("--random-query-frames", args.random_frames_seed,
                 "--points on random frames drawn with this seed (default: all on frame 0)");
  app.add_option("--model", args.model, "default, small, base or a weights file");
  app.add_option("--device", args.device, "auto, cpu, cuda:N");
  app.add_option("--precision", args.precision, "fp32, tf32, bf16, fp16");
  app.add_option("--long-video", args.long_video, "auto, whole, exact, windowed");
  app.add_option("--cache-dir", args.cache_dir, "exact streaming: the cache file's folder");
  app.add_option("--memory-budget-mb", args.memory_budget_mb, "device budget (0 = automatic)");
  app.add_option("--host-memory-budget-mb", args.host_memory_budget_mb, "CUDA: host budget (0 = automatic)");
  app.add_option("--window", args.window, "windowed: frames per window");
  app.add_option("--overlap", args.overlap, "windowed: shared frames");
  app.add_option("--threads", args.threads, "CPU threads for LibTorch (0 = OMP_NUM_THREADS if set, else every CPU)");
  app.add_option("--end", args.end, "one past the last frame (-1 = all)");
  app.add_option("--out", args.out, "tracks as CSV");
  app.add_option("--json", args.json, "the report as a JSON file too");
  CLI11_PARSE(app, argc, argv);
  return run(args);
}
