#pragma once
// A procedural clip of any length for long-video measurements (trackscope-long-video, docs/long-videos.md): a
// window panning over a still frame of the sample scene (core/video/sample_clip.h), made in memory frame by frame
// -- no encoder needed, which the GPU machine's FFmpeg lacks -- so that every point's true position is known and
// a tracker's error can be measured.
//
//   Expected<PanningClipOptions> options = parse_panning_clip("1920x1080x18000", "--synthetic");
//   std::unique_ptr<VideoSource> video = make_panning_clip(*options);
//   Expected<TrackSet> tracks = tracker->track(*video, request, observer, {});
//   const PanningTrackError error = measure_panning_error(*tracks, *options);
//
// Threads: the video is a VideoSource (one thread at a time); the functions are pure.

#include <cstdint>
#include <memory>
#include <string_view>

#include "core/status.h"
#include "core/tracking/tracks.h"
#include "core/video/video_source.h"

namespace trackscope::core {

/// The texture is this much larger than the window (the pan's range), and at most 4096 px per side.
inline constexpr int kPanningMarginXPx = 480;
inline constexpr int kPanningMarginYPx = 320;

struct PanningClipOptions {
  int width = 0;       // even, 64..3616 (the texture, kPanningMarginXPx wider, is at most 4096)
  int height = 0;      // even, 64..3776
  int64_t frames = 0;  // >= 1; 30 fps
  Status check() const;
};

/// "WIDTHxHEIGHTxFRAMES" ("1920x1080x18000"), checked; invalid_argument naming `what` otherwise.
Expected<PanningClipOptions> parse_panning_clip(std::string_view text, std::string_view what);

/// The window's top-left corner in the texture at `frame` (30 fps), px: slow sines, as the ffmpeg test clip of the
/// measurements in docs/long-videos.md. Within [0, kPanningMarginXPx] x [0, kPanningMarginYPx].
struct PanOffset {
  int x_px = 0;
  int y_px = 0;
};
PanOffset pan_offset_at(int64_t frame);

/// Frame t is the texture cropped at pan_offset_at(t): a point at `query` is at query + pan(query.frame) - pan(t)
/// on frame t (raster pixels; it may lie outside the window).
struct PointPx {
  double x_px = 0.0;
  double y_px = 0.0;
};
PointPx panning_true_position(const Query& query, int64_t frame);

/// The clip as a VideoSource: info().path is "synthetic:WIDTHxHEIGHTxFRAMES", container "synthetic", codec
/// "rawvideo"; read_frame serves native-size frames only (invalid_argument for a size or an index outside).
/// `options` must pass check() (throws InvariantError otherwise).
std::unique_ptr<VideoSource> make_panning_clip(const PanningClipOptions& options);

/// A tracker's error against the truth, over every (track, frame) whose true point is inside the window (the
/// track's points index the TrackSet's frames from its first_frame).
struct PanningTrackError {
  int64_t samples = 0;          // (track, frame) pairs counted
  double mean_px = 0.0;         // Euclidean error
  double median_px = 0.0;       // the sorted errors' element samples / 2
  double p99_px = 0.0;          // element samples * 99 / 100
  double within_8px = 0.0;      // share of samples with an error below 8 px
  double called_visible = 0.0;  // share of samples the tracker called visible (every true point is visible)
};
PanningTrackError measure_panning_error(const TrackSet& tracks, const PanningClipOptions& options);

}  // namespace trackscope::core
