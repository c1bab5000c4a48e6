#pragma once
// The bundled sample clip: a short procedurally rendered scene that the project makes itself (no footage in the
// repository). Three textured shapes move smoothly over a textured, slowly panning background: a noise-textured
// disc, a striped square that rotates and passes in front of the disc, and a checkered triangle circling below.
// The scene is defined for any size and length; the defaults give 96 frames of 640x360 at 24 fps (4 s).
//
//   TRACKSCOPE_RETURN_IF_ERROR(write_sample_clip("sample_clip.mp4", {}));       // H.264 MP4
//   Frame frame = render_sample_frame({}, 42);                                 // the same pixels, unencoded
//   std::vector<SampleTrack> truth = sample_clip_ground_truth({});             // where points really are
//
// Ground truth is in raster coordinates of the frame (pixel (i, j) covers [j, j+1) x [i, i+1); a point at
// x = 10.5 lies at the centre of column 10). A point is not visible while a shape drawn above covers it.
// Threads: all functions are pure and may run concurrently.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/video/video_source.h"

namespace trackscope::core {

struct SampleClipOptions {
  int width = 640;       // even, 64..4096
  int height = 360;      // even, 64..4096
  int frame_count = 96;  // 1..10000
  Rational frame_rate{24, 1};
  Status check() const;
};

struct SamplePoint {
  double x_px = 0.0;
  double y_px = 0.0;
  bool visible = true;
};

/// One tracked point of the scene, per frame (points.size() == frame_count).
struct SampleTrack {
  std::string name;  // "disc_centre", "square_centre", "square_corner", "triangle_centre", "background"
  std::vector<SamplePoint> points;
};

/// Frame `index` of the scene (any index >= 0; motion continues past frame_count), packed RGB24.
Frame render_sample_frame(const SampleClipOptions& options, int64_t index);

/// The true positions of the shape centres, of a point near a corner of the rotating square, and of a point
/// painted on the background, in every frame.
std::vector<SampleTrack> sample_clip_ground_truth(const SampleClipOptions& options);

/// Renders the clip and encodes it (H.264 for .mp4/.mov/.mkv, VP9 for .webm, MJPEG for .avi; CRF 18).
/// Errors: invalid_argument (options), unsupported (no encoder), io_error.
Status write_sample_clip(const std::filesystem::path& path, const SampleClipOptions& options);

}  // namespace trackscope::core
