// Issue 18 (items 7 and the crash list): every reader of untrusted files refuses nonsense with a message that
// names the value and the bound (tracks longer than the video, positions at -1e308, numbers beyond a double,
// sizes that would wrap), refuses absurd sizes before allocating them, and accepts a UTF-8 byte order mark
// before a CSV header.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/io/input_checks.h"
#include "core/io/npz.h"
#include "core/io/project.h"
#include "core/io/queries_csv.h"
#include "core/io/track_formats.h"
#include "core/tracking/metrics.h"

namespace trackscope::core::io {
namespace {

using nlohmann::json;

// A valid project text: a 320x240, 48-frame video, one point with a 10-frame track.
std::string good_project() {
  Annotation annotation;
  const PointId id = annotation.add({3, 10.5, 20.25});
  Track track;
  track.query = {3, 10.5, 20.25};
  track.first_frame = 2;
  for (int f = 2; f < 12; ++f) track.points.push_back({10.5f + f, 20.0f, true, 0.1f, 0.0f});
  (void)annotation.set_track(id, PointTrack{track, {"m", "cpu", "fp32"}, {}});
  ProjectVideo video;
  video.path = "/videos/clip.mp4";
  video.frame_count = 48;
  video.width = 320;
  video.height = 240;
  video.frames_per_second = 25.0;
  return project_to_json(make_project(annotation, video, {}));
}

// Replaces the first occurrence of `key`'s value in the JSON text by `raw` (text that JSON libraries may not be
// able to produce, like 1e999).
std::string with_raw_value(std::string text, const std::string& key, const std::string& raw) {
  const std::string quoted = "\"" + key + "\": ";
  const size_t at = text.find(quoted);
  EXPECT_NE(at, std::string::npos) << key;
  const size_t value = at + quoted.size();
  size_t end = value;
  if (text[value] == '[') {
    end = text.find(']', value) + 1;
  } else {
    end = text.find_first_of(",\n}", value);
  }
  text.replace(value, end - value, raw);
  return text;
}

void expect_refused(const Expected<Project>& loaded, const std::string& words, const std::string& name) {
  ASSERT_FALSE(loaded) << name;
  EXPECT_EQ(loaded.status().code(), StatusCode::corrupt_data) << name << ": " << loaded.status().message();
  EXPECT_NE(loaded.status().message().find(words), std::string::npos) << name << ": " << loaded.status().message();
}

TEST(ProjectSense, ANumberBeyondADoubleIsReportedNotThrown) {
  // The crash of the issue: an uncaught nlohmann out_of_range aborted the GUI, and every start when in a recovery file.
  for (const std::string key : {"frames_per_second", "x", "next_id", "frame_count"}) {
    const std::string text = with_raw_value(good_project(), key, key == "x" ? "[1e999]" : "1e999");
    expect_refused(project_from_json(text, "p.trackscope"), "too large", key);
  }
  expect_refused(project_from_json(with_raw_value(good_project(), "x", "[-1e999]"), "p.trackscope"), "too large",
                 "-1e999");
}

TEST(ProjectSense, NonsenseIsRefusedWithTheValueAndTheBound) {
  struct Case {
    std::string name;
    std::function<void(json&)> edit;
    std::string words;
  };
  const std::vector<Case> cases = {
      {"track longer than the video",
       [](json& j) {
         json& track = j["points"][0]["track"];
         for (const char* key : {"x", "y", "p_occluded", "p_far"}) track[key] = std::vector<double>(60, 0.5);
         track["visible"] = std::vector<int>(60, 1);
         track["keyframes"] = json::array();
       },
       "the video has 48 frames"},
      {"track starting after the video", [](json& j) { j["points"][0]["track"]["first_frame"] = 48; }, "past the end"},
      {"query at -1e308", [](json& j) { j["points"][0]["query"]["x"] = -1e308; }, "not plausible"},
      {"query after the video", [](json& j) { j["points"][0]["query"]["frame"] = 1000; }, "past the end"},
      {"estimate far outside", [](json& j) { j["points"][0]["track"]["y"][4] = 1e7; }, "not plausible"},
      {"estimate beyond float", [](json& j) { j["points"][0]["track"]["x"][0] = 1e300; }, "32-bit float"},
      {"width that wraps an int", [](json& j) { j["video"]["width"] = (int64_t{1} << 32) + 320; }, "video.width"},
      {"negative frame rate", [](json& j) { j["video"]["frames_per_second"] = -25.0; }, "not a frame rate"},
      {"id beyond 64 bits", [](json& j) { j["next_id"] = uint64_t{1} << 63; }, "too large"},
      {"absurd frame count", [](json& j) { j["video"]["frame_count"] = int64_t{1} << 40; }, "frame_count"},
  };
  for (const Case& c : cases) {
    json j = json::parse(good_project());
    c.edit(j);
    expect_refused(project_from_json(j.dump(), "p.trackscope"), c.words, c.name);
  }
  // The unchanged project loads (the checks do not refuse real data).
  EXPECT_TRUE(project_from_json(good_project(), "p.trackscope"));
}

TEST(ProjectSense, OutOfRangeViewSettingsFallBackToDefaults) {
  json j = json::parse(good_project());
  j["view"]["current_frame"] = 1000000;
  j["view"]["trail_before_frames"] = -4;
  j["view"]["trail_after_frames"] = int64_t{1} << 40;
  j["view"]["selected_point"] = uint64_t{1} << 63;
  j["view"]["colouring"] = "rainbow";
  Expected<Project> loaded = project_from_json(j.dump(), "p.trackscope");
  ASSERT_TRUE(loaded) << loaded.status().message();
  EXPECT_EQ(loaded->view.current_frame, 47);
  EXPECT_EQ(loaded->view.trail_before_frames, ProjectView{}.trail_before_frames);
  EXPECT_EQ(loaded->view.trail_after_frames, ProjectView{}.trail_after_frames);
  EXPECT_FALSE(loaded->view.selected_point.has_value());
  EXPECT_EQ(loaded->view.colouring, "track");
}

// ---- track imports ---------------------------------------------------------------------------------------------

const TrackImportOptions kVideo{640, 480, 100};

void expect_refused(const Expected<TrackTable>& table, const std::string& words, const std::string& name) {
  ASSERT_FALSE(table) << name;
  EXPECT_EQ(table.status().code(), StatusCode::corrupt_data) << name << ": " << table.status().message();
  EXPECT_NE(table.status().message().find(words), std::string::npos) << name << ": " << table.status().message();
}

TEST(TrackImportSense, CsvWithAByteOrderMarkIsAccepted) {
  Expected<TrackTable> table = tracks_from_csv("\xEF\xBB\xBFtrack_id,frame,x,y\n0,0,10,20\n0,1,11,21\n", "bom.csv");
  ASSERT_TRUE(table) << table.status().message();
  EXPECT_EQ(table->tracks.at(0).track.track.points.size(), 2u);
}

TEST(TrackImportSense, CsvNonsenseIsRefusedBeforeItIsAllocated) {
  // Two rows 10^12 frames apart would ask for terabytes of interpolated estimates.
  expect_refused(tracks_from_csv("track_id,frame,x,y\n0,0,1,1\n0,1000000000000,1,1\n", "far.csv"), "absurd", "far");
  expect_refused(
      tracks_from_csv("track_id,frame,x,y\n0,0,1,1\n0,2000000000,1,1\n1,0,1,1\n1,2000000000,1,1\n", "wide.csv"),
      "more than", "span");
  expect_refused(tracks_from_csv("track_id,frame,x,y\n0,0,1,1\n0,150,1,1\n", "long.csv", kVideo), "the video has 100",
                 "beyond the video");
  expect_refused(tracks_from_csv("track_id,frame,x,y\n0,0,-1e30,1\n", "far.csv", kVideo), "not plausible", "position");
  expect_refused(tracks_from_csv("track_id,frame,x,y\n4294967296,0,1,1\n", "id.csv"), "track_id", "id wraps");
}

TEST(TrackImportSense, JsonNonsenseIsRefused) {
  TrackTable table;
  table.video = {"v.mp4", 640, 480, 100, 25.0};
  TableTrack entry;
  entry.id = 1;
  entry.track.track.first_frame = 90;
  entry.track.track.query = {90, 5.0, 5.0};
  entry.query = entry.track.track.query;
  for (int f = 90; f < 110; ++f) entry.track.track.points.push_back({5.0f, 5.0f, true, 0.0f, 0.0f});
  table.tracks.push_back(entry);
  const std::string text = tracks_to_json(table);
  EXPECT_TRUE(tracks_from_json(text, "t.json")) << "without a video, only the absolute bounds apply";
  expect_refused(tracks_from_json(text, "t.json", kVideo), "the video has 100", "beyond the video");
  expect_refused(tracks_from_json(with_raw_value(text, "y", "[1e999]"), "t.json"), "out of range", "1e999");
}

TEST(TrackImportSense, NpzShapesThatOverflowOrAreEmptyAreRefused) {
  auto archive_bytes = [](std::vector<NpyArray> arrays) {
    const std::filesystem::path path = std::filesystem::temp_directory_path() / "trackscope_sense_test.npz";
    EXPECT_TRUE(write_npz(path, arrays).ok());
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  // 2^32 x 2^32 x 2 elements wrap to 0 bytes in 64 bits: the reader once accepted them and indexed past the data.
  const size_t big = size_t{1} << 32;
  const std::string wrapped =
      archive_bytes({NpyArray{"points", "<f4", {big, big, 2}, {}}, NpyArray{"occluded", "|b1", {big, big}, {}}});
  Expected<TrackTable> overflow = tracks_from_npz(wrapped, "wrapped.npz", kVideo);
  ASSERT_FALSE(overflow);
  EXPECT_NE(overflow.status().message().find("absurd"), std::string::npos) << overflow.status().message();
  // An empty frame axis makes any number of tracks free: it must not loop over them.
  const std::string empty = archive_bytes(
      {NpyArray{"points", "<f4", {size_t{1} << 40, 0, 2}, {}}, NpyArray{"occluded", "|b1", {size_t{1} << 40, 0}, {}}});
  expect_refused(tracks_from_npz(empty, "empty.npz", kVideo), "no track estimates", "empty axis");
  // A shape extent beyond 64 bits is text that does not parse, not an exception.
  std::string header = npy_bytes(NpyArray{"points", "<f4", {1, 1, 2}, std::vector<std::byte>(8)});
  header.replace(header.find("(1, 1, 2)"), 9, "(99999999999999999999999, 1, 2)");
  Expected<NpyArray> parsed = parse_npy(header, "points");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.status().code(), StatusCode::corrupt_data);
}

// ---- queries, BADJA --------------------------------------------------------------------------------------------

TEST(QueriesCsvSense, ByteOrderMarkAndBounds) {
  Expected<std::vector<Query>> bom = queries_from_csv(
      "\xEF\xBB\xBF"
      "frame,x,y\n0,1.5,2.5\n",
      "q.csv");
  ASSERT_TRUE(bom) << bom.status().message();
  EXPECT_EQ(bom->at(0), (Query{0, 1.5, 2.5}));
  const QueryBounds video{640, 480, 100};
  for (const auto& [text, words] : std::vector<std::pair<std::string, std::string>>{
           {"frame,x,y\n100,1,1\n", "the video has 100 frames"},
           {"frame,x,y\n0,-1e308,1\n", "not plausible"},
           {"frame,x,y\n0,1e999,1\n", "finite pixel coordinates"},
           {"frame,x,y\n99999999999999999999,1,1\n", "frame index >= 0"}}) {
    Expected<std::vector<Query>> bad = queries_from_csv(text, "q.csv", video);
    ASSERT_FALSE(bad) << text;
    EXPECT_EQ(bad.status().code(), StatusCode::corrupt_data);
    EXPECT_NE(bad.status().message().find(words), std::string::npos) << bad.status().message();
  }
}

TEST(BadjaSense, SizesAndNumbersOutOfRangeAreReportedNotThrown) {
  const std::string header = "frame,joint_id,x_854x480,y_854x480,visible,pck_thr\n";
  EXPECT_TRUE(badja_from_csv("\xEF\xBB\xBF" + header + "0,1,2,3,1,4\n", "b.csv")) << "a byte order mark is fine";
  for (const auto& [text, words] : std::vector<std::pair<std::string, std::string>>{
           {"frame,joint_id,x_99999999999x480,y_1x1,visible,pck\n0,1,2,3,1,4\n", "image size"},
           {header + "0,99999999999,2,3,1,4\n", "malformed row"},
           {header + "0,1,2,3,1,-4\n", "threshold"},
           {header + "0,1,-1e9,3,1,4\n", "not plausible"},
           {header + "0,1,2,3,1,4\n0,1,2,3,1,4\n", "appears twice"}}) {
    Expected<BadjaAnnotations> bad = badja_from_csv(text, "b.csv");
    ASSERT_FALSE(bad) << text;
    EXPECT_EQ(bad.status().code(), StatusCode::corrupt_data);
    EXPECT_NE(bad.status().message().find(words), std::string::npos) << bad.status().message();
  }
  // The frame number of an image path beyond 64 bits once escaped as std::out_of_range from stoll.
  Expected<BadjaAnnotations> from_json =
      badja_from_json(R"([{"image_path": "a/99999999999999999999999.jpg", "joints": [], "visibility": []}])", "b.json");
  ASSERT_FALSE(from_json);
  EXPECT_NE(from_json.status().message().find("no frame number"), std::string::npos) << from_json.status().message();
}

}  // namespace
}  // namespace trackscope::core::io

namespace trackscope::core::io {
namespace {

std::string regression_input(const std::string& name) {
  std::ifstream in(std::filesystem::path(TRACKSCOPE_SOURCE_DIR) / "tests/fuzz/regressions" / name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  return {std::istreambuf_iterator<char>(in), {}};
}

// Fuzzing findings (docs/reliability.md), each with the message it now gives.
TEST(FuzzFindings, NpzMemberDeclaringMoreBytesThanTheArchiveHolds) {
  // A 509-byte archive whose directory declared a 1 GiB member: the reader allocated and zero-filled it (a
  // 10 s timeout under ASan; a zip bomb in general). Now the declared size must fit the compressed bytes.
  Expected<TrackTable> table =
      tracks_from_npz(regression_input("tracks_npz/timeout-member-declares-1gib.npz"), "bomb.npz", kVideo);
  ASSERT_FALSE(table);
  EXPECT_EQ(table.status().code(), StatusCode::corrupt_data) << table.status().message();
  EXPECT_NE(table.status().message().find("claims"), std::string::npos) << table.status().message();
}

}  // namespace
}  // namespace trackscope::core::io
