#include "ui/settings.h"

#include <QFileInfo>
#include <QSettings>

#include "core/limits.h"
#include "core/log.h"

namespace trackscope::ui {
namespace {

// Every key, in one place.
constexpr const char* kRecentFiles = "files/recent";
constexpr const char* kLastOpenFolder = "files/last_open_folder";
constexpr const char* kCacheMegabytes = "video/cache_mb";
constexpr const char* kPrefetchAhead = "video/prefetch_ahead";
constexpr const char* kPrefetchBehind = "video/prefetch_behind";
constexpr const char* kDecoderThreads = "video/decoder_threads";
constexpr const char* kShowTracks = "tracks/show";
constexpr const char* kShowOccluded = "tracks/show_occluded";
constexpr const char* kTrailBefore = "tracks/trail_before_frames";
constexpr const char* kTrailAfter = "tracks/trail_after_frames";
constexpr const char* kColouring = "tracks/colouring";
constexpr const char* kMergePolicy = "tracks/merge_policy";
constexpr const char* kShowQualityStrip = "tracks/show_quality_strip";
constexpr const char* kWindowGeometry = "window/geometry";
constexpr const char* kWindowState = "window/state";

}  // namespace

Settings::Settings(const QString& ini_file)
    : settings_(ini_file.isEmpty() ? std::make_unique<QSettings>()
                                   : std::make_unique<QSettings>(ini_file, QSettings::IniFormat)) {}

Settings::~Settings() = default;

QStringList Settings::recent_files() const {
  QStringList files = settings_->value(kRecentFiles).toStringList();
  files.removeAll(QString());
  files.removeDuplicates();
  while (files.size() > max_recent_files) files.removeLast();
  return files;
}

void Settings::add_recent_file(const QString& path) {
  if (path.isEmpty()) return;
  QStringList files = recent_files();
  files.removeAll(path);
  files.prepend(path);
  while (files.size() > max_recent_files) files.removeLast();
  settings_->setValue(kRecentFiles, files);
}

void Settings::remove_recent_file(const QString& path) {
  QStringList files = recent_files();
  files.removeAll(path);
  settings_->setValue(kRecentFiles, files);
}

void Settings::clear_recent_files() { settings_->remove(kRecentFiles); }

QString Settings::last_open_folder() const { return settings_->value(kLastOpenFolder).toString(); }

void Settings::set_last_open_folder(const QString& folder) { settings_->setValue(kLastOpenFolder, folder); }

core::FrameServerOptions Settings::frame_server_options() const {
  const core::FrameServerOptions defaults;
  core::FrameServerOptions options = defaults;
  // Range checks here rather than FrameServerOptions::check(): the server checks again when it opens, and a
  // bad hand-edited value should fall back to its default alone instead of failing every open.
  auto read = [&](const char* key, int64_t fallback, int64_t low, int64_t high) {
    bool ok = false;
    const int64_t value = settings_->value(key, static_cast<qlonglong>(fallback)).toLongLong(&ok);
    if (ok && value >= low && value <= high) return value;
    core::log::warn("setting {} in {} is not a number in [{}, {}]; using {}", key, location().toStdString(), low, high,
                    fallback);
    return fallback;
  };
  options.cache_bytes = read(kCacheMegabytes, defaults.cache_bytes >> 20, 16, 1 << 20) << 20;
  options.prefetch_ahead = static_cast<int>(read(kPrefetchAhead, defaults.prefetch_ahead, 0, 1000));
  options.prefetch_behind = static_cast<int>(read(kPrefetchBehind, defaults.prefetch_behind, 0, 1000));
  const int64_t decoder_threads = read(kDecoderThreads, defaults.video.decoder_threads, 0, 256);
  // The same cap as trackscope-cli's --threads: never more decoder threads than the CPUs this process may use.
  if (const core::Expected<core::ThreadCount> threads = core::cap_thread_count(decoder_threads, kDecoderThreads)) {
    if (!threads->notice.empty()) core::log::warn("{}", threads->notice);
    options.video.decoder_threads = threads->threads;
  }
  return options;
}

void Settings::set_frame_server_options(const core::FrameServerOptions& options) {
  settings_->setValue(kCacheMegabytes, static_cast<qlonglong>(options.cache_bytes >> 20));
  settings_->setValue(kPrefetchAhead, options.prefetch_ahead);
  settings_->setValue(kPrefetchBehind, options.prefetch_behind);
  settings_->setValue(kDecoderThreads, options.video.decoder_threads);
}

TrackOverlayOptions Settings::track_overlay_options() const {
  const TrackOverlayOptions defaults;
  TrackOverlayOptions options = defaults;
  options.show_tracks = settings_->value(kShowTracks, defaults.show_tracks).toBool();
  options.show_occluded = settings_->value(kShowOccluded, defaults.show_occluded).toBool();
  auto read_trail = [&](const char* key, int fallback) {
    bool ok = false;
    const int value = settings_->value(key, fallback).toInt(&ok);
    if (ok && value >= 0 && value <= TrackOverlayOptions::max_trail_frames) return value;
    core::log::warn("setting {} in {} is not a number in [0, {}]; using {}", key, location().toStdString(),
                    TrackOverlayOptions::max_trail_frames, fallback);
    return fallback;
  };
  options.trail_before_frames = read_trail(kTrailBefore, defaults.trail_before_frames);
  options.trail_after_frames = read_trail(kTrailAfter, defaults.trail_after_frames);
  options.colouring = parse_track_colouring(settings_->value(kColouring, to_string(defaults.colouring)).toString())
                          .value_or(defaults.colouring);
  return options;
}

void Settings::set_track_overlay_options(const TrackOverlayOptions& options) {
  settings_->setValue(kShowTracks, options.show_tracks);
  settings_->setValue(kShowOccluded, options.show_occluded);
  settings_->setValue(kTrailBefore, options.trail_before_frames);
  settings_->setValue(kTrailAfter, options.trail_after_frames);
  settings_->setValue(kColouring, QString(to_string(options.colouring)));
}

core::MergePolicy Settings::merge_policy() const {
  return settings_->value(kMergePolicy).toString() == QLatin1String("fill_missing") ? core::MergePolicy::fill_missing
                                                                                    : core::MergePolicy::overwrite;
}

void Settings::set_merge_policy(core::MergePolicy policy) {
  settings_->setValue(kMergePolicy, QString(core::to_string(policy)));
}

bool Settings::show_quality_strip() const { return settings_->value(kShowQualityStrip, true).toBool(); }

void Settings::set_show_quality_strip(bool show) { settings_->setValue(kShowQualityStrip, show); }

QByteArray Settings::main_window_geometry() const { return settings_->value(kWindowGeometry).toByteArray(); }

QByteArray Settings::main_window_state() const { return settings_->value(kWindowState).toByteArray(); }

void Settings::set_main_window_layout(const QByteArray& geometry, const QByteArray& state) {
  settings_->setValue(kWindowGeometry, geometry);
  settings_->setValue(kWindowState, state);
}

core::Status Settings::sync() {
  settings_->sync();
  switch (settings_->status()) {
    case QSettings::NoError: return {};
    case QSettings::AccessError:
      return core::io_error("could not write the settings to " + location().toStdString() +
                            " (disk full, read-only or no permission); the previous settings are kept");
    case QSettings::FormatError:
      return core::corrupt_data("the settings file " + location().toStdString() + " is not in INI format");
  }
  return {};
}

QString Settings::location() const { return settings_->fileName(); }

}  // namespace trackscope::ui
