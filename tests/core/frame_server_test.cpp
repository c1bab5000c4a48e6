// FrameServer: callbacks, wait_for, byte-limited cache, prefetch, scrubbing, clamping, errors, shutdown.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/video/frame_server.h"
#include "core/video/image_io.h"
#include "video_test_support.h"

namespace trackscope::core {
namespace {

using namespace std::chrono_literals;
using testing::read_index;

constexpr int kWidth = 192;
constexpr int kHeight = 128;
constexpr int64_t kFrames = 40;
constexpr int64_t kFrameBytes = int64_t{kWidth} * kHeight * 3;

class FrameServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = testing::test_folder(std::string("frame_server_") +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    for (int64_t i = 0; i < kFrames; ++i) {
      testing::write_uncompressed_png(folder_ / fmt::format("{:04d}.png", i),
                                      testing::make_index_frame(i, kWidth, kHeight));
    }
  }

  std::unique_ptr<FrameServer> open(const FrameServerOptions& options = {}) {
    auto server = FrameServer::open(folder_, options);
    EXPECT_TRUE(server) << server.status().message();
    return server ? std::move(*server) : nullptr;
  }

  // Waits until `done` holds or 10 s pass.
  template <typename Predicate>
  static bool eventually(Predicate done) {
    for (int i = 0; i < 1000; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return done();
  }

  std::filesystem::path folder_;
};

struct CallbackLog {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::pair<int64_t, bool>> calls;  // (index, ok)
  std::vector<int64_t> pixel_indices;           // the index read from each delivered frame's pixels

  FrameServer::FrameReadyCallback callback() {
    return [this](int64_t index, const Expected<FramePtr>& frame) {
      std::lock_guard lock(mutex);
      calls.emplace_back(index, frame.has_value());
      pixel_indices.push_back(frame ? read_index(**frame) : -1);
      changed.notify_all();
    };
  }
  bool wait_for_index(int64_t index) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 10s, [&] {
      return std::any_of(calls.begin(), calls.end(), [&](auto& call) { return call.first == index; });
    });
  }
};

TEST_F(FrameServerTest, RequestMissThenCallbackDeliversTheFrame) {
  CallbackLog log;  // outlives the server: callbacks may run until the server is destroyed
  auto server = open();
  ASSERT_TRUE(server);
  EXPECT_EQ(server->info().frame_count, kFrames);
  server->set_frame_ready_callback(log.callback());
  EXPECT_EQ(server->request(30), nullptr) << "frame 30 is outside the initial prefetch window";
  ASSERT_TRUE(log.wait_for_index(30));
  {
    std::lock_guard lock(log.mutex);
    ASSERT_EQ(log.calls.size(), 1U) << "prefetched frames are not announced";
    EXPECT_TRUE(log.calls[0].second);
    EXPECT_EQ(log.pixel_indices[0], 30);
  }
  FramePtr cached = server->request(30);
  ASSERT_NE(cached, nullptr) << "a delivered frame is cached";
  EXPECT_EQ(read_index(*cached), 30);
  EXPECT_GE(server->stats().hits, 1);
  EXPECT_GE(server->stats().misses, 1);
}

TEST_F(FrameServerTest, WaitForReturnsExactFramesAndClampsOutOfRange) {
  auto server = open();
  ASSERT_TRUE(server);
  for (int64_t index : {17, 3, 39, 22, 0}) {
    auto frame = server->wait_for(index, 10s);
    ASSERT_TRUE(frame) << frame.status().message();
    EXPECT_EQ((*frame)->index, index);
    EXPECT_EQ(read_index(**frame), index);
  }
  auto below = server->wait_for(-5, 10s);
  ASSERT_TRUE(below);
  EXPECT_EQ((*below)->index, 0);
  auto above = server->wait_for(int64_t{1} << 40, 10s);
  ASSERT_TRUE(above);
  EXPECT_EQ((*above)->index, kFrames - 1);
  server->request(-100);  // clamped, no crash
  auto clamped = server->wait_for(0, 10s);
  ASSERT_TRUE(clamped);
  EXPECT_GT(server->stats().decoded_frames, 0);
  EXPECT_GT(server->stats().mean_decode_ms, 0.0);
}

TEST_F(FrameServerTest, PrefetchFillsTheWindowAroundThePlayhead) {
  FrameServerOptions options;
  options.prefetch_ahead = 8;
  options.prefetch_behind = 3;
  auto server = open(options);
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->wait_for(20, 10s));
  // Frames 17..28 end up cached without being asked for.
  ASSERT_TRUE(eventually([&] {
    for (int64_t index = 17; index <= 28; ++index) {
      if (!server->is_cached(index)) return false;
    }
    return true;
  }));
  EXPECT_FALSE(server->is_cached(29)) << "beyond the window";
  EXPECT_FALSE(server->is_cached(15)) << "before the window";
  const int64_t hits_before = server->stats().hits;
  for (int64_t index = 28; index >= 17; --index) {
    FramePtr frame = server->request(index);
    ASSERT_NE(frame, nullptr) << "frame " << index << " was not prefetched";
    EXPECT_EQ(read_index(*frame), index);
  }
  EXPECT_EQ(server->stats().hits - hits_before, 12);
}

