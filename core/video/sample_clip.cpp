#include "core/video/sample_clip.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

#include "core/video/video_writer.h"

namespace trackscope::core {

namespace {

constexpr double kPi = std::numbers::pi;

// Deterministic value noise: a hashed integer lattice, smoothly interpolated, three octaves.
double lattice(int64_t x, int64_t y, uint32_t seed) {
  uint64_t h =
      static_cast<uint64_t>(x) * 0x9E3779B97F4A7C15ULL ^ static_cast<uint64_t>(y) * 0xC2B2AE3D27D4EB4FULL ^ seed;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 32;
  return static_cast<double>(h & 0xFFFFFF) / static_cast<double>(0xFFFFFF);
}

double value_noise(double x, double y, uint32_t seed) {
  const double fx = std::floor(x), fy = std::floor(y);
  const auto ix = static_cast<int64_t>(fx), iy = static_cast<int64_t>(fy);
  double tx = x - fx, ty = y - fy;
  tx = tx * tx * (3 - 2 * tx);
  ty = ty * ty * (3 - 2 * ty);
  const double top = lattice(ix, iy, seed) * (1 - tx) + lattice(ix + 1, iy, seed) * tx;
  const double bottom = lattice(ix, iy + 1, seed) * (1 - tx) + lattice(ix + 1, iy + 1, seed) * tx;
  return top * (1 - ty) + bottom * ty;
}

double fractal_noise(double x, double y, uint32_t seed) {
  return 0.55 * value_noise(x, y, seed) + 0.3 * value_noise(2.1 * x, 2.1 * y, seed + 1) +
         0.15 * value_noise(4.3 * x, 4.3 * y, seed + 2);
}

struct Color {
  double r, g, b;
};

Color mix(Color a, Color b, double t) { return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t}; }

struct Pose {
  Pose(double x_px, double y_px, double angle_rad)
      : x(x_px), y(y_px), angle(angle_rad), cos_angle(std::cos(angle_rad)), sin_angle(std::sin(angle_rad)) {}
  double x, y, angle;  // centre in pixels (raster coordinates), rotation in radians
  double cos_angle, sin_angle;
};

// The scene at frame `index`; all sizes scale with the frame height, positions with the frame size.
struct Scene {
  double width, height;
  double progress;  // 1.0 after 96 frames (the default clip); the motion is periodic beyond
  Pose square{0, 0, 0}, disc{0, 0, 0}, triangle{0, 0, 0};
  double square_half_side, disc_radius, triangle_radius;
  double pan_x, pan_y;  // background offset in pixels

  Scene(const SampleClipOptions& options, int64_t index) {
    width = options.width;
    height = options.height;
    progress = static_cast<double>(index) / 96.0;
    const double p = progress;
    square = {width * (0.5 - 0.38 * std::cos(kPi * p)), height * (0.47 + 0.05 * std::sin(2 * kPi * p)), 1.2 * kPi * p};
    disc = {width * (0.5 + 0.36 * std::cos(kPi * p + 0.25)), height * (0.52 + 0.10 * std::sin(2 * kPi * p + 1.0)),
            0.5 * kPi * p};
    triangle = {width * (0.2 + 0.08 * std::cos(2 * kPi * p)), height * (0.75 + 0.07 * std::sin(2 * kPi * p)),
                -0.8 * kPi * p};
    square_half_side = 0.12 * height;
    disc_radius = 0.11 * height;
    triangle_radius = 0.11 * height;
    pan_x = 0.6 * static_cast<double>(index) * width / 640.0;
    pan_y = 0.25 * static_cast<double>(index) * height / 360.0;
  }

  static void to_local(const Pose& pose, double x, double y, double& u, double& v) {
    const double c = pose.cos_angle, s = pose.sin_angle;
    u = c * (x - pose.x) + s * (y - pose.y);
    v = -s * (x - pose.x) + c * (y - pose.y);
  }

