// Replays the fuzzing corpora through the fuzz entries (fuzz_entries.h) in the normal test build: the seeds of
// corpus/<entry>/ and every input a fuzzer found (regressions/<entry>/, one file per finding, named after it;
// docs/reliability.md lists them). An input that crashed, hung or broke a property once must now pass; under the
// sanitizer job (tools/ci/sanitizers.sh) the same replay runs with ASan and UBSan.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_entries.h"

namespace trackscope::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs every file of dir/<entry>/ through its entry; returns how many there were.
int replay(const fs::path& dir) {
  int count = 0;
  for (const FuzzEntry& entry : fuzz_entries()) {
    const fs::path folder = dir / std::string(entry.name);
    if (!fs::is_directory(folder)) continue;
    for (const auto& file : fs::directory_iterator(folder)) {
      if (!file.is_regular_file()) continue;
      SCOPED_TRACE(file.path().string());
      const std::vector<uint8_t> bytes = read_bytes(file.path());
      const auto start = std::chrono::steady_clock::now();
      entry.run(bytes.data(), bytes.size());
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      // libFuzzer's -timeout in tools/ci/fuzz.sh is 10 s; a replay must be far quicker (no hang came back).
      EXPECT_LT(seconds, 10.0) << file.path();
      ++count;
    }
  }
  return count;
}

TEST(FuzzRegressions, EveryEntryHasSeeds) {
  for (const FuzzEntry& entry : fuzz_entries()) {
    const fs::path folder = fs::path(TRACKSCOPE_FUZZ_DIR) / "corpus" / std::string(entry.name);
    ASSERT_TRUE(fs::is_directory(folder)) << folder;
    EXPECT_FALSE(fs::is_empty(folder)) << folder;
  }
  // The CMake list of fuzz executables names every entry.
  const std::string names = TRACKSCOPE_FUZZ_ENTRY_NAMES;
  for (const FuzzEntry& entry : fuzz_entries()) EXPECT_NE(names.find(std::string(entry.name)), std::string::npos);
}

TEST(FuzzRegressions, SeedCorporaPass) { EXPECT_GT(replay(fs::path(TRACKSCOPE_FUZZ_DIR) / "corpus"), 20); }

TEST(FuzzRegressions, EveryFindingIsFixed) { (void)replay(fs::path(TRACKSCOPE_FUZZ_DIR) / "regressions"); }

}  // namespace
}  // namespace trackscope::fuzz
