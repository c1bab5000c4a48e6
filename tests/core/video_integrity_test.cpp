// Corrupt media is flagged, never fed silently to the tracker: damaged copies of the shared clips made in the test
// (bytes flipped in an H.264 stream, truncated files, damaged JPEG data, images of another size) and the image
// policy (stop, skip, resize).
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/video/image_io.h"
#include "core/video/video_source.h"
#include "video_test_support.h"

namespace trackscope::core {
namespace {

namespace fs = std::filesystem;

// Flips `count` bytes (XOR 0xFF) at seeded positions in [begin, end) of `bytes`.
void flip_bytes(std::vector<uint8_t>& bytes, size_t begin, size_t end, int count, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<size_t> position(begin, end - 1);
  for (int i = 0; i < count; ++i) bytes[position(random)] ^= 0xFF;
}

class DamagedVideoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    camel_ = testing::shared_testdata("pips2_camel.mp4");
    if (!fs::exists(camel_)) GTEST_SKIP() << "test data not found: " << camel_;
    folder_ =
        testing::test_folder(std::string("damaged_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  fs::path camel_;
  fs::path folder_;
};

TEST_F(DamagedVideoTest, FlippedBytesInH264AreReportedPerFrame) {
  std::vector<uint8_t> bytes = testing::read_bytes(camel_);
  // The middle third of the file is H.264 slice data (the mp4's index is at its start).
  flip_bytes(bytes, bytes.size() / 3, 2 * bytes.size() / 3, 20, 1);
  const fs::path damaged = folder_ / "flipped.mp4";
  testing::write_bytes(damaged, bytes);

  VideoOpenOptions options;
  options.decoder_threads = 1;  // one decoder thread: the same concealment on every decode of a frame
  auto scanned = VideoSource::open(damaged, options);
  ASSERT_TRUE(scanned) << scanned.status().message();
  EXPECT_EQ((*scanned)->info().frame_count, 372) << "concealed frames are kept, not dropped";
  auto report = (*scanned)->scan_integrity();
  ASSERT_TRUE(report) << report.status().message();
  EXPECT_TRUE(report->complete());
  EXPECT_FALSE(report->clean());
  ASSERT_GE(report->damaged_frames.size(), 3U);
  for (const auto& frame : report->damaged_frames) {
    EXPECT_TRUE(frame.integrity.damaged()) << frame.index;
    EXPECT_FALSE(frame.detail.empty()) << frame.index;
    EXPECT_GT(frame.index, 0) << "the damage is in the middle of the file";
    EXPECT_LT(frame.index, 372);
  }
  EXPECT_NE(report->summary().find("damaged frame"), std::string::npos) << report->summary();

  // Reading the clip as the tracker does finds the same frames, and each damaged frame says so.
  auto sequential = VideoSource::open(damaged, options);
  ASSERT_TRUE(sequential);
  std::vector<int64_t> flagged;
  for (int64_t i = 0; i < 372; ++i) {
    auto frame = (*sequential)->read_frame(i);
    ASSERT_TRUE(frame) << "frame " << i << ": " << frame.status().message();
    if ((*frame)->integrity.damaged()) flagged.push_back(i);
  }
  std::vector<int64_t> scanned_indices;
  for (const auto& frame : report->damaged_frames) scanned_indices.push_back(frame.index);
  EXPECT_EQ(flagged, scanned_indices);
  EXPECT_EQ((*sequential)->integrity().damaged_in(0, -1), scanned_indices);
  EXPECT_EQ((*sequential)->integrity().damaged_in(0, scanned_indices.front()).size(), 0U);

  // A random read of a damaged frame after the scan carries the flag too.
  auto again = (*scanned)->read_frame(scanned_indices.back());
  ASSERT_TRUE(again);
  EXPECT_TRUE((*again)->integrity.damaged());

  // The intact clip reports nothing.
  auto intact = VideoSource::open(camel_, options);
  ASSERT_TRUE(intact);
  auto clean = (*intact)->scan_integrity();
  ASSERT_TRUE(clean);
  EXPECT_TRUE(clean->clean()) << clean->summary();
  EXPECT_EQ(clean->checked_frames, 372);
}

TEST_F(DamagedVideoTest, FlippedBytesAreReportedWithFrameThreadsToo) {
  std::vector<uint8_t> bytes = testing::read_bytes(camel_);
  flip_bytes(bytes, bytes.size() / 3, 2 * bytes.size() / 3, 20, 2);
  const fs::path damaged = folder_ / "flipped.mp4";
  testing::write_bytes(damaged, bytes);
  VideoOpenOptions options;
  options.decoder_threads = 4;
  auto source = VideoSource::open(damaged, options);
  ASSERT_TRUE(source) << source.status().message();
  auto report = (*source)->scan_integrity();
  ASSERT_TRUE(report);
  EXPECT_FALSE(report->damaged_frames.empty()) << report->summary();
}

TEST_F(DamagedVideoTest, TruncatedH264IsReported) {
  std::vector<uint8_t> bytes = testing::read_bytes(camel_);
  bytes.resize(bytes.size() * 6 / 10);
  const fs::path truncated = folder_ / "truncated.mp4";
  testing::write_bytes(truncated, bytes);
  auto source = VideoSource::open(truncated);
  ASSERT_TRUE(source) << source.status().message();
  auto report = (*source)->scan_integrity();
  ASSERT_TRUE(report);
  EXPECT_FALSE(report->clean());
  EXPECT_LT((*source)->info().frame_count, 372);
  EXPECT_FALSE(report->stream_error.empty() && report->damaged_frames.empty()) << report->summary();
}

// A copy of the first frames of the horsejump JPEG sequence, to damage.
class DamagedImagesTest : public DamagedVideoTest {
 protected:
  void SetUp() override {
    const fs::path source = testing::shared_testdata("horsejump-high_480p/video");
    if (!fs::exists(source)) GTEST_SKIP() << "test data not found: " << source;
    folder_ = testing::test_folder(std::string("damaged_images_") +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    for (int i = 0; i < kImages; ++i) {
      const std::string name = fmt::format("{:05d}.jpg", i);
      fs::copy_file(source / name, folder_ / name);
    }
  }
  static Expected<std::unique_ptr<VideoSource>> open(const fs::path& folder, ImagePolicy policy) {
    VideoOpenOptions options;
    options.image_policy = policy;
    return VideoSource::open(folder, options);
  }
  static constexpr int kImages = 10;
};

TEST_F(DamagedImagesTest, TruncatedImageStopsOrIsLeftOut) {
  std::vector<uint8_t> bytes = testing::read_bytes(folder_ / "00004.jpg");
  bytes.resize(bytes.size() * 6 / 10);
  testing::write_bytes(folder_ / "00004.jpg", bytes);

  auto stopped = open(folder_, ImagePolicy::stop);
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.status().code(), StatusCode::corrupt_data);
  EXPECT_NE(stopped.status().message().find("00004.jpg"), std::string::npos) << stopped.status().message();
  EXPECT_NE(stopped.status().message().find("truncated"), std::string::npos) << stopped.status().message();

  for (ImagePolicy policy : {ImagePolicy::skip, ImagePolicy::resize}) {
    auto source = open(folder_, policy);
    ASSERT_TRUE(source) << source.status().message();
    EXPECT_EQ((*source)->info().frame_count, kImages - 1);
    const IntegrityReport report = (*source)->integrity();
    ASSERT_EQ(report.skipped_images.size(), 1U);
    EXPECT_EQ(report.skipped_images[0].file.filename(), "00004.jpg");
    EXPECT_FALSE(report.clean());
    auto scanned = (*source)->scan_integrity();
    ASSERT_TRUE(scanned);
    EXPECT_TRUE(scanned->damaged_frames.empty()) << "the remaining images are intact";
  }
}

TEST_F(DamagedImagesTest, ImagesOfAnotherSizeStopAreLeftOutOrResized) {
  auto original = VideoSource::open(folder_);
  ASSERT_TRUE(original);
  auto small = (*original)->read_frame(6, {427, 240});
  ASSERT_TRUE(small);
  original->reset();
  ASSERT_TRUE(write_jpeg(folder_ / "00006.jpg", **small, 2).ok());

  auto stopped = open(folder_, ImagePolicy::stop);
  ASSERT_FALSE(stopped);
  EXPECT_NE(stopped.status().message().find("00006.jpg"), std::string::npos) << stopped.status().message();
  EXPECT_NE(stopped.status().message().find("427x240"), std::string::npos) << stopped.status().message();

  auto skipped = open(folder_, ImagePolicy::skip);
  ASSERT_TRUE(skipped) << skipped.status().message();
  EXPECT_EQ((*skipped)->info().frame_count, kImages - 1);
  ASSERT_EQ((*skipped)->integrity().skipped_images.size(), 1U);

  auto resized = open(folder_, ImagePolicy::resize);
  ASSERT_TRUE(resized) << resized.status().message();
  EXPECT_EQ((*resized)->info().frame_count, kImages);
  ASSERT_EQ((*resized)->integrity().resized_images.size(), 1U);
  EXPECT_EQ((*resized)->integrity().resized_images[0].file.filename(), "00006.jpg");
  auto frame = (*resized)->read_frame(6);
  ASSERT_TRUE(frame) << frame.status().message();
  EXPECT_EQ((*frame)->width, 854);
  EXPECT_EQ((*frame)->height, 480);
  EXPECT_TRUE((*frame)->integrity.resized);
  EXPECT_FALSE((*frame)->integrity.damaged());
  auto neighbour = (*resized)->read_frame(5);
  ASSERT_TRUE(neighbour);
  EXPECT_FALSE((*neighbour)->integrity.resized);
}

TEST_F(DamagedImagesTest, DamagedJpegDataIsFlagged) {
  // Damage inside the entropy-coded data; the header and the end marker stay intact, so the open (which reads
  // headers and file ends only) accepts the file, and decoding it finds the damage.
  std::vector<uint8_t> bytes = testing::read_bytes(folder_ / "00003.jpg");
  flip_bytes(bytes, bytes.size() / 2, bytes.size() * 3 / 4, 12, 7);
  testing::write_bytes(folder_ / "00003.jpg", bytes);

  auto stopped = open(folder_, ImagePolicy::stop);
  ASSERT_TRUE(stopped) << stopped.status().message();
  auto failed = (*stopped)->read_frame(3);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.status().code(), StatusCode::corrupt_data);
  EXPECT_NE(failed.status().message().find("00003.jpg"), std::string::npos) << failed.status().message();
  auto report = (*stopped)->scan_integrity();
  ASSERT_TRUE(report);
  ASSERT_EQ(report->damaged_frames.size(), 1U) << report->summary();
  EXPECT_EQ(report->damaged_frames[0].index, 3);
  EXPECT_NE(report->damaged_frames[0].detail.find("Corrupt JPEG data"), std::string::npos)
      << report->damaged_frames[0].detail;

  auto skipping = open(folder_, ImagePolicy::skip);
  ASSERT_TRUE(skipping);
  auto flagged = (*skipping)->read_frame(3);
  ASSERT_TRUE(flagged) << flagged.status().message();
  EXPECT_TRUE((*flagged)->integrity.damaged());
  EXPECT_GT((*flagged)->integrity.decoder_errors, 0);
  auto intact = (*skipping)->read_frame(2);
  ASSERT_TRUE(intact);
  EXPECT_FALSE((*intact)->integrity.damaged());
}

TEST_F(DamagedImagesTest, UnreadableFilesAreNamed) {
  testing::write_bytes(folder_ / "00002.jpg", {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'});
  auto stopped = open(folder_, ImagePolicy::stop);
  ASSERT_FALSE(stopped);
  EXPECT_NE(stopped.status().message().find("00002.jpg"), std::string::npos) << stopped.status().message();
  auto skipped = open(folder_, ImagePolicy::skip);
  ASSERT_TRUE(skipped);
  EXPECT_EQ((*skipped)->info().frame_count, kImages - 1);

  // Nothing usable at all.
  for (int i = 0; i < kImages; ++i) testing::write_bytes(folder_ / fmt::format("{:05d}.jpg", i), {0xFF, 0xD8, 0xFF});
  auto none = open(folder_, ImagePolicy::skip);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.status().code(), StatusCode::corrupt_data);
}

TEST(VideoIntegrity, TruncatedPngIsRefused) {
  const fs::path masks = testing::shared_testdata("horsejump-high_480p/masks");
  if (!fs::exists(masks)) GTEST_SKIP() << "test data not found: " << masks;
  const fs::path folder = testing::test_folder("truncated_png");
  for (int i = 0; i < 3; ++i) fs::copy_file(masks / fmt::format("{:05d}.png", i), folder / fmt::format("{}.png", i));
  std::vector<uint8_t> bytes = testing::read_bytes(folder / "1.png");
  bytes.resize(bytes.size() / 2);
  testing::write_bytes(folder / "1.png", bytes);
  auto stopped = VideoSource::open(folder);
  ASSERT_FALSE(stopped);
  EXPECT_NE(stopped.status().message().find("1.png"), std::string::npos) << stopped.status().message();
  EXPECT_NE(stopped.status().message().find("truncated"), std::string::npos) << stopped.status().message();
}

TEST(VideoIntegrity, PolicyNamesAndReportSummary) {
  for (ImagePolicy policy : {ImagePolicy::stop, ImagePolicy::skip, ImagePolicy::resize}) {
    auto parsed = parse_image_policy(to_string(policy));
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed, policy);
  }
  EXPECT_EQ(parse_image_policy("ignore").status().code(), StatusCode::invalid_argument);

  IntegrityReport report;
  report.frame_count = 100;
  report.checked_frames = 100;
  EXPECT_TRUE(report.clean());
  EXPECT_EQ(report.summary(), "no damage found");
  for (int64_t index : {3, 40, 41}) report.damaged_frames.push_back({index, {1, true, false}, "concealed"});
  EXPECT_FALSE(report.clean());
  EXPECT_EQ(report.damaged_in(10, 41), std::vector<int64_t>{40});
  EXPECT_EQ(report.damaged_in(0, -1), (std::vector<int64_t>{3, 40, 41}));
  EXPECT_NE(report.summary().find("3 damaged frames (3, 40, 41)"), std::string::npos) << report.summary();
}

}  // namespace
}  // namespace trackscope::core
