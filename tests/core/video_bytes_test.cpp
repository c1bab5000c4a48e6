// VideoSource::open_bytes (issue 18, the fuzzers' entry point for media): a video or an image held in memory opens
// through FFmpeg's custom I/O with the same frames as the file, seeks included; garbage is an error, not a crash.
#include <gtest/gtest.h>

#include <random>

#include "video_test_support.h"

namespace trackscope::core {
namespace {

std::shared_ptr<const std::vector<uint8_t>> shared(std::vector<uint8_t> bytes) {
  return std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
}

TEST(VideoBytes, AVideoFromMemoryHasTheFramesOfTheFile) {
  TRACKSCOPE_SKIP_WITHOUT_ENCODER(VideoCodec::h264);
  const auto folder = testing::test_folder("bytes");
  VideoWriterOptions options;
  options.codec = VideoCodec::h264;
  options.width = 160;
  options.height = 96;
  options.preset = "veryfast";
  options.keyframe_interval = 8;
  ASSERT_TRUE(testing::write_index_clip(folder / "clip.mp4", options, 30).ok());
  auto from_file = VideoSource::open(folder / "clip.mp4");
  auto from_memory = VideoSource::open_bytes(shared(testing::read_bytes(folder / "clip.mp4")), "clip.mp4");
  ASSERT_TRUE(from_file) << from_file.status().message();
  ASSERT_TRUE(from_memory) << from_memory.status().message();
  EXPECT_EQ((*from_memory)->info().frame_count, 30);
  EXPECT_EQ((*from_memory)->info().path, "clip.mp4");
  EXPECT_EQ((*from_memory)->info().codec, (*from_file)->info().codec);
  // Backwards and forwards jumps (keyframe seeks through the custom I/O), then every frame in order.
  for (int64_t index : {29, 3, 17, 0, 28, 9}) {
    auto a = (*from_memory)->read_frame(index);
    auto b = (*from_file)->read_frame(index);
    ASSERT_TRUE(a && b) << index;
    EXPECT_EQ((*a)->rgb, (*b)->rgb) << index;
    EXPECT_EQ(testing::read_index(**a), index);
  }
}

TEST(VideoBytes, AnImageFromMemoryIsAOneFrameVideo) {
  const Frame image = testing::make_index_frame(5, 64, 48);
  const auto path = testing::test_folder("bytes_image") / "image.png";
  testing::write_uncompressed_png(path, image);
  auto source = VideoSource::open_bytes(shared(testing::read_bytes(path)), "image.png");
  ASSERT_TRUE(source) << source.status().message();
  EXPECT_EQ((*source)->info().frame_count, 1);
  auto frame = (*source)->read_frame(0);
  ASSERT_TRUE(frame) << frame.status().message();
  EXPECT_EQ((*frame)->rgb, image.rgb);
}

TEST(VideoBytes, GarbageAndEmptyBytesAreErrors) {
  std::mt19937 random(3);
  std::vector<uint8_t> noise(20000);
  for (uint8_t& b : noise) b = static_cast<uint8_t>(random());
  auto garbage = VideoSource::open_bytes(shared(noise), "noise.mp4");
  ASSERT_FALSE(garbage);
  EXPECT_TRUE(garbage.status().code() == StatusCode::unsupported || garbage.status().code() == StatusCode::corrupt_data)
      << garbage.status().message();
  EXPECT_EQ(VideoSource::open_bytes(shared({}), "empty.mp4").status().code(), StatusCode::corrupt_data);
  EXPECT_EQ(VideoSource::open_bytes(nullptr, "none").status().code(), StatusCode::invalid_argument);
}

}  // namespace
}  // namespace trackscope::core
