// trackscope-cli track VIDEO --queries Q.csv|grid:16x16@frame0 --out tracks.csv|.json|.npz|_dlc.csv|_coco.json|
// .trackscope: tracks the queries through the video with a progress bar on stderr and writes them
// (core/tracking/track_clip.h), or as a project that the GUI opens (`trackscope FILE.trackscope`) on --view-frame.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/io/atomic_file.h"
#include "core/limits.h"
#include "core/perf/memory_model.h"
#include "core/perf/process_clock.h"
#include "core/perf/process_memory.h"
#include "core/tracking/point_tracker.h"
#include "core/tracking/progress_bar.h"
#include "core/tracking/query_spec.h"
#include "core/tracking/track_clip.h"
#include "core/video/read_ahead_source.h"
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
  int decode_threads = 0;
  std::string cudnn_benchmark = "auto";
  int64_t view_frame = 0;
  bool quiet = false;
  std::string bad_images = "stop";
  std::string long_video = "auto";  // docs/long-videos.md
  std::string cache_dir;
  int window_frames = 0;
  int window_overlap = 0;
  int64_t host_memory_budget_mb = 0;
  int64_t read_ahead_mb = -1;  // -1 = automatic: 512 on a CUDA device, 0 on the CPU
};

int run_track(const TrackArguments& args) {
  auto fail = [](const core::Status& status) {
    const bool policy_hint = status.message().find("image policy") != std::string::npos;
    std::fprintf(stderr, "trackscope-cli track: %s%s\n", status.message().c_str(),
                 policy_hint ? " (--bad-images skip|resize)" : "");
    return status.code() == core::StatusCode::invalid_argument ? 2 : 1;
  };
  core::Expected<core::ClipOutput> output = core::ClipOutput::from_path(args.out);
  if (!output) return fail(output.status().with_context("--out"));
  if (args.first_frame < 0)
    return fail(core::invalid_argument(fmt::format("--first {} is negative", args.first_frame)));
  if (args.end_frame < -1 || (args.end_frame != -1 && args.end_frame <= args.first_frame)) {
    return fail(core::invalid_argument(fmt::format(
        "--end {}: give one past the last frame to track (greater than --first {}), or -1 for the end of the video",
        args.end_frame, args.first_frame)));
  }
  core::Expected<core::ThreadCount> threads = core::cap_thread_count(args.threads, "--threads");
  if (!threads) return fail(threads.status());
  if (!threads->notice.empty()) std::fprintf(stderr, "trackscope-cli track: %s\n", threads->notice.c_str());
  core::Expected<core::ThreadCount> decode_threads = core::cap_thread_count(args.decode_threads, "--decode-threads");
  if (!decode_threads) return fail(decode_threads.status());
  if (!decode_threads->notice.empty()) {
    std::fprintf(stderr, "trackscope-cli track: %s\n", decode_threads->notice.c_str());
  }
  // The output is checked before the work: an unwritable --out fails now, not after the whole tracking run.
  if (core::Status writable = core::io::check_writable(args.out); !writable) return fail(writable);
  core::Expected<core::QuerySpec> query_spec = core::parse_query_spec(args.queries);
  if (!query_spec) return fail(query_spec.status());
  core::VideoOpenOptions video_options;
  core::Expected<core::ImagePolicy> image_policy = core::parse_image_policy(args.bad_images);
  if (!image_policy) return fail(image_policy.status());
  video_options.image_policy = *image_policy;
  video_options.decoder_threads = decode_threads->threads;
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
  // One process tracks one clip here, so cuDNN's autotuning (1-3 s on the H200 for the shapes of one clip) is
  // rarely repaid: it saves ~0.1 ms per frame in fp32 and ~0 in fp16 (docs/performance-results.md).
  options.cudnn_autotune = args.cudnn_benchmark == "on";
  core::Expected<core::LongVideoMode> long_video = core::parse_long_video_mode(args.long_video);
  if (!long_video) return fail(long_video.status());
  options.long_video = *long_video;
  options.cache_dir = args.cache_dir;
  options.window_frames = args.window_frames;
  options.window_overlap = args.window_overlap;
  options.host_memory_budget_mb = args.host_memory_budget_mb;
  if (core::Status s = options.check(); !s) return fail(s);

  const auto open_started = std::chrono::steady_clock::now();
  core::Expected<std::unique_ptr<core::VideoSource>> opened = core::VideoSource::open(args.video, video_options);
  if (!opened) return fail(opened.status());
  core::Expected<std::vector<core::Query>> queries = core::resolve_queries(*query_spec, (*opened)->info());
  if (!queries) return fail(queries.status());
  std::unique_ptr<core::VideoSource> video = std::move(*opened);
  // Decoding the clip's start overlaps the device initialisation and model loading below, which a one-shot process
  // cannot otherwise hide (~1 s on a GPU). Automatic: on for a CUDA device only; on the CPU the model loads at once,
  // the prefetcher already overlaps decoding with compute, and the buffer would sit outside the memory plan.
  int64_t read_ahead_mb = args.read_ahead_mb;
  if (read_ahead_mb < 0) {
    const core::Expected<core::DeviceInfo> device = gpu::resolve_device(args.device);
    read_ahead_mb = device && device->is_cuda() ? 512 : 0;
    // The tracker runs where the read-ahead was decided for ("auto" resolved once); an unresolvable name is left
    // for the factory to report.
    if (device) options.device = device->id;
  }
  const core::ReadAheadVideoSource* read_ahead = nullptr;
  if (read_ahead_mb > 0) {
    auto wrapped = std::make_unique<core::ReadAheadVideoSource>(
        std::move(video),
        core::ReadAheadOptions{
            .first_frame = args.first_frame, .end_frame = args.end_frame, .budget_bytes = read_ahead_mb << 20});
    read_ahead = wrapped.get();
    video = std::move(wrapped);
  }
  const auto create_started = std::chrono::steady_clock::now();

  gpu::keep_freed_host_memory();
  if (threads->threads > 0) gpu::set_cpu_threads(threads->threads);
  std::unique_ptr<core::TrackerFactory> factory = gpu::make_tracker_factory({});
  core::Expected<std::unique_ptr<core::PointTracker>> tracker = factory->create(options);
  if (!tracker) return fail(tracker.status());
  const core::TrackerDescription& description = (*tracker)->description();
  gpu::reset_peak_device_memory(description.device.id);
  const auto seconds = [](auto from, auto to) { return std::chrono::duration<double>(to - from).count(); };
  const double open_s = seconds(open_started, create_started);
  const double create_s = seconds(create_started, std::chrono::steady_clock::now());
  const std::optional<double> ready_s = core::seconds_since_process_start();
  const core::ReadAheadStats ahead_at_ready = read_ahead ? read_ahead->stats() : core::ReadAheadStats{};

  core::TrackClipRequest request;
  request.video_path = args.video;
  request.queries = std::move(*queries);
  request.first_frame = args.first_frame;
  request.end_frame = args.end_frame;
  request.outputs = {*output};
  request.view_frame = args.view_frame;
  // The memory plan is printed with --quiet too: how the run covers its frames is in it.
  core::ProgressBar progress({.enabled = !args.quiet, .print_plan = true});
  core::Expected<core::TrackClipResult> result = core::track_clip(**tracker, *video, request, progress);
  if (!result) return fail(result.status());
  // The tracker decoded every frame it tracked over: warn about those the decoder found damaged.
  core::IntegrityReport integrity = video->integrity();
  std::erase_if(integrity.damaged_frames, [&](const auto& frame) {
    return frame.index < args.first_frame || (args.end_frame >= 0 && frame.index >= args.end_frame);
  });
  if (!integrity.clean()) {
    std::fprintf(stderr, "trackscope-cli track: warning: tracked over a damaged video: %s; tracks there may be wrong\n",
                 integrity.summary().c_str());
  }

  const double device_peak_mib = static_cast<double>(gpu::peak_device_memory_bytes(description.device.id)) / (1 << 20);
  std::fprintf(
      stderr,
      "tracked %zu points over %lld frames in %.2f s on %s (%s from %s, %s); peak host RSS %.0f MiB%s; wrote %s\n",
      result->tracks.tracks.size(), static_cast<long long>(result->tracks.frame_count), result->track_seconds,
      description.device.id.c_str(), description.model_name.c_str(), description.weights_path.c_str(),
      core::to_string(description.precision), core::peak_resident_mib(),
      description.device.is_cuda() ? fmt::format(", peak device memory {:.0f} MiB", device_peak_mib).c_str() : "",
      args.out.c_str());
  // Decode and resize run on the tracker's prefetch thread, overlapped with the compute (device time on a GPU).
  std::fprintf(stderr, "phases: %s (decode and resize overlapped with compute; tracking wall %.2f s)\n",
               result->phases.summary().c_str(), result->track_seconds);
  // Where a one-shot job's time goes before the tracking starts (docs/performance-results.md, "The frame
  // pipeline"): the process start (shared libraries), the video's open, the device and the model.
  const std::optional<double> done_s = core::seconds_since_process_start();
  std::string ahead = "; no read-ahead";
  if (read_ahead != nullptr) {
    const core::ReadAheadStats total = read_ahead->stats();
    ahead = fmt::format("; read ahead meanwhile {} frames ({:.2f} s of decoding; {} in all, {} of them used)",
                        ahead_at_ready.decoded_frames, ahead_at_ready.decode_ms / 1000.0, total.decoded_frames,
                        total.served_frames);
  }
  std::fprintf(stderr, "start-up: video open %.2f s, device and model %.2f s%s%s%s\n", open_s, create_s,
               ready_s ? fmt::format(", tracker ready {:.2f} s after the process started", *ready_s).c_str() : "",
               ahead.c_str(), done_s ? fmt::format("; process start to file written {:.2f} s", *done_s).c_str() : "");
  return 0;
}

}  // namespace

