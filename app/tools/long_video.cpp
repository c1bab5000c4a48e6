// trackscope-long-video: tracks points through a long clip and reports time, throughput and memory peaks as JSON
// (docs/long-videos.md). The clip is a video file, or a procedural one made in memory frame by frame -- no encoder
// needed, which the GPU machine's FFmpeg lacks: a window panning over the sample scene's texture (a still frame of
// core/video/sample_clip.h), so that every point's true position is known and the tracks' error is reported too.
//
//   trackscope-long-video --synthetic 1920x1080x18000 --points 64 --device cuda:0 --memory-budget-mb 24576
//   trackscope-long-video --video pips2_camel.mp4 --points 64 --random-query-frames 7 --long-video exact --out t.csv
//
// Wiring only: the tracking is trackscope-cli track's (the tracker factory, the memory plan, every mode).
#include <malloc.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <regex>

#include "core/io/queries_csv.h"
#include "core/io/track_formats.h"
#include "core/log.h"
#include "core/tracking/point_tracker.h"
#include "core/video/sample_clip.h"
#include "gpu/cpu_runtime.h"
#include "gpu/devices.h"
#include "gpu/tracker_factory.h"

namespace trackscope {
namespace {

// The panning window's offset in the texture at frame t (30 fps): slow sines, as the ffmpeg test clip of the
// measurements in docs/long-videos.md.
struct Pan {
  int x = 0, y = 0;
};
Pan pan_at(int64_t frame) {
  const double t = static_cast<double>(frame) / 30.0;
  return {static_cast<int>(std::lround(240.0 + 220.0 * std::sin(t / 7.0))),
          static_cast<int>(std::lround(160.0 + 150.0 * std::cos(t / 5.0)))};
}

// A window of width x height panning over a texture 480 x 320 pixels larger: frame t is the texture cropped at
// pan_at(t), so a point at (x, y) on frame 0 is at (x + pan(0) - pan(t)) on frame t.
class PanningVideo final : public core::VideoSource {
 public:
  PanningVideo(int width, int height, int64_t frames) {
    core::SampleClipOptions scene;
    scene.width = width + 480;
    scene.height = height + 320;
    texture_ = core::render_sample_frame(scene, 17);
    info_.path = fmt::format("synthetic:{}x{}x{}", width, height, frames);
    info_.container = "synthetic";
    info_.codec = "rawvideo";
    info_.width = width;
    info_.height = height;
    info_.frame_rate = {30, 1};
    info_.frame_count = frames;
    info_.duration_us = frames * 1'000'000 / 30;
  }
  const core::VideoInfo& info() const override { return info_; }
  core::Expected<core::FramePtr> read_frame(int64_t index, core::FrameSize size) override {
    if (index < 0 || index >= info_.frame_count || !size.native()) {
      return core::invalid_argument(fmt::format("frame {} of {}", index, info_.frame_count));
    }
    const auto start = std::chrono::steady_clock::now();
    auto frame = std::make_shared<core::Frame>();
    frame->index = index;
    frame->pts_us = index * 1'000'000 / 30;
    frame->width = info_.width;
    frame->height = info_.height;
    frame->rgb.resize(static_cast<size_t>(info_.width) * info_.height * 3);
    const Pan pan = pan_at(index);
    const size_t row = static_cast<size_t>(info_.width) * 3;
    for (int y = 0; y < info_.height; ++y) {
      std::memcpy(frame->rgb.data() + static_cast<size_t>(y) * row,
                  texture_.rgb.data() + (static_cast<size_t>(y + pan.y) * texture_.width + pan.x) * 3, row);
    }
    last_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return core::FramePtr(std::move(frame));
  }
  double last_decode_ms() const override { return last_ms_; }

 private:
  core::Frame texture_;
  core::VideoInfo info_;
  double last_ms_ = 0.0;
};

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

// Resident memory now and its peak, MiB (/proc/self/status: VmRSS, VmHWM).
std::pair<double, double> resident_mib() {
  std::ifstream status("/proc/self/status");
  double rss = 0.0, peak = 0.0;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) rss = std::atof(line.c_str() + 6) / 1024.0;
    if (line.rfind("VmHWM:", 0) == 0) peak = std::atof(line.c_str() + 6) / 1024.0;
  }
  return {rss, peak};
}

