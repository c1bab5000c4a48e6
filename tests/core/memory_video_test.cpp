// MemoryVideoSource: frames in memory behind the VideoSource interface.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/video/image_resize.h"
#include "core/video/memory_video.h"

namespace trackscope::core {
namespace {

// Frame t of a width x height clip: a gradient that differs per frame and per channel.
std::vector<uint8_t> pattern(int width, int height, int t) {
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = rgb.data() + (static_cast<size_t>(y) * width + x) * 3;
      p[0] = static_cast<uint8_t>(x * 7 + t * 31);
      p[1] = static_cast<uint8_t>(y * 5 + t * 17);
      p[2] = static_cast<uint8_t>((x + y) * 3 + t);
    }
  }
  return rgb;
}

TEST(MemoryVideo, ServesTheGivenFramesWithTiming) {
  std::vector<std::vector<uint8_t>> frames;
  for (int t = 0; t < 5; ++t) frames.push_back(pattern(40, 30, t));
  const std::vector<std::vector<uint8_t>> copy = frames;
  Expected<std::unique_ptr<MemoryVideoSource>> video =
      MemoryVideoSource::from_rgb(40, 30, std::move(frames), {25, 1}, "clip");
  ASSERT_TRUE(video) << video.status().message();
  const VideoInfo& info = (*video)->info();
  EXPECT_EQ(info.width, 40);
  EXPECT_EQ(info.height, 30);
  EXPECT_EQ(info.frame_count, 5);
  EXPECT_EQ(info.frame_rate, (Rational{25, 1}));
  EXPECT_EQ(info.duration_us, 200'000);
  EXPECT_EQ(info.path, "clip");
  EXPECT_EQ(info.container, "memory");

  // Out of order, twice: always the stored frame (the same object), with its index and time.
  for (int64_t index : {3, 0, 4, 3}) {
    Expected<FramePtr> frame = (*video)->read_frame(index);
    ASSERT_TRUE(frame) << frame.status().message();
    EXPECT_EQ((*frame)->index, index);
    EXPECT_EQ((*frame)->pts_us, index * 40'000);
    EXPECT_EQ((*frame)->rgb, copy[static_cast<size_t>(index)]);
  }
  EXPECT_EQ((*video)->read_frame(2)->get(), (*video)->read_frame(2)->get());
  EXPECT_EQ((*video)->decode_counters().decoded_frames, 6);
  EXPECT_EQ((*video)->decode_counters().seeks, 0);

  EXPECT_EQ((*video)->read_frame(5).status().code(), StatusCode::invalid_argument);
  EXPECT_EQ((*video)->read_frame(-1).status().code(), StatusCode::invalid_argument);
  EXPECT_EQ((*video)->read_frame(0, {0, 9}).status().code(), StatusCode::invalid_argument);
}

TEST(MemoryVideo, OtherSizesAreLanczosResized) {
  Expected<std::unique_ptr<MemoryVideoSource>> video =
      MemoryVideoSource::from_rgb(40, 30, {pattern(40, 30, 0), pattern(40, 30, 1)}, {30000, 1001});
  ASSERT_TRUE(video) << video.status().message();
  Expected<FramePtr> small = (*video)->read_frame(1, {16, 12});
  ASSERT_TRUE(small) << small.status().message();
  EXPECT_EQ((*small)->width, 16);
  EXPECT_EQ((*small)->height, 12);
  EXPECT_EQ((*small)->index, 1);
  EXPECT_EQ((*small)->pts_us, 1'000'000 * 1001 / 30000);
  Frame source;
  source.width = 40;
  source.height = 30;
  source.rgb = pattern(40, 30, 1);
  Expected<Frame> expected = resize_image(source, {16, 12}, ResizeFilter::lanczos);
  ASSERT_TRUE(expected);
  EXPECT_EQ((*small)->rgb, expected->rgb);
  // The native size asked explicitly is the stored frame.
  EXPECT_EQ((*video)->read_frame(1, {40, 30})->get(), (*video)->read_frame(1)->get());
}

TEST(MemoryVideo, RejectsInconsistentInput) {
  EXPECT_EQ(MemoryVideoSource::from_rgb(4, 4, {}, {25, 1}).status().code(), StatusCode::invalid_argument);
  EXPECT_EQ(MemoryVideoSource::from_rgb(4, 4, {pattern(4, 4, 0)}, {0, 1}).status().code(),
            StatusCode::invalid_argument);
  Expected<std::unique_ptr<MemoryVideoSource>> short_buffer =
      MemoryVideoSource::from_rgb(4, 4, {pattern(4, 4, 0), pattern(4, 3, 1)}, {25, 1});
  EXPECT_EQ(short_buffer.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(short_buffer.status().message().find("frame 1"), std::string::npos) << short_buffer.status().message();
  std::vector<Frame> mixed(2);
  mixed[0] = {0, 0, 4, 4, pattern(4, 4, 0), {}};
  mixed[1] = {0, 0, 4, 3, pattern(4, 3, 0), {}};
  EXPECT_EQ(MemoryVideoSource::create(std::move(mixed), {25, 1}).status().code(), StatusCode::invalid_argument);
  EXPECT_EQ(MemoryVideoSource::from_rgb(0, 4, {{}}, {25, 1}).status().code(), StatusCode::invalid_argument);
}

}  // namespace
}  // namespace trackscope::core
