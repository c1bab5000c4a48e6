#include "fuzz_entries.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/io/checkpoint.h"
#include "core/io/input_checks.h"
#include "core/io/pickle.h"
#include "core/io/project.h"
#include "core/io/queries_csv.h"
#include "core/io/safetensors.h"
#include "core/io/track_formats.h"
#include "core/perf/profile.h"
#include "core/tracking/metrics.h"
#include "core/video/video_source.h"

namespace trackscope::fuzz {
namespace {

using namespace trackscope::core;

// A broken property is a finding like a crash: abort, so that libFuzzer saves the input.
#define FUZZ_CHECK(condition)                                                                       \
  do {                                                                                              \
    if (!(condition)) {                                                                             \
      std::fprintf(stderr, "fuzz property violated: %s (%s:%d)\n", #condition, __FILE__, __LINE__); \
      std::abort();                                                                                 \
    }                                                                                               \
  } while (false)

std::string_view text_of(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

// The video the imports are checked against: 640x480, 300 frames.
constexpr io::TrackImportOptions kVideo{640, 480, 300};

void check_table(const io::TrackTable& table, const io::TrackImportOptions& video) {
  for (const io::TableTrack& entry : table.tracks) {
    const Track& track = entry.track.track;
    FUZZ_CHECK(track.first_frame >= 0 && !track.points.empty());
    if (video.frame_count > 0) FUZZ_CHECK(track.end_frame() <= video.frame_count);
    for (const TrackPoint& p : track.points) {
      FUZZ_CHECK(io::plausible_position(p.x_px, p.y_px, video.width, video.height));
      FUZZ_CHECK(p.p_occluded >= 0.0f && p.p_occluded <= 1.0f && p.p_far >= 0.0f && p.p_far <= 1.0f);
    }
  }
}

bool same_tracks(const io::TrackTable& a, const io::TrackTable& b) {
  if (a.tracks.size() != b.tracks.size()) return false;
  for (size_t i = 0; i < a.tracks.size(); ++i) {
    const io::TableTrack &x = a.tracks[i], &y = b.tracks[i];
    if (x.id != y.id || x.query != y.query || !(x.track == y.track)) return false;
  }
  return true;
}

void project(const uint8_t* data, size_t size) {
  Expected<io::Project> project = io::project_from_json(text_of(data, size), "fuzz.trackscope");
  if (!project) return;
  for (const io::ProjectPoint& point : project->points) {
    FUZZ_CHECK(io::plausible_position(point.point.query.x_px, point.point.query.y_px, project->video.width,
                                      project->video.height));
    if (point.track && project->video.frame_count > 0)
      FUZZ_CHECK(point.track->track.end_frame() <= project->video.frame_count);
  }
  // What was read is written back and read again unchanged.
  Expected<io::Project> again = io::project_from_json(io::project_to_json(*project), "again.trackscope");
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(*again == *project);
}

void profile(const uint8_t* data, size_t size) {
  Expected<Profile> profile = profile_from_json(text_of(data, size));
  if (!profile) return;
  for (const ProfileCase& c : profile->cases) {
    FUZZ_CHECK(c.end_to_end.median_ms >= 0.0 && std::isfinite(c.end_to_end.median_ms));
    for (const StageStats& s : c.stages) FUZZ_CHECK(s.stats.min_ms >= 0.0 && std::isfinite(s.stats.max_ms));
  }
  Expected<Profile> again = profile_from_json(profile_to_json(*profile));
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(*again == *profile);
}

void tracks_csv(const uint8_t* data, size_t size) {
  Expected<io::TrackTable> table = io::tracks_from_csv(text_of(data, size), "fuzz.csv", kVideo);
  if (!table) return;
  check_table(*table, kVideo);
  Expected<io::TrackTable> again = io::tracks_from_csv(io::tracks_to_csv(*table), "again.csv", kVideo);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(same_tracks(*again, *table));
}

void tracks_json(const uint8_t* data, size_t size) {
  Expected<io::TrackTable> table = io::tracks_from_json(text_of(data, size), "fuzz.json", kVideo);
  if (!table) return;
  check_table(*table, kVideo);
  Expected<io::TrackTable> again = io::tracks_from_json(io::tracks_to_json(*table), "again.json", kVideo);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(same_tracks(*again, *table));
}

void tracks_npz(const uint8_t* data, size_t size) {
  Expected<io::TrackTable> table = io::tracks_from_npz(text_of(data, size), "fuzz.npz", kVideo);
  if (table) check_table(*table, kVideo);
}

void safetensors(const uint8_t* data, size_t size) {
  std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(data),
                               reinterpret_cast<const std::byte*>(data) + size);
  Expected<io::SafetensorsSet> set = io::SafetensorsSet::parse(std::move(bytes), "fuzz.safetensors");
  if (!set) return;
  std::vector<io::TensorToWrite> tensors;
  for (const io::TensorEntry& entry : set->tensors()) {
    const std::span<const std::byte> tensor_bytes = set->bytes(entry);
    FUZZ_CHECK(tensor_bytes.size() == static_cast<size_t>(entry.element_count()) * io::dtype_size_bytes(entry.dtype));
    tensors.push_back({entry.name, entry.dtype, entry.shape, tensor_bytes});
  }
  Expected<std::vector<std::byte>> written = io::serialize_safetensors(tensors, set->metadata());
  FUZZ_CHECK(written.has_value());
  Expected<io::SafetensorsSet> again = io::SafetensorsSet::parse(std::move(*written), "again.safetensors");
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->tensors().size() == set->tensors().size());
}

void checkpoint(const uint8_t* data, size_t size) {
  Expected<io::Checkpoint> checkpoint = io::parse_checkpoint(text_of(data, size), "fuzz.ckpt");
  if (!checkpoint) return;
  for (const io::CheckpointTensor& tensor : checkpoint->tensors) {
    uint64_t count = 1;
    for (int64_t dim : tensor.shape) count *= static_cast<uint64_t>(dim);
    FUZZ_CHECK(tensor.data.size() == count * io::dtype_size_bytes(tensor.dtype));
  }
}

void pickle(const uint8_t* data, size_t size) {
  Expected<io::pickle::Document> document = io::pickle::unpickle(text_of(data, size), "fuzz.pkl");
  if (!document) return;
  FUZZ_CHECK(document->root() < document->size());
  (void)document->describe(document->root());
  (void)document->dict_get(document->root(), "state_dict");
}

void badja_csv(const uint8_t* data, size_t size) {
  Expected<BadjaAnnotations> annotations = badja_from_csv(text_of(data, size), "fuzz.csv");
  if (!annotations) return;
  FUZZ_CHECK(annotations->width > 0 && annotations->height > 0);
  for (size_t i = 1; i < annotations->frames.size(); ++i)
    FUZZ_CHECK(annotations->frames[i - 1].frame < annotations->frames[i].frame);
  (void)badja_queries(*annotations);
}

void badja_json(const uint8_t* data, size_t size) {
  Expected<BadjaAnnotations> annotations = badja_from_json(text_of(data, size), "fuzz.json");
  if (!annotations) return;
  for (const BadjaFrame& frame : annotations->frames) {
    for (const BadjaJoint& joint : frame.joints) {
      if (joint.visible) FUZZ_CHECK(io::plausible_position(joint.x_px, joint.y_px, 1920, 1080));
    }
  }
  (void)annotations->scaled_to(854, 480);
}

void queries_csv(const uint8_t* data, size_t size) {
  const QueryBounds video{640, 480, 300};
  Expected<std::vector<Query>> queries = queries_from_csv(text_of(data, size), "fuzz.csv", video);
  if (!queries) return;
  for (const Query& q : *queries) {
    FUZZ_CHECK(q.frame >= 0 && q.frame < 300);
    FUZZ_CHECK(io::plausible_position(q.x_px, q.y_px, 640, 480));
  }
}

void video(const uint8_t* data, size_t size) {
  VideoOpenOptions options;
  options.decoder_threads = 1;  // no decoder threads: deterministic, and what a fuzzer can follow
  auto bytes = std::make_shared<const std::vector<uint8_t>>(data, data + size);
  Expected<std::unique_ptr<VideoSource>> source = VideoSource::open_bytes(std::move(bytes), "fuzz.bin", options);
  if (!source) return;
  const VideoInfo& info = (*source)->info();
  FUZZ_CHECK(info.frame_count > 0 && info.width > 0 && info.height > 0);
  // The last frame, a jump back, the next one (errors are fine; crashes and wrong sizes are not).
  for (int64_t index :
       {info.frame_count - 1, info.frame_count / 2, int64_t{0}, std::min<int64_t>(1, info.frame_count - 1)}) {
    Expected<FramePtr> frame = (*source)->read_frame(index);
    if (!frame) continue;
    FUZZ_CHECK((*frame)->index == index);
    FUZZ_CHECK((*frame)->rgb.size() == static_cast<size_t>((*frame)->width) * (*frame)->height * 3);
  }
}

constexpr FuzzEntry kEntries[] = {
    {"project", project},         {"profile", profile},         {"tracks_csv", tracks_csv},
    {"tracks_json", tracks_json}, {"tracks_npz", tracks_npz},   {"safetensors", safetensors},
    {"checkpoint", checkpoint},   {"pickle", pickle},           {"badja_csv", badja_csv},
    {"badja_json", badja_json},   {"queries_csv", queries_csv}, {"video", video},
};

}  // namespace

std::span<const FuzzEntry> fuzz_entries() { return kEntries; }

const FuzzEntry* find_fuzz_entry(std::string_view name) {
  for (const FuzzEntry& entry : kEntries) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

}  // namespace trackscope::fuzz
