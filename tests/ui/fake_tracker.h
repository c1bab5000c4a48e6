#pragma once
// A TrackerFactory / PointTracker for UI tests, following core/tracking/point_tracker.h: deterministic synthetic
// motion (fake_estimate), query chunks with an artificial per-chunk delay on the tracking thread, stage samples
// with known times (fake_stage_ms), partial results per chunk, cancellation at chunk boundaries, and failures on
// demand (a model that cannot load, a missing device, out of memory at some chunk). A log records what ran
// where, so tests can assert threads, creations per device and chunks run.
//
//   auto log = std::make_shared<FakeTrackerLog>();
//   FakeTrackerConfig config;  config.chunk_delay = 100ms;  config.fail_at_chunk = 1;
//   options.tracker_factory = std::make_unique<FakeTrackerFactory>(config, log);
//   options.video_opener = fake_video_opener(library);         // the tracking thread's "decoder"
//   options.telemetry_factory = fake_telemetry_factory();       // "cuda:0" and "cpu" have telemetry
//
// Also: FakeVideoSource (a core::VideoSource over a FakeVideo) and FakeTelemetrySource.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/perf/telemetry.h"
#include "core/tracking/point_tracker.h"
#include "fake_frame_server.h"
#include "ui/tracking/telemetry_monitor.h"
#include "ui/tracking/tracker_service.h"

namespace trackscope::testing {

// ---- synthetic motion ---------------------------------------------------------------------------------------

inline constexpr double kFakeVelocityX = 3.0;  // px per frame
inline constexpr double kFakeVelocityY = 1.5;
inline constexpr float kFakeOccludedP = 0.9f;
inline constexpr float kFakeVisibleP = 0.1f;

/// Where the fake tracker puts query `query` on frame `frame` of a width x height video: a straight line through
/// the query at (3, 1.5) px/frame, clamped into the frame; occluded on 5 of every 24 frames, at a phase that
/// depends on the query's x (so different points are occluded on different frames).
inline core::TrackPoint fake_estimate(const core::Query& query, int64_t frame, int width, int height) {
  const double dt = static_cast<double>(frame - query.frame);
  core::TrackPoint point;
  point.x_px = static_cast<float>(std::clamp(query.x_px + kFakeVelocityX * dt, 0.5, width - 0.5));
  point.y_px = static_cast<float>(std::clamp(query.y_px + kFakeVelocityY * dt, 0.5, height - 0.5));
  const int64_t phase = static_cast<int64_t>(query.x_px / 10.0) % 24;
  const bool occluded = frame != query.frame && (frame + phase) % 24 >= 12 && (frame + phase) % 24 <= 16;
  point.p_occluded = occluded ? kFakeOccludedP : kFakeVisibleP;
  point.p_far = 0.05f;
  point.visible = core::visible_from_probabilities(point.p_occluded, point.p_far);
  return point;
}

/// The time the fake reports for one execution of a stage (ms); refinement stages run 4 iterations per chunk.
inline double fake_stage_ms(core::Stage stage) {
  switch (stage) {
    case core::Stage::decode: return 4.0;
    case core::Stage::backbone: return 2.0;
    case core::Stage::init: return 0.5;
    case core::Stage::refine_correlation: return 0.25;
    case core::Stage::refine_encoder: return 0.5;
    case core::Stage::refine_transformer: return 0.75;
    default: return 0.0;
  }
}
inline constexpr int kFakeIterations = 4;

// ---- tracker and factory ------------------------------------------------------------------------------------

struct FakeTrackerConfig {
  int query_chunk = 2;                        // queries per chunk
  std::chrono::milliseconds chunk_delay{20};  // slept on the tracking thread per chunk
  std::chrono::milliseconds create_delay{0};  // slept on the loader thread per creation
  std::optional<int> fail_at_chunk;           // track() fails with `failure` on reaching this chunk
  core::Status failure = core::out_of_memory("CUDA out of memory: tried to allocate 2.00 GiB (fake)");
  std::map<std::string, core::Status> model_errors;  // model name -> creation error ("no weights installed")
  std::optional<core::RunPlan> plan;                 // reported through on_plan before any work
};

/// What the fakes did. Thread-safe.
class FakeTrackerLog {
 public:
  void created(const core::TrackerOptions& options) {
    std::lock_guard lock(mutex_);
    ++creations_[options.device + "/" + options.model + "/" + core::to_string(options.precision)];
    create_threads_.insert(std::this_thread::get_id());
  }
  void chunk_ran() {
    std::lock_guard lock(mutex_);
    ++chunks_;
  }
  void tracking_on_this_thread(const std::string& device) {
    std::lock_guard lock(mutex_);
    track_threads_.insert(std::this_thread::get_id());
    devices_tracked_.push_back(device);
  }
  /// Creations of (device, model, precision), e.g. creations("cpu", "default", "fp32").
  int creations(const std::string& device, const std::string& model = "default",
                const std::string& precision = "fp32") const {
    std::lock_guard lock(mutex_);
    auto it = creations_.find(device + "/" + model + "/" + precision);
    return it == creations_.end() ? 0 : it->second;
  }
  int chunks() const {
    std::lock_guard lock(mutex_);
    return chunks_;
  }
  std::set<std::thread::id> create_threads() const {
    std::lock_guard lock(mutex_);
    return create_threads_;
  }
  std::set<std::thread::id> track_threads() const {
    std::lock_guard lock(mutex_);
    return track_threads_;
  }
  std::vector<std::string> devices_tracked() const {
    std::lock_guard lock(mutex_);
    return devices_tracked_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, int> creations_;
  int chunks_ = 0;
  std::set<std::thread::id> create_threads_, track_threads_;
  std::vector<std::string> devices_tracked_;
};

class FakePointTracker : public core::PointTracker {
 public:
  FakePointTracker(core::TrackerDescription description, FakeTrackerConfig config, std::shared_ptr<FakeTrackerLog> log)
      : description_(std::move(description)), config_(std::move(config)), log_(std::move(log)) {}

