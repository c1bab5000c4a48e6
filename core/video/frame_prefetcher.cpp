#include "core/video/frame_prefetcher.h"

#include <fmt/format.h>

#include <cstring>
#include <new>
#include <stdexcept>
#include <vector>

namespace trackscope::core {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

BatchBuffer vector_buffer(int64_t bytes) {
  auto storage = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(bytes));
  uint8_t* data = storage->data();
  return {std::move(storage), data};
}

}  // namespace

Status FramePrefetchOptions::check() const {
  if (first_frame < 0 || end_frame < first_frame) {
    return invalid_argument(fmt::format("frame prefetch: bad frame range [{}, {})", first_frame, end_frame));
  }
  if (batch_frames < 1) return invalid_argument(fmt::format("frame prefetch: batch_frames {} < 1", batch_frames));
  if (queue_batches < 1) return invalid_argument(fmt::format("frame prefetch: queue_batches {} < 1", queue_batches));
  if (frame_width < 1 || frame_height < 1) {
    return invalid_argument(fmt::format("frame prefetch: bad frame size {}x{}", frame_width, frame_height));
  }
  return {};
}

FramePrefetcher::FramePrefetcher(VideoSource& video, FramePrefetchOptions options)
    : video_(video), options_(std::move(options)) {
  if (Status valid = options_.check(); !valid) throw std::invalid_argument(valid.message());
  if (!options_.allocate) options_.allocate = vector_buffer;
  thread_ = std::jthread([this](const std::stop_token& stop) { decode_loop(stop); });
}

FramePrefetcher::~FramePrefetcher() { stop(); }

void FramePrefetcher::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  changed_.notify_all();
  thread_.join();
  std::lock_guard lock(mutex_);
  ready_.clear();
  error_.reset();
  finished_ = true;
}

Expected<bool> FramePrefetcher::decode_batch(const std::stop_token& stop, PrefetchedBatch& batch) {
  const auto frame_bytes = static_cast<size_t>(options_.frame_width) * static_cast<size_t>(options_.frame_height) * 3;
  try {
    batch.buffer = options_.allocate(batch.count * static_cast<int64_t>(frame_bytes));
  } catch (const std::exception& e) {
    return out_of_memory(fmt::format("no memory for a batch of {} decoded frames: {}", batch.count, e.what()));
  }
  batch.started = Clock::now();
  for (int64_t i = 0; i < batch.count; ++i) {
    if (stop.stop_requested()) return false;
    const int64_t index = batch.first_frame + i;
    const Clock::time_point read_start = Clock::now();
    Expected<FramePtr> frame = video_.read_frame(index);
    const Clock::time_point read_end = Clock::now();
    batch.decode_ms += ms_between(read_start, read_end);
    if (!frame) return frame.status().with_context(fmt::format("frame {}", index));
    const Frame& f = **frame;
    uint8_t* slot = batch.buffer.data + static_cast<size_t>(i) * frame_bytes;
    if (options_.convert) {
      if (Status converted = options_.convert(f, slot); !converted) {
        return converted.with_context(fmt::format("frame {}", index));
      }
    } else {
      if (f.width != options_.frame_width || f.height != options_.frame_height || f.rgb.size() != frame_bytes) {
        return unsupported(
            fmt::format("frame {} is {}x{}, the video {}x{}: size changes inside a clip are not supported", index,
                        f.width, f.height, options_.frame_width, options_.frame_height));
      }
      std::memcpy(slot, f.rgb.data(), frame_bytes);
    }
    batch.convert_ms += ms_between(read_end, Clock::now());
  }
  batch.finished = Clock::now();
  return true;
}

void FramePrefetcher::decode_loop(const std::stop_token& stop) {
  std::optional<Status> error;
  for (int64_t begin = options_.first_frame; begin < options_.end_frame; begin += options_.batch_frames) {
    {
      // Wait for room in the queue (or the end).
      std::unique_lock lock(mutex_);
      if (!changed_.wait(lock, stop, [this] { return ready_.size() < static_cast<size_t>(options_.queue_batches); })) {
        return;
      }
    }
    PrefetchedBatch batch;
    batch.first_frame = begin;
    batch.count = std::min<int64_t>(options_.batch_frames, options_.end_frame - begin);
    Expected<bool> decoded = false;
    try {
      decoded = decode_batch(stop, batch);
    } catch (const std::bad_alloc&) {
      decoded = out_of_memory(
          fmt::format("host memory ran out while decoding frames {}..{}", begin, begin + batch.count - 1));
    } catch (const std::exception& e) {
      decoded =
          internal_error(fmt::format("decoding frames {}..{} failed: {}", begin, begin + batch.count - 1, e.what()));
    }
    if (!decoded) {
      error = decoded.status();
      break;
    }
    if (!*decoded) return;  // stopped
    std::lock_guard lock(mutex_);
    ready_.push_back(std::move(batch));
    changed_.notify_all();
  }
  std::lock_guard lock(mutex_);
  error_ = std::move(error);
  finished_ = true;
  changed_.notify_all();
}

Expected<std::optional<PrefetchedBatch>> FramePrefetcher::next() {
  const Clock::time_point start = Clock::now();
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return !ready_.empty() || finished_; });
  const double waited = ms_between(start, Clock::now());
  total_wait_ms_ += waited;
  if (ready_.empty()) {
    if (error_) return *error_;
    return std::optional<PrefetchedBatch>();
  }
  PrefetchedBatch batch = std::move(ready_.front());
  ready_.pop_front();
  batch.wait_ms = waited;
  changed_.notify_all();  // room for the decode thread
  return std::optional<PrefetchedBatch>(std::move(batch));
}

}  // namespace trackscope::core
