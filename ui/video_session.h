#pragma once
// VideoSession: the open video of the workbench. Opens videos through the injected FrameServerFactory on a
// worker thread, owns the FrameServer, and turns its decode-thread callbacks into GUI-thread signals.
//
//   VideoSession session(factory, core::FrameServerOptions{}, parent);
//   connect(&session, &VideoSession::video_opened, ...);          // the new video replaced the old one
//   connect(&session, &VideoSession::open_failed, ...);           // the old video (if any) is still open
//   connect(&session, &VideoSession::frame_ready, canvas, ...);
//   session.open("clip.mp4");                                      // returns at once
//   session.seek(42);        // frame_ready(42) now if cached, else once decoded; never blocks
//
// Threads: every method is called on the GUI thread; every signal is emitted on it. Each open() runs on a thread
// of its own; its result, and the frame server's callbacks from its decode thread, are posted back through a
// ThreadMailbox (never a blocking connection). Frames of a replaced video, and frames superseded by a newer seek,
// are dropped. Shutdown: the destructor destroys the FrameServer first, which joins its decode thread, then joins
// the opening threads (an open in flight is waited for), so no callback can reach a half-destroyed session.

#include <QObject>
#include <QString>
#include <QTimer>

#include <cstdint>
#include <map>
#include <memory>
#include <thread>

#include "core/status.h"
#include "core/video/frame_server.h"
#include "ui/frame_server_factory.h"
#include "ui/thread_mailbox.h"

namespace trackscope::ui {

class VideoSession : public QObject {
  Q_OBJECT
 public:
  VideoSession(FrameServerFactory factory, core::FrameServerOptions options, QObject* parent);
  ~VideoSession() override;

  /// Starts opening `path` on a worker thread. Emits video_opened or open_failed later; a newer open()
  /// supersedes an unfinished one (its result is discarded).
  void open(const QString& path);
  /// True while an open() has not finished.
  bool opening() const { return opening_generation_ != 0; }

  bool has_video() const { return server_ != nullptr; }
  /// Metadata of the open video; an empty VideoInfo when none is open.
  const core::VideoInfo& info() const;
  /// The path given to the open() that produced the current video.
  const QString& path() const { return path_; }
  int64_t frame_count() const { return has_video() ? info().frame_count : 0; }

  /// Moves the playhead (clamped to the video). Emits frame_ready at once if the frame is cached, otherwise
  /// when it has been decoded; until then the last frame stays on screen.
  void seek(int64_t index);
  /// The playhead: the index of the last seek.
  int64_t requested_frame() const { return requested_frame_; }
  /// The index of the last frame delivered by frame_ready (-1 before the first).
  int64_t displayed_frame() const { return displayed_frame_; }
  /// True between a seek whose frame was not cached and the arrival (or failure) of that frame.
  bool frame_pending() const { return frame_pending_; }

  /// Decode statistics of the frame server (zeros without a video).
  core::FrameServerStats stats() const;

 Q_SIGNALS:
  void video_opened();
  void open_failed(const QString& path, const QString& message);
  void frame_ready(const core::FramePtr& frame);
  void frame_failed(qint64 index, const QString& message);

 private:
  struct OpenResult;
  void finish_open(uint64_t generation, const QString& path, const std::shared_ptr<OpenResult>& result);
  void deliver(uint64_t generation, int64_t index, const core::Expected<core::FramePtr>& frame);
  void poll_pending();

  FrameServerFactory factory_;
  core::FrameServerOptions options_;
  ThreadMailbox mailbox_;                     // before every thread that posts to it: destroyed after them
  std::map<uint64_t, std::jthread> openers_;  // the open() threads by generation, joined when their result arrives
  std::unique_ptr<core::FrameServer> server_;
  core::VideoInfo no_video_;  // what info() returns while no video is open
  QString path_;
  uint64_t generation_ = 0;  // counts opened videos; tags callbacks so stale ones are dropped
  uint64_t open_counter_ = 0;
  uint64_t opening_generation_ = 0;  // the open() in flight, 0 when none
  int64_t requested_frame_ = 0;
  int64_t displayed_frame_ = -1;
  bool frame_pending_ = false;
  QTimer pending_poll_;
};

}  // namespace trackscope::ui
