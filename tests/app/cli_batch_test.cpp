// trackscope-cli batch end to end on the CPU with the bundled model: three CPU workers standing in for devices
// over a few frames of the shared clips plus a truncated copy of one: the summary, the outputs (the same bytes as
// `track` writes for the same clip), the corrupt clip reported without stopping the others, a resumed run that
// tracks nothing again, and --collect.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/io/track_formats.h"

namespace trackscope {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const fs::path kTestdata = fs::path(TRACKSCOPE_SHARED_DIR) / "testdata";
const fs::path kOutput = fs::path(TRACKSCOPE_TEST_OUTPUT_DIR) / "cli_batch";

struct CliRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

CliRun run_cli(const std::string& arguments) {
  const std::string command = std::string("'") + TRACKSCOPE_CLI + "' " + arguments + " 2>&1";
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer{};
  size_t read = 0;
  while ((read = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.output.append(buffer.data(), read);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

Json read_json(const fs::path& path) { return Json::parse(read_bytes(path), nullptr, false); }

TEST(CliBatch, ThreeCpuWorkersTrackTheClipsAndReportTheCorruptOne) {
  fs::remove_all(kOutput);
  fs::create_directories(kOutput);
  // A truncated copy: the container's index (at the end of this file) is gone.
  const std::string apple = read_bytes(kTestdata / "cotracker_apple.mp4");
  std::ofstream(kOutput / "truncated.mp4", std::ios::binary) << apple.substr(0, apple.size() / 4);
  const fs::path jobs = kOutput / "jobs.jsonl";
  std::ofstream(jobs)
      << "{\"id\": \"bees\", \"video\": \"" << (kTestdata / "sampt_bees.mp4").string()
      << "\", \"queries\": \"grid:2x2@frame0\", \"end\": 3, \"outputs\": [\"csv\", \"npz\"]}\n"
      << "{\"id\": \"truncated\", \"video\": \"truncated.mp4\", \"queries\": \"grid:2x2\"}\n"
      << "{\"id\": \"horse\", \"video\": \"" << (kTestdata / "horsejump-high_480p/video").string()
      << "\", \"queries\": \"grid:2x2@frame1\", \"first\": 1, \"end\": 4, \"outputs\": \"json,trackscope\"}\n"
      << "{\"id\": \"apple\", \"video\": \"" << (kTestdata / "cotracker_apple.mp4").string()
      << "\", \"queries\": \"grid:3x1\", \"end\": 3}\n";
  const fs::path out = kOutput / "out";
  const std::string batch = "batch " + quoted(jobs) + " --out " + quoted(out) + " --devices 'cpu*3' --threads 1";
  const CliRun run = run_cli(batch);
  EXPECT_EQ(run.exit_code, 1) << "a clip failed: exit 1\n" << run.output;
  EXPECT_NE(run.output.find("truncated: FAILED (line 2)"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("4 clips: 3 ok, 1 failed, 0 not run"), std::string::npos) << run.output;

  const Json summary = read_json(out / "summary.json");
  ASSERT_TRUE(summary.is_object()) << run.output;
  EXPECT_EQ(summary["counts"]["ok"], 3);
  ASSERT_EQ(summary["clips"].size(), 4u);
  const Json& truncated = summary["clips"][1];
  EXPECT_EQ(truncated["status"], "failed");
  EXPECT_NE(truncated["error"].get<std::string>().find("truncated.mp4"), std::string::npos) << truncated;
  for (size_t i : {0, 2, 3}) {
    const Json& clip = summary["clips"][i];
    EXPECT_EQ(clip["status"], "ok") << clip;
    EXPECT_EQ(clip["frames"], 3) << clip;
  }
  ASSERT_EQ(summary["measurements"].size(), 4u);
  for (const Json& m : summary["measurements"]) {
    EXPECT_EQ(m["device"], "cpu");
    EXPECT_GE(m["worker"].get<int>(), 0);
    EXPECT_LT(m["worker"].get<int>(), 3);
  }
  const std::string csv = read_bytes(out / "summary.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5) << csv;

  // The batch writes what `track` writes for the same clip and options.
  const fs::path single = kOutput / "single.csv";
  const CliRun track =
      run_cli("track " + quoted(kTestdata / "sampt_bees.mp4") +
              " --queries grid:2x2@frame0 --end 3 --device cpu --threads 1 -q --out " + quoted(single));
  ASSERT_EQ(track.exit_code, 0) << track.output;
  EXPECT_EQ(read_bytes(out / "bees/bees.csv"), read_bytes(single));
  core::Expected<core::io::TrackTable> table =
      core::io::read_tracks(out / "bees/bees.npz", core::io::TrackFormat::tapvid_npz);
  ASSERT_TRUE(table) << table.status().message();
  EXPECT_EQ(table->tracks.size(), 4u);
  EXPECT_TRUE(fs::exists(out / "horse/horse.trackscope"));

  // Again: nothing is tracked twice (the records keep their first measurements); the corrupt clip fails again.
  const CliRun again = run_cli(batch);
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_NE(again.output.find("bees: done before"), std::string::npos) << again.output;
  const Json resumed = read_json(out / "summary.json");
  for (size_t i : {0, 2, 3}) EXPECT_EQ(resumed["measurements"][i], summary["measurements"][i]);
  Json a = summary, b = resumed;
  a.erase("measurements");
  b.erase("measurements");
  EXPECT_EQ(a, b);

  // --collect rebuilds the same summary from the records.
  fs::remove(out / "summary.json");
  const CliRun collect = run_cli("batch --collect --out " + quoted(out));
  EXPECT_EQ(collect.exit_code, 1) << collect.output;
  Json collected = read_json(out / "summary.json");
  collected.erase("measurements");
  EXPECT_EQ(collected, a);

  // Usage errors exit 2.
  EXPECT_EQ(run_cli("batch " + quoted(jobs) + " --out " + quoted(out) + " --devices tpu").exit_code, 2);
  EXPECT_EQ(run_cli("batch " + quoted(jobs) + " --out " + quoted(out) + " --shard 3").exit_code, 2);
  EXPECT_EQ(run_cli("batch --out " + quoted(out)).exit_code, 2);
}

}  // namespace
}  // namespace trackscope