  // Signed distances in pixels (negative inside).
  double square_distance(double x, double y) const {
    double u = 0, v = 0;
    to_local(square, x, y, u, v);
    return std::max(std::abs(u), std::abs(v)) - square_half_side;
  }
  double disc_distance(double x, double y) const { return std::hypot(x - disc.x, y - disc.y) - disc_radius; }
  double triangle_distance(double x, double y) const {
    double u = 0, v = 0;
    to_local(triangle, x, y, u, v);
    double distance = -1e9;
    for (int k = 0; k < 3; ++k) {
      const double a = -kPi / 2 + k * 2 * kPi / 3;
      distance = std::max(distance, std::cos(a) * u + std::sin(a) * v);
    }
    return distance - triangle_radius / 2;  // inradius of an equilateral triangle
  }

  Color background(double x, double y) const {
    const double u = x + pan_x, v = y + pan_y;
    const double scale = height / 360.0;
    const double n = fractal_noise(u / (38 * scale), v / (38 * scale), 7);
    Color color = mix(Color{40, 70, 60}, Color{190, 175, 120}, n);
    // Thin grid lines give corners to track on the background.
    const double cell = 48 * scale;
    const double gx = std::abs(std::remainder(u, cell)), gy = std::abs(std::remainder(v, cell));
    const double line = std::clamp(1.5 - std::min(gx, gy), 0.0, 1.0);
    return mix(color, Color{25, 30, 35}, 0.6 * line);
  }
  Color disc_texture(double x, double y) const {
    double u = 0, v = 0;
    to_local(disc, x, y, u, v);
    const double n = fractal_noise(u / (0.03 * height) + 50, v / (0.03 * height) + 50, 21);
    const double ring = std::abs(std::hypot(u, v) - 0.6 * disc_radius) < 0.06 * disc_radius ? 0.5 : 0.0;
    return mix(mix(Color{230, 90, 30}, Color{255, 220, 120}, n), Color{90, 20, 10}, ring);
  }
  Color square_texture(double x, double y) const {
    double u = 0, v = 0;
    to_local(square, x, y, u, v);
    const double stripe = 0.5 + 0.5 * std::sin(2 * kPi * (u + 0.5 * v) / (0.06 * height));
    const double n = fractal_noise(u / (0.05 * height) - 20, v / (0.05 * height) + 9, 33);
    return mix(Color{30, 60, 200}, Color{235, 240, 255}, std::clamp(stripe * 0.8 + 0.4 * (n - 0.5), 0.0, 1.0));
  }
  Color triangle_texture(double x, double y) const {
    double u = 0, v = 0;
    to_local(triangle, x, y, u, v);
    const double cell = 0.04 * height;
    const bool dark =
        (static_cast<int64_t>(std::floor(u / cell)) + static_cast<int64_t>(std::floor(v / cell))) % 2 != 0;
    return dark ? Color{20, 90, 30} : Color{150, 230, 120};
  }

  static bool near(const Pose& pose, double radius, double x, double y) {
    return std::abs(x - pose.x) < radius + 2 && std::abs(y - pose.y) < radius + 2;
  }

  Color shade(double x, double y) const {
    Color color = background(x, y);
    // Bottom to top: triangle, disc, square. Coverage from the signed distance gives 1-pixel antialiasing.
    if (double d = near(triangle, triangle_radius, x, y) ? triangle_distance(x, y) : 2.0; d < 1.0)
      color = mix(color, triangle_texture(x, y), std::clamp(0.5 - d, 0.0, 1.0));
    if (double d = near(disc, disc_radius, x, y) ? disc_distance(x, y) : 2.0; d < 1.0)
      color = mix(color, disc_texture(x, y), std::clamp(0.5 - d, 0.0, 1.0));
    if (double d = near(square, square_half_side * std::numbers::sqrt2, x, y) ? square_distance(x, y) : 2.0; d < 1.0)
      color = mix(color, square_texture(x, y), std::clamp(0.5 - d, 0.0, 1.0));
    return color;
  }
};

uint8_t to_byte(double value) { return static_cast<uint8_t>(std::lround(std::clamp(value, 0.0, 255.0))); }

}  // namespace

