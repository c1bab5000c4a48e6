#include "gpu/training/synthetic.h"

#include "core/log.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <vector>

namespace trackscope::gpu::training {

namespace {

constexpr double kPi = std::numbers::pi;
constexpr int64_t kMask32 = 0xFFFFFFFFLL;
constexpr int64_t kCandidates = 8;               // candidate positions per query (to find foreground points)
constexpr uint64_t kPhotoStream = 0x70686f746f;  // derive_seed index of the photo-texture draws ("photo")
constexpr int64_t kFixedPointSteps = 24;         // inverse-warp iterations: error <= max_warp^24
constexpr int64_t kBlurRadius = 3;
constexpr int64_t kNoisePlateMargin = 64;  // crop offsets of the per-clip pixel-noise plate

// Geometry of one layer on one frame, packed along the last axis of a [B, L+1, T, kParamCount] tensor.
// Image -> texture ("inverse", used to render): r = A n + c, then p = r + sum_k a_k sin(w_k . r + phase_k).
// Texture -> image ("forward", used for the ground truth): n = M r + P with M = A^-1, P = -M c.
// n and p are normalised coordinates ([-1, 1] spans the image / texture, align_corners = false).
constexpr int64_t kWarpComponents = 2;
enum GeometryParam : int64_t {
  kA00,
  kA01,
  kA10,
  kA11,
  kCx,
  kCy,
  kWarp0,  // per component: amplitude x, amplitude y, wave x, wave y, phase
  kM00 = kWarp0 + 5 * kWarpComponents,
  kM01,
  kM10,
  kM11,
  kPx,
  kPy,
  kGeometryParams,
};

// Texture parameters of one layer: colours, pattern mixture and pattern shape.
enum TextureParam : int64_t {
  kColorA = 0,
  kColorB = 3,
  kNoiseWeight = 6,
  kStripesWeight,
  kCheckerWeight,
  kGradientWeight,
  kFrequency,
  kOrientation,
  kPhase,
  kSharpness,
  kDetail,
  kContrast,
  kGradientGain,
  kTextureParams,
};

// Mask parameters of one foreground layer: shape mixture, ellipse, blob, polygon (8 vertices, polar).
constexpr int64_t kVertices = 8;
enum ShapeParam : int64_t {
  kEllipseWeight,
  kPolygonWeight,
  kBlobWeight,
  kSemiAxisA,
  kSemiAxisB,
  kEllipseRotation,
  kBlobBase,
  kBlobAmplitude,
  kActive,
  kVertexAngle0,
  kVertexRadius0 = kVertexAngle0 + kVertices,
  kShapeParams = kVertexRadius0 + kVertices,
};

// Scalars drawn from an explicit CPU generator, buffered (one at::rand call per 4096 draws).
class Uniforms {
 public:
  explicit Uniforms(uint64_t seed) : generator_(at::make_generator<at::CPUGeneratorImpl>(seed)) {}
  double next() {
    if (position_ == buffer_.size()) {
      at::Tensor block = at::rand({4096}, generator_, at::TensorOptions(at::kDouble));
      buffer_.assign(block.data_ptr<double>(), block.data_ptr<double>() + block.numel());
      position_ = 0;
    }
    return buffer_[position_++];
  }
  double uniform(double low, double high) { return low + (high - low) * next(); }
  bool chance(double probability) { return next() < probability; }
  int64_t integer(int64_t low, int64_t high) {  // inclusive
    return std::min(high, low + static_cast<int64_t>(next() * static_cast<double>(high - low + 1)));
  }
  int64_t key() { return static_cast<int64_t>(next() * 4294967296.0) & kMask32; }
  at::Tensor tensor(at::IntArrayRef shape) { return at::rand(shape, generator_, at::TensorOptions(at::kDouble)); }

