// ReadAheadVideoSource: frames decoded ahead on a thread of its own, bounded by a byte budget, returned exactly as
// the wrapped source returns them; any other read falls back to the wrapped source.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "core/video/memory_video.h"
#include "core/video/read_ahead_source.h"

namespace trackscope::core {
namespace {

constexpr int kWidth = 10;
constexpr int kHeight = 6;
constexpr int64_t kFrameBytes = int64_t{kWidth} * kHeight * 3;

std::vector<uint8_t> pattern(int t) {
  std::vector<uint8_t> rgb(static_cast<size_t>(kFrameBytes));
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 5 + static_cast<size_t>(t) * 29);
  return rgb;
}

// Frames in memory, with counted reads (atomic: the test reads the count while the read-ahead thread decodes), a
// frame that fails and a reported decode time per frame (index + 1 ms).
class CountingVideo final : public VideoSource {
 public:
  explicit CountingVideo(int frames, int64_t fail_at = -1) : fail_at_(fail_at) {
    std::vector<std::vector<uint8_t>> rgb;
    for (int t = 0; t < frames; ++t) rgb.push_back(pattern(t));
    inner_ = std::move(*MemoryVideoSource::from_rgb(kWidth, kHeight, std::move(rgb), {25, 1}));
  }
  const VideoInfo& info() const override { return inner_->info(); }
  Expected<FramePtr> read_frame(int64_t index, FrameSize size = {}) override {
    reads->fetch_add(1);
    last_ms_ = static_cast<double>(index + 1);
    if (index == fail_at_) return corrupt_data("damaged packet at frame " + std::to_string(index));
    return inner_->read_frame(index, size);
  }
  double last_decode_ms() const override { return last_ms_; }
  DecodeCounters decode_counters() const override { return {.seeks = 0, .decoded_frames = reads->load()}; }

  std::shared_ptr<std::atomic<int>> reads = std::make_shared<std::atomic<int>>(0);

