// A helper process for app/writer_faults: writes one file with one of Trackscope's writers, or checks one. The
// fault test runs it under `ulimit -f`, on a full or read-only file system, and kills it with SIGKILL at random
// moments, then checks that the previous file survived whole.
//
//   writer_fault_helper write WRITER PATH VERSION    exit 0: written; 1: the writer reported an error (stderr)
//   writer_fault_helper loop WRITER PATH VERSION     writes VERSION, VERSION+1, ... until killed; prints
//                                                    "wrote N in US" (microseconds) after each write
//   writer_fault_helper check WRITER PATH            prints "version N" and exits 0 when PATH is a whole file of
//                                                    that writer; exit 1 (with the reason) otherwise
//   writer_fault_helper list                         prints the writers, one a line
//
// Every file is large enough (0.3 to 3 MB) that a cut-off or a kill lands in the middle of writing it, and each
// check reads the file back completely through the project's own reader (or Qt's, for settings and images).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/io/atomic_file.h"
#include "core/io/npz.h"
#include "core/io/project.h"
#include "core/io/safetensors.h"
#include "core/io/track_formats.h"
#include "core/perf/profile.h"
#include "core/tracking/annotation.h"
#include "core/video/image_io.h"
#include "core/video/video_source.h"
#include "core/video/video_writer.h"

#if TRACKSCOPE_WRITER_HELPER_UI
#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QSettings>

#include "ui/frame_server_factory.h"
#include "ui/image_file.h"
#include "ui/perf/report_export.h"
#endif