class Progress final : public core::TrackObserver {
 public:
  void on_plan(const core::RunPlan& plan) override {
    plan_ = plan.summary();
    mode_ = core::to_string(plan.mode);
    std::fprintf(stderr, "memory plan: %s\n", plan_.c_str());
  }
  void on_progress(const core::TrackProgress& p) override {
    const auto now = std::chrono::steady_clock::now();
    if (p.fraction < 1.0 && now - last_ < std::chrono::seconds(10)) return;
    last_ = now;
    const auto [rss, peak] = resident_mib();
    const struct mallinfo2 heap = mallinfo2();
    std::fprintf(stderr, "%5.1f%% %s (resident %.0f MiB, peak %.0f MiB; heap %.0f MiB, in use %.0f MiB)\n",
                 100.0 * p.fraction, p.phase.c_str(), rss, peak, static_cast<double>(heap.arena) / (1 << 20),
                 static_cast<double>(heap.uordblks) / (1 << 20));
  }
  void on_stage(const core::StageSample& s) override {
    stage_ms_[std::string(core::stage_name(s.stage))] += s.elapsed_ms;
  }
  std::string plan_, mode_;
  std::map<std::string, double> stage_ms_;

 private:
  std::chrono::steady_clock::time_point last_{};
};

int run(const Arguments& args) {
  auto fail = [](const std::string& message) {
    std::fprintf(stderr, "trackscope-long-video: %s\n", message.c_str());
    return 1;
  };
  std::unique_ptr<core::VideoSource> video;
  bool panning = false;
  if (!args.synthetic.empty()) {
    std::smatch m;
    if (!std::regex_match(args.synthetic, m, std::regex(R"((\d+)x(\d+)x(\d+))"))) {
      return fail("--synthetic WIDTHxHEIGHTxFRAMES, e.g. 1920x1080x18000");
    }
    const int width = std::stoi(m[1]), height = std::stoi(m[2]);
    if (width < 64 || height < 64 || width + 480 > 4096 || height + 320 > 4096 || width % 2 || height % 2) {
      return fail("synthetic frames must be even and within 64..3616 x 64..3776");
    }
    video = std::make_unique<PanningVideo>(width, height, std::stoll(m[3]));
    panning = true;
  } else {
    core::Expected<std::unique_ptr<core::VideoSource>> opened = core::VideoSource::open(args.video);
    if (!opened) return fail(opened.status().message());
    video = std::move(*opened);
  }
  const core::VideoInfo& info = video->info();
  // Queries from a file, or on frame 0: one in the middle, or a grid over the frame inside a 6% margin.
  core::TrackRequest request;
  request.end_frame = args.end;
  const int side = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(args.points))));
  if (!args.queries.empty()) {
    core::Expected<std::vector<core::Query>> read = core::read_queries_csv(args.queries);
    if (!read) return fail(read.status().message());
    request.queries = std::move(*read);
  }
  std::mt19937 random(static_cast<unsigned>(std::max(0, args.random_frames_seed)));
  const int64_t last_frame = (args.end > 0 ? std::min(args.end, info.frame_count) : info.frame_count) - 1;
  std::uniform_int_distribution<int64_t> frame_of(0, std::max<int64_t>(0, last_frame));
  for (int i = 0; i < args.points && args.queries.empty(); ++i) {
    const double u = args.points == 1 ? 0.5 : 0.06 + 0.88 * (i % side + 0.5) / side;
    const double v = args.points == 1 ? 0.5 : 0.06 + 0.88 * (i / side + 0.5) / side;
    const int64_t frame = args.random_frames_seed >= 0 ? frame_of(random) : 0;
    request.queries.push_back({frame, std::floor(u * info.width) + 0.5, std::floor(v * info.height) + 0.5});
  }

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
  if (args.threads > 0) gpu::set_cpu_threads(args.threads);
  std::unique_ptr<core::TrackerFactory> factory = gpu::make_tracker_factory({});
  core::Expected<std::unique_ptr<core::PointTracker>> tracker = factory->create(options);
  if (!tracker) return fail(tracker.status().message());
  const std::string device = (*tracker)->description().device.id;
  gpu::reset_peak_device_memory(device);

  Progress progress;
  const auto start = std::chrono::steady_clock::now();
  core::Expected<core::TrackSet> tracks = (*tracker)->track(*video, request, progress, {});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!tracks) return fail(tracks.status().message());
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);

  nlohmann::json report;
  report["video"] = panning ? info.path.string() : args.video;
  report["frames"] = tracks->frame_count;
  report["points"] = static_cast<int>(request.queries.size());
  report["device"] = device;
  report["model"] = (*tracker)->description().model_name;
  report["precision"] = args.precision;
  report["mode"] = progress.mode_;
  report["plan"] = progress.plan_;
  report["seconds"] = seconds;
  report["frames_per_second"] = static_cast<double>(tracks->frame_count) / seconds;
  report["peak_rss_mib"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
  report["peak_device_mib"] = static_cast<double>(gpu::peak_device_memory_bytes(device)) / (1 << 20);
  report["stage_ms"] = progress.stage_ms_;
  if (panning) {
    // Error against the truth where the point stays inside the frame.
    double sum = 0.0;
    std::vector<double> errors;
    int visible = 0;
    for (const core::Track& track : tracks->tracks) {
      const Pan origin = pan_at(track.query.frame);
      for (int64_t f = 0; f < tracks->frame_count; ++f) {
        const Pan pan = pan_at(tracks->first_frame + f);
        const double x = track.query.x_px + origin.x - pan.x, y = track.query.y_px + origin.y - pan.y;
        if (x < 0 || y < 0 || x >= info.width || y >= info.height) continue;
        const core::TrackPoint& p = track.points[static_cast<size_t>(f)];
        const double e = std::hypot(p.x_px - x, p.y_px - y);
        errors.push_back(e);
        sum += e;
        visible += p.visible ? 1 : 0;
      }
    }
    std::sort(errors.begin(), errors.end());
    report["error_px_mean"] = errors.empty() ? 0.0 : sum / static_cast<double>(errors.size());
    report["error_px_median"] = errors.empty() ? 0.0 : errors[errors.size() / 2];
    report["error_px_p99"] = errors.empty() ? 0.0 : errors[errors.size() * 99 / 100];
    report["within_8px"] =
        errors.empty() ? 0.0
                       : static_cast<double>(std::lower_bound(errors.begin(), errors.end(), 8.0) - errors.begin()) /
                             static_cast<double>(errors.size());
    report["called_visible"] = errors.empty() ? 0.0 : static_cast<double>(visible) / static_cast<double>(errors.size());
  }
  const std::string text = report.dump(2);
  std::printf("%s\n", text.c_str());
  if (!args.json.empty()) std::ofstream(args.json) << text << "\n";
  if (!args.out.empty()) {
    core::io::TrackTable table;
    table.video = {report["video"].get<std::string>(), info.width, info.height, info.frame_count,
                   info.frame_rate.to_double()};
    for (size_t i = 0; i < tracks->tracks.size(); ++i) {
      core::io::TableTrack row;
      row.id = static_cast<core::PointId>(i);
      row.query = tracks->tracks[i].query;
      row.track.track = tracks->tracks[i];
      table.tracks.push_back(std::move(row));
    }
    if (core::Status s = core::io::write_tracks(args.out, table, core::io::TrackFormat::csv); !s) {
      return fail(s.message());
    }
  }
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
  source->add_option("--synthetic", args.synthetic, "WIDTHxHEIGHTxFRAMES of a procedural panning clip");
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
  app.add_option("--threads", args.threads, "CPU threads for LibTorch");
  app.add_option("--end", args.end, "one past the last frame (-1 = all)");
  app.add_option("--out", args.out, "tracks as CSV");
  app.add_option("--json", args.json, "the report as a JSON file too");
  CLI11_PARSE(app, argc, argv);
  return run(args);
}
