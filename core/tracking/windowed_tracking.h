#pragma once
// Windowed tracking: a clip of any length tracked as overlapping windows of frames, each window one short run of
// the tracker, every track handed from one window to the next (docs/long-videos.md). Memory is that of one
// window; the result approximates a whole-clip run (the measured deviation is in docs/long-videos.md).
//
//   WindowOptions options;                               // 512-frame windows overlapping by 32
//   WindowTracker track_window = [&](const TrackRequest& window, TrackObserver& o, std::stop_token s) {
//     return tracker.track(video, window, o, s);          // any tracker of short clips
//   };
//   Expected<TrackSet> tracks = track_windowed(request, end_frame, options, track_window, observer, stop);
//
// Layout: K windows of equal length (at most options.frames) cover [first, end), neighbours sharing exactly
// `overlap` frames (layout_windows). Each frame belongs to the interior of one window (the overlaps are split at
// their middle); a point starts in the window whose interior holds its query frame, with its own query.
// Hand-off forward: the next window's query for a point is its original query if that frame lies in the next
// window, else the last confident estimate in the two windows' overlap: the last frame of the overlap's first
// three quarters (the end of a window sees no future) where (1 - p_occluded)(1 - p_far) >= handoff_confidence,
// else the overlap frame with the highest such confidence. Backward (frames before the start window), the same
// mirrored: the earliest confident estimate of the overlap's last three quarters.
// Blending: in an overlap the two windows' estimates (positions and probabilities) are averaged with a linear
// weight that grows towards the window the track is handed to (later_window_weight); visibility follows from the
// blended probabilities. Outside overlaps each frame comes from one window.
// Progress covers every window run; stage samples are forwarded; partial results are not (a track is final only
// after the last window): the whole result arrives as one on_partial before track_windowed returns.
//
// Threads: track_windowed calls track_window and the observer on the calling thread (the tracking thread).

#include <cstdint>
#include <deque>
#include <functional>
#include <stop_token>
#include <vector>

#include "core/status.h"
#include "core/tracking/point_tracker.h"
#include "core/tracking/tracks.h"
#include "core/video/video_source.h"

namespace trackscope::core {

struct WindowOptions {
  int frames = 512;                 // the longest window (>= 16)
  int overlap = 32;                 // frames shared by neighbouring windows (>= 1, < frames / 2)
  float handoff_confidence = 0.8f;  // (1 - p_occluded)(1 - p_far) of a confident estimate
  Status check() const;
};

/// Frames [first, end).
struct FrameWindow {
  int64_t first = 0;
  int64_t end = 0;
  int64_t size() const { return end - first; }
  bool contains(int64_t frame) const { return frame >= first && frame < end; }
  bool operator==(const FrameWindow&) const = default;
};

/// Windows covering [first_frame, end_frame) in order: one window if the range fits in options.frames, else K of
/// equal length (the last one ends at end_frame), neighbours sharing exactly options.overlap frames.
std::vector<FrameWindow> layout_windows(int64_t first_frame, int64_t end_frame, const WindowOptions& options);

/// The window whose interior holds `frame` (overlaps split at their middle).
size_t window_of_frame(const std::vector<FrameWindow>& windows, int64_t frame);

/// Confidence of an estimate: (1 - p_occluded)(1 - p_far), >= 0.5 exactly when the point is visible.
float estimate_confidence(const TrackPoint& point);

/// The next (later) window's query from `track` over the windows' shared frames `overlap` (see above).
Query forward_handoff(const Track& track, FrameWindow overlap, float confident);
/// The previous (earlier) window's query from `track` over the shared frames `overlap`.
Query backward_handoff(const Track& track, FrameWindow overlap, float confident);

/// The later window's weight at `frame` of the shared frames: (frame - first + 1) / (size + 1).
float later_window_weight(FrameWindow overlap, int64_t frame);

/// Tracks one window: `window.queries` lie inside [window.first_frame, window.end_frame).
using WindowTracker =
    std::function<Expected<TrackSet>(const TrackRequest& window, TrackObserver& observer, std::stop_token stop)>;

/// Tracks `request` over [request.first_frame, end_frame) window by window (see above). Errors of a window run
/// are returned as they are (cancelled when `stop` is requested).
Expected<TrackSet> track_windowed(const TrackRequest& request, int64_t end_frame, const WindowOptions& options,
                                  const WindowTracker& track_window, TrackObserver& observer, std::stop_token stop);

/// A VideoSource that keeps the most recently read native frames (up to `max_bytes`) so that the next window's
/// overlap is not decoded again (a backward jump would seek and decode from a keyframe). Only frames from
/// keep_from() on are kept (the next window's first frame: frames kept all along would sit between every batch's
/// temporaries in the heap). Forwards everything else to `inner`, which must outlive it. Threads: one thread at a
/// time, like every VideoSource.
class RecentFramesVideo final : public VideoSource {
 public:
  RecentFramesVideo(VideoSource& inner, int64_t max_bytes) : inner_(inner), max_bytes_(max_bytes) {}
  /// Keep only frames with index >= `frame` from now on (default 0: every frame).
  void keep_from(int64_t frame) { keep_from_ = frame; }
  const VideoInfo& info() const override { return inner_.info(); }
  Expected<FramePtr> read_frame(int64_t index, FrameSize size = {}) override;
  double last_decode_ms() const override { return last_decode_ms_; }
  DecodeCounters decode_counters() const override { return inner_.decode_counters(); }
  int64_t hits() const { return hits_; }

 private:
  VideoSource& inner_;
  int64_t max_bytes_;
  int64_t keep_from_ = 0;
  std::deque<FramePtr> recent_;
  int64_t bytes_ = 0;
  int64_t hits_ = 0;
  double last_decode_ms_ = 0.0;
};

}  // namespace trackscope::core
