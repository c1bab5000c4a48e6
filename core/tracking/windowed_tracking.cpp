#include "core/tracking/windowed_tracking.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace trackscope::core {

Status WindowOptions::check() const {
  if (frames < 16) return invalid_argument(fmt::format("windows of {} frames are too short: use at least 16", frames));
  if (overlap < 1 || overlap >= frames / 2) {
    return invalid_argument(
        fmt::format("an overlap of {} frames needs 1 <= overlap < {} (half a window)", overlap, frames / 2));
  }
  if (!(handoff_confidence > 0.0f && handoff_confidence < 1.0f)) {
    return invalid_argument(fmt::format("hand-off confidence {} is outside (0, 1)", handoff_confidence));
  }
  return {};
}

std::vector<FrameWindow> layout_windows(int64_t first_frame, int64_t end_frame, const WindowOptions& options) {
  TRACKSCOPE_CHECK(options.check().ok(), "layout_windows: bad options");
  TRACKSCOPE_CHECK(end_frame > first_frame, "layout_windows: empty frame range");
  const int64_t frames = end_frame - first_frame;
  const int64_t longest = options.frames, overlap = options.overlap;
  if (frames <= longest) return {{first_frame, end_frame}};
  // K windows of one length L <= longest with K L - (K - 1) overlap >= frames.
  const int64_t count = 1 + (frames - longest + (longest - overlap) - 1) / (longest - overlap);
  const int64_t length = (frames + (count - 1) * overlap + count - 1) / count;
  std::vector<FrameWindow> windows;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t first = first_frame + k * (length - overlap);
    windows.push_back({first, k + 1 == count ? end_frame : first + length});
  }
  return windows;
}

size_t window_of_frame(const std::vector<FrameWindow>& windows, int64_t frame) {
  for (size_t k = 0; k + 1 < windows.size(); ++k) {
    const int64_t middle = (windows[k + 1].first + windows[k].end) / 2;  // the overlap's middle
    if (frame < middle) return k;
  }
  return windows.empty() ? 0 : windows.size() - 1;
}

float estimate_confidence(const TrackPoint& point) { return (1.0f - point.p_occluded) * (1.0f - point.p_far); }

namespace {

Query query_at(const Track& track, int64_t frame) {
  const TrackPoint& p = track.at(frame);
  return {frame, p.x_px, p.y_px};
}

// The last (forward) or first (backward) confident frame of `range`, else the most confident frame of `overlap`.
Query handoff(const Track& track, FrameWindow overlap, FrameWindow range, bool forward, float confident) {
  TRACKSCOPE_CHECK(overlap.size() > 0 && track.covers(overlap.first) && track.covers(overlap.end - 1),
                   "hand-off: the track does not cover the shared frames");
  for (int64_t i = 0; i < range.size(); ++i) {
    const int64_t frame = forward ? range.end - 1 - i : range.first + i;
    if (estimate_confidence(track.at(frame)) >= confident) return query_at(track, frame);
  }
  int64_t best = forward ? overlap.first : overlap.end - 1;
  for (int64_t frame = overlap.first; frame < overlap.end; ++frame) {
    if (estimate_confidence(track.at(frame)) > estimate_confidence(track.at(best))) best = frame;
  }
  return query_at(track, best);
}

TrackPoint blend(const TrackPoint& earlier, const TrackPoint& later, float later_weight) {
  const float w = later_weight, v = 1.0f - later_weight;
  TrackPoint p;
  p.x_px = v * earlier.x_px + w * later.x_px;
  p.y_px = v * earlier.y_px + w * later.y_px;
  p.p_occluded = v * earlier.p_occluded + w * later.p_occluded;
  p.p_far = v * earlier.p_far + w * later.p_far;
  p.visible = visible_from_probabilities(p.p_occluded, p.p_far);
  return p;
}

// Maps a window run's progress and stages to the whole run.
class WindowObserver final : public TrackObserver {
 public:
  WindowObserver(TrackObserver& outer, double done_frames, double window_frames, double total_frames, std::string label)
      : outer_(outer), done_(done_frames), window_(window_frames), total_(total_frames), label_(std::move(label)) {}
  void on_progress(const TrackProgress& progress) override {
    TrackProgress p = progress;
    p.fraction = std::clamp((done_ + progress.fraction * window_) / total_, 0.0, 1.0);
    p.phase = progress.phase.empty() ? label_ : label_ + ": " + progress.phase;
    if (progress.fraction < 1.0 || progress.phase != "done") outer_.on_progress(p);
  }
  void on_stage(const StageSample& sample) override { outer_.on_stage(sample); }

