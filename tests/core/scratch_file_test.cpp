// ScratchFile (core/io/scratch_file.h): exact streaming's cache file.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <vector>

#include "core/io/scratch_file.h"

namespace trackscope::core::io {
namespace {

namespace fs = std::filesystem;

fs::path test_folder() {
  const fs::path folder = fs::path(TRACKSCOPE_TEST_OUTPUT_DIR) / "scratch_file_test";
  fs::create_directories(folder);
  return folder;
}

TEST(ScratchFile, KeepsWhatIsWrittenAndLeavesNoFileBehind) {
  const fs::path folder = test_folder();
  const auto entries_before = std::distance(fs::directory_iterator(folder), fs::directory_iterator());
  {
    Expected<ScratchFile> file = ScratchFile::create(folder, 1 << 20);
    ASSERT_TRUE(file) << file.status().message();
    EXPECT_EQ(file->size(), 1 << 20);
    std::vector<int32_t> data(1000);
    std::iota(data.begin(), data.end(), 7);
    ASSERT_TRUE(file->write(4096, data.data(), 4000));
    ASSERT_TRUE(file->write((1 << 20) - 4000, data.data(), 4000));
    std::vector<int32_t> back(1000, 0);
    ASSERT_TRUE(file->read(4096, back.data(), 4000));
    EXPECT_EQ(back, data);
    ASSERT_TRUE(file->read((1 << 20) - 4000, back.data(), 4000));
    EXPECT_EQ(back, data);
    ScratchFile moved = std::move(*file);  // the descriptor moves with it
    ASSERT_TRUE(moved.read(4096, back.data(), 4));
    EXPECT_EQ(back[0], 7);
    EXPECT_EQ(moved.read((1 << 20) - 2, back.data(), 4).code(), StatusCode::invalid_argument);
    EXPECT_EQ(moved.write(-1, back.data(), 4).code(), StatusCode::invalid_argument);
    // Unnamed: nothing new in the folder while it is open.
    EXPECT_EQ(std::distance(fs::directory_iterator(folder), fs::directory_iterator()), entries_before);
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(folder), fs::directory_iterator()), entries_before);
}

TEST(ScratchFile, ADiskWithoutRoomIsReportedBeforeAnyWork) {
  Expected<ScratchFile> huge = ScratchFile::create(test_folder(), int64_t{1} << 55);  // 32 PiB
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.status().code(), StatusCode::io_error);
  EXPECT_NE(huge.status().message().find("could not reserve"), std::string::npos) << huge.status().message();
  EXPECT_NE(huge.status().message().find("GiB free"), std::string::npos) << huge.status().message();
  Expected<ScratchFile> nowhere = ScratchFile::create(test_folder() / "no" / "such" / "folder", 100);
  ASSERT_FALSE(nowhere);
  EXPECT_EQ(nowhere.status().code(), StatusCode::not_found);
  EXPECT_GT(free_disk_bytes(test_folder()), 0);
  EXPECT_EQ(free_disk_bytes(test_folder() / "no" / "such"), -1);
  EXPECT_FALSE(default_scratch_directory().empty());
}

}  // namespace
}  // namespace trackscope::core::io
