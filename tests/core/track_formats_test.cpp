// Export and import of tracks: round trips of CSV, JSON and TAP-Vid .npz through our readers; the .npz and the
// export-only formats (DeepLabCut CSV, COCO keypoints) checked by independent readers written here (a zip and
// .npy parser of their own; numpy too when python3 has it); bad input reported clearly.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/io/track_formats.h"
#include "core/tracking/track_edit.h"

namespace trackscope::core::io {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("trackscope_formats_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Three tracks over a 40-frame, 640x360 video: full, partial (frames 10..29) and late (35..39); awkward floats,
// keyframes, hand-marked occlusion, provenance.
TrackTable sample_table() {
  TrackTable table;
  table.video = {"/videos/bees.mp4", 640, 360, 40, 30000.0 / 1001.0};
  auto make = [](PointId id, int64_t first, int64_t end, int64_t query_frame) {
    TableTrack entry;
    entry.id = id;
    Track& track = entry.track.track;
    track.first_frame = first;
    for (int64_t f = first; f < end; ++f) {
      const float x = static_cast<float>(0.1 + 15.7 * id + 3.3333333 * f);
      const float y = static_cast<float>(359.9 - 4.1 * f - id);
      const float p_occluded = static_cast<float>(std::fmod(0.37 * f + 0.11 * id, 1.0));
      const float p_far = static_cast<float>(std::fmod(0.013 * f * f, 0.6));
      track.points.push_back({x, std::max(0.01f, y), visible_from_probabilities(p_occluded, p_far), p_occluded, p_far});
    }
    track.query = {query_frame, track.at(query_frame).x_px, track.at(query_frame).y_px};
    entry.query = track.query;
    entry.track.provenance = {"LocoTrack-S (bundled default)", "cuda:0", "bf16"};
    return entry;
  };
  table.tracks.push_back(make(0, 0, 40, 5));
  table.tracks.push_back(make(3, 10, 30, 12));
  table.tracks.push_back(make(7, 35, 40, 39));
  table.tracks[0].track = with_correction(table.tracks[0].track, 20, 321.125, 100.0625);
  table.tracks[1].track = *with_visibility(table.tracks[1].track, 15, false);
  table.tracks[1].track.provenance = {"imported, \"quoted\", with commas", "cpu", "fp32"};
  return table;
}

void expect_same_tracks(const TrackTable& back, const TrackTable& original, double position_tolerance_px) {
  ASSERT_EQ(back.tracks.size(), original.tracks.size());
  for (size_t i = 0; i < original.tracks.size(); ++i) {
    const TableTrack& a = back.tracks[i];
    const TableTrack& b = original.tracks[i];
    SCOPED_TRACE("track " + std::to_string(b.id));
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.query, b.query);
    EXPECT_EQ(a.track.keyframes, b.track.keyframes);
    ASSERT_EQ(a.track.track.first_frame, b.track.track.first_frame);
    ASSERT_EQ(a.track.track.points.size(), b.track.track.points.size());
    for (size_t f = 0; f < b.track.track.points.size(); ++f) {
      const TrackPoint& p = a.track.track.points[f];
      const TrackPoint& q = b.track.track.points[f];
      if (position_tolerance_px == 0.0) {
        EXPECT_EQ(p, q) << "frame " << f;
      } else {
        EXPECT_NEAR(p.x_px, q.x_px, position_tolerance_px);
        EXPECT_NEAR(p.y_px, q.y_px, position_tolerance_px);
        EXPECT_EQ(p.visible, q.visible);
        EXPECT_EQ(p.p_occluded, q.p_occluded);
        EXPECT_EQ(p.p_far, q.p_far);
      }
    }
  }
}

TEST(TrackFormats, CsvRoundTripIsExactAndStatesItsConvention) {
  const fs::path dir = fresh_dir("csv");
  const TrackTable table = sample_table();
  ASSERT_TRUE(write_tracks(dir / "t.csv", table, TrackFormat::csv));
  const std::string text = read_bytes(dir / "t.csv");
  EXPECT_NE(text.find("# coordinates: x, y in raster pixels of the original video"), std::string::npos);
  EXPECT_NE(text.find("(j + 0.5, i + 0.5)"), std::string::npos);
  EXPECT_NE(text.find("\ntrack_id,frame,time_s,x,y,visible,p_occluded,p_far\n"), std::string::npos);
  // One row per track and covered frame, with time_s = frame / fps.
  EXPECT_NE(text.find("\n3,10,0.333667,"), std::string::npos);
  size_t rows = 0;
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1))
    rows += text.compare(at + 1, 1, "#") != 0 ? 1 : 0;
  EXPECT_EQ(rows - 2, 40u + 20u + 5u);  // minus the header and the final empty line
  Expected<TrackTable> back = read_tracks(dir / "t.csv", TrackFormat::csv);
  ASSERT_TRUE(back) << back.status().message();
  expect_same_tracks(*back, table, 0.0);
  EXPECT_EQ(back->tracks[1].track.provenance, table.tracks[1].track.provenance);
}

