// VideoSource on the real clips of ../shared/testdata: exact frame counts; the pixels the reference tools give
// (`ffmpeg -pix_fmt rgb24` for videos, PIL for image folders: checksums made by tests/core/make_video_reference.py);
// the colour tags; frames read in random order bit-identical to the sequentially decoded ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "core/io/sha256.h"
#include "core/video/frame_server.h"
#include "core/video/video_source.h"
#include "video_test_support.h"

namespace trackscope::core {
namespace {

struct RealClip {
  std::string name;
  int64_t frame_count;
  int width;
  int height;
  // What the reference tool gives (tests/core/make_video_reference.py): SHA-256 of the RGB24 bytes of every 5th
  // frame and the last, concatenated, and of frame 0 alone.
  std::string sampled_sha256;
  std::string frame0_sha256;
  std::string color_matrix;  // the stream's tags as ffprobe names them ("" for images)
  std::string color_range;
  std::string matrix_used;  // the start of VideoInfo::rgb_conversion
};

constexpr int64_t kSampleEvery = 5;

std::string sha256_hex(const std::vector<uint8_t>& bytes) {
  io::Sha256 hasher;
  hasher.update(std::as_bytes(std::span(bytes)));
  return io::to_hex(hasher.finish());
}

class RealClipTest : public ::testing::TestWithParam<RealClip> {
 protected:
  void SetUp() override {
    path_ = testing::shared_testdata(GetParam().name);
    if (!std::filesystem::exists(path_)) GTEST_SKIP() << "test data not found: " << path_;
  }
  std::filesystem::path path_;
};

TEST_P(RealClipTest, InfoAndRandomAccessEqualsSequential) {
  auto sequential = VideoSource::open(path_);
  ASSERT_TRUE(sequential) << sequential.status().message();
  const VideoInfo& info = (*sequential)->info();
  EXPECT_EQ(info.frame_count, GetParam().frame_count);
  EXPECT_EQ(info.width, GetParam().width);
  EXPECT_EQ(info.height, GetParam().height);
  EXPECT_FALSE(info.variable_frame_rate);

  // A few dozen indices: random ones, both ends, and both sides of every keyframe-sized stride.
  std::set<int64_t> wanted = {0, 1, info.frame_count - 1, info.frame_count - 2};
  std::mt19937 random(42);
  while (wanted.size() < 28) wanted.insert(static_cast<int64_t>(random() % static_cast<uint32_t>(info.frame_count)));
  EXPECT_EQ(info.color_matrix, GetParam().color_matrix);
  EXPECT_EQ(info.color_range, GetParam().color_range);
  EXPECT_EQ(info.rgb_conversion.rfind(GetParam().matrix_used, 0), 0U) << info.rgb_conversion;
  std::map<int64_t, FramePtr> expected;
  io::Sha256 sampled;
  for (int64_t i = 0; i < info.frame_count; ++i) {
    auto frame = (*sequential)->read_frame(i);
    ASSERT_TRUE(frame) << "frame " << i << ": " << frame.status().message();
    EXPECT_FALSE((*frame)->integrity.damaged()) << "frame " << i;
    if (wanted.count(i) != 0) expected[i] = *frame;
    if (i == 0) {
      EXPECT_EQ(sha256_hex((*frame)->rgb), GetParam().frame0_sha256) << "frame 0 differs from the reference";
    }
    if (i % kSampleEvery == 0 || i == info.frame_count - 1) sampled.update(std::as_bytes(std::span((*frame)->rgb)));
  }
  EXPECT_EQ(io::to_hex(sampled.finish()), GetParam().sampled_sha256)
      << "the decoded pixels differ from the reference tool's (tests/core/make_video_reference.py)";
  EXPECT_EQ((*sequential)->decode_counters().seeks, 0);
  EXPECT_TRUE((*sequential)->integrity().clean()) << (*sequential)->integrity().summary();

  auto jumping = VideoSource::open(path_);
  ASSERT_TRUE(jumping) << jumping.status().message();
  std::vector<int64_t> order(wanted.begin(), wanted.end());
  std::shuffle(order.begin(), order.end(), random);
  for (int64_t index : order) {
    auto frame = (*jumping)->read_frame(index);
    ASSERT_TRUE(frame) << "frame " << index << ": " << frame.status().message();
    EXPECT_EQ((*frame)->pts_us, expected[index]->pts_us) << "frame " << index;
    EXPECT_TRUE((*frame)->rgb == expected[index]->rgb) << "frame " << index << " differs from the sequential decode";
  }
}

INSTANTIATE_TEST_SUITE_P(
    SharedTestdata, RealClipTest,
    ::testing::Values(
        // ffmpeg -pix_fmt rgb24; BT.709 limited range, tagged
        RealClip{"sampt_bees.mp4", 277, 1280, 720, "8173f35dc0327b41497b20ebd65854bdb7ea85b56934034782f199cd5391a7f7",
                 "110b2363f4499634f8f00e99b0df2f8a2d9f67ca78f53da7b2a84a7eacaf86cf", "bt709", "tv",
                 "BT.709 matrix (tagged), limited range (tagged)"},
        // ffmpeg -pix_fmt rgb24; SMPTE 170M (BT.601) limited range, tagged
        RealClip{"pips2_camel.mp4", 372, 960, 540, "59fac0d0dc6ec2b9e4c0cddc02c124592b9854c3c88031ce6b4e69fd67b1c7b4",
                 "04e3aa52b9d4b126692a64b9f4a55345d585501f11e139ab12cab8b5d6a2d127", "smpte170m", "tv",
                 "BT.601 matrix (tagged), limited range (tagged)"},
        // ffmpeg -pix_fmt rgb24; untagged: BT.601 and yuv420p's limited range by default
        RealClip{"cotracker_apple.mp4", 50, 1296, 720,
                 "d98032f3c674a1a1df98aa00474e7e42d8bb81173b4d4e5559ec690e2529b492",
                 "4ef2fe775eefc757ec30ed2e9bdce524e746f256e3dcd13c0e80909d0e754ec9", "unknown", "unknown",
                 "BT.601 matrix (untagged"},
        // PIL (libjpeg-turbo)
        RealClip{"horsejump-high_480p/video", 50, 854, 480,
                 "61f16165013c4285423cd3370a88b2592f5babc2770ad3a2cba69a064e480da4",
                 "1c7e0edbbd93a45282f1351b132ce7627055d4c5a2ac9df2e3aaaf566c4c70ad", "", "", "libjpeg-turbo"},
        // PIL (libpng): 8-bit greyscale masks
        RealClip{"horsejump-high_480p/masks", 50, 854, 480,
                 "af0cdc85f9d7be14feb112abddc7c79f92b8b38e567c3f2804dbe06bf6b3c705",
                 "90400a47dc5a2406906635bf8372fcfc49e50897d3203de9e83624c268a27420", "", "", "libpng"}),
    [](const ::testing::TestParamInfo<RealClip>& param) {
      std::string name = param.param.name;
      if (name.find('/') != std::string::npos) {
        name = name.substr(0, name.find('_')) + "_" + name.substr(name.rfind('/') + 1);
      }
      name = name.substr(0, name.find('.'));
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

TEST(RealClips, PatternAndFolderAgree) {
  const auto folder = testing::shared_testdata("horsejump-high_480p/video");
  if (!std::filesystem::exists(folder)) GTEST_SKIP() << "test data not found: " << folder;
  auto by_folder = VideoSource::open(folder);
  auto by_pattern = VideoSource::open(folder / "%05d.jpg");
  ASSERT_TRUE(by_folder && by_pattern);
  EXPECT_EQ((*by_pattern)->info().frame_count, 50);
  for (int64_t i : {49, 0, 25}) {
    auto a = (*by_folder)->read_frame(i);
    auto b = (*by_pattern)->read_frame(i);
    ASSERT_TRUE(a && b);
    EXPECT_TRUE((*a)->rgb == (*b)->rgb);
  }
}

// The GUI shows the frame server's frames, the tracker reads its own VideoSource: the same pixels, whatever the
// decoder threads of each.
TEST(RealClips, DisplayAndTrackerPathsGiveTheSamePixels) {
  for (const char* name : {"pips2_camel.mp4", "horsejump-high_480p/video"}) {
    const auto path = testing::shared_testdata(name);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "test data not found: " << path;
    VideoOpenOptions single_thread;
    single_thread.decoder_threads = 1;
    auto tracker_side = VideoSource::open(path, single_thread);
    ASSERT_TRUE(tracker_side) << tracker_side.status().message();
    auto display_side = FrameServer::open(path, {});
    ASSERT_TRUE(display_side) << display_side.status().message();
    for (int64_t index : {0, 17, 3, 44}) {
      auto a = (*tracker_side)->read_frame(index);
      auto b = (*display_side)->wait_for(index, std::chrono::seconds(30));
      ASSERT_TRUE(a && b) << name << " frame " << index;
      EXPECT_TRUE((*a)->rgb == (*b)->rgb) << name << " frame " << index;
    }
  }
}

}  // namespace
}  // namespace trackscope::core
