#pragma once
// The annotated-video export: every frame of the video with the tracks burnt in, drawn by the canvas's own
// painters (paint_track_overlay for estimates and trails, paint_marker for the query points), encoded as H.264
// through core::VideoWriter (FFmpeg stays in core).
//
//   AnnotatedVideoOptions options;
//   options.overlay = canvas->track_overlay();
//   Status done = render_annotated_video(*video, snapshot, "out.mp4", options, progress, stop);
//
// Coordinates: the video's own raster; markers and lines are scaled with the frame height (marker radius
// max(4, height / 100) px) so they read alike on small and large videos.
// Threads: runs on any one thread (QPainter on a QImage is allowed off the GUI thread); `snapshot` is a copy of
// the annotation (a core::io::Project), never the live one the GUI edits.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <stop_token>

#include "core/io/project.h"
#include "core/status.h"
#include "core/video/video_source.h"
#include "core/video/video_writer.h"
#include "ui/tracking/track_overlay.h"

namespace trackscope::ui {

struct AnnotatedVideoOptions {
  TrackOverlayOptions overlay;
  core::VideoCodec codec = core::VideoCodec::h264;
  int quality = -1;               // the writer's constant-quality value; -1 = its default
  double marker_radius_px = 0.0;  // 0: max(4, height / 100)
  bool draw_query_points = true;  // query markers on their frames (as the canvas shows them)
};

/// Renders frame `index` of `video` with `annotation`'s overlays into an RGB24 frame of the video's size.
core::Expected<core::Frame> render_annotated_frame(core::VideoSource& video, const core::Annotation& annotation,
                                                   int64_t index, const AnnotatedVideoOptions& options);

/// Renders every frame to `path`, atomically (core::VideoWriter): a previous file at `path` is replaced only by
/// a finished video. `progress(done, total)` after each frame; checks `stop` between frames (cancelled then: the
/// partial temporary file is removed and a previous file at `path` is kept).
core::Status render_annotated_video(core::VideoSource& video, const core::io::Project& snapshot,
                                    const std::filesystem::path& path, const AnnotatedVideoOptions& options,
                                    const std::function<void(int64_t done, int64_t total)>& progress,
                                    std::stop_token stop = {});

}  // namespace trackscope::ui
