#pragma once
// FeatureCache: the feature grids of every frame of a run kept off the device -- in host memory (pinned for a
// CUDA device) or in a scratch file (core/io/scratch_file.h) -- and streamed back a block of frames at a time
// (exact streaming, docs/long-videos.md). Torch-side header: include only from gpu/ .cpp files.
//
//   FeatureCache cache = *FeatureCache::create(frames, at::kFloat, device, core::CacheLocation::file, dir);
//   cache.write(first, block_grids);                       // after the backbone, [1, F, ...] on the device
//   model::FeatureGrids block = cache.read(first, count);  // on the device, [1, count, ...] contiguous
//
// Layout: level-major (all lowres frames, then hires, then highest), so that a block of one level is one
// contiguous range. On the CPU with a host cache, read() returns views of the cache (no copy). For a CUDA device
// the host cache is page-locked in place (exactly its size), allocated and locked on a helper thread that
// create() starts, so that this overlaps the backbone; the first write() waits for it. On CUDA, file reads go
// through two pinned staging buffers used in turn; a buffer is refilled only after the device has finished
// copying from it (an event), so the host reads block k + 1 from disk while the device works on block k.
// Threads: one thread at a time (the tracking thread).

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <array>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>

#include "core/io/scratch_file.h"
#include "core/perf/memory_model.h"
#include "core/status.h"
#include "gpu/engine/cuda_support.h"
#include "gpu/model/locotrack.h"

namespace trackscope::gpu::engine {

class FeatureCache {
 public:
  /// A cache for `frames` frames of grids in `dtype` for work on `device`, in host memory (`location` host) or in
  /// a scratch file in `directory` (file). Errors: out_of_memory (host allocation; for a CUDA device reported by
  /// the first write() or read() instead), io_error / not_found (file).
  static core::Expected<FeatureCache> create(int64_t frames, at::ScalarType dtype, c10::Device device,
                                             core::CacheLocation location, const std::filesystem::path& directory);

  FeatureCache(FeatureCache&&) noexcept;
  FeatureCache& operator=(FeatureCache&&) noexcept;
  ~FeatureCache();

  /// Stores grids [1, F, ...] (any device, the cache's dtype) as frames [first, first + F).
  core::Status write(int64_t first, const model::FeatureGrids& grids);
  /// Frames [first, first + count) on the device, contiguous [1, count, ...]. Valid until the second read() after
  /// this one on CUDA (the staging buffers alternate), until the cache is destroyed on the CPU.
  core::Expected<model::FeatureGrids> read(int64_t first, int64_t count);

  int64_t frames() const { return frames_; }
  int64_t bytes() const;
  int64_t bytes_per_frame() const;
  core::CacheLocation location() const { return location_; }
  /// Bytes moved so far by write() and read() (the traffic the profile's feature_stream stage reports).
  int64_t bytes_written() const { return bytes_written_; }
  int64_t bytes_read() const { return bytes_read_; }

 private:
  struct Staging;
  FeatureCache() = default;

  int64_t frames_ = 0;
  at::ScalarType dtype_ = at::kFloat;
  c10::Device device_ = c10::Device(c10::kCPU);
  core::CacheLocation location_ = core::CacheLocation::host;
  core::Status wait_for_host();

  std::array<at::Tensor, 3> host_;                       // host location: [T, ...] per level (lowres, hires, highest)
  std::future<std::array<at::Tensor, 3>> pending_host_;  // host_ being allocated and page-locked (CUDA)
  std::optional<core::io::ScratchFile> file_;
  std::unique_ptr<Staging> staging_;
  int64_t bytes_written_ = 0;
  int64_t bytes_read_ = 0;
};

}  // namespace trackscope::gpu::engine
