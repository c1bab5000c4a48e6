#pragma once
// Settings: the only place that maps Trackscope's options to QSettings keys. Everything else asks this class
// for typed values (recent files, core option structs, window layout); no other file names a settings key.
//
//   Settings settings;                             // the platform's default location (~/.config/Trackscope/...)
//   Settings for_test(temporary_dir + "/t.ini");   // an INI file of its own: tests never touch the user's settings
//   settings.add_recent_file("/videos/bees.mp4");
//   core::FrameServerOptions options = settings.frame_server_options();
//
// Threads: GUI thread only.

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <memory>

#include "core/status.h"
#include "core/tracking/track_edit.h"
#include "core/video/frame_server.h"
#include "ui/tracking/track_overlay.h"

class QSettings;

namespace trackscope::ui {

class Settings {
 public:
  static constexpr int max_recent_files = 10;

  /// Settings in `ini_file`, or in the platform's default location for the application when it is empty.
  explicit Settings(const QString& ini_file = {});
  ~Settings();
  Settings(const Settings&) = delete;
  Settings& operator=(const Settings&) = delete;

  /// Most recent first, without duplicates, at most max_recent_files.
  QStringList recent_files() const;
  void add_recent_file(const QString& path);
  void remove_recent_file(const QString& path);
  void clear_recent_files();

  /// The folder the Open dialog starts in (the folder of the last opened file).
  QString last_open_folder() const;
  void set_last_open_folder(const QString& folder);

  /// Display frame server options ([video] keys). A missing value, or one out of its range, is replaced by its
  /// default (and logged), so a hand-edited file cannot stop the app from opening videos.
  core::FrameServerOptions frame_server_options() const;
  void set_frame_server_options(const core::FrameServerOptions& options);

  /// How tracks are drawn ([tracks] keys); out-of-range trail lengths fall back to their defaults.
  TrackOverlayOptions track_overlay_options() const;
  void set_track_overlay_options(const TrackOverlayOptions& options);

  /// How a re-track merges into the existing track ([tracks] merge_policy: overwrite or fill_missing).
  core::MergePolicy merge_policy() const;
  void set_merge_policy(core::MergePolicy policy);
  /// Whether the quality strip under the timeline is shown.
  bool show_quality_strip() const;
  void set_show_quality_strip(bool show);

  QByteArray main_window_geometry() const;
  QByteArray main_window_state() const;
  void set_main_window_layout(const QByteArray& geometry, const QByteArray& state);

  /// Writes pending changes to storage. Atomic: QSettings replaces the file through QSaveFile (a temporary file
  /// beside it, flushed to disk, renamed over it), so a full disk or a kill keeps the previous settings.
  /// io_error when the file could not be written (the previous one is then unchanged); callers log it.
  core::Status sync();
  /// Where the settings live (file path), for messages and tests.
  QString location() const;

 private:
  std::unique_ptr<QSettings> settings_;
};

}  // namespace trackscope::ui
