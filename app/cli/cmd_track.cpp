// trackscope-cli track VIDEO --queries Q.csv --out tracks.csv|.json|.npz|_dlc.csv|_coco.json|.trackscope: tracks
// the queries through the video with a progress bar on stderr and writes them with core/io/track_formats.h (the
// CSV has one row per track and frame, its header states the coordinate convention), or as a project that the
// GUI opens (`trackscope FILE.trackscope`) on --view-frame.
#include <sys/resource.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "core/io/project.h"
#include "core/io/queries_csv.h"
#include "core/io/video_fingerprint.h"
#include "core/io/track_formats.h"
#include "core/log.h"
#include "core/tracking/annotation.h"
#include "core/tracking/point_tracker.h"
#include "gpu/cpu_runtime.h"
#include "gpu/devices.h"
#include "gpu/tracker_factory.h"

namespace trackscope::app {
namespace {

struct TrackArguments {
  std::string video;
  std::string queries;
  std::string out;
  std::string model = "default";
  std::string device = "auto";
  std::string precision = "fp32";
  std::string resize = "bilinear";
  int chunk = 0;
  int64_t memory_budget_mb = 0;
  int64_t first_frame = 0;
  int64_t end_frame = -1;
  int threads = 0;
  int64_t view_frame = 0;
  bool quiet = false;
};

bool ends_with(const std::string& path, std::string_view suffix) {
  return path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class ProgressBar final : public core::TrackObserver {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled) {}
  void on_progress(const core::TrackProgress& p) override {
    if (!enabled_) return;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(p.fraction * kWidth + 0.5);
    std::fprintf(stderr, "\r[%s%s] %3d%% %-28s", std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(kWidth - filled), '.').c_str(),
                 static_cast<int>(p.fraction * 100 + 0.5), p.phase.c_str());
    if (p.fraction >= 1.0) std::fputc('\n', stderr);
  }

 private:
  bool enabled_;
};

// The output format from the file name: .csv, .json, .npz (TAP-Vid), _dlc.csv (DeepLabCut), _coco.json.
std::optional<core::io::TrackFormat> format_of(const std::string& path) {
  for (const core::io::TrackFormat f :
       {core::io::TrackFormat::deeplabcut_csv, core::io::TrackFormat::coco_json, core::io::TrackFormat::csv,
        core::io::TrackFormat::json, core::io::TrackFormat::tapvid_npz}) {
    if (ends_with(path, core::io::default_suffix(f))) return f;
  }
  return std::nullopt;
}

// The tracks as a project (points with their tracks, the video with its fingerprint), opened on `view_frame`.
core::Status write_project(const std::string& path, const std::string& video_path, const core::VideoInfo& info,
                           const core::TrackSet& tracks, const core::TrackProvenance& provenance, int64_t view_frame) {
  core::Annotation annotation;
  for (const core::Track& track : tracks.tracks) {
    const core::PointId id = annotation.add(track.query);
    if (!annotation.set_track(id, track, provenance)) {
      return core::internal_error(fmt::format("track of point {} could not be attached", id));
    }
  }
  core::Expected<core::io::VideoFingerprint> fingerprint = core::io::fingerprint_video(video_path);
  if (!fingerprint) return fingerprint.status();
  core::io::ProjectVideo video =
      core::io::describe_video(std::filesystem::absolute(video_path).lexically_normal().string(), info);
  video.fingerprint = *fingerprint;
  core::io::ProjectView view;
  view.current_frame = std::clamp<int64_t>(view_frame, 0, std::max<int64_t>(0, info.frame_count - 1));
  view.trail_before_frames = 12;
  return core::io::save_project(path, core::io::make_project(annotation, std::move(video), view));
}

int run_track(const TrackArguments& args) {
  auto fail = [](const core::Status& status) {
    std::fprintf(stderr, "trackscope-cli track: %s\n", status.message().c_str());
    return status.code() == core::StatusCode::invalid_argument ? 2 : 1;
  };
  const bool project = ends_with(args.out, core::io::kProjectExtension);
  const std::optional<core::io::TrackFormat> format = format_of(args.out);
  if (!format && !project) {
    return fail(core::invalid_argument(fmt::format(
        "--out {}: name a .csv, .json, .npz (TAP-Vid), _dlc.csv (DeepLabCut), _coco.json or .trackscope (project) file",
        args.out)));
  }
  if (args.view_frame < 0) return fail(core::invalid_argument("--view-frame must be >= 0"));
  core::Expected<std::unique_ptr<core::VideoSource>> video = core::VideoSource::open(args.video);
  if (!video) return fail(video.status());
  // Queries are checked against the video they are for (frames within it, plausible positions).
  const core::VideoInfo& video_info = (*video)->info();
  core::Expected<std::vector<core::Query>> queries = core::read_queries_csv(
      args.queries, core::QueryBounds{video_info.width, video_info.height, video_info.frame_count});
  if (!queries) return fail(queries.status());

  core::TrackerOptions options;
  options.model = args.model;
  options.device = args.device;
  core::Expected<core::Precision> precision = core::parse_precision(args.precision);
  if (!precision) return fail(precision.status());
  options.precision = *precision;
  core::Expected<core::InputResize> resize = core::parse_input_resize(args.resize);
  if (!resize) return fail(resize.status());
  options.resize = *resize;
  options.query_chunk = args.chunk;
  options.memory_budget_mb = args.memory_budget_mb;
  if (core::Status s = options.check(); !s) return fail(s);

  gpu::keep_freed_host_memory();
  if (args.threads > 0) gpu::set_cpu_threads(args.threads);
  std::unique_ptr<core::TrackerFactory> factory = gpu::make_tracker_factory({});
  core::Expected<std::unique_ptr<core::PointTracker>> tracker = factory->create(options);
  if (!tracker) return fail(tracker.status());
  const core::TrackerDescription& description = (*tracker)->description();
  gpu::reset_peak_device_memory(description.device.id);

  core::TrackRequest request;
  request.queries = std::move(*queries);
  request.first_frame = args.first_frame;
  request.end_frame = args.end_frame;
  ProgressBar progress(!args.quiet);
  const auto start = std::chrono::steady_clock::now();
  core::Expected<core::TrackSet> tracks = (*tracker)->track(**video, request, progress, {});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!tracks) return fail(tracks.status());