TEST_F(FrameServerTest, CacheRespectsItsByteLimit) {
  FrameServerOptions options;
  options.cache_bytes = 5 * kFrameBytes + kFrameBytes / 2;
  options.prefetch_ahead = 16;  // more than fits: prefetch is capped by the cache
  auto server = open(options);
  ASSERT_TRUE(server);
  for (int64_t index = 0; index < kFrames; index += 3) {
    auto frame = server->wait_for(index, 10s);
    ASSERT_TRUE(frame);
    EXPECT_EQ(read_index(**frame), index);
    const FrameServerStats stats = server->stats();
    EXPECT_LE(stats.cached_bytes, options.cache_bytes);
    EXPECT_LE(stats.cached_frames, 5);
  }
  // Once idle, the cache holds the playhead's neighbourhood and stays within the limit.
  const int64_t decoded = server->stats().decoded_frames;
  std::this_thread::sleep_for(200ms);
  const FrameServerStats idle = server->stats();
  EXPECT_LE(idle.cached_bytes, options.cache_bytes);
  EXPECT_LE(idle.decoded_frames - decoded, 5) << "prefetch must not keep evicting its own frames";
}

TEST_F(FrameServerTest, FramesLargerThanTheCacheAreStillDelivered) {
  FrameServerOptions options;
  options.cache_bytes = 1000;  // not even one frame
  auto server = open(options);
  ASSERT_TRUE(server);
  auto frame = server->wait_for(12, 10s);
  ASSERT_TRUE(frame) << frame.status().message();
  EXPECT_EQ(read_index(**frame), 12);
  std::this_thread::sleep_for(100ms);
  const FrameServerStats stats = server->stats();
  EXPECT_EQ(stats.cached_bytes, 0);
  EXPECT_LE(stats.decoded_frames, 2) << "nothing to prefetch into";
}

TEST_F(FrameServerTest, ScrubbingDeliversTheLatestRequest) {
  CallbackLog log;
  auto server = open();
  ASSERT_TRUE(server);
  server->set_frame_ready_callback(log.callback());
  for (int64_t index : {35, 5, 31, 2, 25}) server->request(index);
  ASSERT_TRUE(log.wait_for_index(25));
  std::lock_guard lock(log.mutex);
  for (size_t i = 0; i < log.calls.size(); ++i) {
    EXPECT_TRUE(log.calls[i].second);
    EXPECT_EQ(log.pixel_indices[i], log.calls[i].first);
  }
  EXPECT_LE(log.calls.size(), 5U);
}

TEST_F(FrameServerTest, CallbackMayRequestAgain) {
  CallbackLog log;
  std::atomic<int> chained{0};
  auto server = open();
  ASSERT_TRUE(server);
  server->set_frame_ready_callback([&](int64_t index, const Expected<FramePtr>& frame) {
    log.callback()(index, frame);
    if (index < 38 && chained++ < 3) server->request(index + 1);  // never blocks
  });
  server->request(34);
  ASSERT_TRUE(log.wait_for_index(37));
  std::lock_guard lock(log.mutex);
  ASSERT_EQ(log.calls.size(), 4U);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(log.calls[i].first, 34 + static_cast<int64_t>(i));
}

TEST_F(FrameServerTest, DestructionWhileDecodingIsSafe) {
  std::atomic<int> calls{0};
  for (int round = 0; round < 5; ++round) {
    auto server = open();
    ASSERT_TRUE(server);
    server->set_frame_ready_callback([&calls](int64_t, const Expected<FramePtr>&) {
      std::this_thread::sleep_for(20ms);
      ++calls;
    });
    for (int64_t index : {30, 10, 39, 21}) server->request(index);
    if (round % 2 == 1) std::this_thread::sleep_for(15ms);
    server.reset();
    const int after_destruction = calls.load();
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(calls.load(), after_destruction) << "a callback ran after the destructor returned";
  }
}

TEST_F(FrameServerTest, DecodeErrorsReachCallbackAndWaiters) {
  // Damaged after the open (which refuses damaged images): no prefetch, so frame 7 is decoded only when asked.
  FrameServerOptions options;
  options.prefetch_ahead = 0;
  options.prefetch_behind = 0;
  CallbackLog log;
  auto server = open(options);
  ASSERT_TRUE(server);
  testing::write_bytes(folder_ / "0007.png", {1, 2, 3, 4, 5});
  server->set_frame_ready_callback(log.callback());
  auto failed = server->wait_for(7, 10s);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.status().code(), StatusCode::corrupt_data);
  server->request(7);
  ASSERT_TRUE(log.wait_for_index(7));
  auto next = server->wait_for(8, 10s);
  ASSERT_TRUE(next) << "the server stays usable";
  EXPECT_EQ(read_index(**next), 8);
}

TEST_F(FrameServerTest, ScaledFramesAndBadOptions) {
  FrameServerOptions options;
  options.size = {96, 64};
  auto server = open(options);
  ASSERT_TRUE(server);
  auto frame = server->wait_for(9, 10s);
  ASSERT_TRUE(frame);
  EXPECT_EQ((*frame)->width, 96);
  EXPECT_EQ(read_index(**frame), 9);

  FrameServerOptions bad;
  bad.cache_bytes = -1;
  EXPECT_EQ(FrameServer::open(folder_, bad).status().code(), StatusCode::invalid_argument);
  bad = {};
  bad.size = {0, 64};
  EXPECT_EQ(FrameServer::open(folder_, bad).status().code(), StatusCode::invalid_argument);
  EXPECT_EQ(FrameServer::open(folder_ / "missing.mp4").status().code(), StatusCode::not_found);
}

TEST_F(FrameServerTest, WaitForTimesOutWithCancelled) {
  auto server = open();
  ASSERT_TRUE(server);
  auto frame = server->wait_for(33, 0ms);
  if (!frame) {
    EXPECT_EQ(frame.status().code(), StatusCode::cancelled);
  }
  auto later = server->wait_for(33, 10s);
  ASSERT_TRUE(later);
  EXPECT_EQ(read_index(**later), 33);
}

}  // namespace
}  // namespace trackscope::core
