#pragma once
// A FrameServer for UI tests: generated frames with known content, an optional artificial decode delay on
// its own decode thread, and errors on demand (failed opens, undecodable frames). It follows the contract of
// core/video/frame_server.h: request() never blocks, a non-cached request is decoded on the decode thread and
// reported through the callback there, a newer request supersedes an older pending one, and the destructor
// joins the thread.
//
//   FakeVideoLibrary library;
//   library.add_video("/videos/a.mp4", {.width = 320, .height = 240, .frame_count = 48});
//   library.add_error("/videos/broken.mp4", core::corrupt_data("moov atom not found"));
//   options.frame_server_factory = library.factory();
//
// Frame content: pixel (x, y) of frame i is (x mod 256, y mod 256, blue_of_frame(i)), so a test can read
// from a screenshot both which frame is shown and which image pixel lies under a widget position.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "core/status.h"
#include "core/video/frame_server.h"
#include "ui/frame_server_factory.h"

namespace trackscope::testing {

struct FakeVideo {
  int width = 320;
  int height = 240;
  int64_t frame_count = 48;
  core::Rational frame_rate{25, 1};
  std::chrono::milliseconds decode_delay{0};  // slept on the decode thread for every frame
  std::set<int64_t> failing_frames;           // these frames report corrupt_data instead of a picture
  std::set<int64_t> damaged_frames;           // these frames come with decoder errors concealed (integrity)
};

/// Blue channel of every pixel of frame `index`: distinct for the first 256 frames (5 is odd).
inline uint8_t blue_of_frame(int64_t index) { return static_cast<uint8_t>((index * 5 + 17) % 256); }

inline core::FramePtr make_fake_frame(const FakeVideo& video, int64_t index) {
  auto frame = std::make_shared<core::Frame>();
  frame->index = index;
  frame->width = video.width;
  frame->height = video.height;
  frame->pts_us = index * 1'000'000 * video.frame_rate.den / std::max<int64_t>(1, video.frame_rate.num);
  frame->rgb.resize(static_cast<size_t>(video.width) * video.height * 3);
  if (video.damaged_frames.count(index) != 0) {
    frame->integrity.decoder_errors = 1;
    frame->integrity.concealed = true;
  }
  uint8_t* out = frame->rgb.data();
  for (int y = 0; y < video.height; ++y) {
    for (int x = 0; x < video.width; ++x) {
      *out++ = static_cast<uint8_t>(x % 256);
      *out++ = static_cast<uint8_t>(y % 256);
      *out++ = blue_of_frame(index);
    }
  }
  return frame;
}

class FakeFrameServer : public core::FrameServer {
 public:
  FakeFrameServer(const std::filesystem::path& path, FakeVideo video) : video_(std::move(video)) {
    info_.path = path;
    info_.container = "fake";
    info_.codec = "fake";
    info_.width = video_.width;
    info_.height = video_.height;
    info_.frame_rate = video_.frame_rate;
    info_.frame_count = video_.frame_count;
    info_.duration_us =
        video_.frame_count * 1'000'000 * video_.frame_rate.den / std::max<int64_t>(1, video_.frame_rate.num);
    thread_ = std::thread([this] { run(); });
  }

  ~FakeFrameServer() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  const core::VideoInfo& info() const override { return info_; }

  void set_frame_ready_callback(FrameReadyCallback callback) override {
    std::lock_guard lock(mutex_);
    callback_ = std::move(callback);
  }

  core::FramePtr request(int64_t index) override {
    index = std::clamp<int64_t>(index, 0, video_.frame_count - 1);
    std::lock_guard lock(mutex_);
    if (auto it = cache_.find(index); it != cache_.end()) {
      ++stats_.hits;
      return it->second;
    }
    ++stats_.misses;
    if (!(in_flight_ && in_flight_index_ == index)) {
      wanted_ = index;
      has_wanted_ = true;
      wake_.notify_all();
    }
    return nullptr;
  }

  core::Expected<core::FramePtr> wait_for(int64_t index, std::chrono::milliseconds timeout) override {
    if (core::FramePtr frame = request(index)) return frame;
    index = std::clamp<int64_t>(index, 0, video_.frame_count - 1);
    std::unique_lock lock(mutex_);
    const bool done =
        done_.wait_for(lock, timeout, [&] { return cache_.count(index) > 0 || failed_.count(index) > 0; });
    if (!done) return core::cancelled("timed out waiting for frame " + std::to_string(index));
    if (auto it = cache_.find(index); it != cache_.end()) return it->second;
    return core::corrupt_data("frame " + std::to_string(index) + " is damaged (fake)");
  }

