// Project files: JSON round trip of everything a project holds, atomic saves (a failing write keeps the old
// file; leftovers of a killed writer are cleaned up), bad input (not JSON, truncated, wrong version, another
// format, invalid fields) reported with a clear message, the video fingerprint and locating a moved video.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "core/io/atomic_file.h"
#include "core/io/project.h"
#include "core/io/video_fingerprint.h"
#include "core/tracking/track_edit.h"

namespace trackscope::core::io {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("trackscope_project_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_bytes(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

Project sample_project(const fs::path& video) {
  Annotation annotation;
  const PointId a = annotation.add({3, 10.5, 20.25});
  const PointId b = annotation.add({0, 100.125, 7.0});
  (void)annotation.remove(annotation.add({1, 1.0, 1.0}));  // ids keep a hole
  Track track;
  track.query = {3, 10.5, 20.25};
  track.first_frame = 2;
  for (int f = 2; f < 12; ++f)
    track.points.push_back({10.5f + 0.1f * f, 20.25f - f / 3.0f, f % 4 != 0, 0.1f * (f % 10), 0.0123f});
  PointTrack point_track{track, {"LocoTrack-S (bundled default)", "cuda:0", "bf16"}, {}};
  point_track = with_correction(point_track, 7, 55.5, 66.5);
  (void)annotation.set_track(a, point_track);
  (void)b;
  ProjectVideo info;
  info.path = fs::absolute(video).string();
  info.fingerprint = *fingerprint_video(video);
  info.frame_count = 48;
  info.width = 320;
  info.height = 240;
  info.frames_per_second = 29.97002997;
  ProjectView view;
  view.current_frame = 7;
  view.selected_point = a;
  view.trail_before_frames = 25;
  view.colouring = "direction";
  return make_project(annotation, info, view);
}

TEST(Project, JsonRoundTripKeepsEverything) {
  const fs::path dir = fresh_dir("round_trip");
  write_bytes(dir / "clip.mp4", std::string(5000, 'v'));
  const Project project = sample_project(dir / "clip.mp4");
  ASSERT_EQ(project.points.size(), 2u);
  ASSERT_EQ(project.next_id, 3);
  ASSERT_TRUE(save_project(dir / "p.trackscope", project));
  Expected<Project> loaded = load_project(dir / "p.trackscope");
  ASSERT_TRUE(loaded) << loaded.status().message();
  Project expected = project;
  expected.video.relative_path = "clip.mp4";  // recomputed by save_project
  EXPECT_EQ(*loaded, expected);
  EXPECT_EQ(loaded->points[0].track->keyframes, (std::vector<int64_t>{7}));

  Annotation annotation;
  load_into(*loaded, annotation);
  EXPECT_EQ(annotation.size(), 2u);
  EXPECT_EQ(annotation.next_id(), 3);  // the removed id 2 is not reused
  EXPECT_EQ(*annotation.track(0), *project.points[0].track);
  const std::string text = read_bytes(dir / "p.trackscope");
  EXPECT_NE(text.find("\"format\": \"trackscope-project\""), std::string::npos);
  EXPECT_NE(text.find("raster pixels of the original video"), std::string::npos);
}

TEST(Project, BadInputGivesClearErrors) {
  const fs::path dir = fresh_dir("bad_input");
  write_bytes(dir / "clip.mp4", "x");
  const std::string good = project_to_json(sample_project(dir / "clip.mp4"));
  struct Case {
    std::string name, text;
    StatusCode code;
    std::string words;
  };
  std::string newer = good;
  newer.replace(newer.find("\"version\": 1"), 12, "\"version\": 7");
  std::string other = good;
  other.replace(other.find("trackscope-project"), 18, "something-else-xyz");
  const std::string bad_keyframe = std::regex_replace(good, std::regex(R"("keyframes": \[\s*7)"), "\"keyframes\": [99");
  std::string missing = good;
  missing.replace(missing.find("\"next_id\""), 9, "\"next_idx\"");
  const std::vector<Case> cases = {
      {"truncated", good.substr(0, good.size() / 2), StatusCode::corrupt_data, "truncated"},
      {"not json", "PK\x03\x04 binary", StatusCode::corrupt_data, "not a readable project"},
      {"newer version", newer, StatusCode::unsupported, "version 7"},
      {"another format", other, StatusCode::corrupt_data, "not a Trackscope project"},
      {"keyframe outside the track", bad_keyframe, StatusCode::corrupt_data, "not covered"},
      {"missing field", missing, StatusCode::corrupt_data, "next_id"},
  };
  ASSERT_NE(bad_keyframe, good);
  for (const Case& c : cases) {
    write_bytes(dir / "bad.trackscope", c.text);
    Expected<Project> loaded = load_project(dir / "bad.trackscope");
    ASSERT_FALSE(loaded) << c.name;
    EXPECT_EQ(loaded.status().code(), c.code) << c.name << ": " << loaded.status().message();
    EXPECT_NE(loaded.status().message().find(c.words), std::string::npos)
        << c.name << ": " << loaded.status().message();
  }
  EXPECT_EQ(load_project(dir / "none.trackscope").status().code(), StatusCode::not_found);
}

TEST(AtomicFile, FailedWriteKeepsThePreviousFileAndLeftoversAreCleaned) {
  const fs::path dir = fresh_dir("atomic");
  const fs::path path = dir / "p.trackscope";
  ASSERT_TRUE(write_file_atomically(path, "version one"));
  // A write interrupted in the middle (a hook that throws after the first chunk): the file is untouched, and
  // the unwinding removes the temporary file (AtomicFile abandons it). A killed process leaves it behind:
  // app/writer_faults covers that with SIGKILL.
  AtomicWriteOptions options;
  options.chunk_bytes = 4;
  options.after_chunk = [](size_t written, size_t) {
    if (written >= 4) throw std::runtime_error("killed");
  };
  EXPECT_THROW((void)write_file_atomically(path, "version two, longer", options), std::runtime_error);
  EXPECT_EQ(read_bytes(path), "version one");
  EXPECT_EQ(leftover_temporary_files(path).size(), 0u);
  // A leftover of a dead process (pid 2^22 + 1 is above Linux's default pid_max) goes at the next save; one of
  // a live process (this one: it could be saving) stays.
  write_bytes(dir / ".p.trackscope.tmp-4194305-0", "half");
  write_bytes(dir / (".p.trackscope.tmp-" + std::to_string(::getpid()) + "-999"), "half");
  ASSERT_TRUE(write_file_atomically(path, "version three"));
  EXPECT_EQ(read_bytes(path), "version three");
  EXPECT_EQ(leftover_temporary_files(path).size(), 1u);
  // A folder that does not exist: a clear error, nothing written.
  const Status missing = write_file_atomically(dir / "no" / "such" / "p.trackscope", "x");
  EXPECT_EQ(missing.code(), StatusCode::io_error);
  EXPECT_NE(missing.message().find("cannot create"), std::string::npos) << missing.message();
}

TEST(Project, FingerprintAndMovedVideo) {
  const fs::path dir = fresh_dir("moved");
  std::string content(3 << 20, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>((i * 7919) % 251);
  write_bytes(dir / "clip.mp4", content);
  const Expected<VideoFingerprint> fingerprint = fingerprint_video(dir / "clip.mp4");
  ASSERT_TRUE(fingerprint);
  EXPECT_EQ(fingerprint->size_bytes, 3 << 20);
  EXPECT_EQ(fingerprint->sha256.size(), 64u);
  // The middle is not hashed; the first and last MiB and the size are.
  std::string middle = content;
  middle[content.size() / 2] ^= 1;
  write_bytes(dir / "middle.mp4", middle);
  EXPECT_EQ(*fingerprint_video(dir / "middle.mp4"), *fingerprint);
  std::string tail = content;
  tail[content.size() - 10] ^= 1;
  write_bytes(dir / "tail.mp4", tail);
  EXPECT_NE(fingerprint_video(dir / "tail.mp4")->sha256, fingerprint->sha256);

  const Project project = sample_project(dir / "clip.mp4");
  ASSERT_TRUE(save_project(dir / "p.trackscope", project));
  const Project loaded = *load_project(dir / "p.trackscope");
  EXPECT_EQ(locate_project_video(loaded, dir / "p.trackscope"), fs::path(loaded.video.path));
  // Move project and video together: found through the relative path.
  fs::create_directories(dir / "elsewhere");
  fs::rename(dir / "clip.mp4", dir / "elsewhere" / "clip.mp4");
  fs::rename(dir / "p.trackscope", dir / "elsewhere" / "p.trackscope");
  EXPECT_EQ(locate_project_video(loaded, dir / "elsewhere" / "p.trackscope"), dir / "elsewhere" / "clip.mp4");
  EXPECT_EQ(locate_project_video(loaded, dir / "p.trackscope"), std::nullopt);
  EXPECT_TRUE(check_project_video(loaded, dir / "elsewhere" / "clip.mp4"));
  const Status wrong = check_project_video(loaded, dir / "tail.mp4");
  EXPECT_EQ(wrong.code(), StatusCode::corrupt_data);
  EXPECT_NE(wrong.message().find("not the project's video"), std::string::npos);
}

}  // namespace
}  // namespace trackscope::core::io