 private:
  TrackObserver& outer_;
  double done_, window_, total_;
  std::string label_;
};

}  // namespace

Query forward_handoff(const Track& track, FrameWindow overlap, float confident) {
  const FrameWindow early{overlap.first, overlap.first + std::max<int64_t>(1, overlap.size() * 3 / 4)};
  return handoff(track, overlap, early, /*forward=*/true, confident);
}

Query backward_handoff(const Track& track, FrameWindow overlap, float confident) {
  const FrameWindow late{overlap.end - std::max<int64_t>(1, overlap.size() * 3 / 4), overlap.end};
  return handoff(track, overlap, late, /*forward=*/false, confident);
}

float later_window_weight(FrameWindow overlap, int64_t frame) {
  return static_cast<float>(frame - overlap.first + 1) / static_cast<float>(overlap.size() + 1);
}

Expected<TrackSet> track_windowed(const TrackRequest& request, int64_t end_frame, const WindowOptions& options,
                                  const WindowTracker& track_window, TrackObserver& observer, std::stop_token stop) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  if (end_frame <= request.first_frame) return invalid_argument("windowed tracking: empty frame range");
  const std::vector<FrameWindow> windows = layout_windows(request.first_frame, end_frame, options);
  const size_t points = request.queries.size();
  TrackSet result;
  result.first_frame = request.first_frame;
  result.frame_count = end_frame - request.first_frame;
  if (points == 0) return result;

  // Where each point starts, and which windows run in each direction.
  std::vector<size_t> start(points);
  size_t first_start = windows.size(), last_start = 0;
  for (size_t p = 0; p < points; ++p) {
    const Query& q = request.queries[p];
    if (q.frame < request.first_frame || q.frame >= end_frame) {
      return invalid_argument(fmt::format("query {} is on frame {}, outside the tracked frames [{}, {})", p, q.frame,
                                          request.first_frame, end_frame));
    }
    start[p] = window_of_frame(windows, q.frame);
    first_start = std::min(first_start, start[p]);
    last_start = std::max(last_start, start[p]);
  }
  double total_frames = 0.0;
  for (size_t k = first_start; k < windows.size(); ++k) total_frames += static_cast<double>(windows[k].size());
  for (size_t k = 0; k < last_start; ++k) total_frames += static_cast<double>(windows[k].size());
  const size_t runs = windows.size() - first_start + last_start;

  std::vector<Track> tracks(points);
  std::vector<FrameWindow> covered(points);  // frames of each track written so far
  for (size_t p = 0; p < points; ++p) {
    tracks[p].query = request.queries[p];
    tracks[p].first_frame = request.first_frame;
    tracks[p].points.resize(static_cast<size_t>(result.frame_count));
  }

  double done_frames = 0.0;
  size_t run = 0;
  // Runs window k for the points in `active` with their queries, then merges each track (see the header).
  auto run_window = [&](size_t k, const std::vector<size_t>& active, const std::vector<Query>& queries,
                        bool forward) -> Status {
    if (stop.stop_requested()) return cancelled("tracking was cancelled");
    const FrameWindow window = windows[k];
    ++run;
    WindowObserver window_observer(observer, done_frames, static_cast<double>(window.size()), total_frames,
                                   fmt::format("window {}/{}", run, runs));
    TrackRequest sub;
    sub.queries = queries;
    sub.first_frame = window.first;
    sub.end_frame = window.end;
    Expected<TrackSet> tracked = track_window(sub, window_observer, stop);
    if (!tracked) return tracked.status();
    if (tracked->tracks.size() != active.size() || tracked->first_frame != window.first ||
        tracked->frame_count != window.size()) {
      return internal_error(fmt::format("window [{}, {}) returned {} tracks over {} frames", window.first, window.end,
                                        tracked->tracks.size(), tracked->frame_count));
    }
    for (size_t i = 0; i < active.size(); ++i) {
      const size_t p = active[i];
      const Track& piece = tracked->tracks[i];
      Track& track = tracks[p];
      FrameWindow& have = covered[p];
      for (int64_t frame = window.first; frame < window.end; ++frame) {
        const TrackPoint& fresh = piece.at(frame);
        if (have.contains(frame)) {
          // Shared frames: the window handing over and the window taking over, blended.
          const FrameWindow shared{std::max(have.first, window.first), std::min(have.end, window.end)};
          const float later = later_window_weight(shared, frame);
          track.at(frame) = forward ? blend(track.at(frame), fresh, later) : blend(fresh, track.at(frame), later);
        } else {
          track.at(frame) = fresh;
        }
      }
      have =
          have.size() == 0 ? window : FrameWindow{std::min(have.first, window.first), std::max(have.end, window.end)};
    }
    done_frames += static_cast<double>(window.size());
    return {};
  };

  // Forward: from the first window with a query to the last.
  for (size_t k = first_start; k < windows.size(); ++k) {
    std::vector<size_t> active;
    std::vector<Query> queries;
    for (size_t p = 0; p < points; ++p) {
      if (start[p] > k) continue;
      active.push_back(p);
      const Query& original = request.queries[p];
      if (start[p] == k || windows[k].contains(original.frame)) {
        queries.push_back(original);
      } else {
        const FrameWindow shared{windows[k].first, windows[k - 1].end};
        queries.push_back(forward_handoff(tracks[p], shared, options.handoff_confidence));
      }
    }
    TRACKSCOPE_RETURN_IF_ERROR(run_window(k, active, queries, /*forward=*/true));
  }
  // Backward: the frames before each point's start window.
  for (size_t k = last_start; k-- > 0;) {
    std::vector<size_t> active;
    std::vector<Query> queries;
    for (size_t p = 0; p < points; ++p) {
      if (start[p] <= k) continue;
      active.push_back(p);
      const Query& original = request.queries[p];
      if (windows[k].contains(original.frame)) {
        queries.push_back(original);
      } else {
        const FrameWindow shared{windows[k + 1].first, windows[k].end};
        queries.push_back(backward_handoff(tracks[p], shared, options.handoff_confidence));
      }
    }
    TRACKSCOPE_RETURN_IF_ERROR(run_window(k, active, queries, /*forward=*/false));
  }
  result.tracks = std::move(tracks);
  observer.on_partial(result, 0);
  TrackProgress done;
  done.fraction = 1.0;
  done.chunks_done = static_cast<int>(runs);
  done.chunk_count = static_cast<int>(runs);
  done.phase = "done";
  observer.on_progress(done);
  return result;
}

Expected<FramePtr> RecentFramesVideo::read_frame(int64_t index, FrameSize size) {
  if (size.native()) {
    for (const FramePtr& frame : recent_) {
      if (frame->index == index) {
        ++hits_;
        last_decode_ms_ = 0.0;
        return frame;
      }
    }
  }
  Expected<FramePtr> frame = inner_.read_frame(index, size);
  last_decode_ms_ = inner_.last_decode_ms();
  if (!frame || !size.native() || max_bytes_ <= 0 || index < keep_from_) return frame;
  recent_.push_back(*frame);
  bytes_ += static_cast<int64_t>((*frame)->bytes());
  while (!recent_.empty() && bytes_ > max_bytes_) {
    bytes_ -= static_cast<int64_t>(recent_.front()->bytes());
    recent_.pop_front();
  }
  return frame;
}

}  // namespace trackscope::core