  const core::TrackerDescription& description() const override { return description_; }

  core::Expected<core::TrackSet> track(core::VideoSource& video, const core::TrackRequest& request,
                                       core::TrackObserver& observer, std::stop_token stop) override {
    log_->tracking_on_this_thread(description_.device.id);
    const core::VideoInfo& info = video.info();
    const int64_t end = request.end_frame < 0 ? info.frame_count : request.end_frame;
    const size_t queries = request.queries.size();
    const int chunk_size = std::max(1, config_.query_chunk);
    const int chunks =
        static_cast<int>((queries + static_cast<size_t>(chunk_size) - 1) / static_cast<size_t>(chunk_size));
    if (config_.plan) observer.on_plan(*config_.plan);
    // Samples back to back on a fake clock (start_ms), as the real tracker's recorder stamps them.
    double clock_ms = 0.0;
    auto stage = [&](core::StageSample sample) {
      sample.start_ms = clock_ms;
      clock_ms += sample.elapsed_ms;
      observer.on_stage(sample);
    };
    observer.on_progress({0.0, 0, chunks, "decoding"});
    stage({core::Stage::decode, 0, 0, fake_stage_ms(core::Stage::decode)});
    stage({core::Stage::backbone, 0, 0, fake_stage_ms(core::Stage::backbone), core::StageClock::host_steady, 1e9, 1e6});
    core::TrackSet all;
    all.first_frame = request.first_frame;
    all.frame_count = end - request.first_frame;
    for (int chunk = 0; chunk < chunks; ++chunk) {
      if (stop.stop_requested()) return core::cancelled("tracking cancelled");
      if (config_.fail_at_chunk == chunk) return config_.failure;
      std::this_thread::sleep_for(config_.chunk_delay);
      core::TrackSet partial;
      partial.first_frame = all.first_frame;
      partial.frame_count = all.frame_count;
      const size_t first = static_cast<size_t>(chunk * chunk_size);
      for (size_t q = first; q < std::min(queries, first + static_cast<size_t>(chunk_size)); ++q) {
        core::Track track;
        track.query = request.queries[q];
        track.first_frame = request.first_frame;
        for (int64_t frame = request.first_frame; frame < end; ++frame) {
          track.points.push_back(fake_estimate(track.query, frame, info.width, info.height));
        }
        partial.tracks.push_back(track);
      }
      stage({core::Stage::init, chunk, 0, fake_stage_ms(core::Stage::init)});
      for (int iteration = 1; iteration <= kFakeIterations; ++iteration) {
        for (core::Stage refinement :
             {core::Stage::refine_correlation, core::Stage::refine_encoder, core::Stage::refine_transformer}) {
          stage({refinement, chunk, iteration, fake_stage_ms(refinement)});
        }
      }
      for (const core::Track& track : partial.tracks) all.tracks.push_back(track);
      log_->chunk_ran();
      observer.on_partial(partial, first);
      observer.on_progress({static_cast<double>(chunk + 1) / chunks, chunk + 1, chunks,
                            "tracking chunk " + std::to_string(chunk + 1) + "/" + std::to_string(chunks)});
    }
    return all;
  }

