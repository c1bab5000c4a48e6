#pragma once
// The tracker interface of the core. gpu/ implements it (LocoTrack on LibTorch); ui/ and the CLI use it only
// through this header. app/ wires a TrackerFactory implementation into whoever needs one.
//
//   std::unique_ptr<TrackerFactory> factory = gpu::make_tracker_factory();     // in app/
//   TrackerOptions options; options.device = "cuda:0"; options.model = "small";
//   if (Status s = options.check(); !s) ...
//   Expected<std::unique_ptr<PointTracker>> tracker = factory->create(options);
//   Expected<TrackSet> tracks = (*tracker)->track(video, request, observer, stop_token);
//
// Threads: a PointTracker is used by one thread at a time (the tracking thread owns every torch/CUDA call of
// a job). TrackObserver callbacks run on that thread; receivers re-post them to their own thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "core/perf/memory_model.h"
#include "core/perf/stage_timing.h"
#include "core/status.h"
#include "core/tracking/device.h"
#include "core/tracking/tracks.h"
#include "core/video/video_source.h"

namespace trackscope::core {

/// How the tracker resizes frames to the model's 256x256 input. (Not core::ResizeFilter of image_resize.h,
/// which names Pillow's filters: the tracker's "bilinear" is the un-antialiased one of the official inference().)
enum class InputResize {
  bilinear,  // as the official inference(): bilinear, align_corners=false, no antialias, on float frames
  lanczos,   // as the official evaluation and demo: PIL Lanczos on uint8 before normalisation
};
const char* to_string(InputResize resize);
Expected<InputResize> parse_input_resize(std::string_view text);

struct TrackerOptions {
  std::string model = "default";  // "default" (the bundled model), "small"/"base" (official checkpoints in the model
                                  // folder), or a weights file path
  std::string device = "auto";    // DeviceId::parse: "auto" (first CUDA device, else CPU), "cpu", "cuda", "cuda:N"
  Precision precision = Precision::fp32;
  InputResize resize = InputResize::bilinear;
  int query_chunk = 0;           // queries per chunk; 0 = chosen from the memory budget
  int64_t memory_budget_mb = 0;  // upper bound for the tracker's working memory; 0 = automatic
  // Long clips (docs/long-videos.md): the memory plan picks whole clip, exact streaming or windowed tracking;
  // these override it.
  LongVideoMode long_video = LongVideoMode::automatic;
  std::string cache_dir;              // exact streaming's cache: a file here; "" = host memory if it fits, else
                                      // a file in the system's temporary folder
  int window_frames = 0;              // windowed: frames per window (0 = the longest that fits)
  int window_overlap = 0;             // windowed: frames shared by neighbouring windows (0 = automatic)
  int64_t host_memory_budget_mb = 0;  // CUDA runs: host memory for caches and stores (0 = automatic)
  // CUDA: cuDNN's autotuning of the backbone's convolutions (unset = on). It pays off over many batches of one
  // shape; a one-shot run of a short clip pays the tuning of every shape it meets (docs/performance-results.md).
  std::optional<bool> cudnn_autotune;

  Status check() const;
};

/// What a tracker instance is: which model, on which device, at which precision.
struct TrackerDescription {
  std::string model_name;  // "LocoTrack-S (bundled default)", "LocoTrack-B (official checkpoint)"
  std::string model_size;  // "small" / "base"
  std::string weights_path;
  std::string weights_sha256;
  DeviceInfo device;
  Precision precision = Precision::fp32;
  int64_t parameter_count = 0;
};

/// The frames to track over: [first_frame, end_frame). end_frame = -1 means to the end of the video.
struct TrackRequest {
  std::vector<Query> queries;
  int64_t first_frame = 0;
  int64_t end_frame = -1;
};

struct TrackProgress {
  double fraction = 0.0;  // 0..1 over the whole request
  int chunks_done = 0;
  int chunk_count = 0;
  std::string phase;  // "decoding", "features", "tracking chunk 2/4"
};

/// Callbacks from a running track() call. All run on the tracking thread; keep them quick.
class TrackObserver {
 public:
  virtual ~TrackObserver() = default;
  virtual void on_progress(const TrackProgress& progress) {}
  /// How the run covers its frames and why (once, before any work).
  virtual void on_plan(const RunPlan& plan) {}
  virtual void on_stage(const StageSample& sample) {}
  /// Tracks of the queries [first_query, first_query + partial.tracks.size()) are final.
  virtual void on_partial(const TrackSet& partial, size_t first_query) {}
};

class PointTracker {
 public:
  virtual ~PointTracker() = default;
  virtual const TrackerDescription& description() const = 0;

  /// Tracks every query of `request` through the frames of the request. Query frames must lie inside the
  /// request's frame range. Returns cancelled when `stop` is requested (checked at chunk boundaries),
  /// out_of_memory when even the smallest split does not fit, invalid_argument for bad queries.
  virtual Expected<TrackSet> track(VideoSource& video, const TrackRequest& request, TrackObserver& observer,
                                   std::stop_token stop) = 0;
};

class TrackerFactory {
 public:
  virtual ~TrackerFactory() = default;
  /// Every device the factory can run on, the CPU first.
  virtual std::vector<DeviceInfo> devices() const = 0;
  /// The runtime the trackers run on (what precision_support needs besides the device). The default, an unknown
  /// runtime, makes the precisions that depend on the LibTorch version unsupported.
  virtual RuntimeInfo runtime() const { return {}; }
  /// Loads the model on the device. Fails with a user-actionable Status (weights missing or mismatched,
  /// no such device, precision unsupported on the device: precision_support(device, runtime()) says which).
  virtual Expected<std::unique_ptr<PointTracker>> create(const TrackerOptions& options) = 0;
};

}  // namespace trackscope::core