TEST(TrackFormats, CsvFromOtherToolsAndBadCsv) {
  // Only the required columns, in another order, with a gap: gaps become occluded, interpolated estimates.
  Expected<TrackTable> minimal = tracks_from_csv("frame,track_id,y,x\n0,5,10,20\n2,5,14,24\n", "other.csv");
  ASSERT_TRUE(minimal) << minimal.status().message();
  ASSERT_EQ(minimal->tracks.size(), 1u);
  const Track& track = minimal->tracks[0].track.track;
  EXPECT_EQ(track.points.size(), 3u);
  EXPECT_TRUE(track.at(0).visible);
  EXPECT_FALSE(track.at(1).visible);
  EXPECT_FLOAT_EQ(track.at(1).x_px, 22.0f);
  EXPECT_EQ(minimal->tracks[0].query, (Query{0, 20.0, 10.0}));

  struct Case {
    std::string text, words;
  };
  for (const Case& c : std::vector<Case>{{"track_id,frame,x\n", "no 'y' column"},
                                         {"track_id,frame,x,y\n1,2,abc,4\n", "line 2: x is not a valid number"},
                                         {"track_id,frame,x,y\n1,2,3,4\n1,2,3,4\n", "two estimates for frame 2"},
                                         {"track_id,frame,x,y,p_occluded\n1,2,3,4,1.5\n", "[0, 1]"},
                                         {"", "no header"}}) {
    Expected<TrackTable> bad = tracks_from_csv(c.text, "bad.csv");
    ASSERT_FALSE(bad) << c.text;
    EXPECT_EQ(bad.status().code(), StatusCode::corrupt_data);
    EXPECT_NE(bad.status().message().find(c.words), std::string::npos) << bad.status().message();
  }
}

TEST(TrackFormats, JsonRoundTripIsExact) {
  const fs::path dir = fresh_dir("json");
  const TrackTable table = sample_table();
  ASSERT_TRUE(write_tracks(dir / "t.json", table, TrackFormat::json));
  Expected<TrackTable> back = read_tracks(dir / "t.json", TrackFormat::json);
  ASSERT_TRUE(back) << back.status().message();
  expect_same_tracks(*back, table, 0.0);
  EXPECT_EQ(back->video.width, 640);
  EXPECT_EQ(back->tracks[0].track.provenance, table.tracks[0].track.provenance);
  const std::string text = read_bytes(dir / "t.json");
  EXPECT_FALSE(tracks_from_json(text.substr(0, text.size() / 3), "cut.json"));
  EXPECT_EQ(
      tracks_from_json(R"({"format": "trackscope-tracks", "version": 9, "tracks": []})", "new.json").status().code(),
      StatusCode::unsupported);
}

// ---- an independent .npz reader: zip central directory + stored members + .npy headers, written from the
// ---- PKWARE APPNOTE and the NumPy format description, sharing no code with core/io/npz.cpp.

uint32_t crc32_of(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : bytes) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

uint32_t le(const std::string& b, size_t at, int bytes) {
  uint32_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(b.at(at + i))) << (8 * i);
  return v;
}

struct RawArray {
  std::string descr;
  std::vector<size_t> shape;
  std::string data;
};