 private:
  at::Generator generator_;
  std::vector<double> buffer_;
  size_t position_ = 0;
};

// Counter-based hash (two rounds of the 0x45d9f3b integer mix): exact int64 arithmetic, so every device gives
// the same values. Products stay below 2^59, far from int64 overflow.
at::Tensor mix32(at::Tensor x) {
  for (int round = 0; round < 2; ++round) {
    x = at::bitwise_xor(x, at::bitwise_right_shift(x, 16)).mul_(int64_t{0x45d9f3b}).bitwise_and_(kMask32);
  }
  return at::bitwise_xor(x, at::bitwise_right_shift(x, 16));
}

// Uniform [0, 1) floats for integer `index` under `key` (int64 tensors, broadcast against each other).
at::Tensor hash_uniform(const at::Tensor& index, const at::Tensor& key) {
  at::Tensor mixed = mix32(mix32(index.bitwise_and(kMask32)).add(key).bitwise_and_(kMask32));
  return mixed.to(at::kFloat).mul_(1.0 / 4294967296.0);
}

// Value noise: octaves of bicubic-upsampled hashed lattices with lattice sizes first_grid, 2x, ... up to
// size/2, amplitude persistence^octave, standardised per map and channel (zero mean, unit deviation).
// [M, channels, size, size].
at::Tensor fractal_noise(const at::Tensor& keys, int64_t channels, int64_t size, int64_t first_grid,
                         double persistence) {
  const int64_t m = keys.size(0);
  const auto long_options = at::TensorOptions(at::kLong).device(keys.device());
  at::Tensor sum;
  double amplitude = 1.0;
  int64_t octave = 0;
  for (int64_t grid = first_grid; grid <= std::max(first_grid, size / 2); grid *= 2, ++octave) {
    at::Tensor index = at::arange(channels * grid * grid, long_options).view({1, channels, grid, grid});
    at::Tensor octave_keys = keys.add(octave * int64_t{0x9E3779B1}).bitwise_and_(kMask32).view({m, 1, 1, 1});
    at::Tensor lattice = hash_uniform(index, octave_keys);
    at::Tensor upsampled = at::upsample_bicubic2d(lattice, at::IntArrayRef{size, size}, /*align_corners=*/false);
    sum = sum.defined() ? sum.add_(upsampled, amplitude) : upsampled.mul_(amplitude);
    amplitude *= persistence;
  }
  at::Tensor mean = sum.mean({2, 3}, /*keepdim=*/true);
  at::Tensor deviation = sum.std({2, 3}, /*unbiased=*/false, /*keepdim=*/true).clamp_min_(1e-6);
  return sum.sub_(mean).div_(deviation);
}

// Texel-centre coordinates of a size x size texture: u along x ([1,1,1,S]) and v along y ([1,1,S,1]).
std::pair<at::Tensor, at::Tensor> texel_coordinates(int64_t size, const at::Device& device) {
  at::Tensor c = at::arange(size, at::TensorOptions(at::kFloat).device(device))
                     .add_(0.5)
                     .mul_(2.0 / static_cast<double>(size))
                     .sub_(1.0);
  return {c.view({1, 1, 1, size}), c.view({1, 1, size, 1})};
}

// Procedural colour textures [M,3,S,S] in [0.05, 0.85]: a mixture of fractal noise, stripes, checkerboard and
// gradient between two colours, plus per-channel detail noise so that no region is flat.
at::Tensor make_textures(const at::Tensor& params, const at::Tensor& keys, int64_t size) {
  const int64_t m = params.size(0);
  auto p = [&](int64_t i) { return params.select(1, i).view({m, 1, 1, 1}); };
  const auto [u, v] = texel_coordinates(size, params.device());
  // Large-scale noise for the pattern; fine-grained per-channel detail (periods of 2..16 texels) so that every
  // neighbourhood is distinctive enough to track.
  at::Tensor noise = fractal_noise(keys, 1, size, 4, 0.7);
  at::Tensor fine = fractal_noise(keys.add(int64_t{0x2545F491}).bitwise_and_(kMask32), 3, size,
                                  std::max<int64_t>(4, size / 16), 0.85);
  at::Tensor along = u * at::cos(p(kOrientation)) + v * at::sin(p(kOrientation));
  at::Tensor across = v * at::cos(p(kOrientation)) - u * at::sin(p(kOrientation));
  at::Tensor wave_along = at::sin(along * p(kFrequency) * kPi + p(kPhase));
  at::Tensor wave_across = at::sin(across * p(kFrequency) * kPi + p(kPhase));
  at::Tensor mix = p(kNoiseWeight) * at::sigmoid(noise * p(kContrast)) +
                   p(kStripesWeight) * at::sigmoid(wave_along * p(kSharpness)) +
                   p(kCheckerWeight) * at::sigmoid(wave_along * wave_across * p(kSharpness)) +
                   p(kGradientWeight) * at::clamp(along * p(kGradientGain) * 0.5 + 0.5, 0.0, 1.0);
  at::Tensor color_a = params.narrow(1, kColorA, 3).view({m, 3, 1, 1});
  at::Tensor color_b = params.narrow(1, kColorB, 3).view({m, 3, 1, 1});
  at::Tensor detail = fine * p(kDetail);
  return at::clamp(color_a + (color_b - color_a) * mix + detail, 0.05, 0.85);
}

// Foreground masks [M,1,S,S]: a mixture of ellipse, star-shaped polygon and noise blob, from a signed distance s
// (texture units, > 0 inside) turned into alpha with a one-texel soft edge; zero near the texture border and
// for inactive layers.
at::Tensor make_alpha(const at::Tensor& shape, const at::Tensor& keys, int64_t size) {
  const int64_t m = shape.size(0);
  auto p = [&](int64_t i) { return shape.select(1, i).view({m, 1, 1, 1}); };
  const auto [u, v] = texel_coordinates(size, shape.device());
  at::Tensor rho = at::sqrt(u * u + v * v);
  // ellipse
  at::Tensor cr = at::cos(p(kEllipseRotation));
  at::Tensor sr = at::sin(p(kEllipseRotation));
  at::Tensor ex = (u * cr + v * sr) / p(kSemiAxisA);
  at::Tensor ey = (v * cr - u * sr) / p(kSemiAxisB);
  at::Tensor s_ellipse = (1.0 - at::sqrt(ex * ex + ey * ey)) * at::minimum(p(kSemiAxisA), p(kSemiAxisB));
  // star-shaped polygon: the boundary inside the angular sector of edge i is edge i (vertices counter-clockwise)
  at::Tensor angles = shape.narrow(1, kVertexAngle0, kVertices).view({m, kVertices, 1, 1});
  at::Tensor radii = shape.narrow(1, kVertexRadius0, kVertices).view({m, kVertices, 1, 1});
  at::Tensor vx = radii * at::cos(angles);
  at::Tensor vy = radii * at::sin(angles);
  at::Tensor edge_x = at::roll(vx, -1, 1) - vx;
  at::Tensor edge_y = at::roll(vy, -1, 1) - vy;
  at::Tensor start = angles.narrow(1, 0, 1);
  at::Tensor sector_begin = angles - start;
  at::Tensor sector_end = at::cat({sector_begin.narrow(1, 1, kVertices - 1), at::full_like(start, 2.0 * kPi)}, 1);
  at::Tensor phi = at::remainder(at::atan2(v, u) - start, 2.0 * kPi);
  at::Tensor in_sector = at::logical_and(phi >= sector_begin, phi < sector_end).to(at::kFloat);
  at::Tensor edge_distance = (edge_x * (v - vy) - edge_y * (u - vx)) / at::sqrt(edge_x * edge_x + edge_y * edge_y);
  at::Tensor s_polygon = (edge_distance * in_sector).sum(1, /*keepdim=*/true);
  // noise blob
  at::Tensor blob_noise =
      fractal_noise(keys.add(int64_t{0x51ED27}).bitwise_and_(kMask32), 1, std::min<int64_t>(size, 32), 3, 0.55);
  blob_noise = at::upsample_bicubic2d(blob_noise, at::IntArrayRef{size, size}, false);
  at::Tensor s_blob = at::clamp(p(kBlobBase) + p(kBlobAmplitude) * 0.35 * blob_noise, 0.2, 0.92) - rho;
  at::Tensor s = p(kEllipseWeight) * s_ellipse + p(kPolygonWeight) * s_polygon + p(kBlobWeight) * s_blob;
  const double texels_per_unit = static_cast<double>(size) / 2.0;
  at::Tensor alpha = at::clamp(s * texels_per_unit + 0.5, 0.0, 1.0);
  at::Tensor border = at::clamp((0.97 - at::maximum(at::abs(u), at::abs(v))) * texels_per_unit, 0.0, 1.0);
  return alpha * border * p(kActive);
}

// Adds sign * warp(r) to (out_x, out_y); the parameters broadcast against rx, ry.
void add_warp(const at::Tensor& params, const at::Tensor& rx, const at::Tensor& ry, at::Tensor& out_x,
              at::Tensor& out_y, double sign) {
  for (int64_t k = 0; k < kWarpComponents; ++k) {
    const int64_t base = kWarp0 + 5 * k;
    at::Tensor wave =
        at::sin(params.select(-1, base + 2) * rx + params.select(-1, base + 3) * ry + params.select(-1, base + 4));
    out_x = out_x + params.select(-1, base) * wave * sign;
    out_y = out_y + params.select(-1, base + 1) * wave * sign;
  }
}

// Texture coordinates of image points (nx, ny) on a layer (parameters broadcast against the points).
std::pair<at::Tensor, at::Tensor> texture_from_image(const at::Tensor& params, const at::Tensor& nx,
                                                     const at::Tensor& ny, bool warped) {
  auto p = [&](int64_t i) { return params.select(-1, i); };
  at::Tensor rx = p(kA00) * nx + p(kA01) * ny + p(kCx);
  at::Tensor ry = p(kA10) * nx + p(kA11) * ny + p(kCy);
  at::Tensor px = rx;
  at::Tensor py = ry;
  if (warped) add_warp(params, rx, ry, px, py, 1.0);
  return {px, py};
}

// Image positions of texture points (px, py): solves r + warp(r) = p by fixed-point iteration (the warp is a
// contraction, Lipschitz <= max_warp < 1), then applies the forward affine.
std::pair<at::Tensor, at::Tensor> image_from_texture(const at::Tensor& params, const at::Tensor& px,
                                                     const at::Tensor& py, bool warped) {
  auto p = [&](int64_t i) { return params.select(-1, i); };
  at::Tensor rx = px + at::zeros_like(p(kM00));
  at::Tensor ry = py + at::zeros_like(p(kM00));
  for (int64_t step = 0; warped && step < kFixedPointSteps; ++step) {
    at::Tensor next_x = px;
    at::Tensor next_y = py;
    add_warp(params, rx, ry, next_x, next_y, -1.0);
    rx = next_x;
    ry = next_y;
  }
  return {p(kM00) * rx + p(kM01) * ry + p(kPx), p(kM10) * rx + p(kM11) * ry + p(kPy)};
}

at::Tensor sample(const at::Tensor& texture, const at::Tensor& x, const at::Tensor& y) {
  return at::grid_sampler(texture, at::stack({x, y}, -1), /*bilinear*/ 0, /*zeros*/ 0, /*align_corners=*/false);
}

// ---- scene parameters (CPU, double) -----------------------------------------------------------------------

struct Scene {
  at::Tensor geometry;      // [B, L+1, T, kGeometryParams]
  at::Tensor textures;      // [B, L+1, kTextureParams]
  at::Tensor shapes;        // [B, L, kShapeParams]
  at::Tensor texture_keys;  // [B, L+1] int64
  at::Tensor shape_keys;    // [B, L] int64
  at::Tensor lighting;      // [B, T, 6]: gain rgb, bias rgb
  std::vector<double> blur_sigma_px;
  std::vector<double> noise_std;
  std::vector<double> temporal_blur;  // weight of each neighbouring frame, per clip
  std::vector<bool> layer_warped;     // [L+1]: some clip warps this layer
  int64_t active_layers = 0;          // the most objects any clip of the batch has
  int64_t noise_key = 0;
  at::Tensor noise_offsets;  // [B, T, 2] int64: crop of the noise plate per frame
};

double tau(int64_t t, int64_t frames) {
  return frames > 1 ? static_cast<double>(t) / static_cast<double>(frames - 1) : 0.0;
}

// Writes A, c (inverse) and M, P (forward) for the forward map n = M r + P.
void write_affine(double* q, double m00, double m01, double m10, double m11, double px, double py) {
  const double det = m00 * m11 - m01 * m10;
  q[kA00] = m11 / det;
  q[kA01] = -m01 / det;
  q[kA10] = -m10 / det;
  q[kA11] = m00 / det;
  q[kCx] = -(q[kA00] * px + q[kA01] * py);
  q[kCy] = -(q[kA10] * px + q[kA11] * py);
  q[kM00] = m00;
  q[kM01] = m01;
  q[kM10] = m10;
  q[kM11] = m11;
  q[kPx] = px;
  q[kPy] = py;
}

// The camera: the image window moves over a larger texture (pan, zoom, rotation), kept inside it on every frame.
void draw_background(Uniforms& u, const SyntheticOptions& o, double* frames_out) {
  const int64_t t_count = o.frames;
  const bool still = u.chance(0.15);
  const double zoom0 = u.uniform(2.0, 3.2);
  const double zoom_rate = still ? 0.0 : u.uniform(-0.2, 0.2);
  const double angle0 = u.uniform(0.0, 2.0 * kPi);
  const double spin = still ? 0.0 : u.uniform(-0.5, 0.5);
  const double c0x = u.uniform(-0.5, 0.5), c0y = u.uniform(-0.5, 0.5);
  const double speed = still ? 0.0 : u.uniform(0.0, o.max_camera_speed);
  const double heading = u.uniform(0.0, 2.0 * kPi);
  const double ax = still ? 0.0 : u.uniform(-0.3, 0.3), ay = still ? 0.0 : u.uniform(-0.3, 0.3);
  std::vector<double> cx(static_cast<size_t>(t_count)), cy(cx.size()), zoom(cx.size());
  double excess = 1.0;
  for (int64_t t = 0; t < t_count; ++t) {
    const double s = tau(t, t_count);
    const auto i = static_cast<size_t>(t);
    zoom[i] = std::clamp(zoom0 * std::exp(zoom_rate * s), 2.0, 3.5);
    cx[i] = c0x + speed * std::cos(heading) * s + ax * s * s;
    cy[i] = c0y + speed * std::sin(heading) * s + ay * s * s;
    // The image corners lie within sqrt(2)/zoom of the window centre in texture units; camera shake moves the
    // window by up to sqrt(2) x max_shake / zoom more (zoom >= 2).
    const double bound = 0.98 - std::sqrt(2.0) / zoom[i] - std::sqrt(2.0) * o.max_camera_shake / 2.0;
    excess = std::max(excess, std::max(std::abs(cx[i]), std::abs(cy[i])) / bound);
  }
  for (int64_t t = 0; t < t_count; ++t) {
    const auto i = static_cast<size_t>(t);
    const double angle = angle0 + spin * tau(t, t_count);
    const double m00 = zoom[i] * std::cos(angle), m01 = -zoom[i] * std::sin(angle);
    const double m10 = zoom[i] * std::sin(angle), m11 = zoom[i] * std::cos(angle);
    const double centre_x = cx[i] / excess, centre_y = cy[i] / excess;
    // n = M (r - C)  =>  P = -M C
    write_affine(frames_out + t * kGeometryParams, m00, m01, m10, m11, -(m00 * centre_x + m01 * centre_y),
                 -(m10 * centre_x + m11 * centre_y));
  }
}

// The smooth translation of a layer over the clip (normalised units, s = clip time in [0, 1]): a start in
// [-start_range, start_range]^2, a velocity of up to max_object_speed and a constant acceleration.
struct Drift {
  double p0x, p0y, vx, vy, ax, ay;
  double x(double s) const { return p0x + vx * s + 0.5 * ax * s * s; }
  double y(double s) const { return p0y + vy * s + 0.5 * ay * s * s; }
};

Drift draw_drift(Uniforms& u, const SyntheticOptions& o, double start_range) {
  Drift d{};
  d.p0x = u.uniform(-start_range, start_range);
  d.p0y = u.uniform(-start_range, start_range);
  const double speed = u.uniform(0.0, o.max_object_speed);
  const double heading = u.uniform(0.0, 2.0 * kPi);
  d.vx = speed * std::cos(heading);
  d.vy = speed * std::sin(heading);
  d.ax = u.uniform(-0.5, 0.5) * o.max_object_speed;
  d.ay = u.uniform(-0.5, 0.5) * o.max_object_speed;
  return d;
}

// A swinging limb: a rigid elongated layer (the mask is drawn as a long ellipse along texture x) that pivots
// about the texture point (-kLimbPivot, 0), one end of it, with a pendulum swing of its angle, while the pivot
// itself moves like an object (velocity, acceleration). Points far from the pivot move fastest, as on a leg.
constexpr double kLimbPivot = 0.8;
constexpr double kMaxLimbHalfWidth = 0.3;  // texture units; the least is SyntheticOptions::min_limb_half_width
// With `body` (a layer's geometry), the pivot hangs from the body's texture point `attach` instead: a leg on a
// moving body.
void draw_limb(Uniforms& u, const SyntheticOptions& o, double* frames_out, const double* body = nullptr,
               std::array<double, 2> attach = {}) {
  const int64_t t_count = o.frames;
  const Drift pivot = draw_drift(u, o, 0.7);
  const double angle0 = u.uniform(0.0, 2.0 * kPi), swing = u.uniform(0.3, 1.1);
  const double cycles = u.uniform(0.5, 2.5), phase = u.uniform(0.0, 2.0 * kPi);
  const double scale0 = u.uniform(0.2, 0.45), growth = u.uniform(-0.2, 0.2);
  for (int64_t t = 0; t < t_count; ++t) {
    const double s = tau(t, t_count);
    const double angle = angle0 + swing * std::sin(2.0 * kPi * cycles * s + phase);
    const double scale = scale0 * std::exp(growth * s);
    const double c = std::cos(angle), sn = std::sin(angle);
    const double m00 = c * scale, m01 = -sn * scale, m10 = sn * scale, m11 = c * scale;
    double pivot_x = pivot.x(s), pivot_y = pivot.y(s);
    if (body != nullptr) {  // the body's forward map n = M r + P at the attachment point
      const double* q = body + t * kGeometryParams;
      pivot_x = q[kM00] * attach[0] + q[kM01] * attach[1] + q[kPx];
      pivot_y = q[kM10] * attach[0] + q[kM11] * attach[1] + q[kPy];
    }
    // n = M r + P with the pivot texture point r = (-kLimbPivot, 0) at pivot(t).
    write_affine(frames_out + t * kGeometryParams, m00, m01, m10, m11, pivot_x + m00 * kLimbPivot,
                 pivot_y + m10 * kLimbPivot);
  }
}

// The lower segment of an articulated limb: a limb of its own whose pivot stays at the far end (texture point
// (+kLimbPivot, 0)) of the parent limb `parent` on every frame, at the parent's angle plus a knee angle that
// swings on its own, slightly shorter than the parent.
void draw_child_limb(Uniforms& u, const SyntheticOptions& o, const double* parent, double* frames_out) {
  const int64_t t_count = o.frames;
  const double knee0 = u.uniform(-1.2, 1.2), swing = u.uniform(0.2, 0.9);
  const double cycles = u.uniform(0.5, 2.5), phase = u.uniform(0.0, 2.0 * kPi);
  const double length = u.uniform(0.7, 1.0);
  for (int64_t t = 0; t < t_count; ++t) {
    const double* q = parent + t * kGeometryParams;
    // The parent's forward map n = M r + P at its tip, and its rotation and scale.
    const double tip_x = q[kM00] * kLimbPivot + q[kPx], tip_y = q[kM10] * kLimbPivot + q[kPy];
    const double parent_scale = std::sqrt(std::abs(q[kM00] * q[kM11] - q[kM01] * q[kM10]));
    const double parent_angle = std::atan2(q[kM10], q[kM00]);
    const double s = tau(t, t_count);
    const double angle = parent_angle + knee0 + swing * std::sin(2.0 * kPi * cycles * s + phase);
    const double scale = parent_scale * length;
    const double c = std::cos(angle), sn = std::sin(angle);
    const double m00 = c * scale, m01 = -sn * scale, m10 = sn * scale, m11 = c * scale;
    write_affine(frames_out + t * kGeometryParams, m00, m01, m10, m11, tip_x + m00 * kLimbPivot,
                 tip_y + m10 * kLimbPivot);
  }
}

// An occluder: a long thin bar (drawn as a limb-like ellipse) across much of the image, at a nearly constant
// angle, drifting slowly: a pole or a fence rail in front of the scene.
void draw_occluder(Uniforms& u, const SyntheticOptions& o, double* frames_out) {
  const int64_t t_count = o.frames;
  const double x0 = u.uniform(-0.7, 0.7), y0 = u.uniform(-0.7, 0.7);
  const double speed = u.uniform(0.0, 0.25) * std::max(o.max_object_speed, 0.1), heading = u.uniform(0.0, 2.0 * kPi);
  const double angle0 = u.uniform(0.0, kPi), spin = u.uniform(-0.15, 0.15);
  const double scale = u.uniform(0.7, 1.3);
  for (int64_t t = 0; t < t_count; ++t) {
    const double s = tau(t, t_count);
    const double angle = angle0 + spin * s;
    const double c = std::cos(angle), sn = std::sin(angle);
    write_affine(frames_out + t * kGeometryParams, c * scale, -sn * scale, sn * scale, c * scale,
                 x0 + speed * std::cos(heading) * s, y0 + speed * std::sin(heading) * s);
  }
}

// A foreground object: smooth translation (velocity, acceleration, wobble), rotation, anisotropic scale
// drift, shear drift, and a mild travelling-wave warp (or none). Returns whether it is warped.
bool draw_object(Uniforms& u, const SyntheticOptions& o, double* frames_out) {
  const int64_t t_count = o.frames;
  const Drift drift = draw_drift(u, o, 0.8);
  const double wobble = u.uniform(0.0, 0.06), wobble_cycles = u.uniform(0.5, 2.0);
  const double wobble_phase = u.uniform(0.0, 2.0 * kPi), wobble_heading = u.uniform(0.0, 2.0 * kPi);
  const double angle0 = u.uniform(0.0, 2.0 * kPi), spin = u.uniform(-1.5, 1.5);
  const double scale0 = u.uniform(0.12, 0.5), aspect = std::exp(u.uniform(-0.3, 0.3));
  const double growth = u.uniform(-0.35, 0.35);
  const double shear0 = u.uniform(-0.25, 0.25), shear_drift = u.uniform(-0.2, 0.2);
  const bool warped = o.max_warp > 0.0 && u.chance(0.6);
  struct Wave {
    double ax, ay, wx, wy, phase, cycles;
  };
  std::vector<Wave> waves;
  for (int64_t k = 0; k < kWarpComponents; ++k) {
    const double frequency = u.uniform(0.5 * kPi, 2.0 * kPi), direction = u.uniform(0.0, 2.0 * kPi);
    const double displacement = u.uniform(0.0, 2.0 * kPi);
    const double amplitude = warped ? u.uniform(0.0, 1.0) * o.max_warp / (kWarpComponents * frequency) : 0.0;
    waves.push_back({amplitude * std::cos(displacement), amplitude * std::sin(displacement),
                     frequency * std::cos(direction), frequency * std::sin(direction), u.uniform(0.0, 2.0 * kPi),
                     u.uniform(-1.0, 1.0)});
  }
  for (int64_t t = 0; t < t_count; ++t) {
    const double s = tau(t, t_count);
    const double wob = wobble * std::sin(2.0 * kPi * wobble_cycles * s + wobble_phase);
    const double px = drift.x(s) + wob * std::cos(wobble_heading);
    const double py = drift.y(s) + wob * std::sin(wobble_heading);
    const double angle = angle0 + spin * s;
    const double scale = scale0 * std::exp(growth * s);
    const double sx = scale * aspect, sy = scale / aspect, shear = shear0 + shear_drift * s;
    const double c = std::cos(angle), sn = std::sin(angle);
    // M = R(angle) [[sx, sx*shear], [0, sy]]
    double* q = frames_out + t * kGeometryParams;
    write_affine(q, c * sx, c * sx * shear - sn * sy, sn * sx, sn * sx * shear + c * sy, px, py);
    for (int64_t k = 0; k < kWarpComponents; ++k) {
      const Wave& w = waves[static_cast<size_t>(k)];
      double* wq = q + kWarp0 + 5 * k;
      wq[0] = w.ax;
      wq[1] = w.ay;
      wq[2] = w.wx;
      wq[3] = w.wy;
      wq[4] = w.phase + 2.0 * kPi * w.cycles * s;
    }
  }
  return warped;
}

void draw_texture(Uniforms& u, double frequency_scale, double* q) {
  for (int c = 0; c < 3; ++c) q[kColorA + c] = u.uniform(0.1, 0.8);
  for (int c = 0; c < 3; ++c) q[kColorB + c] = u.uniform(0.1, 0.8);
  const double pick = u.next();
  const int64_t pattern = pick < 0.4 ? 0 : pick < 0.6 ? 1 : pick < 0.8 ? 2 : 3;
  for (int64_t i = 0; i < 4; ++i) q[kNoiseWeight + i] = i == pattern ? 1.0 : 0.0;
  q[kFrequency] = u.uniform(2.0, 8.0) * frequency_scale;
  q[kOrientation] = u.uniform(0.0, kPi);
  q[kPhase] = u.uniform(0.0, 2.0 * kPi);
  q[kSharpness] = u.uniform(2.0, 12.0);
  q[kDetail] = u.uniform(0.04, 0.11);
  q[kContrast] = u.uniform(1.0, 3.0);
  q[kGradientGain] = u.uniform(0.5, 1.5);
}

void draw_shape(Uniforms& u, const SyntheticOptions& o, bool active, bool limb, double* q, bool bar = false) {
  const double pick = u.next();
  const int64_t kind = limb ? 0 : pick < 0.3 ? 0 : pick < 0.7 ? 1 : 2;
  for (int64_t i = 0; i < 3; ++i) q[kEllipseWeight + i] = i == kind ? 1.0 : 0.0;
  q[kSemiAxisA] = u.uniform(0.4, 0.92);
  q[kSemiAxisB] = u.uniform(0.4, 0.92);
  q[kEllipseRotation] = u.uniform(0.0, kPi);
  if (limb) {  // long and thin along texture x, reaching the pivot at x = -kLimbPivot
    q[kSemiAxisA] = 0.92;
    q[kSemiAxisB] = bar ? u.uniform(0.03, 0.09) : u.uniform(o.min_limb_half_width, kMaxLimbHalfWidth);
    q[kEllipseRotation] = 0.0;
  }
  q[kBlobBase] = u.uniform(0.5, 0.7);
  q[kBlobAmplitude] = u.uniform(0.3, 0.5);
  q[kActive] = active ? 1.0 : 0.0;
  const double base = u.uniform(0.0, 2.0 * kPi);
  for (int64_t i = 0; i < kVertices; ++i) {
    q[kVertexAngle0 + i] = base + (static_cast<double>(i) + u.uniform(-0.35, 0.35)) * 2.0 * kPi / kVertices;
    q[kVertexRadius0 + i] = u.uniform(0.4, 0.92);
  }
}

Scene draw_scene(Uniforms& u, const SyntheticOptions& o) {
  const int64_t b_count = o.batch_size, layers = o.max_objects, t_count = o.frames;
  const auto cpu = at::TensorOptions(at::kDouble);
  Scene scene;
  scene.geometry = at::zeros({b_count, layers + 1, t_count, kGeometryParams}, cpu);
  scene.textures = at::zeros({b_count, layers + 1, kTextureParams}, cpu);
  scene.shapes = at::zeros({b_count, layers, kShapeParams}, cpu);
  scene.texture_keys = at::zeros({b_count, layers + 1}, at::kLong);
  scene.shape_keys = at::zeros({b_count, layers}, at::kLong);
  scene.lighting = at::zeros({b_count, t_count, 6}, cpu);
  scene.layer_warped.assign(static_cast<size_t>(layers + 1), false);
  double* geometry = scene.geometry.data_ptr<double>();
  double* textures = scene.textures.data_ptr<double>();
  double* shapes = scene.shapes.data_ptr<double>();
  int64_t* texture_keys = scene.texture_keys.data_ptr<int64_t>();
  int64_t* shape_keys = scene.shape_keys.data_ptr<int64_t>();
  double* lighting = scene.lighting.data_ptr<double>();
  for (int64_t b = 0; b < b_count; ++b) {
    const int64_t objects = u.integer(o.min_objects, o.max_objects);
    scene.active_layers = std::max(scene.active_layers, objects);
    draw_background(u, o, geometry + (b * (layers + 1)) * t_count * kGeometryParams);
    draw_texture(u, 2.0, textures + (b * (layers + 1)) * kTextureParams);
    texture_keys[b * (layers + 1)] = u.key();
    const bool occluder = o.occluder_fraction > 0.0 && u.chance(o.occluder_fraction);
    const double* parent_limb = nullptr;  // the previous layer's geometry when it is a limb without a child
    const double* body = nullptr;         // the latest plain object's geometry (limbs may hang from it)
    for (int64_t k = 1; k <= layers; ++k) {
      // Extra draws only where a feature is on: streams with the features off stay those of earlier runs.
      double* object_geometry = geometry + (b * (layers + 1) + k) * t_count * kGeometryParams;
      const bool bar = occluder && k == objects;  // the top-most object of the clip
      const bool child =
          !bar && o.articulated_fraction > 0.0 && parent_limb != nullptr && u.chance(o.articulated_fraction);
      const bool limb = !bar && !child && o.limb_fraction > 0.0 && u.chance(o.limb_fraction);
      if (bar) {
        draw_occluder(u, o, object_geometry);
      } else if (child) {
        draw_child_limb(u, o, parent_limb, object_geometry);
      } else if (limb) {
        const bool attached = o.attached_limb_fraction > 0.0 && body != nullptr && u.chance(o.attached_limb_fraction);
        std::array<double, 2> attach{};
        if (attached) attach = {u.uniform(-0.5, 0.5), u.uniform(-0.5, 0.5)};
        draw_limb(u, o, object_geometry, attached ? body : nullptr, attach);
      } else {
        const bool warped = draw_object(u, o, object_geometry);
        scene.layer_warped[static_cast<size_t>(k)] = scene.layer_warped[static_cast<size_t>(k)] || warped;
        body = object_geometry;
      }
      parent_limb = limb ? object_geometry : nullptr;
      draw_texture(u, 1.0, textures + (b * (layers + 1) + k) * kTextureParams);
      texture_keys[b * (layers + 1) + k] = u.key();
      draw_shape(u, o, k <= objects, limb || child || bar, shapes + (b * layers + k - 1) * kShapeParams, bar);
      shape_keys[b * layers + k - 1] = u.key();
    }
    if (o.max_aspect_squeeze > 1.0 && u.chance(0.5)) {
      // Stretch the whole clip along one axis: n' = D n for every layer (D >= 1, so the camera window only
      // shrinks on the background texture and stays inside it).
      const double factor = u.uniform(1.0, o.max_aspect_squeeze);
      const bool along_y = u.chance(0.7);  // landscape video squeezed into a square: taller-looking content
      const double dx = along_y ? 1.0 : factor, dy = along_y ? factor : 1.0;
      for (int64_t k = 0; k <= layers; ++k) {
        for (int64_t t = 0; t < t_count; ++t) {
          double* q = geometry + ((b * (layers + 1) + k) * t_count + t) * kGeometryParams;
          write_affine(q, dx * q[kM00], dx * q[kM01], dy * q[kM10], dy * q[kM11], dx * q[kPx], dy * q[kPy]);
        }
      }
    }
    if (o.max_camera_shake > 0.0 && u.chance(0.5)) {
      // Hand-held shake: every layer moves by the same offset on each frame (n' = n + d_t).
      const double amplitude = u.uniform(0.2, 1.0) * o.max_camera_shake;
      for (int64_t t = 0; t < t_count; ++t) {
        const double dx = u.uniform(-amplitude, amplitude), dy = u.uniform(-amplitude, amplitude);
        for (int64_t k = 0; k <= layers; ++k) {
          double* q = geometry + ((b * (layers + 1) + k) * t_count + t) * kGeometryParams;
          write_affine(q, q[kM00], q[kM01], q[kM10], q[kM11], q[kPx] + dx, q[kPy] + dy);
        }
      }
    }
    scene.temporal_blur.push_back(o.max_temporal_blur > 0.0 && u.chance(0.5) ? u.uniform(0.0, o.max_temporal_blur)
                                                                             : 0.0);
    // Lighting: a shared smooth gain curve with per-channel offsets, and a drifting bias.
    const double x = o.max_lighting_change;
    const double g0 = u.uniform(-0.6, 0.6), g1 = u.uniform(-0.6, 0.6), g2 = u.uniform(0.0, 0.4);
    const double cycles = u.uniform(0.3, 1.5), phase = u.uniform(0.0, 2.0 * kPi);
    double channel[3], bias0[3], bias1[3];
    for (int c = 0; c < 3; ++c) {
      channel[c] = u.uniform(-0.2, 0.2);
      bias0[c] = u.uniform(-1.0, 1.0);
      bias1[c] = u.uniform(-1.0, 1.0);
    }
    for (int64_t t = 0; t < t_count; ++t) {
      const double s = tau(t, t_count);
      const double shared = g0 + g1 * s + g2 * std::sin(2.0 * kPi * cycles * s + phase);
      for (int c = 0; c < 3; ++c) {
        lighting[(b * t_count + t) * 6 + c] = 1.0 + x * std::clamp(shared + channel[c], -1.0, 1.0);
        lighting[(b * t_count + t) * 6 + 3 + c] = 0.1 * x * std::clamp(bias0[c] + bias1[c] * s, -1.0, 1.0);
      }
    }
    scene.blur_sigma_px.push_back(u.uniform(0.0, o.max_blur_sigma_px));
    scene.noise_std.push_back(u.uniform(0.0, o.max_noise_std));
  }
  scene.noise_key = u.key();
  scene.noise_offsets =
      (u.tensor({b_count, t_count, 2}) * static_cast<double>(kNoisePlateMargin)).floor_().to(at::kLong);
  return scene;
}

// Separable Gaussian blur of [B,3,T,H,W] with one sigma per clip (reflect padding keeps flat areas flat), as
// sums of shifted slices: convolutions with one channel per group are very slow on the CPU.
at::Tensor blur(const at::Tensor& frames, const std::vector<double>& sigmas_px) {
  const int64_t b_count = frames.size(0), planes = frames.size(1) * frames.size(2);
  const int64_t height = frames.size(3), width = frames.size(4), taps = 2 * kBlurRadius + 1;
  std::vector<at::Tensor> clips;
  for (int64_t b = 0; b < b_count; ++b) {
    const double sigma = sigmas_px[static_cast<size_t>(b)];
    at::Tensor x = frames[b].reshape({1, planes, height, width});
    if (sigma >= 1e-3) {
      std::vector<double> kernel(static_cast<size_t>(taps));
      double sum = 0.0;
      for (int64_t i = 0; i < taps; ++i) {
        const double d = static_cast<double>(i - kBlurRadius);
        kernel[static_cast<size_t>(i)] = std::exp(-0.5 * d * d / (sigma * sigma));
        sum += kernel[static_cast<size_t>(i)];
      }
      for (int dim : {3, 2}) {
        at::Tensor padded = at::reflection_pad2d(x, dim == 3 ? std::array<int64_t, 4>{kBlurRadius, kBlurRadius, 0, 0}
                                                             : std::array<int64_t, 4>{0, 0, kBlurRadius, kBlurRadius});
        const int64_t extent = x.size(dim);
        at::Tensor out = padded.narrow(dim, 0, extent) * (kernel[0] / sum);
        for (int64_t i = 1; i < taps; ++i)
          out.add_(padded.narrow(dim, i, extent), kernel[static_cast<size_t>(i)] / sum);
        x = out;
      }
    }
    clips.push_back(x.view({frames.size(1), frames.size(2), height, width}));
  }
  return at::stack(clips, 0);
}

// Zero-mean pixel noise for [B,3,T,H,W] with each clip's deviation: every frame is a different crop of one
// hashed noise plate per clip (hashing every pixel of every frame costs ~20x more for no visible gain).
at::Tensor pixel_noise(const Scene& scene, const at::Tensor& frames) {
  const int64_t b_count = frames.size(0), t_count = frames.size(2), height = frames.size(3), width = frames.size(4);
  const int64_t plate_h = height + kNoisePlateMargin, plate_w = width + kNoisePlateMargin;
  const auto long_options = at::TensorOptions(at::kLong).device(frames.device());
  at::Tensor index = at::arange(b_count * 3 * plate_h * plate_w, long_options);
  at::Tensor plate = hash_uniform(index, at::full({1}, scene.noise_key, long_options)).sub_(0.5).mul_(std::sqrt(12.0));
  at::Tensor offsets = scene.noise_offsets.to(frames.device());  // [B,T,2]: (dx, dy) in [0, margin)
  at::Tensor rows =
      offsets.select(2, 1).view({b_count, t_count, 1, 1}) + at::arange(height, long_options).view({1, 1, height, 1});
  at::Tensor cols =
      offsets.select(2, 0).view({b_count, t_count, 1, 1}) + at::arange(width, long_options).view({1, 1, 1, width});
  at::Tensor flat = (rows * plate_w + cols).view({b_count, 1, -1}).expand({b_count, 3, t_count * height * width});
  at::Tensor noise = plate.view({b_count, 3, plate_h * plate_w}).gather(2, flat).view(frames.sizes());
  at::Tensor deviation = at::tensor(scene.noise_std, at::kDouble).to(frames.options()).view({b_count, 1, 1, 1, 1});
  return noise.mul_(deviation);
}

// `textures` [M,3,S,S] with a share `fraction` of them replaced by crops of the bank's photographs: a crop covers
// `zoom` of a square's side (objects 0.15-0.5 at any angle, backgrounds 0.5-1 upright), mirrored in half of the
// cases, placed so that its rotated corners stay inside the square. Drawn from `u` in layer order.
at::Tensor with_photos(const at::Tensor& textures, const TextureBank& bank, double fraction, bool objects,
                       Uniforms& u) {
  const int64_t m = textures.size(0), size = textures.size(2);
  std::vector<int64_t> rows, picks;
  std::vector<float> theta;
  for (int64_t i = 0; i < m; ++i) {
    if (!u.chance(fraction)) continue;
    const int64_t pick = u.integer(0, bank.count() - 1);
    const double zoom = objects ? u.uniform(0.15, 0.5) : u.uniform(0.5, 1.0);
    const double angle = objects ? u.uniform(0.0, 2.0 * kPi) : 0.0;
    const double mirror = u.chance(0.5) ? -1.0 : 1.0;
    const double c = std::cos(angle), s = std::sin(angle);
    const double reach = zoom * (std::abs(c) + std::abs(s));  // half-extent of the rotated crop, either axis
    const double centre_x = u.uniform(reach - 1.0, 1.0 - reach), centre_y = u.uniform(reach - 1.0, 1.0 - reach);
    // Output texel (x, y) reads the square at centre + zoom * R(angle) (mirror * x, y).
    for (const double v : {zoom * c * mirror, -zoom * s, centre_x, zoom * s * mirror, zoom * c, centre_y})
      theta.push_back(static_cast<float>(v));
    rows.push_back(i);
    picks.push_back(pick);
  }
  if (rows.empty()) return textures;
  const auto count = static_cast<int64_t>(rows.size());
  const at::Device device = textures.device();
  const at::Tensor thetas = at::tensor(theta, at::kFloat).view({count, 2, 3}).to(device);
  const at::Tensor grid = at::affine_grid_generator(thetas, {count, 3, size, size}, /*align_corners=*/false);
  const at::Tensor photos = bank.images().index_select(0, at::tensor(picks, at::kLong).to(device));
  const at::Tensor crops = at::grid_sampler(photos.to(at::kFloat).div_(255.0), grid, /*bilinear*/ 0, /*border*/ 1,
                                            /*align_corners=*/false);
  return textures.index_copy(0, at::tensor(rows, at::kLong).to(device), crops.to(textures.scalar_type()));
}

}  // namespace

uint64_t derive_seed(uint64_t base, uint64_t index) {
  auto splitmix = [](uint64_t z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  };
  return splitmix(splitmix(base) ^ index);
}

core::Expected<std::unique_ptr<SyntheticVideoGenerator>> SyntheticVideoGenerator::create(
    const SyntheticOptions& options, const at::Device& device, std::shared_ptr<const TextureBank> bank) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  if (device.is_cuda() && !at::hasCUDA()) {
    return core::invalid_argument(fmt::format("device {} requested but this LibTorch has no CUDA", device.str()));
  }
  if (options.photo_texture_fraction <= 0.0) {
    bank.reset();
  } else if (bank && bank->images().device() != device) {
    return core::invalid_argument(
        fmt::format("the texture bank is on {}, the generator on {}", bank->images().device().str(), device.str()));
  } else if (!bank) {
    if (options.photo_textures.empty()) {
      return core::invalid_argument(
          "photo textures are on but no photographs are given (trackscope-train "
          "--photo-textures FRACTION --texture-images FOLDER)");
    }
    core::Expected<TextureBank> loaded = TextureBank::load(options.photo_textures, options.photo_texture_side, device);
    if (!loaded) return loaded.status().with_context("photo textures");
    bank = std::make_shared<const TextureBank>(std::move(*loaded));
    core::log::info("photo textures: {} squares of {} px ({} ... {}) for {:.0f}% of the layers", bank->count(),
                    bank->side(), bank->names().front(), bank->names().back(), 100.0 * options.photo_texture_fraction);
  }
  return std::unique_ptr<SyntheticVideoGenerator>(new SyntheticVideoGenerator(options, device, std::move(bank)));
}

