#include "core/video/read_ahead_source.h"

#include <algorithm>
#include <utility>

namespace trackscope::core {

ReadAheadVideoSource::ReadAheadVideoSource(std::unique_ptr<VideoSource> inner, ReadAheadOptions options)
    : inner_(std::move(inner)),
      frame_bytes_(int64_t{inner_->info().width} * inner_->info().height * 3),
      budget_bytes_(std::max<int64_t>(options.budget_bytes, 0)),
      end_frame_(options.end_frame < 0 ? inner_->info().frame_count
                                       : std::min(options.end_frame, inner_->info().frame_count)),
      next_index_(std::max<int64_t>(options.first_frame, 0)),
      thread_([this, first = next_index_](const std::stop_token& stop) { decode_ahead(stop, first); }) {}

ReadAheadVideoSource::~ReadAheadVideoSource() { end_read_ahead(); }

void ReadAheadVideoSource::decode_ahead(const std::stop_token& stop, int64_t first_frame) {
  for (int64_t index = first_frame; index < end_frame_; ++index) {
    {
      std::unique_lock lock(mutex_);
      const bool room = changed_.wait(
          lock, stop, [this] { return buffer_.empty() || buffered_bytes_ + frame_bytes_ <= budget_bytes_; });
      if (!room) break;
    }
    Expected<FramePtr> frame = internal_error("not decoded");
    double decode_ms = 0.0;
    {
      const std::lock_guard inner_lock(inner_mutex_);
      if (stop.stop_requested()) break;
      frame = inner_->read_frame(index);
      decode_ms = inner_->last_decode_ms();
    }
    // A frame that fails is left to the caller's own read, which gets the wrapped source's error for it.
    if (!frame) break;
    {
      const std::lock_guard lock(mutex_);
      buffered_bytes_ += static_cast<int64_t>((*frame)->bytes());
      buffer_.push_back({std::move(*frame), decode_ms});
      ++stats_.decoded_frames;
      stats_.decode_ms += decode_ms;
    }
    changed_.notify_all();
  }
  {
    const std::lock_guard lock(mutex_);
    finished_ = true;
  }
  changed_.notify_all();
}

void ReadAheadVideoSource::end_read_ahead() {
  if (ended_) return;
  ended_ = true;
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
  const std::lock_guard lock(mutex_);
  buffer_.clear();
  buffered_bytes_ = 0;
}

Expected<FramePtr> ReadAheadVideoSource::read_frame(int64_t index, FrameSize size) {
  if (!ended_ && index == next_index_ && size.native()) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return !buffer_.empty() || finished_; });
    if (!buffer_.empty()) {
      Buffered next = std::move(buffer_.front());
      buffer_.pop_front();
      buffered_bytes_ -= static_cast<int64_t>(next.frame->bytes());
      ++stats_.served_frames;
      lock.unlock();
      changed_.notify_all();
      ++next_index_;
      last_decode_ms_ = next.decode_ms;
      return std::move(next.frame);
    }
  }
  end_read_ahead();
  Expected<FramePtr> frame = inner_->read_frame(index, size);
  last_decode_ms_ = inner_->last_decode_ms();
  return frame;
}

VideoSource::DecodeCounters ReadAheadVideoSource::decode_counters() const {
  const std::lock_guard inner_lock(inner_mutex_);
  return inner_->decode_counters();
}

IntegrityReport ReadAheadVideoSource::integrity() const {
  const std::lock_guard inner_lock(inner_mutex_);
  return inner_->integrity();
}

Expected<IntegrityReport> ReadAheadVideoSource::scan_integrity() {
  end_read_ahead();
  return inner_->scan_integrity();
}

ReadAheadStats ReadAheadVideoSource::stats() const {
  const std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace trackscope::core