 private:
  core::TrackerDescription description_;
  FakeTrackerConfig config_;
  std::shared_ptr<FakeTrackerLog> log_;
};

/// The CPU and one CUDA device with compute capability 8.0 (every precision available).
inline std::vector<core::DeviceInfo> fake_devices() {
  return {{"cpu", "CPU (4 threads)", 4, 0, 0, 0}, {"cuda:0", "NVIDIA A100-SXM4-40GB", 108, 40LL << 30, 8, 0}};
}

class FakeTrackerFactory : public core::TrackerFactory {
 public:
  FakeTrackerFactory(FakeTrackerConfig config, std::shared_ptr<FakeTrackerLog> log,
                     std::vector<core::DeviceInfo> devices = fake_devices())
      : config_(std::move(config)), log_(std::move(log)), devices_(std::move(devices)) {}

  std::vector<core::DeviceInfo> devices() const override { return devices_; }

  core::Expected<std::unique_ptr<core::PointTracker>> create(const core::TrackerOptions& options) override {
    log_->created(options);
    std::this_thread::sleep_for(config_.create_delay);
    auto device = std::find_if(devices_.begin(), devices_.end(), [&](const auto& d) { return d.id == options.device; });
    if (device == devices_.end())
      return core::not_found("no device " + options.device + " (fake devices: cpu, cuda:0)");
    if (auto error = config_.model_errors.find(options.model); error != config_.model_errors.end())
      return error->second;
    core::TrackerDescription description;
    description.model_name = "Fake LocoTrack (" + options.model + ")";
    description.model_size = "small";
    description.device = *device;
    description.precision = options.precision;
    return std::unique_ptr<core::PointTracker>(std::make_unique<FakePointTracker>(description, config_, log_));
  }

 private:
  FakeTrackerConfig config_;
  std::shared_ptr<FakeTrackerLog> log_;
  std::vector<core::DeviceInfo> devices_;
};

// ---- video and telemetry ------------------------------------------------------------------------------------

class FakeVideoSource : public core::VideoSource {
 public:
  FakeVideoSource(const std::filesystem::path& path, FakeVideo video) : video_(std::move(video)) {
    info_.path = path;
    info_.width = video_.width;
    info_.height = video_.height;
    info_.frame_rate = video_.frame_rate;
    info_.frame_count = video_.frame_count;
  }
  const core::VideoInfo& info() const override { return info_; }
  core::Expected<core::FramePtr> read_frame(int64_t index, core::FrameSize /*size*/) override {
    if (index < 0 || index >= video_.frame_count) return core::invalid_argument("frame index out of range");
    return make_fake_frame(video_, index);
  }
  double last_decode_ms() const override { return 0.0; }
  /// The video's damaged frames, as a decoder that read the whole clip would report them.
  core::IntegrityReport integrity() const override {
    core::IntegrityReport report = core::VideoSource::integrity();
    for (int64_t index : video_.damaged_frames) {
      report.damaged_frames.push_back({index, {1, true, false}, "concealed (fake)"});
    }
    return report;
  }

 private:
  FakeVideo video_;
  core::VideoInfo info_;
};

/// The tracking thread's decoder for the videos of `library`.
inline ui::VideoOpenerFactory fake_video_opener(const FakeVideoLibrary& library) {
  return [library](const std::filesystem::path& path) -> core::VideoOpener {
    return [library, path]() -> core::Expected<std::unique_ptr<core::VideoSource>> {
      std::optional<FakeVideo> video = library.find_video(path);
      if (!video) return core::not_found("no such file: " + path.string());
      return std::unique_ptr<core::VideoSource>(std::make_unique<FakeVideoSource>(path, *video));
    };
  };
}

inline constexpr double kFakeSmClockMhz = 1410.0;

class FakeTelemetrySource : public core::TelemetrySource {
 public:
  explicit FakeTelemetrySource(std::string device) : device_(std::move(device)) {}
  std::string description() const override { return "fake telemetry: " + device_; }
  core::Expected<core::TelemetrySample> sample() override {
    core::TelemetrySample sample;
    if (device_ == "cpu") {
      sample.cpu_threads = 4;
      sample.cpu_utilisation_percent = 42.0;
    } else {
      sample.sm_clock_mhz = kFakeSmClockMhz;
      sample.sm_clock_max_mhz = kFakeSmClockMhz;
      sample.power_w = 250.0;
      sample.power_limit_w = 400.0;
      sample.gpu_utilisation_percent = 97.0;
    }
    return sample;
  }

 private:
  std::string device_;
};

/// Telemetry for "cpu" and "cuda:0"; any other device has none ("no NVML").
inline ui::TelemetrySourceFactory fake_telemetry_factory() {
  return [](const std::string& device) -> core::Expected<std::unique_ptr<core::TelemetrySource>> {
    if (device != "cpu" && device != "cuda:0") return core::unsupported("NVML not found (fake)");
    return std::unique_ptr<core::TelemetrySource>(std::make_unique<FakeTelemetrySource>(device));
  };
}

}  // namespace trackscope::testing
