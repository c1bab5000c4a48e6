// The LocoTrack TrackerFactory: model lookup, device and precision checks, weight loading (tracker_factory.h).
#include "gpu/tracker_factory.h"

#include <ATen/ATen.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <system_error>

#include "core/io/safetensors.h"
#include "core/log.h"
#include "gpu/devices.h"
#include "gpu/engine/cuda_support.h"
#include "gpu/tracker/locotrack_tracker.h"
#include "gpu/weights/weights.h"

namespace trackscope::gpu {
namespace {

constexpr const char* kDefaultModelStem = "locotrack_small_default";

std::vector<std::filesystem::path> model_dirs(const TrackerFactoryOptions& options) {
  std::vector<std::filesystem::path> dirs = options.model_dirs;
  if (const char* env = std::getenv("TRACKSCOPE_MODEL_DIR"); env != nullptr && *env != '\0') dirs.emplace_back(env);
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg != '\0') {
    dirs.push_back(std::filesystem::path(xdg) / "trackscope" / "models");
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    dirs.push_back(std::filesystem::path(home) / ".local" / "share" / "trackscope" / "models");
  }
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) dirs.push_back(exe.parent_path().parent_path() / "share" / "trackscope" / "models");
#ifdef TRACKSCOPE_SOURCE_MODEL_DIR
  dirs.emplace_back(TRACKSCOPE_SOURCE_MODEL_DIR);
#endif
  return dirs;
}

// A weights file, a '*' pattern or an implied shard set stem-0.safetensors, ... (what the loader accepts).
bool weights_exist(const std::filesystem::path& path) { return core::io::resolve_shards(path).has_value(); }

std::string joined(const std::vector<std::filesystem::path>& dirs) {
  std::string text;
  for (const auto& d : dirs) text += (text.empty() ? "" : ", ") + d.string();
  return text;
}

class LocoTrackFactory final : public core::TrackerFactory {
 public:
  explicit LocoTrackFactory(TrackerFactoryOptions options) : options_(std::move(options)) {}

  std::vector<core::DeviceInfo> devices() const override { return list_devices(); }
  core::RuntimeInfo runtime() const override { return runtime_versions(); }

  core::Expected<std::unique_ptr<core::PointTracker>> create(const core::TrackerOptions& options) override {
    TRACKSCOPE_RETURN_IF_ERROR(options.check());
    core::Expected<core::DeviceInfo> device = resolve_device(options.device);
    if (!device) return device.status();
    const core::RuntimeInfo runtime = runtime_versions();
    TRACKSCOPE_RETURN_IF_ERROR(core::check_precision(options.precision, *device, runtime));
    if (const core::PrecisionSupport support = core::precision_support(options.precision, *device, runtime);
        support.level != core::SupportLevel::supported) {
      core::log::warn("{} on {} is {}: {}", core::to_string(options.precision), device->id,
                      core::to_string(support.level), support.reason);
    }
    core::Expected<std::filesystem::path> path = resolve_model_path(options.model, options_);
    if (!path) return path.status();
    try {
      core::Expected<weights::LoadedModel> loaded = weights::load_locotrack(*path, c10::Device(device->id), at::kFloat);
      if (!loaded) return loaded.status();
      core::TrackerDescription description;
      const ModelWeightsInfo& info = loaded->info;
      description.model_size = info.model_size;
      description.model_name = info.model_name + (options.model == "default"          ? " (bundled default)"
                                                  : !info.official_checkpoint.empty() ? " (official checkpoint)"
                                                                                      : "");
      description.weights_path = path->string();
      description.weights_sha256 = info.sha256.empty() ? "" : info.sha256.front();
      description.device = *device;
      description.precision = options.precision;
      description.parameter_count = info.parameter_count;
      LocoTrackTrackerOptions tracker_options;
      tracker_options.resize = options.resize;
      tracker_options.query_chunk = options.query_chunk;
      tracker_options.memory_budget_bytes = options.memory_budget_mb > 0 ? options.memory_budget_mb * (int64_t{1} << 20)
                                                                         : default_memory_budget_bytes(*device);
      tracker_options.engine.precision = options.precision;
      tracker_options.engine.cudnn_benchmark = options.cudnn_autotune;
      tracker_options.host_memory_budget_bytes = options.host_memory_budget_mb * (int64_t{1} << 20);
      tracker_options.long_video = options.long_video;
      tracker_options.cache_dir = options.cache_dir;
      tracker_options.window_frames = options.window_frames;
      tracker_options.window_overlap = options.window_overlap;
      auto tracker = std::make_unique<LocoTrackTracker>(std::move(loaded->model), description, tracker_options);
      core::log::info("tracker ready: {} on {} ({}), {} path, memory budget {:.1f} GiB", description.model_name,
                      device->id, core::to_string(options.precision), tracker->engine().fused() ? "fused" : "eager",
                      static_cast<double>(tracker_options.memory_budget_bytes) / (1 << 30));
      return std::unique_ptr<core::PointTracker>(std::move(tracker));
    } catch (const std::exception& e) {
      if (device->is_cuda()) cuda_support::empty_cache();
      return core::internal_error(fmt::format("could not prepare the tracker on {}: {}", device->id, e.what()));
    }
  }