namespace {

using namespace trackscope;
namespace fs = std::filesystem;

// What a check found: the version of a whole file, or why it is not one.
using Checked = core::Expected<int64_t>;

struct Writer {
  std::function<core::Status(const fs::path&, int64_t version)> write;
  std::function<Checked(const fs::path&)> check;
};

core::Status mismatch(const std::string& what) { return core::corrupt_data(what); }

// ---- raw bytes (write_file_atomically, AtomicFile) --------------------------------------------------------

constexpr size_t kRawBytes = size_t{3} << 20;

std::string raw_payload(int64_t version) {
  std::string bytes = fmt::format("version {}\n", version);
  bytes.reserve(kRawBytes);
  uint32_t state = static_cast<uint32_t>(version) * 2654435761u + 1;
  while (bytes.size() < kRawBytes - 16) {
    state = state * 1664525u + 1013904223u;
    bytes.push_back(static_cast<char>('a' + (state >> 24) % 26));
  }
  bytes += fmt::format("\nend {:010d}\n", version);
  return bytes;
}

Checked check_raw(const fs::path& path) {
  core::Expected<std::string> bytes = core::io::read_file(path, size_t{1} << 30);
  if (!bytes) return bytes.status();
  int64_t version = -1;
  if (std::sscanf(bytes->c_str(), "version %lld", reinterpret_cast<long long*>(&version)) != 1) {
    return mismatch("no version line");
  }
  if (*bytes != raw_payload(version))
    return mismatch(fmt::format("{} bytes, not the whole version {}", bytes->size(), version));
  return version;
}

core::Status write_stream(const fs::path& path, int64_t version) {
  core::Expected<core::io::AtomicFile> file = core::io::AtomicFile::create(path);
  if (!file) return file.status();
  const std::string bytes = raw_payload(version);
  for (size_t at = 0; at < bytes.size(); at += 50'000) {
    TRACKSCOPE_RETURN_IF_ERROR(file->write(std::string_view(bytes).substr(at, 50'000)));
  }
  return file->commit();
}

// ---- projects and tracks ------------------------------------------------------------------------------

constexpr int kPoints = 400;
constexpr int kFrames = 60;

core::io::Project make_project(int64_t version) {
  core::Annotation annotation;
  for (int i = 0; i < kPoints; ++i) {
    const core::PointId id = annotation.add({i % kFrames, 10.5 + i % 300, 20.5 + i / 300});
    core::Track track;
    track.query = annotation.find(id)->query;
    track.first_frame = 0;
    for (int t = 0; t < kFrames; ++t) {
      track.points.push_back({static_cast<float>(10 + t + i % 300), static_cast<float>(20 + t), true, 0.1f, 0.2f});
    }
    (void)annotation.set_track(id, track, {"fault test", "cpu", "fp32"});
  }
  core::io::ProjectVideo video;
  video.path = "/nonexistent/clip.mp4";
  video.width = 640;
  video.height = 480;
  video.frame_count = kFrames;
  video.frames_per_second = 25.0;
  core::io::ProjectView view;
  view.current_frame = version;
  return core::io::make_project(annotation, video, view);
}

Checked check_project(const fs::path& path) {
  core::Expected<core::io::Project> project = core::io::load_project(path);
  if (!project) return project.status();
  if (project->points.size() != kPoints) return mismatch(fmt::format("{} points", project->points.size()));
  return project->view.current_frame;
}

core::io::TrackTable make_table(int64_t version) {
  core::Annotation annotation;
  const core::io::Project project = make_project(version);
  core::io::load_into(project, annotation);
  core::io::TrackTable table = core::io::track_table(annotation, {"clip.mp4", 640, 480, kFrames, 25.0});
  // The version in the first estimate of the first track (exact in every format written here).
  table.tracks.front().track.track.points.front().x_px = static_cast<float>(version % 512) + 0.25f;
  return table;
}

Writer tracks_writer(core::io::TrackFormat format) {
  return {[format](const fs::path& path, int64_t version) {
            return core::io::write_tracks(path, make_table(version), format);
          },
          [format](const fs::path& path) -> Checked {
            core::Expected<core::io::TrackTable> table = core::io::read_tracks(path, format, {640, 480});
            if (!table) return table.status();
            if (table->tracks.size() != kPoints) return mismatch(fmt::format("{} tracks", table->tracks.size()));
            if (table->tracks.back().track.track.points.size() != kFrames) return mismatch("short last track");
            return static_cast<int64_t>(std::floor(table->tracks.front().track.track.points.front().x_px));
          }};
}

// ---- profiles, images, safetensors, video -----------------------------------------------------------------

core::Profile make_profile(int64_t version) {
  core::Profile profile;
  profile.tool.command = fmt::format("version {}", version);
  profile.origin_note = std::string(size_t{1} << 20, 'p');
  return profile;
}

Checked version_of_profile(const core::Expected<core::Profile>& profile) {
  if (!profile) return profile.status();
  if (profile->origin_note.size() != (size_t{1} << 20)) return mismatch("the note is short");
  long long version = -1;
  if (std::sscanf(profile->tool.command.c_str(), "version %lld", &version) != 1) return mismatch("no version");
  return static_cast<int64_t>(version);
}

core::Frame make_image(int64_t version) {
  core::Frame frame;
  frame.width = 640;
  frame.height = 480;
  frame.rgb.resize(static_cast<size_t>(frame.width) * frame.height * 3);
  uint32_t state = static_cast<uint32_t>(version) + 7;
  for (uint8_t& byte : frame.rgb) {
    state = state * 1664525u + 1013904223u;
    byte = static_cast<uint8_t>(state >> 24);  // noise: a PNG of ~0.9 MB
  }
  frame.rgb[0] = static_cast<uint8_t>(version % 256);
  return frame;
}

Checked check_png(const fs::path& path) {
  core::Expected<core::Frame> frame = core::read_png(path);
  if (!frame) return frame.status();
  const core::Frame expected = make_image(frame->rgb[0]);
  if (frame->rgb != expected.rgb) return mismatch("the pixels differ from every version");
  return static_cast<int64_t>(frame->rgb[0]);
}

core::Status write_safetensors(const fs::path& path, int64_t version) {
  std::vector<float> values(size_t{1} << 19);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(version) + static_cast<float>(i % 97);
  const std::span<const std::byte> bytes = std::as_bytes(std::span<const float>(values));
  return core::io::write_safetensors(path, {{"weights", core::io::TensorDtype::f32, {1 << 19}, bytes}},
                                     {{"version", std::to_string(version)}});
}

Checked check_safetensors(const fs::path& path) {
  core::Expected<core::io::SafetensorsSet> set = core::io::SafetensorsSet::open(path);
  if (!set) return set.status();
  const core::io::TensorEntry* tensor = set->find("weights");
  if (tensor == nullptr || !set->metadata().contains("version")) return mismatch("no weights or version");
  const int64_t version = std::stoll(set->metadata().at("version"));
  const std::span<const std::byte> bytes = set->bytes(*tensor);
  if (bytes.size() != (size_t{1} << 21)) return mismatch("short tensor");
  float last = 0.0f;
  std::memcpy(&last, bytes.data() + bytes.size() - 4, 4);
  if (last != static_cast<float>(version) + static_cast<float>(((size_t{1} << 19) - 1) % 97)) return mismatch("data");
  return version;
}

constexpr int kVideoFrames = 30;
constexpr int kVideoVersions = 50;  // versions a video tells apart (the kill test writes versions 3 to ~40)

// The grey level of a video's first frame, which carries its version (a flat frame survives MJPEG within +-2).
int video_grey_of(int64_t version) { return 16 + 4 * static_cast<int>(version % kVideoVersions); }

core::Status write_video(const fs::path& path, int64_t version) {
  core::VideoWriterOptions options;
  options.codec = core::VideoCodec::mjpeg;
  options.width = 320;
  options.height = 240;
  options.quality = 2;
  core::Expected<std::unique_ptr<core::VideoWriter>> writer = core::VideoWriter::create(path, options);
  if (!writer) return writer.status();
  for (int i = 0; i < kVideoFrames + static_cast<int>(version % kVideoVersions % 3); ++i) {
    core::Frame frame = make_image(version + i);
    frame.width = 320;
    frame.height = 240;
    frame.rgb.resize(320 * 240 * 3);
    if (i == 0) std::fill(frame.rgb.begin(), frame.rgb.end(), static_cast<uint8_t>(video_grey_of(version)));
    TRACKSCOPE_RETURN_IF_ERROR((*writer)->write(frame));
  }
  return (*writer)->finish();
}

Checked check_video(const fs::path& path) {
  core::Expected<std::unique_ptr<core::VideoSource>> video = core::VideoSource::open(path);
  if (!video) return video.status();
  const int64_t frames = (*video)->info().frame_count;
  if (frames < kVideoFrames || frames >= kVideoFrames + 3) return mismatch(fmt::format("{} frames", frames));
  core::Expected<core::FramePtr> first = (*video)->read_frame(0);
  if (!first) return first.status();
  double sum = 0.0;
  for (const uint8_t byte : (*first)->rgb) sum += byte;
  const double grey = sum / static_cast<double>(std::max<size_t>(1, (*first)->rgb.size()));
  const int64_t version = std::lround((grey - 16.0) / 4.0);
  if (version < 0 || version >= kVideoVersions || std::abs(grey - video_grey_of(version)) > 2.0 ||
      version % 3 != frames - kVideoFrames) {
    return mismatch(fmt::format("first frame grey {:.1f} and {} frames match no version", grey, frames));
  }
  core::Expected<core::FramePtr> last = (*video)->read_frame(frames - 1);
  if (!last) return last.status();
  return version;  // the version modulo kVideoVersions
}

// ---- ui writers ---------------------------------------------------------------------------------------------

#if TRACKSCOPE_WRITER_HELPER_UI
constexpr int kSettingsKeys = 20000;

core::Status write_settings(const fs::path& path, int64_t version) {
  // What ui::Settings does: a QSettings INI file, written by sync().
  QSettings settings(ui::qstring_from_path(path), QSettings::IniFormat);
  settings.setValue("version", static_cast<qlonglong>(version));
  for (int i = 0; i < kSettingsKeys; ++i) {
    settings.setValue(QStringLiteral("filler/key%1").arg(i),
                      QStringLiteral("value %1 of version %2").arg(i).arg(version));
  }
  settings.setValue("end", static_cast<qlonglong>(version));
  settings.sync();
  if (settings.status() != QSettings::NoError) return core::io_error("QSettings could not write " + path.string());
  return {};
}

Checked check_settings(const fs::path& path) {
  if (!fs::exists(path)) return core::not_found(path.string() + " does not exist");
  QSettings settings(ui::qstring_from_path(path), QSettings::IniFormat);
  if (settings.status() != QSettings::NoError) return mismatch("QSettings cannot read it");
  const qlonglong version = settings.value("version", -1).toLongLong();
  if (settings.value("end", -2).toLongLong() != version) return mismatch("no end key: the file is cut");
  settings.beginGroup("filler");
  const qsizetype keys = settings.childKeys().size();
  if (keys != kSettingsKeys) return mismatch(fmt::format("{} filler keys", keys));
  if (settings.value(QStringLiteral("key%1").arg(kSettingsKeys - 1)).toString() !=
      QStringLiteral("value %1 of version %2").arg(kSettingsKeys - 1).arg(version)) {
    return mismatch("filler of another version");
  }
  return static_cast<int64_t>(version);
}

core::Status write_report(const fs::path& path, int64_t version) {
  // PATH names the report folder's profile.json; the report writes it (and stages.csv) into that folder.
  const core::Profile profile = make_profile(version);
  ui::ReportContent content;
  content.current = &profile;
  core::Expected<QStringList> written = ui::export_report(ui::qstring_from_path(path.parent_path()), content);
  return written ? core::Status() : written.status();
}

core::Status write_qimage(const fs::path& path, int64_t version) {
  const core::Frame frame = make_image(version);
  const QImage image(frame.rgb.data(), frame.width, frame.height, frame.width * 3, QImage::Format_RGB888);
  return ui::save_image_atomically(image, ui::qstring_from_path(path));
}

Checked check_qimage(const fs::path& path) {
  QImage image;
  if (!image.load(ui::qstring_from_path(path), "PNG")) return mismatch("Qt cannot read it as PNG");
  image = image.convertToFormat(QImage::Format_RGB888);
  const int64_t version = qRed(image.pixel(0, 0));
  const core::Frame expected = make_image(version);
  for (int y = 0; y < image.height(); ++y) {
    if (std::memcmp(image.constScanLine(y), expected.rgb.data() + static_cast<size_t>(y) * expected.width * 3,
                    static_cast<size_t>(expected.width) * 3) != 0) {
      return mismatch(fmt::format("row {} differs from version {}", y, version));
    }
  }
  return version;
}
#endif

std::map<std::string, Writer> writers() {
  std::map<std::string, Writer> all;
  all["atomic_bytes"] = {
      [](const fs::path& p, int64_t v) { return core::io::write_file_atomically(p, raw_payload(v)); }, check_raw};
  all["atomic_stream"] = {write_stream, check_raw};
  // Projects and recovery files are written the same way (save_project / write_file_atomically of a project).
  all["project"] = {[](const fs::path& p, int64_t v) { return core::io::save_project(p, make_project(v)); },
                    check_project};
  all["recovery"] = {[](const fs::path& p, int64_t v) {
                       core::io::Project project = make_project(v);
                       project.recovery = core::io::RecoveryInfo{"/tmp/x.trackscope", "2025-01-01T00:00:00Z"};
                       return core::io::write_file_atomically(p, core::io::project_to_json(project));
                     },
                     check_project};
  all["tracks_csv"] = tracks_writer(core::io::TrackFormat::csv);
  all["tracks_json"] = tracks_writer(core::io::TrackFormat::json);
  all["tracks_npz"] = tracks_writer(core::io::TrackFormat::tapvid_npz);
  all["profile"] = {[](const fs::path& p, int64_t v) { return core::write_profile(make_profile(v), p); },
                    [](const fs::path& p) { return version_of_profile(core::read_profile(p)); }};
  all["png"] = {[](const fs::path& p, int64_t v) { return core::write_png(p, make_image(v)); }, check_png};
  all["safetensors"] = {write_safetensors, check_safetensors};
  if (core::video_encoder_available(core::VideoCodec::mjpeg)) all["video"] = {write_video, check_video};
#if TRACKSCOPE_WRITER_HELPER_UI
  all["settings"] = {write_settings, check_settings};
  all["report"] = {write_report, [](const fs::path& p) { return version_of_profile(core::read_profile(p)); }};
  all["qimage"] = {write_qimage, check_qimage};
#endif
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const std::map<std::string, Writer> all = writers();
  if (args.size() == 1 && args[0] == "list") {
    for (const auto& [name, writer] : all) std::printf("%s\n", name.c_str());
    return 0;
  }
  if (args.size() < 3 || !all.contains(args[1])) {
    std::fprintf(stderr, "usage: %s write|loop|check WRITER PATH [VERSION]\n", argv[0]);
    return 2;
  }
  const Writer& writer = all.at(args[1]);
  const fs::path path = args[2];
  if (args[0] == "check") {
    const Checked version = writer.check(path);
    if (!version) {
      std::printf("broken: %s\n", version.status().message().c_str());
      return 1;
    }
    std::printf("version %lld leftovers %zu\n", static_cast<long long>(*version),
                core::io::leftover_temporary_files(path).size());
    return 0;
  }
  if (args.size() != 4) return 2;
  int64_t version = std::stoll(args[3]);
  if (args[0] == "write") {
    const core::Status written = writer.write(path, version);
    if (!written) {
      std::fprintf(stderr, "%s\n", written.message().c_str());
      return 1;
    }
    return 0;
  }
  if (args[0] == "loop") {
    for (;; ++version) {
      const auto start = std::chrono::steady_clock::now();
      if (const core::Status written = writer.write(path, version); !written) {
        std::fprintf(stderr, "%s\n", written.message().c_str());
        return 1;
      }
      const auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
      // Tells the test how long one write takes in this process, so that its kill lands inside the next one.
      std::printf("wrote %lld in %lld\n", static_cast<long long>(version), static_cast<long long>(took.count()));
      std::fflush(stdout);
    }
  }
  return 2;
}
