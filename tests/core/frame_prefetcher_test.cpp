// FramePrefetcher: batches decoded on a thread of their own, in order, bounded ahead of the consumer.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "core/video/frame_prefetcher.h"
#include "core/video/memory_video.h"

namespace trackscope::core {
namespace {

constexpr int kWidth = 12;
constexpr int kHeight = 8;
constexpr size_t kFrameBytes = static_cast<size_t>(kWidth) * kHeight * 3;

// Frame t: every byte depends on t and its position.
std::vector<uint8_t> pattern(int t, int width = kWidth, int height = kHeight) {
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 7 + static_cast<size_t>(t) * 31);
  return rgb;
}

// A MemoryVideoSource that counts its reads (atomically: the test thread reads the count while the decode thread
// works), can fail at one frame and can return one frame at another size.
class InstrumentedVideo final : public VideoSource {
 public:
  explicit InstrumentedVideo(int frames) {
    std::vector<std::vector<uint8_t>> rgb;
    for (int t = 0; t < frames; ++t) rgb.push_back(pattern(t));
    inner_ = std::move(*MemoryVideoSource::from_rgb(kWidth, kHeight, std::move(rgb), {25, 1}));
  }
  const VideoInfo& info() const override { return inner_->info(); }
  Expected<FramePtr> read_frame(int64_t index, FrameSize size = {}) override {
    reads.fetch_add(1);
    if (index == fail_at) return corrupt_data("damaged packet");
    if (index == resized_at) {
      auto frame = std::make_shared<Frame>();
      frame->index = index;
      frame->width = kWidth / 2;
      frame->height = kHeight;
      frame->rgb.assign(kFrameBytes / 2, 0);
      return FramePtr(frame);
    }
    return inner_->read_frame(index, size);
  }
  double last_decode_ms() const override { return 0.0; }

  std::atomic<int> reads{0};
  int64_t fail_at = -1;
  int64_t resized_at = -1;

 private:
  std::unique_ptr<MemoryVideoSource> inner_;
};

FramePrefetchOptions options_for(int64_t first, int64_t end, int batch) {
  FramePrefetchOptions options;
  options.first_frame = first;
  options.end_frame = end;
  options.batch_frames = batch;
  options.frame_width = kWidth;
  options.frame_height = kHeight;
  return options;
}

// Waits (up to 10 s) until `reads` reaches `expected`, then 200 ms more (time to overshoot, were the decode thread
// not bounded); returns the count then.
int settled_reads(const std::atomic<int>& reads, int expected) {
  for (int i = 0; i < 1000 && reads.load() < expected; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  return reads.load();
}

TEST(FramePrefetcher, DeliversEveryFrameOfTheRangeInOrderAndInBatches) {
  InstrumentedVideo video(20);
  FramePrefetcher prefetcher(video, options_for(3, 14, 4));  // frames 3..13: batches of 4, 4, 3
  std::vector<int64_t> firsts, counts;
  for (;;) {
    Expected<std::optional<PrefetchedBatch>> batch = prefetcher.next();
    ASSERT_TRUE(batch) << batch.status().message();
    if (!*batch) break;
    const PrefetchedBatch& b = **batch;
    firsts.push_back(b.first_frame);
    counts.push_back(b.count);
    for (int64_t i = 0; i < b.count; ++i) {
      const std::vector<uint8_t> expected = pattern(static_cast<int>(b.first_frame + i));
      EXPECT_EQ(std::memcmp(b.buffer.data + i * kFrameBytes, expected.data(), kFrameBytes), 0)
          << "frame " << b.first_frame + i;
    }
    EXPECT_GE(b.decode_ms, 0.0);
    EXPECT_LE(b.started, b.finished);
  }
  EXPECT_EQ(firsts, (std::vector<int64_t>{3, 7, 11}));
  EXPECT_EQ(counts, (std::vector<int64_t>{4, 4, 3}));
  EXPECT_EQ(video.reads.load(), 11);
  // After the end it keeps saying so.
  Expected<std::optional<PrefetchedBatch>> after = prefetcher.next();
  ASSERT_TRUE(after);
  EXPECT_FALSE(after->has_value());
}

TEST(FramePrefetcher, DecodesAheadOnlyUpToTheQueueBound) {
  InstrumentedVideo video(40);
  FramePrefetchOptions options = options_for(0, 40, 2);
  options.queue_batches = 3;
  FramePrefetcher prefetcher(video, options);
  // Nothing taken yet: three batches decoded, then the decode thread waits.
  EXPECT_EQ(settled_reads(video.reads, 6), 6);
  Expected<std::optional<PrefetchedBatch>> first = prefetcher.next();
  ASSERT_TRUE(first && first->has_value());
  EXPECT_EQ((*first)->first_frame, 0);
  // One taken (and still held here): one more batch is decoded into a buffer of its own.
  EXPECT_EQ(settled_reads(video.reads, 8), 8);
  Expected<std::optional<PrefetchedBatch>> second = prefetcher.next();
  ASSERT_TRUE(second && second->has_value());
  EXPECT_NE((*second)->buffer.data, (*first)->buffer.data);
  EXPECT_LT((*second)->wait_ms, 50.0);                                               // it was ready
  EXPECT_EQ(std::memcmp((*first)->buffer.data, pattern(0).data(), kFrameBytes), 0);  // still intact
}

TEST(FramePrefetcher, ConvertWritesEachSlotAndUsesTheAllocator) {
  InstrumentedVideo video(5);
  FramePrefetchOptions options = options_for(0, 5, 2);
  options.frame_width = 2;  // slots of 2x1 pixels: the first two pixels of each frame, inverted
  options.frame_height = 1;
  options.convert = [](const Frame& frame, uint8_t* slot) {
    for (int i = 0; i < 6; ++i) slot[i] = static_cast<uint8_t>(255 - frame.rgb[static_cast<size_t>(i)]);
    return Status();
  };
  std::atomic<int64_t> allocated{0};
  options.allocate = [&allocated](int64_t bytes) {
    allocated += bytes;
    auto storage = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(bytes), 0xAB);
    uint8_t* data = storage->data();
    return BatchBuffer{std::move(storage), data};
  };
  FramePrefetcher prefetcher(video, options);
  int64_t frames = 0;
  while (true) {
    Expected<std::optional<PrefetchedBatch>> batch = prefetcher.next();
    ASSERT_TRUE(batch);
    if (!*batch) break;
    for (int64_t i = 0; i < (*batch)->count; ++i, ++frames) {
      const std::vector<uint8_t> source = pattern(static_cast<int>((*batch)->first_frame + i));
      for (int c = 0; c < 6; ++c) EXPECT_EQ((*batch)->buffer.data[i * 6 + c], 255 - source[static_cast<size_t>(c)]);
    }
  }
  EXPECT_EQ(frames, 5);
  EXPECT_EQ(allocated.load(), 5 * 6);
}

TEST(FramePrefetcher, AnErrorEndsTheRangeAfterTheBatchesBeforeIt) {
  InstrumentedVideo video(12);
  video.fail_at = 6;
  FramePrefetcher prefetcher(video, options_for(0, 12, 3));
  for (int64_t first : {0, 3}) {
    Expected<std::optional<PrefetchedBatch>> batch = prefetcher.next();
    ASSERT_TRUE(batch && batch->has_value()) << batch.status().message();
    EXPECT_EQ((*batch)->first_frame, first);
  }
  for (int repeat = 0; repeat < 2; ++repeat) {
    Expected<std::optional<PrefetchedBatch>> failed = prefetcher.next();
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.status().code(), StatusCode::corrupt_data);
    EXPECT_NE(failed.status().message().find("frame 6"), std::string::npos) << failed.status().message();
  }
  EXPECT_EQ(settled_reads(video.reads, 7), 7);  // nothing decoded after the failure
}