 private:
  TrackerFactoryOptions options_;
};

}  // namespace

std::unique_ptr<core::TrackerFactory> make_tracker_factory(TrackerFactoryOptions options) {
  return std::make_unique<LocoTrackFactory>(std::move(options));
}

core::Expected<std::filesystem::path> resolve_model_path(const std::string& model,
                                                         const TrackerFactoryOptions& options) {
  if (model.empty()) return core::invalid_argument("no model given: use default, small, base or a weights file");
  if (model == "default" && !options.default_model.empty()) {
    if (weights_exist(options.default_model)) return options.default_model;
    return core::not_found(fmt::format("the default model {} does not exist", options.default_model.string()));
  }
  const std::vector<std::filesystem::path> dirs = model_dirs(options);
  if (model == "default") {
    for (const auto& dir : dirs) {
      const std::filesystem::path candidate = dir / (std::string(kDefaultModelStem) + ".safetensors");
      if (weights_exist(candidate)) return candidate;
    }
    return core::not_found(
        fmt::format("the bundled default model ({}.safetensors) is missing: looked in {}. "
                    "Reinstall Trackscope or pass a weights file",
                    kDefaultModelStem, joined(dirs)));
  }
  if (model == "small" || model == "base") {
    for (const auto& dir : dirs) {
      for (const char* extension : {".ckpt", ".safetensors", ".pt"}) {
        const std::filesystem::path candidate = dir / ("locotrack_" + model + extension);
        if (weights_exist(candidate)) return candidate;
      }
    }
    return core::not_found(fmt::format(
        "the official LocoTrack-{} checkpoint is not installed: put locotrack_{}.ckpt (from the LocoTrack release, "
        "see docs/converting-checkpoints.md) into one of {}, set TRACKSCOPE_MODEL_DIR, or pass its path",
        model == "small" ? "S" : "B", model, joined(dirs)));
  }
  const std::filesystem::path path(model);
  if (weights_exist(path)) return path;
  return core::not_found(fmt::format("weights file {} does not exist (models: default, small, base or a file)", model));
}

core::Status check_precision_supported(core::Precision precision, const core::DeviceInfo& device) {
  return check_precision_supported(precision, device, runtime_versions());
}

core::Status check_precision_supported(core::Precision precision, const core::DeviceInfo& device,
                                       const core::RuntimeInfo& runtime) {
  return core::check_precision(precision, device, runtime);
}

int64_t default_memory_budget_bytes(const core::DeviceInfo& device) {
  if (device.is_cuda()) {
    const cuda_support::MemoryInfo memory = cuda_support::memory_info(device.device_id()->cuda_index());
    const int64_t free_bytes = memory.free_bytes > 0 ? memory.free_bytes : device.memory_bytes;
    return free_bytes / 100 * 85;
  }
  int64_t available = 0;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind("MemAvailable:", 0) == 0) available = std::atoll(line.c_str() + 13) * 1024;  // "... kB"
  }
  if (available <= 0) available = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE) / 2;
  return std::min<int64_t>(available / 100 * 60, int64_t{16} << 30);
}

}  // namespace trackscope::gpu
