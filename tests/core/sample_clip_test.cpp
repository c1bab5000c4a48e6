// The procedural sample clip: the ground truth agrees with the rendered pixels, motion is smooth, one shape
// passes in front of another, and the encoded clip opens with the expected metadata.
#include <gtest/gtest.h>

#include <cmath>

#include "core/video/sample_clip.h"
#include "core/video/video_source.h"
#include "core/video/video_writer.h"
#include "video_test_support.h"

namespace trackscope::core {
namespace {

const SampleTrack& track(const std::vector<SampleTrack>& tracks, const std::string& name) {
  for (const SampleTrack& t : tracks) {
    if (t.name == name) return t;
  }
  throw std::runtime_error("no track " + name);
}

TEST(SampleClip, GroundTruthIsSmoothInsideTheFrameAndHasAnOcclusion) {
  const SampleClipOptions options;
  const std::vector<SampleTrack> tracks = sample_clip_ground_truth(options);
  ASSERT_EQ(tracks.size(), 5U);
  for (const SampleTrack& t : tracks) {
    ASSERT_EQ(t.points.size(), 96U) << t.name;
    for (size_t i = 0; i < t.points.size(); ++i) {
      EXPECT_GT(t.points[i].x_px, 0.0) << t.name << " frame " << i;
      EXPECT_LT(t.points[i].x_px, options.width) << t.name << " frame " << i;
      EXPECT_GT(t.points[i].y_px, 0.0) << t.name << " frame " << i;
      EXPECT_LT(t.points[i].y_px, options.height) << t.name << " frame " << i;
      if (i > 0) {
        const double step =
            std::hypot(t.points[i].x_px - t.points[i - 1].x_px, t.points[i].y_px - t.points[i - 1].y_px);
        EXPECT_LT(step, 15.0) << t.name << " jumps at frame " << i;
      }
    }
  }
  int disc_hidden = 0;
  for (const SamplePoint& p : track(tracks, "disc_centre").points) disc_hidden += p.visible ? 0 : 1;
  EXPECT_GT(disc_hidden, 0) << "the square passes in front of the disc";
  EXPECT_LT(disc_hidden, 40);
  for (const SamplePoint& p : track(tracks, "square_centre").points) EXPECT_TRUE(p.visible) << "the square is on top";
}

// Distance (pixels, negative inside) from `p` to the rotating square, whose pose follows from its centre and
// the corner point at local (0.6, 0.6) half-sides.
double distance_to_square(const SamplePoint& centre, const SamplePoint& corner, const SamplePoint& p) {
  const double cx = corner.x_px - centre.x_px, cy = corner.y_px - centre.y_px;
  const double half_side = std::hypot(cx, cy) / (0.6 * std::sqrt(2.0));
  const double angle = std::atan2(cy, cx) - std::atan2(1.0, 1.0);
  const double dx = p.x_px - centre.x_px, dy = p.y_px - centre.y_px;
  const double u = std::cos(angle) * dx + std::sin(angle) * dy;
  const double v = -std::sin(angle) * dx + std::cos(angle) * dy;
  return std::max(std::abs(u), std::abs(v)) - half_side;
}

TEST(SampleClip, RenderedPixelsAgreeWithTheGroundTruth) {
  const SampleClipOptions options;
  const std::vector<SampleTrack> tracks = sample_clip_ground_truth(options);
  for (int64_t index : {0, 30, 40, 44, 47, 50, 52, 70, 95}) {
    const Frame frame = render_sample_frame(options, index);
    ASSERT_EQ(frame.width, 640);
    ASSERT_EQ(frame.rgb.size(), 640U * 360U * 3U);
    auto at = [&](const SamplePoint& p) { return frame.pixel(static_cast<int>(p.x_px), static_cast<int>(p.y_px)); };
    const SamplePoint& square = track(tracks, "square_centre").points[index];
    EXPECT_GE(at(square)[2], at(square)[0]) << "blue-white stripes at the square centre, frame " << index;
    const SamplePoint& disc = track(tracks, "disc_centre").points[index];
    const double disc_to_square = distance_to_square(square, track(tracks, "square_corner").points[index], disc);
    EXPECT_EQ(disc.visible, disc_to_square >= 0.0) << "frame " << index;
    if (std::abs(disc_to_square) < 2.0) {
      // On the square's antialiased edge: the pixel is a blend.
    } else if (disc.visible) {
      EXPECT_GT(at(disc)[0], 200) << "orange disc, frame " << index;
      EXPECT_GT(at(disc)[0], at(disc)[2] + 80) << "orange disc, frame " << index;
    } else {
      EXPECT_GE(at(disc)[2], at(disc)[0]) << "hidden under the square, frame " << index;
    }
    const SamplePoint& triangle = track(tracks, "triangle_centre").points[index];
    if (triangle.visible) {
      EXPECT_GT(at(triangle)[1], at(triangle)[0]) << "green triangle, frame " << index;
      EXPECT_GT(at(triangle)[1], at(triangle)[2]) << "green triangle, frame " << index;
    }
  }
}

TEST(SampleClip, BackgroundPansWithItsGroundTruthPoint) {
  const SampleClipOptions options;
  const std::vector<SampleTrack> tracks = sample_clip_ground_truth(options);
  const SampleTrack& background = track(tracks, "background");
  // Between frames 0 and 20 the background moves by whole pixels (12, 5): the patch around the point is the same.
  const SamplePoint a = background.points[0];
  const SamplePoint b = background.points[20];
  ASSERT_TRUE(a.visible && b.visible);
  EXPECT_NEAR(a.x_px - b.x_px, 12.0, 1e-9);
  EXPECT_NEAR(a.y_px - b.y_px, 5.0, 1e-9);
  const Frame first = render_sample_frame(options, 0);
  const Frame later = render_sample_frame(options, 20);
  for (int dy = -4; dy <= 4; ++dy) {
    for (int dx = -4; dx <= 4; ++dx) {
      const uint8_t* p = first.pixel(static_cast<int>(a.x_px) + dx, static_cast<int>(a.y_px) + dy);
      const uint8_t* q = later.pixel(static_cast<int>(b.x_px) + dx, static_cast<int>(b.y_px) + dy);
      EXPECT_EQ(std::vector<uint8_t>(p, p + 3), std::vector<uint8_t>(q, q + 3));
    }
  }
  // And the background really is textured there (something to track).
  int lowest = 255, highest = 0;
  for (int dx = -8; dx <= 8; ++dx) {
    const int value = first.pixel(static_cast<int>(a.x_px) + dx, static_cast<int>(a.y_px))[1];
    lowest = std::min(lowest, value);
    highest = std::max(highest, value);
  }
  EXPECT_GT(highest - lowest, 10);
}

TEST(SampleClip, EncodedClipOpensWithItsMetadata) {
  TRACKSCOPE_SKIP_WITHOUT_ENCODER(VideoCodec::h264);
  SampleClipOptions options;
  options.width = 192;
  options.height = 108;
  options.frame_count = 24;
  const auto path = testing::test_folder("sample_clip") / "sample.mp4";
  const Status written = write_sample_clip(path, options);
  ASSERT_TRUE(written.ok()) << written.message();
  auto source = VideoSource::open(path);
  ASSERT_TRUE(source) << source.status().message();
  EXPECT_EQ((*source)->info().frame_count, 24);
  EXPECT_EQ((*source)->info().width, 192);
  EXPECT_EQ((*source)->info().frame_rate, (Rational{24, 1}));
  auto decoded = (*source)->read_frame(13);
  ASSERT_TRUE(decoded);
  const Frame rendered = render_sample_frame(options, 13);
  double difference = 0.0;
  for (size_t i = 0; i < rendered.rgb.size(); ++i) difference += std::abs(rendered.rgb[i] - (*decoded)->rgb[i]);
  EXPECT_LT(difference / static_cast<double>(rendered.rgb.size()), 6.0) << "decoded frame 13 is frame 13";
}

TEST(SampleClip, RejectsBadOptions) {
  SampleClipOptions options;
  options.width = 63;
  EXPECT_EQ(options.check().code(), StatusCode::invalid_argument);
  options = {};
  options.frame_count = 0;
  EXPECT_EQ(write_sample_clip("/tmp/never.mp4", options).code(), StatusCode::invalid_argument);
}

}  // namespace
}  // namespace trackscope::core