Status SampleClipOptions::check() const {
  if (width < 64 || height < 64 || width > 4096 || height > 4096 || width % 2 != 0 || height % 2 != 0) {
    return invalid_argument(fmt::format("sample clip size must be even and within 64..4096, got {}x{}", width, height));
  }
  if (frame_count < 1 || frame_count > 10000) {
    return invalid_argument(fmt::format("sample clip frame count must be in [1, 10000], got {}", frame_count));
  }
  if (frame_rate.num <= 0 || frame_rate.den <= 0) {
    return invalid_argument(fmt::format("frame rate must be positive, got {}/{}", frame_rate.num, frame_rate.den));
  }
  return {};
}

Frame render_sample_frame(const SampleClipOptions& options, int64_t index) {
  const Scene scene(options, index);
  Frame frame;
  frame.index = index;
  frame.pts_us = index * 1000000 * options.frame_rate.den / std::max<int64_t>(1, options.frame_rate.num);
  frame.width = options.width;
  frame.height = options.height;
  frame.rgb.resize(static_cast<size_t>(options.width) * static_cast<size_t>(options.height) * 3);
  uint8_t* out = frame.rgb.data();
  for (int y = 0; y < options.height; ++y) {
    for (int x = 0; x < options.width; ++x, out += 3) {
      const Color color = scene.shade(x + 0.5, y + 0.5);
      out[0] = to_byte(color.r);
      out[1] = to_byte(color.g);
      out[2] = to_byte(color.b);
    }
  }
  return frame;
}

std::vector<SampleTrack> sample_clip_ground_truth(const SampleClipOptions& options) {
  std::vector<SampleTrack> tracks = {
      {"disc_centre", {}}, {"square_centre", {}}, {"square_corner", {}}, {"triangle_centre", {}}, {"background", {}}};
  const Scene first(options, 0);
  const double background_u = 0.78 * first.width + first.pan_x, background_v = 0.2 * first.height + first.pan_y;
  for (int64_t index = 0; index < options.frame_count; ++index) {
    const Scene scene(options, index);
    auto under_square = [&](double x, double y) { return scene.square_distance(x, y) < 0.0; };
    auto under_disc = [&](double x, double y) { return scene.disc_distance(x, y) < 0.0; };
    auto under_triangle = [&](double x, double y) { return scene.triangle_distance(x, y) < 0.0; };
    const double c = std::cos(scene.square.angle), s = std::sin(scene.square.angle);
    const double corner = 0.6 * scene.square_half_side;
    const double corner_x = scene.square.x + c * corner - s * corner;
    const double corner_y = scene.square.y + s * corner + c * corner;
    const double background_x = background_u - scene.pan_x, background_y = background_v - scene.pan_y;
    tracks[0].points.push_back({scene.disc.x, scene.disc.y, !under_square(scene.disc.x, scene.disc.y)});
    tracks[1].points.push_back({scene.square.x, scene.square.y, true});
    tracks[2].points.push_back({corner_x, corner_y, true});
    tracks[3].points.push_back(
        {scene.triangle.x, scene.triangle.y,
         !under_square(scene.triangle.x, scene.triangle.y) && !under_disc(scene.triangle.x, scene.triangle.y)});
    tracks[4].points.push_back({background_x, background_y,
                                !under_square(background_x, background_y) && !under_disc(background_x, background_y) &&
                                    !under_triangle(background_x, background_y)});
  }
  return tracks;
}

Status write_sample_clip(const std::filesystem::path& path, const SampleClipOptions& options) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  VideoWriterOptions writer_options;
  const std::string extension = path.extension().string();
  writer_options.codec = extension == ".webm"  ? VideoCodec::vp9
                         : extension == ".avi" ? VideoCodec::mjpeg
                                               : VideoCodec::h264;
  writer_options.width = options.width;
  writer_options.height = options.height;
  writer_options.frame_rate = options.frame_rate;
  writer_options.quality = writer_options.codec == VideoCodec::mjpeg ? 3 : 18;
  writer_options.faststart = true;
  Expected<std::unique_ptr<VideoWriter>> writer = VideoWriter::create(path, writer_options);
  if (!writer) return writer.status();
  for (int64_t index = 0; index < options.frame_count; ++index) {
    TRACKSCOPE_RETURN_IF_ERROR((*writer)->write(render_sample_frame(options, index)));
  }
  return (*writer)->finish();
}

}  // namespace trackscope::core