  bool is_cached(int64_t index) const override {
    std::lock_guard lock(mutex_);
    return cache_.count(index) > 0;
  }

  core::FrameServerStats stats() const override {
    std::lock_guard lock(mutex_);
    core::FrameServerStats result = stats_;
    result.cached_frames = static_cast<int64_t>(cache_.size());
    result.cached_bytes = result.cached_frames * video_.width * video_.height * 3;
    return result;
  }

  /// Number of callbacks made so far (any thread may ask).
  int64_t callbacks_made() const { return callbacks_made_.load(); }
  /// Thread on which the callbacks run.
  std::thread::id decode_thread_id() const { return thread_.get_id(); }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || has_wanted_; });
      if (stop_) return;
      const int64_t index = wanted_;
      has_wanted_ = false;
      in_flight_ = true;
      in_flight_index_ = index;
      const auto start = std::chrono::steady_clock::now();
      // The "decode": sleep without holding the lock (request() keeps answering), interruptible by shutdown.
      if (video_.decode_delay.count() > 0 && wake_.wait_for(lock, video_.decode_delay, [&] { return stop_; })) return;
      lock.unlock();
      const bool fails = video_.failing_frames.count(index) > 0;
      core::Expected<core::FramePtr> result = fails ? core::Expected<core::FramePtr>(core::corrupt_data(
                                                          "frame " + std::to_string(index) + " is damaged (fake)"))
                                                    : core::Expected<core::FramePtr>(make_fake_frame(video_, index));
      const double decode_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      lock.lock();
      in_flight_ = false;
      if (result) {
        cache_[index] = *result;
        ++stats_.decoded_frames;
        stats_.last_decode_ms = decode_ms;
        stats_.mean_decode_ms += (decode_ms - stats_.mean_decode_ms) / static_cast<double>(stats_.decoded_frames);
      } else {
        failed_.insert(index);
      }
      FrameReadyCallback callback = callback_;
      lock.unlock();
      done_.notify_all();
      if (callback) {
        callback(index, result);
        ++callbacks_made_;
      }
      lock.lock();
    }
  }

  const FakeVideo video_;
  core::VideoInfo info_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  bool stop_ = false;
  bool has_wanted_ = false;
  int64_t wanted_ = 0;
  bool in_flight_ = false;
  int64_t in_flight_index_ = -1;
  std::map<int64_t, core::FramePtr> cache_;
  std::set<int64_t> failed_;
  core::FrameServerStats stats_;
  FrameReadyCallback callback_;
  std::atomic<int64_t> callbacks_made_{0};
  std::thread thread_;
};

/// The "file system" of fake videos behind a FrameServerFactory. Thread-safe: the factory runs on a worker.
class FakeVideoLibrary {
 public:
  void add_video(const std::filesystem::path& path, FakeVideo video) {
    std::lock_guard lock(state_->mutex);
    state_->videos[path] = std::move(video);
  }
  void add_error(const std::filesystem::path& path, core::Status status) {
    std::lock_guard lock(state_->mutex);
    state_->errors[path] = std::move(status);
  }
  /// Every open waits this long on the opening thread first (a slow network file).
  void set_open_delay(std::chrono::milliseconds delay) { state_->open_delay_ms = static_cast<int>(delay.count()); }
  int open_calls() const { return state_->open_calls.load(); }
  /// The video registered at `path` (for fakes that read it another way, e.g. the tracking thread's decoder).
  std::optional<FakeVideo> find_video(const std::filesystem::path& path) const {
    std::lock_guard lock(state_->mutex);
    auto it = state_->videos.find(path);
    if (it == state_->videos.end()) return std::nullopt;
    return it->second;
  }

  ui::FrameServerFactory factory() const {
    return [state = state_](
               const std::filesystem::path& path,
               const core::FrameServerOptions& /*options*/) -> core::Expected<std::unique_ptr<core::FrameServer>> {
      ++state->open_calls;
      std::this_thread::sleep_for(std::chrono::milliseconds(state->open_delay_ms.load()));
      std::lock_guard lock(state->mutex);
      if (auto it = state->errors.find(path); it != state->errors.end()) return it->second;
      auto it = state->videos.find(path);
      if (it == state->videos.end()) return core::not_found("no such file: " + path.string());
      return std::unique_ptr<core::FrameServer>(std::make_unique<FakeFrameServer>(path, it->second));
    };
  }

 private:
  struct State {
    std::mutex mutex;
    std::map<std::filesystem::path, FakeVideo> videos;
    std::map<std::filesystem::path, core::Status> errors;
    std::atomic<int> open_delay_ms{0};
    std::atomic<int> open_calls{0};
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace trackscope::testing
