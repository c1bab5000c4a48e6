// Writes the seed corpora of tests/fuzz/corpus/<entry>/ with the project's own writers: small valid inputs of every
// parser (a project, a recovery file, a profile, track tables in each import format, safetensors, BADJA
// annotations, queries, tiny videos and images). The checkpoint and pickle seeds come from
// tests/data/make_checkpoints.py fuzz-seeds. Nothing is copied from ../shared.
//
//   cmake --build build --target trackscope_fuzz_seeds && build/tests/fuzz/trackscope_fuzz_seeds tests/fuzz/corpus
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "core/io/npz.h"
#include "core/io/project.h"
#include "core/io/safetensors.h"
#include "core/io/track_formats.h"
#include "core/perf/profile.h"
#include "core/tracking/track_edit.h"
#include "core/video/image_io.h"
#include "core/video/video_writer.h"

using namespace trackscope::core;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// Two tracks over a 64x48, 12-frame video: a keyframe, an occluded stretch, provenance.
io::TrackTable sample_table() {
  io::TrackTable table;
  table.video = {"/videos/clip.mp4", 64, 48, 12, 25.0};
  for (PointId id : {0, 3}) {
    io::TableTrack entry;
    entry.id = id;
    Track& track = entry.track.track;
    track.first_frame = id == 0 ? 0 : 4;
    for (int64_t f = track.first_frame; f < 12; ++f) {
      const float p = static_cast<float>((f * 7 + id) % 10) / 10.0f;
      track.points.push_back(
          {10.5f + 1.25f * f + id, 40.0f - 2.5f * f, visible_from_probabilities(p, 0.05f), p, 0.05f});
    }
    track.query = {track.first_frame + 1, track.at(track.first_frame + 1).x_px, track.at(track.first_frame + 1).y_px};
    entry.query = track.query;
    entry.track.provenance = {"LocoTrack-S", "cpu", "fp32"};
    if (id == 0) entry.track = with_correction(entry.track, 6, 20.0, 30.0);
    table.tracks.push_back(entry);
  }
  return table;
}

io::Project sample_project(const io::TrackTable& table) {
  Annotation annotation;
  for (const io::TableTrack& entry : table.tracks) {
    const PointId id = annotation.add(entry.query);
    (void)annotation.set_track(id, entry.track);
  }
  annotation.add({2, 5.5, 6.5});  // a point without a track
  io::ProjectVideo video;
  video.path = "/videos/clip.mp4";
  video.relative_path = "clip.mp4";
  video.fingerprint = {1234, "3f2a"};
  video.frame_count = 12;
  video.width = 64;
  video.height = 48;
  video.frames_per_second = 25.0;
  io::ProjectView view;
  view.current_frame = 3;
  view.selected_point = 1;
  return make_project(annotation, video, view);
}

