// FrameServer: one decode thread per server, a byte-limited LRU cache, latest-request-first scheduling and
// prefetch around the playhead. Everything shared between the caller threads and the decode thread lives under
// mutex_; the decode thread drops the lock while it decodes and while it runs the callback.
#include "core/video/frame_server.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "core/log.h"

namespace trackscope::core {

Status FrameServerOptions::check() const {
  if (cache_bytes < 0) return invalid_argument(fmt::format("cache_bytes must be >= 0, got {}", cache_bytes));
  if (prefetch_ahead < 0 || prefetch_ahead > 10000 || prefetch_behind < 0 || prefetch_behind > 10000) {
    return invalid_argument(fmt::format("prefetch_ahead ({}) and prefetch_behind ({}) must be in [0, 10000]",
                                        prefetch_ahead, prefetch_behind));
  }
  const bool native = size.native();
  if (!native && (size.width < 1 || size.height < 1 || size.width > 16384 || size.height > 16384)) {
    return invalid_argument(
        fmt::format("frame size must be 0x0 (native) or within 1..16384 per side, got {}x{}", size.width, size.height));
  }
  return video.check();
}

namespace {

class FrameServerImpl final : public FrameServer {
 public:
  FrameServerImpl(std::unique_ptr<VideoSource> source, const FrameServerOptions& options)
      : info_(source->info()), options_(options), source_(std::move(source)) {
    const int width = options_.size.native() ? info_.width : options_.size.width;
    const int height = options_.size.native() ? info_.height : options_.size.height;
    frame_bytes_ = std::max<int64_t>(1, int64_t{width} * height * 3);
    // Prefetch only what the cache can hold next to the playhead frame, or prefetching would evict itself.
    const int64_t room = std::max<int64_t>(0, options_.cache_bytes / frame_bytes_ - 1);
    prefetch_ = options_.cache_bytes >= frame_bytes_;
    ahead_ = std::min<int64_t>(options_.prefetch_ahead, room);
    behind_ = std::min<int64_t>(options_.prefetch_behind, room - ahead_);
    thread_ = std::thread([this] { run(); });
  }

  ~FrameServerImpl() override {
    TRACKSCOPE_CHECK(std::this_thread::get_id() != thread_.get_id(),
                     "a FrameServer must not be destroyed from its own frame-ready callback");
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_ready_.notify_all();
    frame_done_.notify_all();
    thread_.join();
  }

  const VideoInfo& info() const override { return info_; }

  void set_frame_ready_callback(FrameReadyCallback callback) override {
    auto shared = callback ? std::make_shared<const FrameReadyCallback>(std::move(callback)) : nullptr;
    std::lock_guard lock(mutex_);
    callback_ = std::move(shared);
  }

  FramePtr request(int64_t index) override {
    FramePtr frame;
    {
      std::lock_guard lock(mutex_);
      frame = request_locked(clamp(index));
    }
    if (!frame) work_ready_.notify_one();
    return frame;
  }

  Expected<FramePtr> wait_for(int64_t index, std::chrono::milliseconds timeout) override {
    index = clamp(index);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::unique_lock lock(mutex_);
    if (FramePtr frame = request_locked(index)) return frame;
    ++waiters_[index];
    work_ready_.notify_one();
    const bool ready = frame_done_.wait_until(
        lock, deadline, [&] { return stopping_ || results_.count(index) != 0 || cache_.count(index) != 0; });
    Status failure = cancelled(fmt::format("frame {} was not decoded within {} ms", index, timeout.count()));
    FramePtr frame;
    if (auto found = results_.find(index); ready && found != results_.end()) {
      if (found->second)
        frame = *found->second;
      else
        failure = found->second.status();
    } else if (auto cached = cache_.find(index); ready && cached != cache_.end()) {
      frame = cached->second.frame;
    } else if (stopping_) {
      failure = cancelled("the frame server is shutting down");
    }
    if (--waiters_[index] == 0) {
      waiters_.erase(index);
      results_.erase(index);
    }
    if (frame) return frame;
    return failure;
  }

  bool is_cached(int64_t index) const override {
    std::lock_guard lock(mutex_);
    return cache_.count(index) != 0;
  }

  FrameServerStats stats() const override {
    std::lock_guard lock(mutex_);
    FrameServerStats out = stats_;
    out.cached_frames = static_cast<int64_t>(cache_.size());
    out.cached_bytes = cached_bytes_;
    return out;
  }

 private:
  struct Entry {
    FramePtr frame;
    std::list<int64_t>::iterator recency;
  };
  struct Work {
    int64_t index = 0;
    bool requested = false;
  };

  int64_t clamp(int64_t index) const { return std::clamp<int64_t>(index, 0, info_.frame_count - 1); }

  FramePtr request_locked(int64_t index) {
    playhead_ = index;
    if (auto found = cache_.find(index); found != cache_.end()) {
      recency_.splice(recency_.begin(), recency_, found->second.recency);
      ++stats_.hits;
      return found->second.frame;
    }
    ++stats_.misses;
    failed_.erase(index);      // asked again: try again
    pending_request_ = index;  // supersedes any older pending request
    return nullptr;
  }