  const core::VideoInfo& info = (*video)->info();
  core::io::TrackTable table;
  table.video = {args.video, info.width, info.height, info.frame_count, info.frame_rate.to_double()};
  const core::TrackProvenance provenance{description.model_name, description.device.id,
                                         core::to_string(description.precision)};
  for (size_t i = 0; i < tracks->tracks.size(); ++i) {
    core::io::TableTrack row;
    row.id = static_cast<core::PointId>(i);
    row.query = tracks->tracks[i].query;
    row.track.track = tracks->tracks[i];
    row.track.provenance = provenance;
    table.tracks.push_back(std::move(row));
  }
  const core::Status written = project ? write_project(args.out, args.video, info, *tracks, provenance, args.view_frame)
                                       : core::io::write_tracks(args.out, table, *format);
  if (!written) return fail(written);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double device_peak_mib = static_cast<double>(gpu::peak_device_memory_bytes(description.device.id)) / (1 << 20);
  std::fprintf(
      stderr, "tracked %zu points over %lld frames in %.2f s on %s (%s, %s); peak host RSS %.0f MiB%s; wrote %s\n",
      tracks->tracks.size(), static_cast<long long>(tracks->frame_count), seconds, description.device.id.c_str(),
      description.model_name.c_str(), core::to_string(description.precision),
      static_cast<double>(usage.ru_maxrss) / 1024.0,
      description.device.is_cuda() ? fmt::format(", peak device memory {:.0f} MiB", device_peak_mib).c_str() : "",
      args.out.c_str());
  return 0;
}

}  // namespace

void add_track_command(CLI::App& app, CliContext& context) {
  CLI::App* command = app.add_subcommand("track", "track query points through a video (progress on stderr)");
  auto args = std::make_shared<TrackArguments>();
  command->add_option("video", args->video, "video file, image folder or image pattern")->required();
  command->add_option("--queries", args->queries, "CSV with a 'frame,x,y' header (original-video pixels)")->required();
  command
      ->add_option("--out", args->out,
                   "tracks.csv (one row per track and frame), .json, .npz (TAP-Vid), _dlc.csv, _coco.json, or a "
                   ".trackscope project the GUI opens")
      ->required();
  command->add_option("--view-frame", args->view_frame, "frame a .trackscope project opens on")->capture_default_str();
  command->add_option("--model", args->model, "default, small, base (official checkpoints) or a weights file")
      ->capture_default_str();
  command->add_option("--device", args->device, "auto, cpu, cuda, cuda:N")->capture_default_str();
  command->add_option("--precision", args->precision, "fp32 (exact), tf32, bf16, fp16")->capture_default_str();
  command->add_option("--resize", args->resize, "bilinear (as the official inference()) or lanczos (as its evaluation)")
      ->capture_default_str();
  command->add_option("--chunk", args->chunk, "queries per chunk (0 = from the memory budget)")->capture_default_str();
  command->add_option("--memory-budget-mb", args->memory_budget_mb, "working-memory budget (0 = automatic)")
      ->capture_default_str();
  command->add_option("--first", args->first_frame, "first frame to track")->capture_default_str();
  command->add_option("--end", args->end_frame, "one past the last frame (-1 = to the end)")->capture_default_str();
  command->add_option("--threads", args->threads, "CPU threads for LibTorch (0 = leave the default)")
      ->capture_default_str();
  command->add_flag("-q,--quiet", args->quiet, "no progress bar");
  command->callback([&context, args] { context.exit_code = run_track(*args); });
}

}  // namespace trackscope::app
