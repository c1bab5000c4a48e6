// PNG and JPEG files of RGB frames through FFmpeg's image codecs.
#include <gtest/gtest.h>

#include <array>

#include "core/video/image_io.h"
#include "core/video/video_source.h"
#include "video_test_support.h"

namespace trackscope::core {
namespace {

Frame gradient(int width, int height) {
  Frame frame;
  frame.width = width;
  frame.height = height;
  frame.rgb.resize(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = frame.rgb.data() + (static_cast<size_t>(y) * width + x) * 3;
      p[0] = static_cast<uint8_t>(x * 255 / std::max(1, width - 1));
      p[1] = static_cast<uint8_t>(y * 255 / std::max(1, height - 1));
      p[2] = static_cast<uint8_t>((x * 31 + y * 17) % 256);  // sharp sawtooth edges
    }
  }
  return frame;
}

TEST(ImageIo, PngRoundTripIsLossless) {
  TRACKSCOPE_SKIP_WITHOUT_PNG_ENCODER();
  const auto folder = testing::test_folder("image_io_png");
  for (auto [width, height] : {std::pair{1, 1}, std::pair{97, 61}, std::pair{640, 360}}) {
    const Frame frame = gradient(width, height);
    const auto path = folder / fmt::format("gradient_{}x{}.png", width, height);
    const Status written = write_png(path, frame);
    ASSERT_TRUE(written.ok()) << written.message();
    Expected<Frame> read = read_png(path);
    ASSERT_TRUE(read) << read.status().message();
    EXPECT_EQ(read->width, width);
    EXPECT_EQ(read->height, height);
    EXPECT_TRUE(read->rgb == frame.rgb);
    // The same file opened as a one-frame video gives the same pixels.
    auto source = VideoSource::open(path);
    ASSERT_TRUE(source) << source.status().message();
    EXPECT_EQ((*source)->info().frame_count, 1);
    auto decoded = (*source)->read_frame(0);
    ASSERT_TRUE(decoded);
    EXPECT_TRUE((*decoded)->rgb == frame.rgb);
  }
}

TEST(ImageIo, JpegIsCloseToTheOriginal) {
  TRACKSCOPE_SKIP_WITHOUT_ENCODER(VideoCodec::mjpeg);
  const auto folder = testing::test_folder("image_io_jpeg");
  Frame frame = gradient(160, 120);
  for (size_t i = 2; i < frame.rgb.size(); i += 3) frame.rgb[i] = static_cast<uint8_t>(255 - frame.rgb[i - 2] / 2);
  ASSERT_TRUE(write_jpeg(folder / "gradient.jpg", frame, 2).ok());
  auto source = VideoSource::open(folder / "gradient.jpg");
  ASSERT_TRUE(source) << source.status().message();
  auto decoded = (*source)->read_frame(0);
  ASSERT_TRUE(decoded);
  // Smooth content, best quality: small errors and no colour shift (the same YCbCr matrix and range both ways).
  std::array<double, 3> mean_error{};
  for (size_t i = 0; i < frame.rgb.size(); ++i) {
    mean_error[i % 3] += ((*decoded)->rgb[i] - frame.rgb[i]) / static_cast<double>(frame.rgb.size() / 3);
  }
  double difference = 0.0;
  for (size_t i = 0; i < frame.rgb.size(); ++i) difference += std::abs(frame.rgb[i] - (*decoded)->rgb[i]);
  EXPECT_LT(difference / static_cast<double>(frame.rgb.size()), 1.5);
  for (double error : mean_error) EXPECT_LT(std::abs(error), 0.5);
  EXPECT_EQ(write_jpeg(folder / "bad.jpg", frame, 1).code(), StatusCode::invalid_argument);
}

TEST(ImageIo, Errors) {
  const auto folder = testing::test_folder("image_io_errors");
  EXPECT_EQ(read_png(folder / "missing.png").status().code(), StatusCode::not_found);
  testing::write_bytes(folder / "empty.png", {});
  EXPECT_EQ(read_png(folder / "empty.png").status().code(), StatusCode::corrupt_data);
  testing::write_bytes(folder / "text.png", {'n', 'o', 't', ' ', 'p', 'n', 'g'});
  EXPECT_EQ(read_png(folder / "text.png").status().code(), StatusCode::corrupt_data);
  // A truncated PNG is refused (libpng cannot recover it; PIL refuses it too), naming the file.
  testing::write_uncompressed_png(folder / "whole.png", testing::make_index_frame(1, 64, 48));
  std::vector<uint8_t> bytes = testing::read_bytes(folder / "whole.png");
  bytes.resize(bytes.size() / 2);
  testing::write_bytes(folder / "cut.png", bytes);
  Expected<Frame> cut = read_png(folder / "cut.png");
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.status().code(), StatusCode::corrupt_data);
  EXPECT_NE(cut.status().message().find("cut.png"), std::string::npos) << cut.status().message();
  EXPECT_NE(cut.status().message().find("truncated"), std::string::npos) << cut.status().message();
  Frame broken;
  broken.width = 4;
  broken.height = 4;
  broken.rgb.resize(5);
  EXPECT_EQ(write_png(folder / "broken.png", broken).code(), StatusCode::invalid_argument);
  EXPECT_EQ(write_png("/nonexistent/folder/x.png", gradient(4, 4)).code(),
            png_encoder_available() ? StatusCode::io_error : StatusCode::unsupported);
}

}  // namespace
}  // namespace trackscope::core