std::map<std::string, RawArray> independent_npz(const std::string& zip) {
  std::map<std::string, RawArray> out;
  size_t eocd = zip.rfind(std::string("PK\x05\x06", 4));
  EXPECT_NE(eocd, std::string::npos) << "no end of central directory";
  if (eocd == std::string::npos) return out;
  const uint32_t entries = le(zip, eocd + 10, 2);
  size_t at = le(zip, eocd + 16, 4);
  for (uint32_t e = 0; e < entries; ++e) {
    EXPECT_EQ(le(zip, at, 4), 0x02014b50u);
    const uint32_t method = le(zip, at + 10, 2), crc = le(zip, at + 16, 4), size = le(zip, at + 24, 4);
    const uint32_t name_length = le(zip, at + 28, 2), extra = le(zip, at + 30, 2), comment = le(zip, at + 32, 2);
    const uint32_t local = le(zip, at + 42, 4);
    const std::string name = zip.substr(at + 46, name_length);
    at += 46 + name_length + extra + comment;
    EXPECT_EQ(method, 0u) << name << " should be stored, like numpy.savez";
    EXPECT_EQ(le(zip, local, 4), 0x04034b50u);
    const size_t data_at = local + 30 + le(zip, local + 26, 2) + le(zip, local + 28, 2);
    const std::string member = zip.substr(data_at, size);
    EXPECT_EQ(crc32_of(member), crc) << name;
    // .npy: magic, version 1.0, little-endian u16 header length, a Python dict literal, the raw data.
    EXPECT_EQ(member.substr(0, 6), std::string("\x93NUMPY"));
    const size_t header_length = le(member, 8, 2);
    EXPECT_EQ((10 + header_length) % 16, 0u) << "data must be aligned";
    const std::string header = member.substr(10, header_length);
    RawArray array;
    const size_t d = header.find("'descr': '") + 10;
    array.descr = header.substr(d, header.find('\'', d) - d);
    EXPECT_NE(header.find("'fortran_order': False"), std::string::npos);
    const size_t s = header.find("'shape': (") + 10;
    std::stringstream extents(header.substr(s, header.find(')', s) - s));
    for (std::string extent; std::getline(extents, extent, ',');) {
      if (extent.find_first_not_of(' ') != std::string::npos) array.shape.push_back(std::stoul(extent));
    }
    array.data = member.substr(10 + header_length);
    out[name.substr(0, name.size() - 4)] = array;
  }
  return out;
}

float f32(const RawArray& a, size_t i) {
  float v;
  std::memcpy(&v, a.data.data() + 4 * i, 4);
  return v;
}

