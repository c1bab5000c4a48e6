// The feature-grid cache of exact streaming (feature_cache.h has the contract).
#include "gpu/engine/feature_cache.h"

#include <ATen/ATen.h>

#include <fmt/format.h>

#include "gpu/engine/engine.h"

namespace trackscope::gpu::engine {
namespace {

// Per-frame shapes of the three levels, in the cache's order (lowres, hires, highest).
const std::array<std::array<int64_t, 3>, 3> kLevelShapes = {{{32, 32, 256}, {64, 64, 128}, {128, 128, 64}}};

int64_t level_elements(size_t level) {
  return kLevelShapes[level][0] * kLevelShapes[level][1] * kLevelShapes[level][2];
}

std::vector<int64_t> level_shape(size_t level, int64_t frames) {
  return {frames, kLevelShapes[level][0], kLevelShapes[level][1], kLevelShapes[level][2]};
}

std::array<const at::Tensor*, 3> levels_of(const model::FeatureGrids& grids) {
  return {&grids.lowres, &grids.hires, &grids.highest};
}

model::FeatureGrids grids_of(std::array<at::Tensor, 3> levels) {
  model::FeatureGrids grids;
  grids.lowres = levels[0].unsqueeze(0);
  grids.hires = levels[1].unsqueeze(0);
  grids.highest = levels[2].unsqueeze(0);
  return grids;
}

}  // namespace

// CUDA bookkeeping: for a file cache, two pinned buffers for reading it onto the device, used in turn (see the
// header); for a host cache, the event after the last asynchronous write, which must complete before the
// page-locked memory is released.
struct FeatureCache::Staging {
  std::array<std::array<at::Tensor, 3>, 2> buffers;
  cuda_support::EventPool pool;
  std::array<cuda_support::Event, 2> copied{};
  std::array<bool, 2> in_flight{};
  int next = 0;
  cuda_support::Event written = nullptr;
  bool write_in_flight = false;
};

core::Expected<FeatureCache> FeatureCache::create(int64_t frames, at::ScalarType dtype, c10::Device device,
                                                  core::CacheLocation location,
                                                  const std::filesystem::path& directory) {
  if (frames <= 0) return core::invalid_argument(fmt::format("a feature cache of {} frames", frames));
  FeatureCache cache;
  cache.frames_ = frames;
  cache.dtype_ = dtype;
  cache.device_ = device;
  cache.location_ = location;
  try {
    if (location == core::CacheLocation::host && device.is_cuda() && cuda_support::available()) {
      cache.staging_ = std::make_unique<Staging>();
      cache.pending_host_ = std::async(std::launch::async, [frames, dtype] {
        std::array<at::Tensor, 3> levels;
        for (size_t level = 0; level < 3; ++level)
          levels[level] = allocate_host_buffer(level_shape(level, frames), dtype, /*page_locked=*/true);
        return levels;
      });
    } else if (location == core::CacheLocation::host) {
      const auto options = at::TensorOptions().dtype(dtype).pinned_memory(true);
      for (size_t level = 0; level < 3; ++level) {
        cache.host_[level] = device.is_cuda() ? at::empty(level_shape(level, frames), options)
                                              : allocate_host_buffer(level_shape(level, frames), dtype);
      }
    } else if (location == core::CacheLocation::file) {
      core::Expected<core::io::ScratchFile> file = core::io::ScratchFile::create(directory, cache.bytes());
      if (!file) return file.status();
      cache.file_.emplace(std::move(*file));
      if (device.is_cuda()) cache.staging_ = std::make_unique<Staging>();
    } else {
      return core::invalid_argument("a feature cache needs a location (host memory or a file)");
    }
  } catch (const std::exception& e) {
    return core::out_of_memory(fmt::format("could not allocate the {:.2f} GiB feature cache in host memory: {}",
                                           static_cast<double>(cache.bytes()) / (1 << 30), e.what()));
  }
  return cache;
}

core::Status FeatureCache::wait_for_host() {
  if (!pending_host_.valid()) return {};
  try {
    host_ = pending_host_.get();
  } catch (const std::exception& e) {
    return core::out_of_memory(fmt::format("could not allocate the {:.2f} GiB feature cache in host memory: {}",
                                           static_cast<double>(bytes()) / (1 << 30), e.what()));
  }
  return {};
}

FeatureCache::FeatureCache(FeatureCache&&) noexcept = default;
FeatureCache& FeatureCache::operator=(FeatureCache&&) noexcept = default;
FeatureCache::~FeatureCache() {
  if (staging_ != nullptr) {
    for (size_t i = 0; i < 2; ++i) {
      if (staging_->in_flight[i]) cuda_support::synchronize_event(staging_->copied[i]);
    }
    if (staging_->write_in_flight) cuda_support::synchronize_event(staging_->written);
  }
}

int64_t FeatureCache::bytes_per_frame() const {
  return (level_elements(0) + level_elements(1) + level_elements(2)) * static_cast<int64_t>(c10::elementSize(dtype_));
}

int64_t FeatureCache::bytes() const { return frames_ * bytes_per_frame(); }

core::Status FeatureCache::write(int64_t first, const model::FeatureGrids& grids) {
  const int64_t count = grids.frames();
  if (first < 0 || first + count > frames_) {
    return core::invalid_argument(
        fmt::format("cache write of frames [{}, {}) outside {}", first, first + count, frames_));
  }
  TRACKSCOPE_RETURN_IF_ERROR(wait_for_host());
  const int64_t element = static_cast<int64_t>(c10::elementSize(dtype_));
  int64_t level_offset = 0;
  const auto levels = levels_of(grids);
  for (size_t level = 0; level < 3; ++level) {
    const at::Tensor source = levels[level]->select(0, 0).to(dtype_);
    const int64_t level_bytes = count * level_elements(level) * element;
    if (location_ == core::CacheLocation::host) {
      // Into page-locked memory the copy is queued on the stream (a later read() on the same stream is ordered
      // after it), so the tracking thread goes on to the next block instead of waiting for each block's grids;
      // into pageable memory (page-locking refused) CUDA completes it before returning.
      host_[level].narrow(0, first, count).copy_(source, /*non_blocking=*/staging_ != nullptr);
    } else {
      const at::Tensor on_host = source.to(at::kCPU).contiguous();
      TRACKSCOPE_RETURN_IF_ERROR(
          file_->write(level_offset + first * level_elements(level) * element, on_host.data_ptr(), level_bytes));
    }
    level_offset += frames_ * level_elements(level) * element;
    bytes_written_ += level_bytes;
  }
  if (staging_ != nullptr && location_ == core::CacheLocation::host) {
    if (staging_->written == nullptr) staging_->written = staging_->pool.next();
    cuda_support::record(staging_->written, device_.index());
    staging_->write_in_flight = cuda_support::available();
  }
  return {};
}

core::Expected<model::FeatureGrids> FeatureCache::read(int64_t first, int64_t count) {
  if (first < 0 || count <= 0 || first + count > frames_) {
    return core::invalid_argument(
        fmt::format("cache read of frames [{}, {}) outside {}", first, first + count, frames_));
  }
  const int64_t element = static_cast<int64_t>(c10::elementSize(dtype_));
  TRACKSCOPE_RETURN_IF_ERROR(wait_for_host());
  std::array<at::Tensor, 3> out;
  if (location_ == core::CacheLocation::host) {
    for (size_t level = 0; level < 3; ++level) {
      const at::Tensor slice = host_[level].narrow(0, first, count);
      out[level] = device_.is_cuda() ? slice.to(device_, /*non_blocking=*/true) : slice;
      bytes_read_ += count * level_elements(level) * element;
    }
    return grids_of(out);
  }
  // A file: straight into a fresh block on the CPU; through the staging buffers on CUDA.
  std::array<at::Tensor, 3>* buffers = nullptr;
  int slot = 0;
  if (staging_ != nullptr) {
    slot = staging_->next;
    staging_->next ^= 1;
    if (staging_->in_flight[slot]) cuda_support::synchronize_event(staging_->copied[slot]);
    staging_->in_flight[slot] = false;
    buffers = &staging_->buffers[static_cast<size_t>(slot)];
    if (!(*buffers)[0].defined() || (*buffers)[0].size(0) < count) {
      const auto pinned = at::TensorOptions().dtype(dtype_).pinned_memory(true);
      for (size_t level = 0; level < 3; ++level) (*buffers)[level] = at::empty(level_shape(level, count), pinned);
    }
  }
  int64_t level_offset = 0;
  for (size_t level = 0; level < 3; ++level) {
    at::Tensor target = buffers != nullptr ? (*buffers)[level].narrow(0, 0, count)
                                           : at::empty(level_shape(level, count), at::TensorOptions().dtype(dtype_));
    const int64_t level_bytes = count * level_elements(level) * element;
    TRACKSCOPE_RETURN_IF_ERROR(
        file_->read(level_offset + first * level_elements(level) * element, target.data_ptr(), level_bytes));
    out[level] = buffers != nullptr ? target.to(device_, /*non_blocking=*/true) : target;
    level_offset += frames_ * level_elements(level) * element;
    bytes_read_ += level_bytes;
  }
  if (staging_ != nullptr) {
    if (staging_->copied[static_cast<size_t>(slot)] == nullptr) {
      staging_->copied[static_cast<size_t>(slot)] = staging_->pool.next();
    }
    cuda_support::record(staging_->copied[static_cast<size_t>(slot)], device_.index());
    staging_->in_flight[static_cast<size_t>(slot)] = cuda_support::available();
  }
  return grids_of(out);
}

}  // namespace trackscope::gpu::engine
