#pragma once
// Timeline: play/pause button, frame slider and the counter "frame 12 / 277" (0-based frame index / frame
// count, the same index the point list, the CLI and exported files use).
//
//   Timeline timeline(parent);
//   timeline.set_video(277, 30.0);
//   connect(&timeline, &Timeline::frame_requested, session, &VideoSession::seek);
//   timeline.set_current_frame(12);             // reflects a seek made elsewhere; emits nothing
//   timeline.set_frame_pending(true/false);     // playback waits while the shown frame is still decoding
//   timeline.add_damaged_frames({124, 126});     // red marks under the slider, a "damaged" badge on those frames
//
// Playback: a QTimer ticks at the clip's frame rate; each tick requests the next frame unless the previous
// one is still pending, so a slow decoder slows playback down instead of skipping frames or blocking. It
// stops at the last frame. Nothing here ever blocks the GUI thread.
// Threads: GUI thread only.

#include <QTimer>
#include <QWidget>

#include <cstdint>
#include <set>
#include <vector>

class QLabel;
class QSlider;
class QToolButton;

namespace trackscope::ui {

class Timeline : public QWidget {
  Q_OBJECT
 public:
  explicit Timeline(QWidget* parent);

  /// A new video: `frame_count` frames at `frames_per_second` (<= 0: 25 fps is assumed for playback).
  /// Stops playback and moves to frame 0 without emitting.
  void set_video(int64_t frame_count, double frames_per_second);
  /// No video: everything disabled.
  void clear_video();

  /// Shows `index` as the current frame without emitting frame_requested.
  void set_current_frame(int64_t index);
  int64_t current_frame() const { return current_frame_; }
  int64_t frame_count() const { return frame_count_; }

  /// While true, playback ticks do not advance.
  void set_frame_pending(bool pending) { frame_pending_ = pending; }

  /// Marks frames the decoder found damaged (core::FrameIntegrity: errors concealed, corrupt data): a red tick
  /// under the slider for each, and a "damaged" badge beside the counter while one is shown. Cleared by
  /// set_video/clear_video. Indices outside the video are ignored.
  void add_damaged_frames(const std::vector<int64_t>& indices);
  const std::set<int64_t>& damaged_frames() const { return damaged_frames_; }
  /// Whether the "damaged" badge is showing (the current frame is damaged).
  bool damaged_badge_visible() const;

  bool playing() const { return timer_.isActive(); }
  /// Playback interval in milliseconds (1000 / fps).
  int playback_interval_ms() const { return timer_.interval(); }
  QString counter_text() const;
  QSlider* slider() const { return slider_; }

 public Q_SLOTS:
  void play();
  void pause();
  void toggle_play();

 Q_SIGNALS:
  /// The user (slider) or playback asks for frame `index`.
  void frame_requested(qint64 index);
  void playing_changed(bool playing);

 private:
  void on_slider_moved(int value);
  void on_tick();
  void update_counter();
  void update_play_button();
  void update_damage();

  QToolButton* play_button_ = nullptr;
  QSlider* slider_ = nullptr;
  QLabel* counter_ = nullptr;
  QLabel* damaged_badge_ = nullptr;
  QWidget* damage_strip_ = nullptr;
  std::set<int64_t> damaged_frames_;
  QTimer timer_;
  int64_t frame_count_ = 0;
  int64_t current_frame_ = 0;
  bool frame_pending_ = false;
};

}  // namespace trackscope::ui