TEST(TrackFormats, TapVidNpzRoundTripAndIndependentReader) {
  const fs::path dir = fresh_dir("npz");
  const TrackTable table = sample_table();
  ASSERT_TRUE(write_tracks(dir / "t.npz", table, TrackFormat::tapvid_npz));

  const std::map<std::string, RawArray> arrays = independent_npz(read_bytes(dir / "t.npz"));
  ASSERT_TRUE(arrays.count("points") && arrays.count("occluded"));
  const RawArray& points = arrays.at("points");
  const RawArray& occluded = arrays.at("occluded");
  EXPECT_EQ(points.descr, "<f4");
  EXPECT_EQ(points.shape, (std::vector<size_t>{3, 40, 2}));
  EXPECT_EQ(occluded.descr, "|b1");
  EXPECT_EQ(occluded.shape, (std::vector<size_t>{3, 40}));
  ASSERT_EQ(points.data.size(), 3u * 40 * 2 * 4);
  for (size_t i = 0; i < 3; ++i) {
    const Track& track = table.tracks[i].track.track;
    for (int64_t f = 0; f < 40; ++f) {
      const size_t k = i * 40 + static_cast<size_t>(f);
      const bool is_occluded = occluded.data[k] != 0;
      if (!track.covers(f)) {
        EXPECT_TRUE(is_occluded) << "untracked frames are occluded";
        continue;
      }
      EXPECT_EQ(is_occluded, !track.at(f).visible);
      EXPECT_FLOAT_EQ(f32(points, 2 * k), track.at(f).x_px / 640.0f);
      EXPECT_FLOAT_EQ(f32(points, 2 * k + 1), track.at(f).y_px / 360.0f);
      const float x = f32(points, 2 * k), y = f32(points, 2 * k + 1);
      EXPECT_TRUE(x >= 0.0f && x <= 1.0f && y >= 0.0f && y <= 1.0f);
    }
  }

  Expected<TrackTable> back = read_tracks(dir / "t.npz", TrackFormat::tapvid_npz);
  ASSERT_TRUE(back) << back.status().message();
  expect_same_tracks(*back, table, 1e-3);

  // numpy, when this machine has it, must read the same arrays.
  std::string python;
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    if (python.empty() && std::system((std::string(candidate) + " -c 'import numpy' >/dev/null 2>&1").c_str()) == 0)
      python = candidate;
  }
  if (!python.empty()) {
    const std::string script = "import numpy as np; d = np.load('" + (dir / "t.npz").string() +
                               "'); p = d['points']; o = d['occluded']; "
                               "print(p.dtype, p.shape, o.dtype, o.shape, repr(float(p[1, 12, 0])), int(o[1, 15]))";
    FILE* pipe = ::popen((python + " -c \"" + script + "\"").c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::array<char, 256> line{};
    const std::string output = std::fgets(line.data(), line.size(), pipe) ? line.data() : "";
    ::pclose(pipe);
    const float expected_x = table.tracks[1].track.track.at(12).x_px / 640.0f;
    EXPECT_NE(output.find("float32 (3, 40, 2) bool (3, 40)"), std::string::npos) << output;
    EXPECT_NEAR(std::stod(output.substr(output.find(") ", output.find("bool")) + 2)), expected_x, 1e-7) << output;
    EXPECT_NE(output.find(" 1\n"), std::string::npos) << "frame 15 of track 3 was marked occluded: " << output;
  } else {
    std::printf("[ SKIPPED  ] numpy check: python3 has no numpy here (Debian: apt-get install python3-numpy)\n");
  }

  // A TAP-Vid file of another tool: points + occluded only; the video size comes from the caller.
  const std::string full = read_bytes(dir / "t.npz");
  EXPECT_FALSE(read_tracks(dir / "missing.npz", TrackFormat::tapvid_npz));
  std::ofstream(dir / "cut.npz", std::ios::binary) << full.substr(0, full.size() / 2);
  Expected<TrackTable> cut = read_tracks(dir / "cut.npz", TrackFormat::tapvid_npz);
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.status().code(), StatusCode::corrupt_data) << cut.status().message();
}

// The same table written twice gives the same bytes (no clock in the archive), so batch outputs can be compared
// bit for bit between runs.
TEST(TrackFormats, TapVidNpzIsReproducible) {
  const fs::path dir = fresh_dir("npz_reproducible");
  const TrackTable table = sample_table();
  ASSERT_TRUE(write_tracks(dir / "a.npz", table, TrackFormat::tapvid_npz));
  ::sleep(2);  // DOS timestamps in zip files have a resolution of 2 s
  ASSERT_TRUE(write_tracks(dir / "b.npz", table, TrackFormat::tapvid_npz));
  EXPECT_EQ(read_bytes(dir / "a.npz"), read_bytes(dir / "b.npz"));
}

TEST(TrackFormats, FormatFromPathIsOneRule) {
  EXPECT_EQ(track_format_from_path("out/tracks.csv"), TrackFormat::csv);
  EXPECT_EQ(track_format_from_path("out/TRACKS.CSV"), TrackFormat::csv);
  EXPECT_EQ(track_format_from_path("tracks.json"), TrackFormat::json);
  EXPECT_EQ(track_format_from_path("tracks.Npz"), TrackFormat::tapvid_npz);
  EXPECT_EQ(track_format_from_path("bees_dlc.csv"), TrackFormat::deeplabcut_csv);
  EXPECT_EQ(track_format_from_path("bees_DLC.csv"), TrackFormat::deeplabcut_csv);
  EXPECT_EQ(track_format_from_path("bees_coco.json"), TrackFormat::coco_json);
  EXPECT_EQ(track_format_from_path("dlc.csv/tracks.json"), TrackFormat::json);  // the file name decides
  EXPECT_FALSE(track_format_from_path("bees.trackscope"));
  EXPECT_FALSE(track_format_from_path("bees.txt"));
  EXPECT_FALSE(track_format_from_path(".csv"));  // a bare ending names no file
  EXPECT_FALSE(track_format_from_path("folder/"));
  for (const TrackFormat format : {TrackFormat::csv, TrackFormat::json, TrackFormat::tapvid_npz,
                                   TrackFormat::deeplabcut_csv, TrackFormat::coco_json}) {
    EXPECT_EQ(track_format_from_path(std::string("clip") + default_suffix(format)), format) << to_string(format);
  }
}