Profile sample_profile() {
  Profile profile;
  profile.created_utc = "2025-01-31T12:00:00Z";
  profile.host = {"cpu", 2, "host", "linux"};
  profile.device.id = "cpu";
  profile.device.name = "CPU (2 threads)";
  profile.device.compute_capability_major = 9;
  RunConfig config;
  config.points = 16;
  config.frames = 8;
  config.repeats = 2;
  ProfileCaseBuilder builder(config);
  for (int repeat = 0; repeat < 2; ++repeat) {
    std::vector<StageSample> samples;
    samples.push_back({Stage::backbone, 0, 0, 3.5 + repeat, StageClock::host_steady, 1e9, 1e8});
    for (int iteration = 1; iteration <= 2; ++iteration)
      samples.push_back({Stage::refine_encoder, 0, iteration, 1.25 * iteration, StageClock::host_steady, 2e8, 3e7});
    builder.add_repeat(samples, 9.0 + repeat);
  }
  TelemetrySummary telemetry;
  telemetry.samples = 3;
  telemetry.power_median_w = 71.5;
  profile.cases.push_back(builder.build(1 << 20, telemetry));
  return profile;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR (tests/fuzz/corpus)\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  const io::TrackTable table = sample_table();

  io::Project project = sample_project(table);
  write(out / "project/small.trackscope", io::project_to_json(project));
  project.recovery = io::RecoveryInfo{"/projects/bees.trackscope", "2025-01-31T12:00:00Z"};
  write(out / "project/recovery.trackscope-recovery", io::project_to_json(project));
  write(out / "project/empty.trackscope", io::project_to_json(make_project(Annotation(), project.video, {})));

  write(out / "profile/profile.json", profile_to_json(sample_profile()));

  write(out / "tracks_csv/tracks.csv", io::tracks_to_csv(table));
  write(out / "tracks_csv/minimal.csv", "\xEF\xBB\xBFtrack_id,frame,x,y,visible\n0,0,1.5,2.5,1\n0,3,4,5,0\n");
  write(out / "tracks_json/tracks.json", io::tracks_to_json(table));
  const fs::path npz = out / "tracks_npz/tracks.npz";
  fs::create_directories(npz.parent_path());
  if (!io::write_tracks_npz(npz, table)) return 1;
  const Status tapvid =
      io::write_npz(out / "tracks_npz/tapvid_minimal.npz",
                    {io::NpyArray::of("points", {1, 3, 2}, std::vector<float>{0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}),
                     io::NpyArray::of("occluded", {1, 3}, std::vector<bool>{false, true, false})});
  if (!tapvid) return 1;

  const std::vector<float> weights = {0.5f, -1.0f, 2.0f, 0.25f, 8.0f, -0.125f};
  const std::vector<int64_t> steps = {7};
  Expected<std::vector<std::byte>> safetensors =
      io::serialize_safetensors({{"layer.weight", io::TensorDtype::f32, {2, 3}, std::as_bytes(std::span(weights))},
                                 {"steps", io::TensorDtype::i64, {}, std::as_bytes(std::span(steps))}},
                                {{"format", "pt"}});
  if (!safetensors) return 1;
  write(out / "safetensors/small.safetensors",
        std::string(reinterpret_cast<const char*>(safetensors->data()), safetensors->size()));

  std::string badja = "frame,joint_id,x_64x48,y_64x48,visible,pck_thr_px_0.2sqrtArea\n";
  for (int frame : {0, 5, 10})
    for (int joint : {1, 4, 7})
      badja += fmt::format("{},{},{:.2f},{:.2f},{},6.5\n", frame, joint, 10.0 + frame + joint, 20.0 - joint,
                           joint != 4 || frame == 0);
  write(out / "badja_csv/annotations.csv", badja);
  std::string badja_json = "[";
  for (int frame : {0, 5}) {
    badja_json += fmt::format(R"({}{{"image_path": "Images/{:05d}.jpg", "segmentation_path": "Masks/{:05d}.png", )",
                              frame == 0 ? "" : ", ", frame, frame);
    badja_json += R"("joints": [[100, 200], [0, 0], [300.5, 410]], "visibility": [true, false, true]})";
  }
  write(out / "badja_json/annotations.json", badja_json + "]\n");

  write(out / "queries_csv/queries.csv", "frame,x,y\n# a comment\n0,120.5,64.5\n12,300,200\n\n");

  // Videos and images: tiny, so that mutations reach the headers and the first packets.
  Frame frame;
  frame.width = 32;
  frame.height = 24;
  frame.rgb.resize(32 * 24 * 3);
  for (size_t i = 0; i < frame.rgb.size(); ++i) frame.rgb[i] = static_cast<uint8_t>((i * 37) % 251);
  fs::create_directories(out / "video");
  if (png_encoder_available()) (void)write_png(out / "video/image.png", frame);
  if (video_encoder_available(VideoCodec::mjpeg)) (void)write_jpeg(out / "video/image.jpg", frame, 10);
  for (const auto& [codec, name] :
       {std::pair{VideoCodec::h264, "clip.mp4"}, std::pair{VideoCodec::mjpeg, "clip.avi"}}) {
    if (!video_encoder_available(codec)) continue;
    VideoWriterOptions options;
    options.codec = codec;
    options.width = 32;
    options.height = 24;
    options.keyframe_interval = 3;
    options.preset = "ultrafast";
    options.quality = codec == VideoCodec::mjpeg ? 20 : 40;
    auto writer = VideoWriter::create(out / "video" / name, options);
    if (!writer) continue;
    for (int i = 0; i < 6; ++i) {
      frame.index = i;
      for (size_t p = 0; p < frame.rgb.size(); p += 3) frame.rgb[p] = static_cast<uint8_t>(i * 40);
      (void)(*writer)->write(frame);
    }
    (void)(*writer)->finish();
  }
  std::printf("seeds written to %s\n", out.string().c_str());
  return 0;
}