  bool wanted_for_prefetch(int64_t index) const { return cache_.count(index) == 0 && failed_.count(index) == 0; }

  // Latest request first, then frames someone waits for, then prefetch: ahead of the playhead, then behind it
  // (in ascending order: one seek, then sequential decoding).
  std::optional<Work> next_work_locked() const {
    if (pending_request_) return Work{*pending_request_, true};
    for (const auto& [index, count] : waiters_) {
      if (cache_.count(index) == 0 && results_.count(index) == 0) return Work{index, true};
    }
    if (!prefetch_) return std::nullopt;
    for (int64_t index = playhead_; index <= std::min(playhead_ + ahead_, info_.frame_count - 1); ++index) {
      if (wanted_for_prefetch(index)) return Work{index, false};
    }
    for (int64_t index = std::max<int64_t>(0, playhead_ - behind_); index < playhead_; ++index) {
      if (wanted_for_prefetch(index)) return Work{index, false};
    }
    return std::nullopt;
  }

  bool in_window(int64_t index) const { return index >= playhead_ - behind_ && index <= playhead_ + ahead_; }

  void insert_locked(int64_t index, const FramePtr& frame) {
    if (cache_.count(index) != 0) return;
    recency_.push_front(index);
    cache_[index] = Entry{frame, recency_.begin()};
    cached_bytes_ += static_cast<int64_t>(frame->bytes());
    // Evict the least recently used frames, sparing the prefetch window while anything else is left.
    while (cached_bytes_ > options_.cache_bytes && !recency_.empty()) {
      auto victim = std::prev(recency_.end());
      for (auto it = recency_.rbegin(); it != recency_.rend(); ++it) {
        if (!in_window(*it)) {
          victim = std::prev(it.base());
          break;
        }
      }
      auto entry = cache_.find(*victim);
      cached_bytes_ -= static_cast<int64_t>(entry->second.frame->bytes());
      cache_.erase(entry);
      recency_.erase(victim);
    }
  }

  void run() {
    std::unique_lock lock(mutex_);
    while (true) {
      std::optional<Work> work;
      work_ready_.wait(lock, [&] { return stopping_ || (work = next_work_locked()).has_value(); });
      if (stopping_) return;
      if (work->requested && pending_request_ == work->index) pending_request_.reset();
      lock.unlock();
      Expected<FramePtr> result = source_->read_frame(work->index, options_.size);
      const double decode_ms = source_->last_decode_ms();
      lock.lock();

      ++stats_.decoded_frames;
      stats_.last_decode_ms = decode_ms;
      stats_.mean_decode_ms += (decode_ms - stats_.mean_decode_ms) / static_cast<double>(stats_.decoded_frames);
      if (result) {
        insert_locked(work->index, *result);
      } else {
        log::warn("frame {} of {}: {}", work->index, info_.path.string(), result.status().message());
        if (failed_.size() > 1024) failed_.clear();
        failed_[work->index] = result.status();
      }
      // A request that arrived while this frame was being prefetched is answered by it too.
      bool requested = work->requested;
      if (pending_request_ == work->index) {
        pending_request_.reset();
        requested = true;
      }
      if (waiters_.count(work->index) != 0) results_.insert_or_assign(work->index, result);
      frame_done_.notify_all();
      if (requested && callback_) {
        const std::shared_ptr<const FrameReadyCallback> callback = callback_;
        lock.unlock();
        (*callback)(work->index, result);
        lock.lock();
      }
    }
  }

  const VideoInfo info_;
  const FrameServerOptions options_;
  std::unique_ptr<VideoSource> source_;  // only the decode thread touches it once running
  int64_t frame_bytes_ = 1;
  bool prefetch_ = false;  // false when not even one frame fits in the cache
  int64_t ahead_ = 0;
  int64_t behind_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable frame_done_;
  bool stopping_ = false;
  std::unordered_map<int64_t, Entry> cache_;
  std::list<int64_t> recency_;  // most recently used first
  int64_t cached_bytes_ = 0;
  int64_t playhead_ = 0;
  std::optional<int64_t> pending_request_;
  std::map<int64_t, int> waiters_;                 // frame index -> threads blocked in wait_for
  std::map<int64_t, Expected<FramePtr>> results_;  // decoded results for waiters (also frames too big to cache)
  std::map<int64_t, Status> failed_;               // decode errors: not prefetched again until requested
  std::shared_ptr<const FrameReadyCallback> callback_;
  FrameServerStats stats_;

  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace

Expected<std::unique_ptr<FrameServer>> FrameServer::open(const std::filesystem::path& path,
                                                         const FrameServerOptions& options) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  Expected<std::unique_ptr<VideoSource>> source = VideoSource::open(path, options.video);
  if (!source) return source.status();
  return std::unique_ptr<FrameServer>(std::make_unique<FrameServerImpl>(std::move(*source), options));
}

}  // namespace trackscope::core