TEST(TrackFormats, DeepLabCutCsvReadIndependently) {
  const TrackTable table = sample_table();
  const std::string text = tracks_to_deeplabcut_csv(table);
  std::stringstream in(text);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream cellstream(line);
    for (std::string cell; std::getline(cellstream, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  ASSERT_EQ(rows.size(), 3u + 40u);
  EXPECT_EQ(rows[0][0], "scorer");
  EXPECT_EQ(rows[1][1], "point0");
  EXPECT_EQ(rows[1][4], "point3");
  EXPECT_EQ(rows[2][1], "x");
  EXPECT_EQ(rows[2][3], "likelihood");
  for (size_t i = 0; i < 3; ++i) {
    const Track& track = table.tracks[i].track.track;
    for (int64_t f = 0; f < 40; ++f) {
      const std::vector<std::string>& row = rows[3 + static_cast<size_t>(f)];
      ASSERT_EQ(row.size(), 10u) << f;
      EXPECT_EQ(std::stol(row[0]), f);
      const std::string& x = row[1 + 3 * i];
      if (!track.covers(f)) {
        EXPECT_TRUE(x.empty());
        continue;
      }
      const TrackPoint& p = track.at(f);
      EXPECT_NEAR(std::stod(x), p.x_px - 0.5, 1e-4);  // DeepLabCut: pixel centres at integers
      EXPECT_NEAR(std::stod(row[2 + 3 * i]), p.y_px - 0.5, 1e-4);
      EXPECT_NEAR(std::stod(row[3 + 3 * i]), (1.0 - p.p_occluded) * (1.0 - p.p_far), 1e-4);
    }
  }
}

TEST(TrackFormats, CocoKeypointsReadIndependently) {
  const TrackTable table = sample_table();
  const nlohmann::json coco = nlohmann::json::parse(tracks_to_coco_json(table));
  ASSERT_EQ(coco["images"].size(), 40u);
  ASSERT_EQ(coco["annotations"].size(), 40u);
  EXPECT_EQ(coco["categories"][0]["keypoints"], nlohmann::json({"point0", "point3", "point7"}));
  EXPECT_NE(coco["info"]["description"].get<std::string>().find("pixel centres at integers"), std::string::npos);
  for (int64_t f = 0; f < 40; ++f) {
    const nlohmann::json& annotation = coco["annotations"][static_cast<size_t>(f)];
    EXPECT_EQ(annotation["image_id"], coco["images"][static_cast<size_t>(f)]["id"]);
    EXPECT_EQ(coco["images"][static_cast<size_t>(f)]["frame_index"], f);
    const nlohmann::json& keypoints = annotation["keypoints"];
    ASSERT_EQ(keypoints.size(), 9u);
    int labelled = 0;
    for (size_t i = 0; i < 3; ++i) {
      const Track& track = table.tracks[i].track.track;
      const int v = keypoints[3 * i + 2];
      if (!track.covers(f)) {
        EXPECT_EQ(v, 0);
        continue;
      }
      ++labelled;
      EXPECT_EQ(v, track.at(f).visible ? 2 : 1);
      EXPECT_NEAR(keypoints[3 * i].get<double>(), track.at(f).x_px - 0.5, 1e-4);
      EXPECT_NEAR(keypoints[3 * i + 1].get<double>(), track.at(f).y_px - 0.5, 1e-4);
    }
    EXPECT_EQ(annotation["num_keypoints"], labelled);
  }
}

}  // namespace
}  // namespace trackscope::core::io