SyntheticVideoGenerator::SyntheticVideoGenerator(const SyntheticOptions& options, const at::Device& device,
                                                 std::shared_ptr<const TextureBank> bank)
    : options_(options), device_(device), bank_(std::move(bank)) {}

SyntheticBatch SyntheticVideoGenerator::generate(uint64_t seed) const {
  const SyntheticOptions& o = options_;
  const int64_t b_count = o.batch_size, t_count = o.frames, height = o.height, width = o.width;
  const int64_t n_count = o.points, layers = o.max_objects, size = o.object_texture_size;
  const auto f32 = at::TensorOptions(at::kFloat).device(device_);
  Uniforms u(seed);
  const Scene scene = draw_scene(u, o);

  // Query frames, foreground wishes and candidate positions, in bulk from the same generator.
  at::Tensor query_first = u.tensor({b_count, n_count}) < o.query_first_fraction;
  at::Tensor random_frame = (u.tensor({b_count, n_count}) * static_cast<double>(t_count))
                                .floor_()
                                .clamp_max_(static_cast<double>(t_count - 1))
                                .to(at::kLong);
  at::Tensor query_frames = at::where(query_first, at::zeros_like(random_frame), random_frame).to(device_);
  at::Tensor want_foreground = (u.tensor({b_count, n_count}) < o.foreground_point_fraction).to(device_);
  at::Tensor candidates = u.tensor({b_count, n_count, kCandidates, 2}).mul_(2.0).sub_(1.0).to(f32);

  at::Tensor geometry = scene.geometry.to(f32);  // [B, L+1, T, P]
  at::Tensor background =
      make_textures(scene.textures.select(1, 0).to(f32), scene.texture_keys.select(1, 0).to(device_),
                    o.background_texture_size);  // [B,3,Sb,Sb]
  at::Tensor object_rgb =
      make_textures(scene.textures.narrow(1, 1, layers).reshape({b_count * layers, kTextureParams}).to(f32),
                    scene.texture_keys.narrow(1, 1, layers).reshape({-1}).to(device_), size);
  if (bank_) {
    // A stream of its own: the scene, queries and ground truth of this seed stay those of the procedural clip.
    Uniforms photo_u(derive_seed(seed, kPhotoStream));
    background = with_photos(background, *bank_, o.photo_texture_fraction, /*objects=*/false, photo_u);
    object_rgb = with_photos(object_rgb, *bank_, o.photo_texture_fraction, /*objects=*/true, photo_u);
  }
  at::Tensor object_alpha = make_alpha(scene.shapes.reshape({b_count * layers, kShapeParams}).to(f32),
                                       scene.shape_keys.reshape({-1}).to(device_), size);  // [B*L,1,S,S]
  at::Tensor objects = at::cat({object_rgb, object_alpha}, 1).view({b_count, layers, 4, size, size});

  // ---- render: inverse warping, bottom to top ------------------------------------------------------------
  // The affine part of every frame's sampling grid is one affine_grid call (pixel centres, align_corners =
  // false); the warp is two batched matrix products around a sin.
  const at::Tensor theta_order =
      at::tensor({kA00, kA01, kCx, kA10, kA11, kCy}, at::TensorOptions(at::kLong).device(device_));
  const at::Tensor wave_order =
      at::tensor({kWarp0 + 2, kWarp0 + 7, kWarp0 + 3, kWarp0 + 8}, at::TensorOptions(at::kLong).device(device_));
  const at::Tensor phase_order = at::tensor({kWarp0 + 4, kWarp0 + 9}, at::TensorOptions(at::kLong).device(device_));
  const at::Tensor amplitude_order =
      at::tensor({kWarp0 + 0, kWarp0 + 1, kWarp0 + 5, kWarp0 + 6}, at::TensorOptions(at::kLong).device(device_));
  static_assert(kWarpComponents == 2, "the index lists above spell out two warp components");
  auto layer_grid = [&](int64_t k) {  // [B, T*H, W, 2]
    at::Tensor params = geometry.select(1, k).reshape({b_count * t_count, kGeometryParams});
    at::Tensor theta = params.index_select(1, theta_order).view({b_count * t_count, 2, 3});
    at::Tensor grid = at::affine_grid_generator(theta, {b_count * t_count, 1, height, width}, /*align_corners=*/false);
    if (scene.layer_warped[static_cast<size_t>(k)]) {
      at::Tensor points = grid.view({b_count * t_count, height * width, 2});
      at::Tensor waves = params.index_select(1, wave_order).view({b_count * t_count, 2, kWarpComponents});
      at::Tensor phases = params.index_select(1, phase_order).view({b_count * t_count, 1, kWarpComponents});
      at::Tensor amplitudes = params.index_select(1, amplitude_order).view({b_count * t_count, kWarpComponents, 2});
      points.add_(at::bmm(at::baddbmm(phases, points, waves).sin_(), amplitudes));
    }
    return grid.view({b_count, t_count * height, width, 2});
  };
  at::Tensor frame = at::grid_sampler(background, layer_grid(0), 0, 0, false);  // [B,3,T*H,W]
  at::Tensor layer_ids;
  if (o.render_layer_ids)
    layer_ids = at::zeros({b_count, t_count * height, width}, at::TensorOptions(at::kByte).device(device_));
  for (int64_t k = 1; k <= scene.active_layers; ++k) {
    at::Tensor rgba = at::grid_sampler(objects.select(1, k - 1), layer_grid(k), 0, 0, false);
    at::Tensor alpha = rgba.narrow(1, 3, 1);
    frame.lerp_(rgba.narrow(1, 0, 3), alpha);  // over-compositing: frame + alpha (colour - frame)
    if (o.render_layer_ids) layer_ids.masked_fill_(alpha.squeeze(1) >= 0.5, static_cast<uint8_t>(k));
  }
  frame = frame.view({b_count, 3, t_count, height, width});
  at::Tensor lighting = scene.lighting.to(f32);  // [B,T,6]
  at::Tensor gain = lighting.narrow(2, 0, 3).permute({0, 2, 1}).reshape({b_count, 3, t_count, 1, 1});
  at::Tensor bias = lighting.narrow(2, 3, 3).permute({0, 2, 1}).reshape({b_count, 3, t_count, 1, 1});
  frame = frame * gain + bias;
  const at::Tensor temporal_blur = at::tensor(scene.temporal_blur, at::kDouble).to(at::kFloat);  // [B], CPU
  if (!o.skip_temporal_blur && t_count > 1 &&
      *std::max_element(scene.temporal_blur.begin(), scene.temporal_blur.end()) > 0.0) {
    // Exposure over the frame interval: (1 - 2w) f_t + w (f_{t-1} + f_{t+1}), the ends repeated.
    const at::Tensor weight = temporal_blur.to(f32).view({b_count, 1, 1, 1, 1});
    at::Tensor previous = at::cat({frame.narrow(2, 0, 1), frame.narrow(2, 0, t_count - 1)}, 2);
    at::Tensor next = at::cat({frame.narrow(2, 1, t_count - 1), frame.narrow(2, t_count - 1, 1)}, 2);
    frame = frame * (1.0 - 2.0 * weight) + (previous + next) * weight;
  }
  if (*std::max_element(scene.blur_sigma_px.begin(), scene.blur_sigma_px.end()) >= 1e-3)
    frame = blur(frame, scene.blur_sigma_px);
  if (*std::max_element(scene.noise_std.begin(), scene.noise_std.end()) > 0.0) frame.add_(pixel_noise(scene, frame));
  frame = frame.clamp_(0.0, 1.0).permute({0, 2, 3, 4, 1}).contiguous();  // [B,T,H,W,3]

  SyntheticBatch batch;
  batch.video =
      o.format == SyntheticVideoFormat::uint8 ? frame.mul_(255.0).round_().to(at::kByte) : frame.mul_(2.0).sub_(1.0);
  batch.lighting_gain = lighting.narrow(2, 0, 3).contiguous();
  batch.lighting_bias = lighting.narrow(2, 3, 3).contiguous();
  batch.temporal_blur = temporal_blur;
  if (o.render_layer_ids) batch.layer_ids = layer_ids.view({b_count, t_count, height, width});

  // ---- queries: the top-most layer at a candidate position on the query frame owns the point ---------------
  const bool any_warp = std::any_of(scene.layer_warped.begin(), scene.layer_warped.end(), [](bool w) { return w; });
  at::Tensor params_at_query =
      geometry
          .gather(2,
                  query_frames.view({b_count, 1, n_count, 1}).expand({b_count, layers + 1, n_count, kGeometryParams}))
          .unsqueeze(3);                                  // [B, L+1, N, 1, P]
  at::Tensor cx = candidates.select(-1, 0).unsqueeze(1);  // [B,1,N,C]
  at::Tensor cy = candidates.select(-1, 1).unsqueeze(1);
  auto [tx, ty] = texture_from_image(params_at_query, cx, cy, any_warp);  // [B, L+1, N, C]
  at::Tensor object_alpha_flat = object_alpha.view({b_count * layers, 1, size, size});
  auto alpha_at = [&](const at::Tensor& x, const at::Tensor& y) {  // x, y: [B, L, ...] -> alpha [B, L, ...]
    const auto shape = x.sizes().vec();
    at::Tensor a = sample(object_alpha_flat, x.reshape({b_count * layers, shape[2], -1}),
                          y.reshape({b_count * layers, shape[2], -1}));
    return a.view(shape);
  };
  at::Tensor layer_index =
      at::arange(1, layers + 1, at::TensorOptions(at::kLong).device(device_)).view({1, layers, 1, 1});
  at::Tensor covered = alpha_at(tx.narrow(1, 1, layers), ty.narrow(1, 1, layers)) >= 0.5;  // [B, L, N, C]
  at::Tensor top = (covered.to(at::kLong) * layer_index).amax(1);                          // [B, N, C]
  at::Tensor candidate_index =
      at::arange(kCandidates, at::TensorOptions(at::kLong).device(device_)).view({1, 1, kCandidates});
  at::Tensor first_foreground =
      at::where(top > 0, candidate_index, at::full_like(candidate_index, kCandidates)).amin(2);
  at::Tensor chosen = at::where(at::logical_and(want_foreground, first_foreground < kCandidates), first_foreground,
                                at::zeros_like(first_foreground));          // [B, N]
  at::Tensor point_layers = top.gather(2, chosen.unsqueeze(2)).squeeze(2);  // [B, N]
  at::Tensor query_x = candidates.select(-1, 0).gather(2, chosen.unsqueeze(2)).squeeze(2);
  at::Tensor query_y = candidates.select(-1, 1).gather(2, chosen.unsqueeze(2)).squeeze(2);
  auto pick = [&](const at::Tensor& per_layer) {  // [B, L+1, N, C] -> value on the chosen candidate and layer [B, N]
    at::Tensor per_candidate =
        per_layer.gather(3, chosen.view({b_count, 1, n_count, 1}).expand({b_count, layers + 1, n_count, 1}));
    return per_candidate.squeeze(3).gather(1, point_layers.unsqueeze(1)).squeeze(1);
  };
  at::Tensor texture_x = pick(tx).unsqueeze(2);  // [B, N, 1]
  at::Tensor texture_y = pick(ty).unsqueeze(2);

  // ---- ground truth: the point's texture coordinates carried to every frame ---------------------------------
  at::Tensor params_of_point = geometry.gather(
      1, point_layers.view({b_count, n_count, 1, 1}).expand({b_count, n_count, t_count, kGeometryParams}));
  auto [track_nx, track_ny] = image_from_texture(params_of_point, texture_x, texture_y, any_warp);  // [B, N, T]
  at::Tensor track_x = (track_nx + 1.0) * (0.5 * static_cast<double>(width));
  at::Tensor track_y = (track_ny + 1.0) * (0.5 * static_cast<double>(height));
  at::Tensor outside = (track_x < 0.0)
                           .logical_or_(track_x >= static_cast<double>(width))
                           .logical_or_(track_y < 0.0)
                           .logical_or_(track_y >= static_cast<double>(height));
  at::Tensor object_params = geometry.narrow(1, 1, layers).unsqueeze(2);  // [B, L, 1, T, P]
  auto [ox, oy] =
      texture_from_image(object_params, track_nx.unsqueeze(1), track_ny.unsqueeze(1), any_warp);  // [B,L,N,T]
  at::Tensor above = layer_index > point_layers.view({b_count, 1, n_count, 1});
  at::Tensor hidden = at::logical_and(alpha_at(ox, oy) >= 0.5, above).any(1);  // [B, N, T]
  at::Tensor occluded = at::logical_or(hidden, outside);
  // The query is visible by construction; do not let a rounding tie at an alpha edge say otherwise.
  occluded.scatter_(2, query_frames.unsqueeze(2), false);

  batch.query_points_tyx =
      at::stack({query_frames.to(at::kFloat), (query_y + 1.0) * (0.5 * static_cast<double>(height)),
                 (query_x + 1.0) * (0.5 * static_cast<double>(width))},
                -1);
  batch.target_points_xy = at::stack({track_x, track_y}, -1);
  batch.occluded = occluded;
  batch.point_layers = point_layers;
  return batch;
}

}  // namespace trackscope::gpu::training
