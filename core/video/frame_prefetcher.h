#pragma once
// FramePrefetcher: decodes a frame range in batches on a thread of its own, ahead of the consumer, so that decoding
// overlaps whatever the consumer does with the previous batch (the tracker's upload and backbone).
//
//   FramePrefetchOptions options;
//   options.first_frame = 0; options.end_frame = info.frame_count; options.batch_frames = 8;
//   options.frame_width = info.width; options.frame_height = info.height;   // the layout of a batch buffer
//   options.allocate = [](int64_t bytes) { ... };                           // e.g. pinned memory (gpu/)
//   FramePrefetcher prefetcher(*video, std::move(options));                // starts decoding
//   while (Expected<std::optional<PrefetchedBatch>> batch = prefetcher.next()) {
//     if (!*batch) break;                                                   // the range is done
//     use (*batch)->data: (*batch)->count frames of frame_height x frame_width x 3 bytes (RGB24), back to back
//   }
//
// Each batch is written into a buffer of its own from `allocate` (called on the decode thread), which the batch
// keeps alive through `storage`: the consumer may hold a batch (e.g. until an asynchronous copy completes) while
// later ones are decoded. At most `queue_batches` decoded batches wait for the consumer; then the decode thread
// waits, which bounds the memory to (queue_batches + the batches the consumer holds) buffers.
// `convert` (optional, decode thread) turns each decoded frame into its slot (e.g. a resize to the model's
// resolution); without it the frames are copied as they are and must be frame_width x frame_height.
// Errors: a frame that fails to decode, or has another size, ends the range: next() returns that error once the
// batches before it have been taken. Destroying the prefetcher (or stop()) ends the decode thread early.
// Threads: the VideoSource is used by the decode thread only, from construction until the range is done, stop()
// returns or the prefetcher is destroyed; the caller must not touch it in between. next() and stop() belong to
// one consumer thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "core/status.h"
#include "core/video/video_source.h"

namespace trackscope::core {

/// Memory for one batch: `data` holds the requested bytes, `storage` keeps it alive (any owner: a vector, a
/// pinned tensor).
struct BatchBuffer {
  std::shared_ptr<void> storage;
  uint8_t* data = nullptr;
};

struct FramePrefetchOptions {
  int64_t first_frame = 0;
  int64_t end_frame = 0;  // one past the last frame to decode
  int batch_frames = 8;   // frames per batch (the last one may be shorter)
  int queue_batches = 2;  // decoded batches kept ready ahead of the consumer (>= 1)
  int frame_width = 0;    // the size of a frame's slot in a batch buffer (RGB24)
  int frame_height = 0;
  /// Writes a decoded frame into its slot of frame_width x frame_height x 3 bytes; null = copy it (its size must
  /// then be the slot's). Runs on the decode thread; an error ends the range.
  std::function<Status(const Frame& frame, uint8_t* slot)> convert;
  /// Returns a buffer of at least `bytes` bytes; null = a std::vector. Runs on the decode thread; may throw
  /// (std::bad_alloc), which ends the range with an out_of_memory error.
  std::function<BatchBuffer(int64_t bytes)> allocate;
  Status check() const;
};

struct PrefetchedBatch {
  int64_t first_frame = 0;  // video index of the first frame in the batch
  int64_t count = 0;        // frames in the batch
  BatchBuffer buffer;       // count frames of frame_height x frame_width x 3 bytes, back to back
  double decode_ms = 0.0;   // decode thread: read_frame calls (demux, decode, RGB conversion)
  double convert_ms = 0.0;  // decode thread: convert (or the copies into the slots)
  /// The decode thread's work on this batch, from its first read_frame to its last slot written.
  std::chrono::steady_clock::time_point started, finished;
  double wait_ms = 0.0;  // how long next() blocked for this batch (0: it was ready)
};

class FramePrefetcher {
 public:
  /// Starts the decode thread. invalid_argument from options.check() is thrown as std::invalid_argument: check()
  /// the options first.
  FramePrefetcher(VideoSource& video, FramePrefetchOptions options);
  ~FramePrefetcher();
  FramePrefetcher(const FramePrefetcher&) = delete;
  FramePrefetcher& operator=(const FramePrefetcher&) = delete;

  /// The next batch in frame order (blocks until it is decoded), nullopt after the last one, or the error that
  /// ended the range (after the batches decoded before it).
  Expected<std::optional<PrefetchedBatch>> next();

  /// Ends the decode thread after its current frame and waits for it; later next() calls return nullopt.
  void stop();

  /// Total time next() has blocked so far (the consumer waiting for frames), in milliseconds.
  double total_wait_ms() const { return total_wait_ms_; }

 private:
  void decode_loop(const std::stop_token& stop);
  /// One batch into `batch` (already holding its range); false when stopped. Errors come back as a Status.
  Expected<bool> decode_batch(const std::stop_token& stop, PrefetchedBatch& batch);

  VideoSource& video_;
  FramePrefetchOptions options_;
  std::mutex mutex_;
  std::condition_variable_any changed_;
  std::deque<PrefetchedBatch> ready_;  // guarded by mutex_
  std::optional<Status> error_;        // guarded by mutex_: the error that ended the range
  bool finished_ = false;              // guarded by mutex_: no batch will be added any more
  double total_wait_ms_ = 0.0;         // consumer thread
  std::jthread thread_;                // last: started after everything above exists
};

}  // namespace trackscope::core
