// VideoSource on clips made at test time in several codecs and containers: exact frame counts, frames that
// identify themselves by their pixels after random seeks, and random access equal to sequential decoding.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/video/image_io.h"
#include "core/video/video_source.h"
#include "core/video/video_writer.h"
#include "video_test_support.h"

namespace trackscope::core {
namespace {

using testing::make_index_frame;
using testing::read_index;

constexpr int kWidth = 192;
constexpr int kHeight = 128;
constexpr int64_t kFrames = 40;

struct ClipCase {
  std::string name;
  std::string file;  // file name, or a folder / pattern for image sequences
  VideoCodec codec = VideoCodec::h264;
  std::string expected_codec;
  bool variable_rate = false;
  std::string image_extension;  // ".png"/".jpg": an image sequence instead of a video
};

std::vector<int64_t> variable_timestamps_us() {
  // Irregular gaps between 10 ms and 90 ms, as phones write them.
  std::vector<int64_t> pts;
  int64_t t = 0;
  for (int64_t i = 0; i < kFrames; ++i) {
    pts.push_back(t);
    t += 10000 + (i * 37 % 9) * 10000;
  }
  return pts;
}

// Makes the clip of `clip` in `folder`; returns the path to open.
std::filesystem::path make_clip(const ClipCase& clip, const std::filesystem::path& folder) {
  if (!clip.image_extension.empty()) {
    for (int64_t i = 0; i < kFrames; ++i) {
      const auto path = folder / fmt::format("{:05d}{}", i, clip.image_extension);
      const Frame frame = make_index_frame(i, kWidth, kHeight);
      if (clip.image_extension == ".png") {
        testing::write_uncompressed_png(path, frame);
      } else {
        EXPECT_TRUE(write_jpeg(path, frame, 3).ok());
      }
    }
    return clip.file.empty() ? folder : folder / clip.file;
  }
  VideoWriterOptions options;
  options.codec = clip.codec;
  options.width = kWidth;
  options.height = kHeight;
  options.frame_rate = {30, 1};
  options.preset = "veryfast";
  options.keyframe_interval = 12;
  if (clip.codec == VideoCodec::h264) options.max_b_frames = 2;
  const auto path = folder / clip.file;
  const Status written = testing::write_index_clip(
      path, options, kFrames, clip.variable_rate ? variable_timestamps_us() : std::vector<int64_t>{});
  EXPECT_TRUE(written.ok()) << written.message();
  return path;
}

class VideoSourceClipTest : public ::testing::TestWithParam<ClipCase> {
 protected:
  void SetUp() override {
    if (GetParam().image_extension.empty()) {
      TRACKSCOPE_SKIP_WITHOUT_ENCODER(GetParam().codec);
    } else if (GetParam().image_extension == ".jpg") {
      TRACKSCOPE_SKIP_WITHOUT_ENCODER(VideoCodec::mjpeg);
    }
    path_ = make_clip(GetParam(), testing::test_folder("clip_" + GetParam().name));
  }
  std::filesystem::path path_;
};

TEST_P(VideoSourceClipTest, MetadataIsExact) {
  auto source = VideoSource::open(path_);
  ASSERT_TRUE(source) << source.status().message();
  const VideoInfo& info = (*source)->info();
  EXPECT_EQ(info.frame_count, kFrames);
  EXPECT_EQ(info.width, kWidth);
  EXPECT_EQ(info.height, kHeight);
  EXPECT_EQ(info.codec, GetParam().expected_codec);
  EXPECT_EQ(info.rotation_deg, 0);
  EXPECT_TRUE((*source)->integrity().clean()) << (*source)->integrity().summary();
  EXPECT_EQ(info.variable_frame_rate, GetParam().variable_rate);
  if (GetParam().variable_rate) {
    const std::vector<int64_t> pts = variable_timestamps_us();
    EXPECT_NEAR(static_cast<double>(info.duration_us), static_cast<double>(pts.back() + 90000), 90000.0);
  } else if (GetParam().image_extension.empty()) {
    EXPECT_EQ(info.frame_rate, (Rational{30, 1}));
    EXPECT_NEAR(static_cast<double>(info.duration_us), kFrames * 1e6 / 30.0, 1000.0);
  } else {
    EXPECT_EQ(info.frame_rate, (Rational{25, 1}));
    EXPECT_EQ(info.duration_us, kFrames * 1000000 / 25);
  }
}

TEST_P(VideoSourceClipTest, RandomAccessMatchesSequentialAndPixelsCarryTheIndex) {
  auto sequential = VideoSource::open(path_);
  ASSERT_TRUE(sequential) << sequential.status().message();
  std::vector<FramePtr> frames;
  for (int64_t i = 0; i < kFrames; ++i) {
    auto frame = (*sequential)->read_frame(i);
    ASSERT_TRUE(frame) << frame.status().message();
    ASSERT_EQ((*frame)->index, i);
    ASSERT_EQ(read_index(**frame), i) << "sequential frame " << i;
    ASSERT_EQ((*frame)->width, kWidth);
    ASSERT_EQ((*frame)->rgb.size(), static_cast<size_t>(kWidth) * kHeight * 3);
    if (i > 0) {
      ASSERT_GT((*frame)->pts_us, frames.back()->pts_us);
    }
    frames.push_back(*frame);
  }
  EXPECT_EQ(frames.front()->pts_us, 0);
  if (GetParam().variable_rate) {
    const std::vector<int64_t> pts = variable_timestamps_us();
    for (int64_t i = 0; i < kFrames; ++i) EXPECT_EQ(frames[i]->pts_us, pts[i]) << "frame " << i;
  }

  // A fresh source, read in a shuffled order with repeats, backward jumps and short forward steps.
  auto random = VideoSource::open(path_);
  ASSERT_TRUE(random) << random.status().message();
  std::vector<int64_t> order;
  for (int64_t i = 0; i < kFrames; ++i) order.push_back(i);
  std::mt19937 shuffle(7);
  std::shuffle(order.begin(), order.end(), shuffle);
  order.insert(order.end(), {kFrames - 1, 0, kFrames - 1, 13, 12, 11, 14, 15, 35, 24, 23, 23});
  for (int64_t index : order) {
    auto frame = (*random)->read_frame(index);
    ASSERT_TRUE(frame) << frame.status().message();
    EXPECT_EQ(read_index(**frame), index) << "random read of frame " << index;
    EXPECT_EQ((*frame)->pts_us, frames[index]->pts_us);
    EXPECT_TRUE((*frame)->rgb == frames[index]->rgb) << "random read of frame " << index << " differs from sequential";
    EXPECT_GE((*random)->last_decode_ms(), 0.0);
  }
}

TEST_P(VideoSourceClipTest, ScaledFramesKeepTheirContent) {
  auto source = VideoSource::open(path_);
  ASSERT_TRUE(source) << source.status().message();
  for (int64_t index : {31, 5, 17}) {
    auto frame = (*source)->read_frame(index, {96, 80});
    ASSERT_TRUE(frame) << frame.status().message();
    EXPECT_EQ((*frame)->width, 96);
    EXPECT_EQ((*frame)->height, 80);
    EXPECT_EQ(read_index(**frame), index);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, VideoSourceClipTest,
    ::testing::Values(ClipCase{"h264_mp4_bframes", "clip.mp4", VideoCodec::h264, "h264", false, ""},
                      ClipCase{"h264_mkv", "clip.mkv", VideoCodec::h264, "h264", false, ""},
                      ClipCase{"h264_mpegts", "clip.ts", VideoCodec::h264, "h264", false, ""},
                      ClipCase{"vp9_webm", "clip.webm", VideoCodec::vp9, "vp9", false, ""},
                      ClipCase{"mjpeg_avi", "clip.avi", VideoCodec::mjpeg, "mjpeg", false, ""},
                      ClipCase{"h264_mp4_variable_rate", "clip.mp4", VideoCodec::h264, "h264", true, ""},
                      ClipCase{"png_folder", "", VideoCodec::h264, "png", false, ".png"},
                      ClipCase{"jpeg_pattern", "%05d.jpg", VideoCodec::h264, "jpeg", false, ".jpg"}),
    [](const ::testing::TestParamInfo<ClipCase>& param) { return param.param.name; });

TEST(VideoSource, RotationMetadataGivesUprightFrames) {
  TRACKSCOPE_SKIP_WITHOUT_ENCODER(VideoCodec::h264);
  const auto folder = testing::test_folder("rotation");
  for (int rotation : {90, 180, 270}) {
    VideoWriterOptions options;
    options.width = kWidth;
    options.height = kHeight;
    options.preset = "veryfast";
    options.rotation_deg = rotation;
    const auto path = folder / fmt::format("rotated_{}.mp4", rotation);
    ASSERT_TRUE(testing::write_index_clip(path, options, 3).ok());
    auto source = VideoSource::open(path);
    ASSERT_TRUE(source) << source.status().message();
    EXPECT_EQ((*source)->info().rotation_deg, rotation);
    const bool swapped = rotation != 180;
    EXPECT_EQ((*source)->info().width, swapped ? kHeight : kWidth);
    EXPECT_EQ((*source)->info().height, swapped ? kWidth : kHeight);
    auto frame = (*source)->read_frame(2);
    ASSERT_TRUE(frame) << frame.status().message();
    ASSERT_EQ((*frame)->width, (*source)->info().width);
    // Undo the clockwise rotation by hand and read the index from the coded orientation.
    Frame coded;
    coded.width = kWidth;
    coded.height = kHeight;
    coded.rgb.resize((*frame)->rgb.size());
    for (int y = 0; y < kHeight; ++y) {
      for (int x = 0; x < kWidth; ++x) {
        int ux = x, uy = y;  // where coded pixel (x, y) lands in the upright frame
        if (rotation == 90) {
          ux = kHeight - 1 - y;
          uy = x;
        }
        if (rotation == 180) {
          ux = kWidth - 1 - x;
          uy = kHeight - 1 - y;
        }
        if (rotation == 270) {
          ux = y;
          uy = kWidth - 1 - x;
        }
        std::copy_n((*frame)->pixel(ux, uy), 3, coded.rgb.data() + (static_cast<size_t>(y) * kWidth + x) * 3);
      }
    }
    EXPECT_EQ(read_index(coded), 2) << "rotation " << rotation;
    auto scaled = (*source)->read_frame(1, {swapped ? 64 : 96, swapped ? 96 : 64});
    ASSERT_TRUE(scaled) << scaled.status().message();
    EXPECT_EQ((*scaled)->width, swapped ? 64 : 96);
  }
}

TEST(VideoSource, StreamCutInsideAGroupOfPicturesStartsAtItsFirstDecodableFrame) {
  TRACKSCOPE_SKIP_WITHOUT_ENCODER(VideoCodec::h264);
  const auto folder = testing::test_folder("cut_stream");
  VideoWriterOptions options;
  options.width = kWidth;
  options.height = kHeight;
  options.preset = "veryfast";
  options.keyframe_interval = 10;
  options.max_b_frames = 2;
  options.quality = 10;
  ASSERT_TRUE(testing::write_index_clip(folder / "whole.ts", options, 60).ok());
  // MPEG-TS is a sequence of 188-byte packets: dropping the first ones at a packet boundary leaves a valid
  // stream that begins in the middle of a group of pictures.
  std::vector<uint8_t> bytes = testing::read_bytes(folder / "whole.ts");
  const size_t cut = (bytes.size() / 3 / 188) * 188;
  testing::write_bytes(folder / "cut.ts",
                       std::vector<uint8_t>(bytes.begin() + static_cast<std::ptrdiff_t>(cut), bytes.end()));
  auto source = VideoSource::open(folder / "cut.ts");
  ASSERT_TRUE(source) << source.status().message();
  const int64_t count = (*source)->info().frame_count;
  ASSERT_GT(count, 10);
  ASSERT_LT(count, 60);
  auto first = (*source)->read_frame(0);
  ASSERT_TRUE(first) << first.status().message();
  const int64_t offset = read_index(**first);
  EXPECT_EQ(offset + count, 60) << "frame 0 is the first decodable frame; the clip ends at the original end";
  for (int64_t index : {count - 1, int64_t{0}, count / 2, int64_t{3}, count - 5}) {
    auto frame = (*source)->read_frame(index);
    ASSERT_TRUE(frame) << frame.status().message();
    EXPECT_EQ(read_index(**frame), offset + index);
  }
}

TEST(VideoSource, ImageSequenceFolderIsSortedByName) {
  const auto folder = testing::test_folder("sorted_folder");
  // Written out of order, with a non-image file in between.
  for (int64_t i : {3, 0, 2, 1})
    testing::write_uncompressed_png(folder / fmt::format("img_{:03d}.png", i), make_index_frame(i, 64, 48));
  testing::write_bytes(folder / "notes.txt", {'h', 'i'});
  auto source = VideoSource::open(folder);
  ASSERT_TRUE(source) << source.status().message();
  EXPECT_EQ((*source)->info().frame_count, 4);
  for (int64_t i : {2, 0, 3, 1}) {
    auto frame = (*source)->read_frame(i);
    ASSERT_TRUE(frame);
    EXPECT_EQ(read_index(**frame), i);
  }
}

TEST(VideoSource, PatternStartsAtTheFirstExistingNumber) {
  const auto folder = testing::test_folder("pattern_start");
  for (int64_t i = 3; i < 8; ++i)
    testing::write_uncompressed_png(folder / fmt::format("f{}.png", i), make_index_frame(i, 64, 48));
  testing::write_uncompressed_png(folder / "f9.png", make_index_frame(9, 64, 48));  // after a gap: not part of it
  auto source = VideoSource::open(folder / "f%d.png");
  ASSERT_TRUE(source) << source.status().message();
  EXPECT_EQ((*source)->info().frame_count, 5);
  auto last = (*source)->read_frame(4);
  ASSERT_TRUE(last);
  EXPECT_EQ(read_index(**last), 7);
}

TEST(VideoSource, SequentialReadsDoNotSeekAndJumpsStartAtTheNearestKeyframe) {
  TRACKSCOPE_SKIP_WITHOUT_ENCODER(VideoCodec::h264);
  const auto folder = testing::test_folder("keyframe_seeks");
  VideoWriterOptions options;
  options.width = kWidth;
  options.height = kHeight;
  options.preset = "veryfast";
  options.keyframe_interval = 20;  // keyframes at 0, 20, 40, 60
  options.max_b_frames = 3;
  ASSERT_TRUE(testing::write_index_clip(folder / "gop20.mp4", options, 80).ok());
  auto source = VideoSource::open(folder / "gop20.mp4");
  ASSERT_TRUE(source) << source.status().message();
  for (int64_t i = 0; i < 80; ++i) ASSERT_TRUE((*source)->read_frame(i));
  EXPECT_EQ((*source)->decode_counters().seeks, 0);
  EXPECT_EQ((*source)->decode_counters().decoded_frames, 79);  // frame 0 was decoded by open()

  // Frame 57 from the end of the clip: back to keyframe 40, then at most the 18 frames up to 57.
  VideoSource::DecodeCounters before = (*source)->decode_counters();
  auto frame = (*source)->read_frame(57);
  ASSERT_TRUE(frame);
  EXPECT_EQ(read_index(**frame), 57);
  EXPECT_EQ((*source)->decode_counters().seeks - before.seeks, 1);
  EXPECT_LE((*source)->decode_counters().decoded_frames - before.decoded_frames, 18);
  EXPECT_GE((*source)->decode_counters().decoded_frames - before.decoded_frames, 1);

  // A short step forward inside the same group of pictures decodes on without seeking.
  before = (*source)->decode_counters();
  ASSERT_TRUE((*source)->read_frame(59));
  EXPECT_EQ((*source)->decode_counters().seeks, before.seeks);
}

}  // namespace
}  // namespace trackscope::core