 private:
  std::unique_ptr<MemoryVideoSource> inner_;
  int64_t fail_at_ = -1;
  double last_ms_ = 0.0;
};

// Waits (up to 10 s) until `reads` reaches `expected`, then 200 ms more (time to overshoot, were the thread not
// bounded); returns the count then.
int settled_reads(const std::atomic<int>& reads, int expected) {
  for (int i = 0; i < 1000 && reads.load() < expected; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  return reads.load();
}

struct Wrapped {
  std::shared_ptr<std::atomic<int>> reads;
  std::unique_ptr<ReadAheadVideoSource> video;
};

Wrapped wrap(int frames, ReadAheadOptions options, int64_t fail_at = -1) {
  auto inner = std::make_unique<CountingVideo>(frames, fail_at);
  Wrapped w{inner->reads, nullptr};
  w.video = std::make_unique<ReadAheadVideoSource>(std::move(inner), options);
  return w;
}

void expect_frame(const Expected<FramePtr>& frame, int t) {
  ASSERT_TRUE(frame) << frame.status().message();
  EXPECT_EQ((*frame)->index, t);
  EXPECT_EQ((*frame)->rgb, pattern(t)) << "frame " << t;
}

TEST(ReadAheadVideoSource, DecodesBeforeTheFirstReadAndServesEveryFrameOnceInOrder) {
  Wrapped w = wrap(12, {.first_frame = 2, .end_frame = -1, .budget_bytes = 100 * kFrameBytes});
  // Nobody has read yet: the whole range (frames 2..11) is decoded ahead, once.
  EXPECT_EQ(settled_reads(*w.reads, 10), 10);
  for (int t = 2; t < 12; ++t) {
    expect_frame(w.video->read_frame(t), t);
    EXPECT_EQ(w.video->last_decode_ms(), t + 1.0) << "the decode time of the frame returned, spent ahead";
  }
  EXPECT_EQ(w.reads->load(), 10) << "no frame decoded twice";
  const ReadAheadStats stats = w.video->stats();
  EXPECT_EQ(stats.decoded_frames, 10);
  EXPECT_EQ(stats.served_frames, 10);
  EXPECT_DOUBLE_EQ(stats.decode_ms, 3.0 + 4 + 5 + 6 + 7 + 8 + 9 + 10 + 11 + 12);
  EXPECT_EQ(w.video->info().frame_count, 12);
}

TEST(ReadAheadVideoSource, HoldsNoMoreThanItsBudget) {
  Wrapped w = wrap(30, {.first_frame = 0, .end_frame = -1, .budget_bytes = 3 * kFrameBytes + kFrameBytes / 2});
  EXPECT_EQ(settled_reads(*w.reads, 3), 3) << "3 frames fit in 3.5 frames' bytes";
  expect_frame(w.video->read_frame(0), 0);
  EXPECT_EQ(settled_reads(*w.reads, 4), 4) << "one taken, one more decoded";
  for (int t = 1; t < 30; ++t) expect_frame(w.video->read_frame(t), t);
  EXPECT_EQ(w.reads->load(), 30);

  // A budget below one frame still reads one frame ahead.
  Wrapped tiny = wrap(5, {.first_frame = 0, .end_frame = -1, .budget_bytes = 0});
  EXPECT_EQ(settled_reads(*tiny.reads, 1), 1);
  for (int t = 0; t < 5; ++t) expect_frame(tiny.video->read_frame(t), t);
  EXPECT_EQ(tiny.video->stats().served_frames, 5);
}

TEST(ReadAheadVideoSource, StopsAtTheEndOfItsRangeAndReadsOnFromTheWrappedSource) {
  Wrapped w = wrap(10, {.first_frame = 0, .end_frame = 4, .budget_bytes = 100 * kFrameBytes});
  EXPECT_EQ(settled_reads(*w.reads, 4), 4);
  for (int t = 0; t < 10; ++t) expect_frame(w.video->read_frame(t), t);
  EXPECT_EQ(w.reads->load(), 10);
  EXPECT_EQ(w.video->stats().served_frames, 4);
}

TEST(ReadAheadVideoSource, AnyOtherReadEndsTheReadAheadAndIsServedExactly) {
  Wrapped w = wrap(20, {.first_frame = 0, .end_frame = -1, .budget_bytes = 100 * kFrameBytes});
  expect_frame(w.video->read_frame(0), 0);
  expect_frame(w.video->read_frame(7), 7);  // a jump
  const int after_jump = w.reads->load();
  EXPECT_EQ(settled_reads(*w.reads, after_jump), after_jump) << "the read-ahead thread has stopped";
  expect_frame(w.video->read_frame(8), 8);
  expect_frame(w.video->read_frame(1), 1);
  EXPECT_EQ(w.video->stats().served_frames, 1);

  // A scaled read of the next frame goes to the wrapped source too, at the size asked for.
  Wrapped scaled = wrap(6, {.first_frame = 0, .end_frame = -1, .budget_bytes = 100 * kFrameBytes});
  Expected<FramePtr> half = scaled.video->read_frame(0, {kWidth / 2, kHeight / 2});
  ASSERT_TRUE(half) << half.status().message();
  EXPECT_EQ((*half)->width, kWidth / 2);
  EXPECT_EQ((*half)->height, kHeight / 2);
  expect_frame(scaled.video->read_frame(1), 1);
  EXPECT_EQ(scaled.video->stats().served_frames, 0);
}

TEST(ReadAheadVideoSource, AFrameThatFailsIsReportedByTheWrappedSourceAndTheSourceStaysUsable) {
  Wrapped w = wrap(8, {.first_frame = 0, .end_frame = -1, .budget_bytes = 100 * kFrameBytes}, /*fail_at=*/3);
  EXPECT_EQ(settled_reads(*w.reads, 4), 4) << "frames 0..2 and the failed attempt at 3; no more";
  for (int t = 0; t < 3; ++t) expect_frame(w.video->read_frame(t), t);
  Expected<FramePtr> broken = w.video->read_frame(3);
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.status().code(), StatusCode::corrupt_data);
  EXPECT_NE(broken.status().message().find("frame 3"), std::string::npos) << broken.status().message();
  for (int t = 4; t < 8; ++t) expect_frame(w.video->read_frame(t), t);
}

TEST(ReadAheadVideoSource, ReportsTheWrappedSourceAndEndsPromptlyWhileDecodingAhead) {
  // Queries while the thread runs wait for its frame in flight rather than racing it (run under TSan in CI).
  Wrapped w = wrap(400, {.first_frame = 0, .end_frame = -1, .budget_bytes = 50 * kFrameBytes});
  for (int i = 0; i < 20; ++i) {
    EXPECT_GE(w.video->decode_counters().decoded_frames, 0);
    EXPECT_TRUE(w.video->integrity().damaged_frames.empty());
  }
  expect_frame(w.video->read_frame(0), 0);
  // Destroyed while the thread waits for room (or decodes): no hang.
  const auto start = std::chrono::steady_clock::now();
  w.video.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // scan_integrity ends the read-ahead and scans through the wrapped source.
  Wrapped scan = wrap(6, {.first_frame = 0, .end_frame = -1, .budget_bytes = 2 * kFrameBytes});
  Expected<IntegrityReport> report = scan.video->scan_integrity();
  ASSERT_TRUE(report) << report.status().message();
  expect_frame(scan.video->read_frame(0), 0);
}

}  // namespace
}  // namespace trackscope::core