void add_track_command(CLI::App& app, CliContext& context) {
  CLI::App* command = app.add_subcommand("track", "track query points through a video (progress on stderr)");
  auto args = std::make_shared<TrackArguments>();
  command->add_option("video", args->video, "video file, image folder or image pattern")->required();
  command
      ->add_option("--queries", args->queries,
                   "CSV with a 'frame,x,y' header (original-video pixels), or a grid: grid:16x16@frame0")
      ->required();
  command
      ->add_option("--out", args->out,
                   "tracks.csv (one row per track and frame), .json, .npz (TAP-Vid), _dlc.csv, _coco.json, or a "
                   ".trackscope project the GUI opens")
      ->required();
  command->add_option("--view-frame", args->view_frame, "frame a .trackscope project opens on")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()))
      ->capture_default_str();
  command->add_option("--model", args->model, "default, small, base (official checkpoints) or a weights file")
      ->capture_default_str();
  command->add_option("--device", args->device, "auto, cpu, cuda, cuda:N")->capture_default_str();
  command->add_option("--precision", args->precision, "fp32 (exact), tf32, bf16, fp16")->capture_default_str();
  command->add_option("--resize", args->resize, "bilinear (as the official inference()) or lanczos (as its evaluation)")
      ->capture_default_str();
  command->add_option("--chunk", args->chunk, "queries per chunk (0 = from the memory budget)")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()))
      ->capture_default_str();
  // No range check here: TrackerOptions::check() names what is wrong (negative, or larger than any machine).
  command->add_option("--memory-budget-mb", args->memory_budget_mb, "working-memory budget (0 = automatic)")
      ->capture_default_str();
  command
      ->add_option("--long-video", args->long_video,
                   "auto (the memory plan decides), whole, exact (streamed, equal to whole) or windowed")
      ->capture_default_str();
  command->add_option(
      "--cache-dir", args->cache_dir,
      "exact streaming: put the cache in a file here (default: memory if it fits, else $TMPDIR or /var/tmp)");
  command->add_option("--window", args->window_frames, "windowed: frames per window (0 = the longest that fits)")
      ->capture_default_str();
  command->add_option("--overlap", args->window_overlap, "windowed: frames shared by neighbouring windows (0 = auto)")
      ->capture_default_str();
  command
      ->add_option("--host-memory-budget-mb", args->host_memory_budget_mb,
                   "CUDA runs: host memory for caches and stores (0 = automatic)")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()))
      ->capture_default_str();
  command->add_option("--first", args->first_frame, "first frame to track")->capture_default_str();
  command->add_option("--end", args->end_frame, "one past the last frame (-1 = to the end)")->capture_default_str();
  command
      ->add_option(
          "--threads", args->threads,
          "CPU threads for LibTorch (0 = automatic: OMP_NUM_THREADS if set, else every CPU this process may use)")
      ->capture_default_str();
  command
      ->add_option("--decode-threads", args->decode_threads,
                   "decoder threads (0 = FFmpeg's choice; at most the machine's), as bench-video")
      ->capture_default_str();
  command
      ->add_option("--cudnn-benchmark", args->cudnn_benchmark,
                   "CUDA: cuDNN autotuning of the backbone: auto (off: one clip rarely repays its 1-3 s), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  command
      ->add_option("--read-ahead-mb", args->read_ahead_mb,
                   "decode the clip's first frames into this much memory while the device and model start up (-1 = "
                   "automatic: 512 on a CUDA device, 0 on the CPU; 0 = off)")
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 20))
      ->capture_default_str();
  command->add_flag("-q,--quiet", args->quiet, "no progress bar");
  command
      ->add_option("--bad-images", args->bad_images,
                   "image folders: images that cannot be read or differ in size from the first: stop (fail, naming "
                   "the file), skip (leave them out) or resize (scale other sizes, leave unreadable ones out)")
      ->check(CLI::IsMember({"stop", "skip", "resize"}))
      ->capture_default_str();
  command->callback([&context, args] { context.exit_code = run_track(*args); });
}

}  // namespace trackscope::app
