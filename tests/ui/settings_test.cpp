// ui/settings: recent files (order, duplicates, limit, persistence) and the video options with their fallbacks.
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

#include "ui/settings.h"

using trackscope::ui::Settings;

class SettingsTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void recent_files_are_most_recent_first_unique_and_bounded() {
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("settings.ini"));
    {
      Settings settings(file);
      QVERIFY(settings.recent_files().isEmpty());
      settings.add_recent_file(QStringLiteral("/a.mp4"));
      settings.add_recent_file(QStringLiteral("/b.mp4"));
      settings.add_recent_file(QStringLiteral("/a.mp4"));
      settings.add_recent_file(QString());
      QCOMPARE(settings.recent_files(), (QStringList{QStringLiteral("/a.mp4"), QStringLiteral("/b.mp4")}));
      for (int i = 0; i < 15; ++i) settings.add_recent_file(QStringLiteral("/clip_%1.mp4").arg(i));
      const QStringList files = settings.recent_files();
      QCOMPARE(files.size(), Settings::max_recent_files);
      QCOMPARE(files.front(), QStringLiteral("/clip_14.mp4"));
      QCOMPARE(files.back(), QStringLiteral("/clip_5.mp4"));
      settings.remove_recent_file(QStringLiteral("/clip_14.mp4"));
      QCOMPARE(settings.recent_files().front(), QStringLiteral("/clip_13.mp4"));
      (void)settings.sync();
    }
    Settings reopened(file);
    QCOMPARE(reopened.recent_files().size(), Settings::max_recent_files - 1);
    QCOMPARE(reopened.recent_files().front(), QStringLiteral("/clip_13.mp4"));
    QCOMPARE(reopened.location(), file);
    reopened.clear_recent_files();
    QVERIFY(reopened.recent_files().isEmpty());
  }

  void video_options_round_trip_and_fall_back_per_value() {
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("settings.ini"));
    const trackscope::core::FrameServerOptions defaults;
    {
      Settings settings(file);
      const trackscope::core::FrameServerOptions read = settings.frame_server_options();
      QCOMPARE(read.cache_bytes, defaults.cache_bytes);
      QCOMPARE(read.prefetch_ahead, defaults.prefetch_ahead);
      trackscope::core::FrameServerOptions changed;
      changed.cache_bytes = 256LL << 20;
      changed.prefetch_ahead = 32;
      changed.prefetch_behind = 8;
      changed.video.decoder_threads = 2;
      settings.set_frame_server_options(changed);
      const trackscope::core::FrameServerOptions back = settings.frame_server_options();
      QCOMPARE(back.cache_bytes, changed.cache_bytes);
      QCOMPARE(back.prefetch_ahead, 32);
      QCOMPARE(back.prefetch_behind, 8);
      QCOMPARE(back.video.decoder_threads, 2);
      (void)settings.sync();
    }
    {
      // A hand-edited file with nonsense: each bad value falls back to its default, the good one is kept.
      QSettings raw(file, QSettings::IniFormat);
      raw.setValue(QStringLiteral("video/cache_mb"), QStringLiteral("lots"));
      raw.setValue(QStringLiteral("video/prefetch_ahead"), -3);
      raw.sync();
    }
    Settings settings(file);
    const trackscope::core::FrameServerOptions read = settings.frame_server_options();
    QCOMPARE(read.cache_bytes, defaults.cache_bytes);
    QCOMPARE(read.prefetch_ahead, defaults.prefetch_ahead);
    QCOMPARE(read.prefetch_behind, 8);
  }

  void track_overlay_options_round_trip_and_fall_back_per_value() {
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("settings.ini"));
    const trackscope::ui::TrackOverlayOptions defaults;
    {
      Settings settings(file);
      QVERIFY(settings.track_overlay_options() == defaults);
      trackscope::ui::TrackOverlayOptions changed;
      changed.show_tracks = false;
      changed.show_occluded = false;
      changed.trail_before_frames = 40;
      changed.trail_after_frames = 7;
      changed.colouring = trackscope::ui::TrackColouring::motion_direction;
      settings.set_track_overlay_options(changed);
      QVERIFY(settings.track_overlay_options() == changed);
      (void)settings.sync();
    }
    {
      QSettings raw(file, QSettings::IniFormat);
      raw.setValue(QStringLiteral("tracks/trail_before_frames"), 1000000);
      raw.sync();
    }
    Settings settings(file);
    const trackscope::ui::TrackOverlayOptions read = settings.track_overlay_options();
    QCOMPARE(read.trail_before_frames, defaults.trail_before_frames);
    QCOMPARE(read.trail_after_frames, 7);
    QCOMPARE(read.show_occluded, false);
    QCOMPARE(read.colouring, trackscope::ui::TrackColouring::motion_direction);
  }

  void annotation_settings_round_trip() {
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("settings.ini"));
    {
      Settings settings(file);
      QCOMPARE(settings.merge_policy(), trackscope::core::MergePolicy::overwrite);
      QVERIFY(settings.show_quality_strip());
      settings.set_merge_policy(trackscope::core::MergePolicy::fill_missing);
      settings.set_show_quality_strip(false);
      (void)settings.sync();
    }
    Settings settings(file);
    QCOMPARE(settings.merge_policy(), trackscope::core::MergePolicy::fill_missing);
    QVERIFY(!settings.show_quality_strip());
    {
      QSettings raw(file, QSettings::IniFormat);
      raw.setValue(QStringLiteral("tracks/colouring"), QStringLiteral("rainbow"));
      raw.sync();
    }
    QCOMPARE(Settings(file).track_overlay_options().colouring, trackscope::ui::TrackColouring::per_track);
  }
};

QTEST_MAIN(SettingsTest)
#include "settings_test.moc"