TEST(FramePrefetcher, ASizeChangeWithoutConvertIsUnsupported) {
  InstrumentedVideo video(6);
  video.resized_at = 4;
  FramePrefetcher prefetcher(video, options_for(0, 6, 4));
  ASSERT_TRUE(prefetcher.next());
  Expected<std::optional<PrefetchedBatch>> failed = prefetcher.next();
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.status().code(), StatusCode::unsupported);
  EXPECT_NE(failed.status().message().find("frame 4 is 6x8"), std::string::npos) << failed.status().message();
}

TEST(FramePrefetcher, StopEndsAWaitingDecodeThread) {
  InstrumentedVideo video(100);
  FramePrefetchOptions options = options_for(0, 100, 5);
  options.queue_batches = 1;
  auto prefetcher = std::make_unique<FramePrefetcher>(video, options);
  EXPECT_EQ(settled_reads(video.reads, 5), 5);
  prefetcher->stop();
  Expected<std::optional<PrefetchedBatch>> after = prefetcher->next();
  ASSERT_TRUE(after);
  EXPECT_FALSE(after->has_value());
  prefetcher.reset();  // destroying a stopped prefetcher is fine too
  EXPECT_EQ(video.reads.load(), 5);
}

TEST(FramePrefetcher, OptionsCheckNamesTheBadValue) {
  FramePrefetchOptions options = options_for(5, 4, 2);
  EXPECT_NE(options.check().message().find("[5, 4)"), std::string::npos);
  options = options_for(0, 4, 0);
  EXPECT_NE(options.check().message().find("batch_frames 0"), std::string::npos);
  options = options_for(0, 4, 2);
  options.queue_batches = 0;
  EXPECT_NE(options.check().message().find("queue_batches 0"), std::string::npos);
  options = options_for(0, 4, 2);
  options.frame_width = 0;
  EXPECT_NE(options.check().message().find("0x8"), std::string::npos);
  EXPECT_TRUE(options_for(0, 0, 1).check());  // an empty range is valid: next() says it is done
}

}  // namespace
}  // namespace trackscope::core
