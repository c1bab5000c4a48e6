// VideoSource on the real clips of ../shared/testdata: exact frame counts, and frames read in random order
// bit-identical to the sequentially decoded ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "core/video/video_source.h"
#include "video_test_support.h"

namespace trackscope::core {
namespace {

struct RealClip {
  std::string name;
  int64_t frame_count;
  int width;
  int height;
};

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
  std::map<int64_t, FramePtr> expected;
  for (int64_t i = 0; i < info.frame_count; ++i) {
    auto frame = (*sequential)->read_frame(i);
    ASSERT_TRUE(frame) << "frame " << i << ": " << frame.status().message();
    if (wanted.count(i) != 0) expected[i] = *frame;
  }
  EXPECT_EQ((*sequential)->decode_counters().seeks, 0);

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

INSTANTIATE_TEST_SUITE_P(SharedTestdata, RealClipTest,
                         ::testing::Values(RealClip{"sampt_bees.mp4", 277, 1280, 720},
                                           RealClip{"pips2_camel.mp4", 372, 960, 540},
                                           RealClip{"cotracker_apple.mp4", 50, 1296, 720},
                                           RealClip{"horsejump-high_480p/video", 50, 854, 480}),
                         [](const ::testing::TestParamInfo<RealClip>& param) {
                           std::string name = param.param.name.substr(0, param.param.name.find_first_of("./"));
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

}  // namespace
}  // namespace trackscope::core
