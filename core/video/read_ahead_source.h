#pragma once
// ReadAheadVideoSource: a VideoSource that starts decoding a range of frames, in order, on a thread of its own as
// soon as it is made, into a bounded buffer, so that decoding the start of a clip overlaps what the caller does
// before its first read (a one-shot `trackscope-cli track` initialises CUDA and loads the model meanwhile: ~1 s
// on the H200, longer than decoding a short clip; docs/performance-results.md, "The frame pipeline").
//
//   Expected<std::unique_ptr<VideoSource>> opened = VideoSource::open(path);
//   auto video = std::make_unique<ReadAheadVideoSource>(std::move(*opened),
//                                                       ReadAheadOptions{.budget_bytes = int64_t{512} << 20});
//   ... load the model ...                                 // frames 0, 1, 2, ... are decoded meanwhile
//   Expected<FramePtr> frame = video->read_frame(0);       // from the buffer (waits while it is being decoded)
//
// Contract: read_frame(i, size) returns what the wrapped source returns for it. Native-size reads of the frames
// in order from first_frame come from the buffer; the thread decodes on while the buffer holds less than
// budget_bytes (it holds at least one frame), up to end_frame. Any other read (another index, a scaled size)
// ends the read-ahead for good (the thread is stopped and joined, the buffer dropped) and is served by the
// wrapped source on the calling thread; so is every read once the thread has stopped (the range is done, or a
// frame failed: the wrapped source then reports that frame's error itself, as it would have without the
// read-ahead). info() is the wrapped source's. decode_counters() and integrity() report the wrapped source's,
// waiting for the frame being decoded ahead, if any. last_decode_ms() is the decode time of the frame last
// returned (spent earlier, on the read-ahead thread, for a buffered one).
// Threads: like any VideoSource, one caller thread at a time; the read-ahead thread is internal and ends with
// the object.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>

#include "core/status.h"
#include "core/video/video_source.h"

namespace trackscope::core {

struct ReadAheadOptions {
  int64_t first_frame = 0;
  int64_t end_frame = -1;                     // one past the last frame to decode ahead; < 0 = to the video's end
  int64_t budget_bytes = int64_t{512} << 20;  // decoded frames held at most (at least one frame)
};

/// What the read-ahead did, for a progress line.
struct ReadAheadStats {
  int64_t decoded_frames = 0;  // frames the read-ahead thread decoded
  int64_t served_frames = 0;   // of them, returned by read_frame from the buffer
  double decode_ms = 0.0;      // the read-ahead thread's decoding time (the wrapped source's last_decode_ms)
};

class ReadAheadVideoSource final : public VideoSource {
 public:
  /// Starts the thread at once. An empty range (first_frame past the end) decodes nothing.
  ReadAheadVideoSource(std::unique_ptr<VideoSource> inner, ReadAheadOptions options);
  ~ReadAheadVideoSource() override;
  ReadAheadVideoSource(const ReadAheadVideoSource&) = delete;
  ReadAheadVideoSource& operator=(const ReadAheadVideoSource&) = delete;

  const VideoInfo& info() const override { return inner_->info(); }
  Expected<FramePtr> read_frame(int64_t index, FrameSize size = {}) override;
  double last_decode_ms() const override { return last_decode_ms_; }
  DecodeCounters decode_counters() const override;
  IntegrityReport integrity() const override;
  /// Ends the read-ahead first (the scan moves the wrapped source's decoder).
  Expected<IntegrityReport> scan_integrity() override;

  ReadAheadStats stats() const;

 private:
  struct Buffered {
    FramePtr frame;
    double decode_ms = 0.0;
  };

  void decode_ahead(const std::stop_token& stop, int64_t first_frame);
  /// Stops and joins the thread and drops the buffer; later reads go to the wrapped source.
  void end_read_ahead();

  std::unique_ptr<VideoSource> inner_;
  int64_t frame_bytes_ = 0;  // one native frame
  int64_t budget_bytes_ = 0;
  int64_t end_frame_ = 0;
  mutable std::mutex inner_mutex_;  // held around every use of inner_ while the thread may run
  mutable std::mutex mutex_;        // guards the members down to stats_
  std::condition_variable_any changed_;
  std::deque<Buffered> buffer_;  // frames next_index_, next_index_ + 1, ... in order
  int64_t buffered_bytes_ = 0;
  bool finished_ = false;  // the thread decodes no more (range done, a frame failed, or stopped)
  ReadAheadStats stats_;
  int64_t next_index_ = 0;  // caller side: the frame the buffer's front holds
  bool ended_ = false;      // caller side: end_read_ahead() ran
  double last_decode_ms_ = 0.0;
  std::jthread thread_;  // last: starts once everything it uses exists
};

}  // namespace trackscope::core
