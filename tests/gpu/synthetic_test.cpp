// The synthetic generator's ground truth checked against what it rendered: determinism, query frames, points
// leaving the image, occlusion flags against the rendered layer-ID map, and photometric consistency along tracks.
// Runs on the CPU by default; TRACKSCOPE_TEST_DEVICE=cuda runs it on the GPU (skipped without CUDA).
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/tracking/evaluation_perturbation.h"
#include "gpu/training/augmentation.h"
#include "gpu/training/synthetic.h"
#include "gpu/training/texture_bank.h"
#include "core/video/still_image.h"
#include "test_device.h"

namespace trackscope::gpu::training {
namespace {

using test_env::test_device;

SyntheticOptions small_options() {
  SyntheticOptions o;
  o.batch_size = 2;
  o.frames = 8;
  o.height = 64;
  o.width = 80;
  o.points = 256;
  o.object_texture_size = 64;
  o.background_texture_size = 128;
  o.render_layer_ids = true;
  return o;
}

SyntheticBatch generate(const SyntheticOptions& options, uint64_t seed,
                        std::shared_ptr<const TextureBank> bank = nullptr) {
  auto generator = SyntheticVideoGenerator::create(options, test_device(), std::move(bank));
  EXPECT_TRUE(generator) << generator.status().message();
  SyntheticBatch batch = (*generator)->generate(seed);
  // Move everything to the CPU for inspection.
  for (at::Tensor* t : {&batch.video, &batch.query_points_tyx, &batch.target_points_xy, &batch.occluded,
                        &batch.point_layers, &batch.layer_ids, &batch.lighting_gain, &batch.lighting_bias}) {
    if (t->defined()) *t = t->cpu();
  }
  return batch;
}

// The same clips as generate(options, seed), drawn identically, with the temporal blur left out.
SyntheticBatch generate_unblurred(SyntheticOptions options, uint64_t seed) {
  options.skip_temporal_blur = true;
  return generate(options, seed);
}

// True when the layer-ID map is the same in the (2r+1)^2 pixels around (x, y): the point is not at an edge.
bool uniform_ids(const at::TensorAccessor<uint8_t, 2>& ids, double x, double y, int64_t r, uint8_t* id) {
  const int64_t h = ids.size(0), w = ids.size(1);
  const auto cx = static_cast<int64_t>(std::floor(x)), cy = static_cast<int64_t>(std::floor(y));
  if (cx - r < 0 || cy - r < 0 || cx + r >= w || cy + r >= h) return false;
  *id = ids[cy][cx];
  for (int64_t dy = -r; dy <= r; ++dy) {
    for (int64_t dx = -r; dx <= r; ++dx) {
      if (ids[cy + dy][cx + dx] != *id) return false;
    }
  }
  return true;
}

TEST(Synthetic, SameSeedSameBatchOtherSeedOtherBatch) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  const SyntheticOptions o = small_options();
  SyntheticBatch a = generate(o, 7), b = generate(o, 7), c = generate(o, 8);
  EXPECT_TRUE(at::equal(a.video, b.video));
  EXPECT_TRUE(at::equal(a.query_points_tyx, b.query_points_tyx));
  EXPECT_TRUE(at::equal(a.target_points_xy, b.target_points_xy));
  EXPECT_TRUE(at::equal(a.occluded, b.occluded));
  EXPECT_TRUE(at::equal(a.layer_ids, b.layer_ids));
  EXPECT_GT((a.video - c.video).abs().mean().item<double>(), 0.05);
  EXPECT_FALSE(at::equal(a.query_points_tyx, c.query_points_tyx));
  // Shapes and ranges of the contract.
  EXPECT_EQ(a.video.sizes(), (at::IntArrayRef{2, 8, 64, 80, 3}));
  EXPECT_EQ(a.target_points_xy.sizes(), (at::IntArrayRef{2, 256, 8, 2}));
  EXPECT_EQ(a.occluded.scalar_type(), at::kBool);
  EXPECT_GE(a.video.min().item<float>(), -1.0f);
  EXPECT_LE(a.video.max().item<float>(), 1.0f);
}

TEST(Synthetic, QueryFrameTargetIsTheQueryAndVisible) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  SyntheticOptions o = small_options();
  o.query_first_fraction = 0.5;
  const SyntheticBatch batch = generate(o, 11);
  at::Tensor frames = batch.query_points_tyx.select(-1, 0).to(at::kLong);  // [B, N]
  at::Tensor at_query = batch.target_points_xy.gather(2, frames.view({2, 256, 1, 1}).expand({2, 256, 1, 2})).squeeze(2);
  at::Tensor query_xy = batch.query_points_tyx.narrow(-1, 1, 2).flip(-1);
  EXPECT_LT((at_query - query_xy).abs().max().item<double>(), 1e-3);  // the inverse warp solver closes the loop
  EXPECT_FALSE(batch.occluded.gather(2, frames.unsqueeze(2)).any().item<bool>());
  const double first_share = (frames == 0).to(at::kDouble).mean().item<double>();
  EXPECT_GT(first_share, 0.5);  // half query-first plus random frames that happen to be 0
  EXPECT_LT(first_share, 0.75);
  EXPECT_GE(query_xy.min().item<float>(), 0.0f);
  EXPECT_LT(query_xy.select(-1, 0).max().item<float>(), 80.0f);
  EXPECT_LT(query_xy.select(-1, 1).max().item<float>(), 64.0f);
  // Foreground points are asked for 60% of the time and found most of the time.
  const double foreground = (batch.point_layers > 0).to(at::kDouble).mean().item<double>();
  EXPECT_GT(foreground, 0.35);
}

TEST(Synthetic, PointsLeavingTheImageAreOccluded) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  SyntheticOptions o = small_options();
  o.max_object_speed = 3.0;  // objects fly out of the frame
  o.max_camera_speed = 2.0;
  const SyntheticBatch batch = generate(o, 5);
  at::Tensor x = batch.target_points_xy.select(-1, 0), y = batch.target_points_xy.select(-1, 1);
  at::Tensor outside = (x < 0).logical_or(x >= 80).logical_or(y < 0).logical_or(y >= 64);
  EXPECT_GT(outside.sum().item<int64_t>(), 50) << "the test needs points that leave the image";
  EXPECT_TRUE(batch.occluded.masked_select(outside).all().item<bool>());
}

void expect_occlusion_flags_agree_with_layer_ids(const SyntheticOptions& o, uint64_t seed) {
  const SyntheticBatch batch = generate(o, seed);
  auto ids = batch.layer_ids.accessor<uint8_t, 4>();
  auto targets = batch.target_points_xy.accessor<float, 4>();
  auto occluded = batch.occluded.accessor<bool, 3>();
  auto layers = batch.point_layers.accessor<int64_t, 2>();
  int64_t visible_checked = 0, hidden_checked = 0, disagreements = 0;
  for (int64_t b = 0; b < o.batch_size; ++b) {
    for (int64_t n = 0; n < o.points; ++n) {
      for (int64_t t = 0; t < o.frames; ++t) {
        uint8_t id = 0;
        if (!uniform_ids(ids[b][t], targets[b][n][t][0], targets[b][n][t][1], 1, &id)) continue;
        const bool visible_in_ids = id == layers[b][n];
        // A point is never under a layer below its own: its own mask covers it on every frame.
        EXPECT_GE(id, layers[b][n]) << "clip " << b << " point " << n << " frame " << t;
        if (visible_in_ids != !occluded[b][n][t]) ++disagreements;
        ++(occluded[b][n][t] ? hidden_checked : visible_checked);
      }
    }
  }
  EXPECT_GT(visible_checked, 1000);
  EXPECT_GT(hidden_checked, 100);
  EXPECT_EQ(disagreements, 0) << "of " << visible_checked + hidden_checked;
}

TEST(Synthetic, OcclusionFlagsAgreeWithTheRenderedLayerIds) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  SyntheticOptions o = small_options();
  o.frames = 12;
  expect_occlusion_flags_agree_with_layer_ids(o, 3);
}

// The closer-to-real options: swinging limbs (pivoting layers), clips stretched along one axis. Their ground
// truth must hold as exactly as the plain layers' (occlusion against the rendered layer IDs, colour along the
// tracks).
SyntheticOptions realistic_options() {
  SyntheticOptions o = small_options();
  o.frames = 12;
  o.height = o.width = 96;
  o.limb_fraction = 0.6;
  o.max_aspect_squeeze = 2.0;
  o.max_object_speed = 2.0;
  return o;
}

TEST(Synthetic, LimbsAndStretchedClipsKeepExactOcclusion) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  expect_occlusion_flags_agree_with_layer_ids(realistic_options(), 4);
}

// The second round of closer-to-real options: articulated limbs (a lower segment hanging from each limb's far
// end), a thin occluding bar on top, camera shake. Their ground truth must be as exact as the others'.
SyntheticOptions articulated_options() {
  SyntheticOptions o = realistic_options();
  o.limb_fraction = 0.7;
  o.articulated_fraction = 1.0;
  o.occluder_fraction = 1.0;
  o.max_camera_shake = 0.08;
  return o;
}

TEST(Synthetic, ArticulatedLimbsOccludersAndShakeKeepExactOcclusion) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  expect_occlusion_flags_agree_with_layer_ids(articulated_options(), 5);
}

TEST(Synthetic, NewOptionsAreDeterministicAndChecked) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  const SyntheticOptions o = articulated_options();
  SyntheticBatch a = generate(o, 17), b = generate(o, 17);
  EXPECT_TRUE(at::equal(a.video, b.video));
  EXPECT_TRUE(at::equal(a.target_points_xy, b.target_points_xy));
  // The options change the clips (they are drawn only when on).
  SyntheticOptions plain = realistic_options();
  EXPECT_FALSE(at::equal(generate(plain, 17).video, a.video));
  for (auto [field, value, name] : std::vector<std::tuple<double SyntheticOptions::*, double, const char*>>{
           {&SyntheticOptions::articulated_fraction, 1.5, "articulated_fraction"},
           {&SyntheticOptions::occluder_fraction, -0.1, "occluder_fraction"},
           {&SyntheticOptions::max_camera_shake, 0.2, "max_camera_shake"},
           {&SyntheticOptions::min_limb_half_width, 0.01, "min_limb_half_width"},
           {&SyntheticOptions::attached_limb_fraction, 1.1, "attached_limb_fraction"}}) {
    SyntheticOptions bad = small_options();
    bad.*field = value;
    EXPECT_NE(SyntheticVideoGenerator::create(bad, at::kCPU).status().message().find(name), std::string::npos) << name;
  }
}

// Thinner limbs: the same clips (the half-width takes the same draw, only its range starts lower), each limb at
// most as wide, so the limbs cover fewer pixels; the ground truth stays exact.
TEST(Synthetic, ThinLimbsCoverLessAndKeepExactOcclusion) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  SyntheticOptions o = realistic_options();
  o.limb_fraction = 1.0;
  const SyntheticBatch wide = generate(o, 18);
  o.min_limb_half_width = 0.03;
  const SyntheticBatch thin = generate(o, 18);
  const double wide_pixels = wide.layer_ids.gt(0).sum().item<double>();
  const double thin_pixels = thin.layer_ids.gt(0).sum().item<double>();
  EXPECT_LT(thin_pixels, 0.8 * wide_pixels) << thin_pixels << " vs " << wide_pixels;
  EXPECT_GT(thin_pixels, 0.0);
  SyntheticOptions mixed = realistic_options();  // limbs among other objects: enough points hidden to check
  mixed.min_limb_half_width = 0.03;
  expect_occlusion_flags_agree_with_layer_ids(mixed, 19);
}

// Limbs hanging from a body: other clips than with free limbs (the pivots follow the bodies), the ground truth as
// exact as every layer's (the colour along tracks: LimbsAndStretchedClipsKeepTheColourAlongTracks).
TEST(Synthetic, AttachedLimbsKeepExactGroundTruth) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  SyntheticOptions o = realistic_options();
  o.attached_limb_fraction = 1.0;
  EXPECT_FALSE(at::equal(generate(o, 24).target_points_xy, generate(realistic_options(), 24).target_points_xy));
  expect_occlusion_flags_agree_with_layer_ids(o, 25);
}

// Bilinear colour [3] (in [0,1]) of frame t of clip b at raster (x, y).
std::array<double, 3> colour_at(const at::Tensor& video01, int64_t b, int64_t t, double x, double y) {
  const int64_t h = video01.size(2), w = video01.size(3);
  const double fx = std::clamp(x - 0.5, 0.0, static_cast<double>(w - 1)),
               fy = std::clamp(y - 0.5, 0.0, static_cast<double>(h - 1));
  const auto x0 = static_cast<int64_t>(std::floor(fx)), y0 = static_cast<int64_t>(std::floor(fy));
  const int64_t x1 = std::min(x0 + 1, w - 1), y1 = std::min(y0 + 1, h - 1);
  const double ax = fx - static_cast<double>(x0), ay = fy - static_cast<double>(y0);
  auto v = video01.accessor<float, 5>();
  std::array<double, 3> c{};
  for (int64_t k = 0; k < 3; ++k) {
    c[static_cast<size_t>(k)] = (1 - ay) * ((1 - ax) * v[b][t][y0][x0][k] + ax * v[b][t][y0][x1][k]) +
                                ay * ((1 - ax) * v[b][t][y1][x0][k] + ax * v[b][t][y1][x1][k]);
  }
  return c;
}

// Median over visible, edge-free track samples of the colour change along the track once the known lighting is
// undone; `shift_px` moves the samples off the track (a control that must change much more).
double median_colour_error(const SyntheticBatch& batch, double shift_px) {
  at::Tensor video01 = (batch.video + 1.0) * 0.5;
  auto ids = batch.layer_ids.accessor<uint8_t, 4>();
  auto targets = batch.target_points_xy.accessor<float, 4>();
  auto queries = batch.query_points_tyx.accessor<float, 3>();
  auto occluded = batch.occluded.accessor<bool, 3>();
  auto gain = batch.lighting_gain.accessor<float, 3>();
  auto bias = batch.lighting_bias.accessor<float, 3>();
  std::vector<double> errors;
  for (int64_t b = 0; b < batch.video.size(0); ++b) {
    for (int64_t n = 0; n < batch.target_points_xy.size(1); ++n) {
      const auto tq = static_cast<int64_t>(queries[b][n][0]);
      uint8_t id = 0;
      if (!uniform_ids(ids[b][tq], queries[b][n][2], queries[b][n][1], 2, &id)) continue;
      const std::array<double, 3> at_query = colour_at(video01, b, tq, queries[b][n][2], queries[b][n][1]);
      for (int64_t t = 0; t < batch.video.size(1); ++t) {
        if (t == tq || occluded[b][n][t]) continue;
        const double x = targets[b][n][t][0] + shift_px, y = targets[b][n][t][1];
        uint8_t other = 0;
        if (!uniform_ids(ids[b][t], targets[b][n][t][0], y, 2, &other)) continue;
        const std::array<double, 3> seen = colour_at(video01, b, t, x, y);
        double error = 0.0;
        for (size_t k = 0; k < 3; ++k) {
          const double unlit =
              (at_query[k] - bias[b][tq][static_cast<int64_t>(k)]) / gain[b][tq][static_cast<int64_t>(k)];
          error +=
              std::abs(unlit * gain[b][t][static_cast<int64_t>(k)] + bias[b][t][static_cast<int64_t>(k)] - seen[k]) /
              3.0;
        }
        errors.push_back(error);
      }
    }
  }
  EXPECT_GT(errors.size(), 500u);
  std::nth_element(errors.begin(), errors.begin() + static_cast<std::ptrdiff_t>(errors.size() / 2), errors.end());
  return errors[errors.size() / 2];
}

// Without blur and noise a point's colour along its visible track, lighting undone, stays within 0.003 (measured:
// 0.0003 on the track, 0.03 three pixels off it, 0.008 with the ground truth shifted by 0.7 px).
void expect_sharp_colour_along_tracks(SyntheticOptions o, uint64_t seed,
                                      std::shared_ptr<const TextureBank> bank = nullptr) {
  o.max_blur_sigma_px = 0.0;
  o.max_noise_std = 0.0;
  const SyntheticBatch batch = generate(o, seed, std::move(bank));
  const double on_track = median_colour_error(batch, 0.0);
  const double off_track = median_colour_error(batch, 3.0);
  EXPECT_LT(on_track, 0.003);
  EXPECT_LT(on_track, 0.1 * off_track) << "on " << on_track << " off " << off_track;
}

TEST(Synthetic, ColourStaysConsistentAlongVisibleTracks) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  SyntheticOptions clean = small_options();
  clean.height = clean.width = 96;
  expect_sharp_colour_along_tracks(clean, 21);
  clean.max_blur_sigma_px = 0.0;
  clean.max_noise_std = 0.0;

  SyntheticOptions noisy = clean;  // the defaults: blur up to 1 px, noise up to 0.02
  noisy.max_blur_sigma_px = SyntheticOptions{}.max_blur_sigma_px;
  noisy.max_noise_std = SyntheticOptions{}.max_noise_std;
  const SyntheticBatch noisy_batch = generate(noisy, 21);
  const double noisy_on = median_colour_error(noisy_batch, 0.0);
  const double noisy_off = median_colour_error(noisy_batch, 3.0);
  // Measured: 0.005 on the track (noise and blur), 0.03 three pixels off it.
  EXPECT_LT(noisy_on, 0.012);
  EXPECT_LT(noisy_on, 0.35 * noisy_off) << "on " << noisy_on << " off " << noisy_off;
}

TEST(Synthetic, LimbsAndStretchedClipsKeepTheColourAlongTracks) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  expect_sharp_colour_along_tracks(realistic_options(), 22);
  expect_sharp_colour_along_tracks(articulated_options(), 23);
  SyntheticOptions attached = realistic_options();
  attached.attached_limb_fraction = 1.0;
  expect_sharp_colour_along_tracks(attached, 26);
}

// Temporal blur: each frame of a blurred clip is (1 - 2w) f_t + w (f_{t-1} + f_{t+1}) of the same clip rendered
// without it (the ends repeated); the ground truth does not change.
TEST(Synthetic, TemporalBlurBlendsNeighbouringFramesOnly) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  SyntheticOptions sharp = small_options();
  sharp.max_blur_sigma_px = 0.0;
  sharp.max_noise_std = 0.0;
  SyntheticOptions blurred = sharp;
  blurred.max_temporal_blur = 0.4;
  bool saw_blur = false;
  for (uint64_t seed = 30; seed < 36 && !saw_blur; ++seed) {
    const SyntheticBatch b = generate(blurred, seed);
    ASSERT_TRUE(b.temporal_blur.defined());
    ASSERT_EQ(b.temporal_blur.size(0), blurred.batch_size);
    EXPECT_GE(b.temporal_blur.min().item<double>(), 0.0);
    EXPECT_LE(b.temporal_blur.max().item<double>(), 0.4 + 1e-6);
    const SyntheticBatch s = generate_unblurred(blurred, seed);
    EXPECT_TRUE(at::equal(b.target_points_xy, s.target_points_xy));
    EXPECT_TRUE(at::equal(b.occluded, s.occluded));
    for (int64_t clip = 0; clip < blurred.batch_size; ++clip) {
      const double w = b.temporal_blur[clip].item<double>();
      const at::Tensor f = (s.video[clip] + 1.0) * 0.5;  // [T,H,W,3] in [0,1]
      const int64_t t_count = f.size(0);
      const at::Tensor previous = at::cat({f.narrow(0, 0, 1), f.narrow(0, 0, t_count - 1)}, 0);
      const at::Tensor next = at::cat({f.narrow(0, 1, t_count - 1), f.narrow(0, t_count - 1, 1)}, 0);
      const at::Tensor expected = (f * (1.0 - 2.0 * w) + (previous + next) * w).clamp(0.0, 1.0);
      EXPECT_LT(((b.video[clip] + 1.0) * 0.5 - expected).abs().max().item<double>(), 1e-5) << "clip " << clip;
      if (w > 0.05) {
        saw_blur = true;
        EXPECT_GT((b.video[clip] - s.video[clip]).abs().max().item<double>(), 0.01) << "a blurred clip changed";
      }
    }
  }
  EXPECT_TRUE(saw_blur) << "no clip of six batches drew a temporal blur above 0.05";
}

TEST(Synthetic, Uint8MatchesFloatAndOptionsAreChecked) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  SyntheticOptions o = small_options();
  const SyntheticBatch f = generate(o, 9);
  o.format = SyntheticVideoFormat::uint8;
  const SyntheticBatch u = generate(o, 9);
  ASSERT_EQ(u.video.scalar_type(), at::kByte);
  EXPECT_LE((u.video.to(at::kFloat) / 255.0 * 2.0 - 1.0 - f.video).abs().max().item<double>(), 1.0 / 255.0 + 1e-6);
  EXPECT_TRUE(at::equal(u.target_points_xy, f.target_points_xy));

  SyntheticOptions bad = small_options();
  bad.max_warp = 1.0;
  EXPECT_EQ(SyntheticVideoGenerator::create(bad, at::kCPU).status().code(), core::StatusCode::invalid_argument);
  bad = small_options();
  bad.batch_size = 0;
  EXPECT_EQ(SyntheticVideoGenerator::create(bad, at::kCPU).status().code(), core::StatusCode::invalid_argument);
  bad = small_options();
  bad.min_objects = 5;
  bad.max_objects = 4;
  EXPECT_FALSE(SyntheticVideoGenerator::create(bad, at::kCPU));
  bad = small_options();
  bad.limb_fraction = 1.5;
  EXPECT_NE(SyntheticVideoGenerator::create(bad, at::kCPU).status().message().find("limb_fraction"), std::string::npos);
  bad = small_options();
  bad.max_aspect_squeeze = 0.5;  // would shrink the camera window past the background texture
  EXPECT_NE(SyntheticVideoGenerator::create(bad, at::kCPU).status().message().find("max_aspect_squeeze"),
            std::string::npos);
  bad = small_options();
  bad.max_temporal_blur = 0.5;
  EXPECT_NE(SyntheticVideoGenerator::create(bad, at::kCPU).status().message().find("max_temporal_blur"),
            std::string::npos);
}

// ---- photo textures ----------------------------------------------------------------------------------------

// A bank of `count` seeded uint8 noise images [count, 3, side, side]: detail at every scale, like a photograph's.
std::shared_ptr<const TextureBank> noise_bank(int64_t count, int64_t side) {
  at::Generator g = at::make_generator<at::CPUGeneratorImpl>(77);
  const at::Tensor coarse = at::rand({count, 3, side / 8, side / 8}, g, at::TensorOptions(at::kFloat));
  const at::Tensor fine = at::rand({count, 3, side, side}, g, at::TensorOptions(at::kFloat));
  const at::Tensor image = at::upsample_bilinear2d(coarse, {side, side}, false) * 0.7 + fine * 0.3;
  auto bank = TextureBank::from_images(image.mul(255.0).round().to(at::kByte), test_device());
  EXPECT_TRUE(bank) << bank.status().message();
  return std::make_shared<const TextureBank>(*bank);
}

SyntheticOptions photo_options(double fraction) {
  SyntheticOptions o = small_options();
  o.photo_texture_fraction = fraction;
  return o;
}

// Photographs replace textures only: the scene, queries, ground truth and layer map of a seed are those of the
// procedural clip, the pixels are not; with the fraction at 0 a bank changes nothing at all.
TEST(Synthetic, PhotoTexturesChangeOnlyTheTextures) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  const auto bank = noise_bank(3, 64);
  const SyntheticBatch procedural = generate(small_options(), 31);
  const SyntheticBatch unused = generate(photo_options(0.0), 31, bank);
  EXPECT_TRUE(at::equal(unused.video, procedural.video));
  const SyntheticBatch photos = generate(photo_options(1.0), 31, bank);
  EXPECT_TRUE(at::equal(photos.query_points_tyx, procedural.query_points_tyx));
  EXPECT_TRUE(at::equal(photos.target_points_xy, procedural.target_points_xy));
  EXPECT_TRUE(at::equal(photos.occluded, procedural.occluded));
  EXPECT_TRUE(at::equal(photos.layer_ids, procedural.layer_ids));
  EXPECT_GT((photos.video - procedural.video).abs().mean().item<double>(), 0.05);
  const SyntheticBatch again = generate(photo_options(1.0), 31, bank);
  EXPECT_TRUE(at::equal(photos.video, again.video));
  const SyntheticBatch half = generate(photo_options(0.5), 31, bank);
  EXPECT_FALSE(at::equal(half.video, photos.video));
  EXPECT_FALSE(at::equal(half.video, procedural.video));
}

// With every layer a photograph of one flat colour, every pixel is that colour under the clip's known lighting:
// the frames show the bank's pixels, not a procedural texture.
TEST(Synthetic, PhotoTexturesShowTheBanksPixels) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  const std::array<uint8_t, 3> colour = {200, 30, 90};
  at::Tensor flat = at::empty({1, 3, 32, 32}, at::kByte);
  for (int64_t c = 0; c < 3; ++c) flat.select(1, c).fill_(colour[static_cast<size_t>(c)]);
  auto bank = TextureBank::from_images(flat, test_device());
  ASSERT_TRUE(bank) << bank.status().message();
  SyntheticOptions o = photo_options(1.0);
  o.max_blur_sigma_px = 0.0;
  o.max_noise_std = 0.0;
  const SyntheticBatch batch = generate(o, 32, std::make_shared<const TextureBank>(*bank));
  const at::Tensor video01 = (batch.video + 1.0) * 0.5;  // [B,T,H,W,3]
  const int64_t b_count = video01.size(0), t_count = video01.size(1);
  const at::Tensor unlit = (video01 - batch.lighting_bias.view({b_count, t_count, 1, 1, 3})) /
                           batch.lighting_gain.view({b_count, t_count, 1, 1, 3});
  for (int64_t c = 0; c < 3; ++c) {
    const double expected = colour[static_cast<size_t>(c)] / 255.0;
    EXPECT_LT((unlit.select(4, c) - expected).abs().max().item<double>(), 2e-3) << "channel " << c;
  }
}

TEST(Synthetic, PhotoTexturesKeepTheColourAlongTracks) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  SyntheticOptions o = photo_options(1.0);
  o.height = o.width = 96;
  expect_sharp_colour_along_tracks(o, 33, noise_bank(4, 128));
}

TEST(Synthetic, PhotoTextureOptionsAreChecked) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  SyntheticOptions o = photo_options(1.5);
  EXPECT_NE(SyntheticVideoGenerator::create(o, at::kCPU).status().message().find("photo_texture_fraction"),
            std::string::npos);
  o = photo_options(0.5);  // on, but neither a bank nor photographs
  EXPECT_EQ(SyntheticVideoGenerator::create(o, at::kCPU).status().code(), core::StatusCode::invalid_argument);
  o.photo_textures = {"no/such/folder"};
  const auto missing = SyntheticVideoGenerator::create(o, at::kCPU);
  EXPECT_EQ(missing.status().code(), core::StatusCode::not_found);
  EXPECT_NE(missing.status().message().find("no/such/folder"), std::string::npos) << missing.status().message();
  o.photo_textures.clear();
  o.photo_texture_fraction = 0.0;  // off: nothing is needed
  EXPECT_TRUE(SyntheticVideoGenerator::create(o, at::kCPU));
  if (at::hasCUDA()) {  // a bank on another device than the generator is refused, not copied on every batch
    auto cpu_bank = TextureBank::from_images(at::zeros({1, 3, 16, 16}, at::kByte), at::kCPU);
    ASSERT_TRUE(cpu_bank);
    o.photo_texture_fraction = 0.5;
    EXPECT_EQ(
        SyntheticVideoGenerator::create(o, at::Device(at::kCUDA, 0), std::make_shared<const TextureBank>(*cpu_bank))
            .status()
            .code(),
        core::StatusCode::invalid_argument);
  }
  EXPECT_FALSE(TextureBank::from_images(at::zeros({2, 3, 8, 8}, at::kByte), at::kCPU));     // too small
  EXPECT_FALSE(TextureBank::from_images(at::zeros({2, 3, 32, 16}, at::kByte), at::kCPU));   // not square
  EXPECT_FALSE(TextureBank::from_images(at::zeros({2, 3, 32, 32}, at::kFloat), at::kCPU));  // not uint8
}

// Real photographs (JPEG frames of ../shared/testdata): 854x480 images become two 64 px squares each, the left
// and the right end of the image scaled to 64 px high, each with the mean colour of that part of the image.
TEST(TextureBank, LoadsAndCutsPhotographs) {
  const std::filesystem::path folder =
      std::filesystem::path(TRACKSCOPE_SHARED_DIR) / "testdata/horsejump-high_480p/video";
  if (!std::filesystem::exists(folder)) GTEST_SKIP() << "no test data at " << folder << " (GPU machine)";
  const std::vector<std::filesystem::path> files = {folder / "00000.jpg", folder / "00030.jpg"};
  auto bank = TextureBank::load(files, 64, at::kCPU);
  ASSERT_TRUE(bank) << bank.status().message();
  ASSERT_EQ(bank->count(), 4);  // round(854 / 480) = 2 squares per image
  EXPECT_EQ(bank->side(), 64);
  EXPECT_EQ(bank->names()[1], "00000.jpg [2/2]");
  for (int64_t image = 0; image < 2; ++image) {
    auto bytes = core::still_image::read_file_bytes(files[static_cast<size_t>(image)]);
    ASSERT_TRUE(bytes);
    auto decoded = core::still_image::decode_still(*bytes, "frame");
    ASSERT_TRUE(decoded);
    const at::Tensor original = at::from_blob(decoded->rgb.data(), {480, 854, 3}, at::kByte).to(at::kFloat);
    // The squares span 480 of the 854 columns, from the left end and up to the right end: compare the column
    // profiles (mean grey per column, 64 bins) with those of the two ends of the original.
    auto profile = [](const at::Tensor& hwc) {  // float [H, W, 3] -> [64]
      return at::adaptive_avg_pool1d(hwc.mean(at::IntArrayRef{0, 2}).view({1, 1, -1}), {64}).view({64});
    };
    const at::Tensor left = profile(original.narrow(1, 0, 480));
    const at::Tensor right = profile(original.narrow(1, 854 - 480, 480));
    const at::Tensor first = profile(bank->images()[image * 2].permute({1, 2, 0}).to(at::kFloat));
    const at::Tensor second = profile(bank->images()[image * 2 + 1].permute({1, 2, 0}).to(at::kFloat));
    const double first_error = (first - left).abs().mean().item<double>();
    const double second_error = (second - right).abs().mean().item<double>();
    EXPECT_LT(first_error, 2.0);
    EXPECT_LT(second_error, 2.0);
    // The control: each square is much further from the other end's profile.
    EXPECT_GT((first - right).abs().mean().item<double>(), 3.0 * first_error + 2.0);
    EXPECT_GT((second - left).abs().mean().item<double>(), 3.0 * second_error + 2.0);
  }
  EXPECT_EQ(TextureBank::load({folder / "missing.jpg"}, 64, at::kCPU).status().code(), core::StatusCode::not_found);
  EXPECT_EQ(TextureBank::load(files, 8, at::kCPU).status().code(), core::StatusCode::invalid_argument);
  // An image too elongated to scale (2000x10 -> 102400x512) is refused, not passed on to the resizer.
  const std::filesystem::path strip = std::filesystem::temp_directory_path() / "trackscope_texture_strip.jpg";
  {
    const std::vector<uint8_t> pixels(2000 * 10 * 3, 128);
    auto bytes = core::encode_jpeg(pixels.data(), 2000, 10, 90);
    ASSERT_TRUE(bytes) << bytes.status().message();
    std::FILE* f = std::fopen(strip.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes->data(), 1, bytes->size(), f);
    std::fclose(f);
  }
  const auto elongated = TextureBank::load({strip}, 512, at::kCPU);
  EXPECT_EQ(elongated.status().code(), core::StatusCode::invalid_argument);
  EXPECT_NE(elongated.status().message().find("too elongated"), std::string::npos) << elongated.status().message();
  EXPECT_TRUE(TextureBank::load({strip}, 16, at::kCPU));  // 3200x16: fine at 16 px
  std::filesystem::remove(strip);
  // A damaged image is named.
  const std::filesystem::path broken = std::filesystem::temp_directory_path() / "trackscope_texture_broken.jpg";
  {
    std::FILE* f = std::fopen(broken.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("not a jpeg", f);
    std::fclose(f);
  }
  const auto damaged = TextureBank::load({broken}, 64, at::kCPU);
  EXPECT_FALSE(damaged);
  EXPECT_NE(damaged.status().message().find("trackscope_texture_broken.jpg"), std::string::npos)
      << damaged.status().message();
  std::filesystem::remove(broken);
}

// ---- augmentation ------------------------------------------------------------------------------------------

SyntheticBatch uint8_batch(uint64_t seed) {
  SyntheticOptions o = small_options();
  o.format = SyntheticVideoFormat::uint8;
  return generate(o, seed);
}

TEST(Augmentation, OffIsIdentitySeededAndOnEightBitLevels) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  const at::Tensor video = generate(small_options(), 40).video.to(test_device());
  AugmentationOptions off;
  EXPECT_FALSE(off.enabled());
  EXPECT_TRUE(at::equal(augment_video(video, off, 1), video));
  AugmentationOptions o;
  o.max_brightness_levels = 8.0;
  o.max_contrast = 0.2;
  o.max_gamma = 0.3;
  o.jpeg_probability = 0.5;
  ASSERT_TRUE(o.enabled());
  const at::Tensor a = augment_video(video, o, 7).cpu(), b = augment_video(video, o, 7).cpu();
  EXPECT_TRUE(at::equal(a, b));
  EXPECT_GT((augment_video(video, o, 8).cpu() - a).abs().max().item<double>(), 0.01);
  EXPECT_EQ(a.sizes(), video.sizes());
  EXPECT_GE(a.min().item<float>(), -1.0f);
  EXPECT_LE(a.max().item<float>(), 1.0f);
  const at::Tensor levels = (a + 1.0) * (255.0 / 2.0);
  EXPECT_LT((levels - levels.round()).abs().max().item<double>(), 1e-3);  // rounded to 8-bit levels
  // Brightness alone: each clip moves by one offset within +-8 levels (before rounding and clamping).
  AugmentationOptions shift;
  shift.max_brightness_levels = 8.0;
  const at::Tensor shifted = augment_video(video, shift, 3).cpu();
  for (int64_t clip = 0; clip < video.size(0); ++clip) {
    const at::Tensor difference = ((shifted[clip] - video[clip].cpu()) * (255.0 / 2.0));
    const at::Tensor inside = ((video[clip].cpu() + 1.0) * (255.0 / 2.0))
                                  .gt(10.0)
                                  .logical_and(((video[clip].cpu() + 1.0) * (255.0 / 2.0)).lt(245.0));
    const at::Tensor d = difference.masked_select(inside);
    EXPECT_LE(d.max().item<double>() - d.min().item<double>(), 1.0 + 1e-3) << "one offset per clip";
    EXPECT_LE(d.abs().max().item<double>(), 8.5 + 1e-3);
  }
  // Probability 0: nothing changes even with parts on.
  AugmentationOptions never = o;
  never.probability = 0.0;
  EXPECT_TRUE(at::equal(augment_video(video, never, 7), video));
}

// The colour gain: one gain per clip and channel within [1 - x, 1 + x] (channels differ), and turning it on leaves
// the other parameters' draws as they were (the brightness offset of a clip stays the same).
TEST(Augmentation, ColourGainPerClipAndChannel) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  const at::Tensor video = generate(small_options(), 41).video.to(test_device());
  AugmentationOptions o;
  o.max_colour_gain = 0.2;
  ASSERT_TRUE(o.enabled());
  const at::Tensor original = ((video.cpu() + 1.0) * 127.5).to(at::kDouble);
  const at::Tensor coloured = ((augment_video(video, o, 9).cpu() + 1.0) * 127.5).to(at::kDouble);
  int clips_with_distinct_channels = 0;
  for (int64_t clip = 0; clip < video.size(0); ++clip) {
    double lowest = 2.0, highest = 0.0;
    for (int64_t channel = 0; channel < 3; ++channel) {
      const at::Tensor before = original[clip].select(-1, channel).flatten();
      const at::Tensor after = coloured[clip].select(-1, channel).flatten();
      // Away from black (where rounding dominates the ratio) and from clipping at 255.
      const at::Tensor usable = before.gt(60.0).logical_and(after.lt(254.0));
      ASSERT_GT(usable.sum().item<int64_t>(), 100) << "clip " << clip << " channel " << channel;
      const at::Tensor ratio = after.masked_select(usable) / before.masked_select(usable);
      const double gain = ratio.median().item<double>();
      EXPECT_GE(gain, 0.8 - 0.01);
      EXPECT_LE(gain, 1.2 + 0.01);
      // One gain for the whole channel: every usable pixel's ratio within the 8-bit rounding of it.
      EXPECT_LT((ratio - gain).abs().max().item<double>(), 0.6 / 60.0 + 1e-6) << "clip " << clip;
      lowest = std::min(lowest, gain);
      highest = std::max(highest, gain);
    }
    if (highest - lowest > 0.01) ++clips_with_distinct_channels;
  }
  EXPECT_GT(clips_with_distinct_channels, 0) << "the channels' gains are drawn independently";
  // The brightness offset drawn with the colour gain on is the one drawn without it.
  AugmentationOptions shift;
  shift.max_brightness_levels = 8.0;
  AugmentationOptions shift_and_colour = shift;
  shift_and_colour.max_colour_gain = 1e-9;
  EXPECT_LT((augment_video(video, shift, 3) - augment_video(video, shift_and_colour, 3)).abs().max().item<double>(),
            1e-6);
  AugmentationOptions absurd;
  absurd.max_colour_gain = 0.9;
  EXPECT_FALSE(absurd.check().ok());
}

// The consistency loss's two copies: independent augmentations by default; with jpeg_pair the second is the first
// through the JPEG-like round trip at a per-clip quality from the augmentation's range, and nothing else.
TEST(Augmentation, ConsistencyCopiesIndependentOrJpegOfTheFirst) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  const at::Tensor video = generate(small_options(), 42).video.to(test_device());
  AugmentationOptions o;
  o.max_brightness_levels = 8.0;
  o.max_contrast = 0.2;
  o.jpeg_min_quality = 85;
  o.jpeg_max_quality = 95;
  const ConsistencyCopies independent = consistency_copies(video, o, /*jpeg_pair=*/false, 5, 6);
  EXPECT_TRUE(at::equal(independent.first, augment_video(video, o, 5)));
  EXPECT_TRUE(at::equal(independent.second, augment_video(video, o, 6)));

  const ConsistencyCopies paired = consistency_copies(video, o, /*jpeg_pair=*/true, 5, 6);
  EXPECT_TRUE(at::equal(paired.first, independent.first));
  ASSERT_EQ(paired.second.sizes(), video.sizes());
  const at::Tensor first_levels = ((paired.first + 1.0) * 127.5).round().cpu();
  const at::Tensor second_levels = ((paired.second + 1.0) * 127.5).cpu();
  EXPECT_LT((second_levels - second_levels.round()).abs().max().item<double>(), 1e-3);  // 8-bit levels
  // Each clip is the first copy compressed at one quality in [85, 95]: exactly jpeg_like at one of them.
  for (int64_t clip = 0; clip < video.size(0); ++clip) {
    const at::Tensor levels = first_levels.narrow(0, clip, 1).to(test_device());
    int matches = 0;
    for (int quality = 85; quality <= 95; ++quality) {
      const at::Tensor expected = jpeg_like(levels, at::full({1}, static_cast<double>(quality), at::kDouble)).cpu();
      if (at::equal(expected, second_levels.narrow(0, clip, 1).round())) ++matches;
    }
    EXPECT_GE(matches, 1) << "clip " << clip << " is not the first copy through jpeg_like at a quality in [85, 95]";
    // Compression changes the pixels, by less than the photometric augmentation between independent copies.
    const double change = (second_levels[clip] - first_levels[clip]).abs().mean().item<double>();
    EXPECT_GT(change, 0.1) << clip;
    EXPECT_LT(change, 8.0) << clip;
  }
  // Without any photometric augmentation the first copy is the clip itself, and the pair still differs.
  const ConsistencyCopies jpeg_only = consistency_copies(video, AugmentationOptions{}, true, 5, 6);
  EXPECT_TRUE(at::equal(jpeg_only.first, video));
  EXPECT_GT((jpeg_only.second - video).abs().mean().item<double>(), 1e-3);
}

// The JPEG emulation against libjpeg (core::encode_jpeg / decode_jpeg, PIL's settings) on rendered frames: it
// loses about what libjpeg loses, and lands close to libjpeg's pixels.
TEST(Augmentation, JpegLikeIsCloseToLibjpeg) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  EXPECT_EQ(ijg_quantisation_table(50, false)[0], 16);  // quality 50: the standard's table itself
  EXPECT_EQ(ijg_quantisation_table(90, false)[0], 3);   // (16 * 20 + 50) / 100
  EXPECT_EQ(ijg_quantisation_table(90, true)[63], 20);  // (99 * 20 + 50) / 100
  EXPECT_EQ(ijg_quantisation_table(100, true)[10], 1);
  EXPECT_EQ(ijg_quantisation_table(1, false)[63], 255);  // force_baseline
  const SyntheticBatch batch = uint8_batch(41);          // [2, 8, 64, 80, 3]
  const int64_t height = batch.video.size(2), width = batch.video.size(3);
  for (int quality : {90, 50}) {
    const at::Tensor emulated = jpeg_like(batch.video.to(test_device()).to(at::kFloat),
                                          at::full({2}, static_cast<double>(quality), at::kDouble))
                                    .cpu();
    double libjpeg_loss = 0.0, difference = 0.0;
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t t = 0; t < batch.video.size(1); ++t) {
        const at::Tensor frame = batch.video[b][t].contiguous();
        auto bytes =
            core::encode_jpeg(frame.data_ptr<uint8_t>(), static_cast<int>(width), static_cast<int>(height), quality);
        ASSERT_TRUE(bytes) << bytes.status().message();
        auto decoded = core::decode_jpeg(*bytes);
        ASSERT_TRUE(decoded) << decoded.status().message();
        const at::Tensor reference =
            at::from_blob(decoded->rgb.data(), {height, width, 3}, at::kByte).to(at::kFloat).clone();
        libjpeg_loss += (reference - frame.to(at::kFloat)).abs().mean().item<double>();
        difference += (reference - emulated[b][t]).abs().mean().item<double>();
      }
    }
    const double frames = 2.0 * static_cast<double>(batch.video.size(1));
    libjpeg_loss /= frames;
    difference /= frames;
    std::printf("quality %d: libjpeg changes the frames by %.2f grey levels, the emulation is %.2f from libjpeg\n",
                quality, libjpeg_loss, difference);
    EXPECT_GT(libjpeg_loss, 0.5) << "quality " << quality;
    // Measured: libjpeg changes these frames by 5.3 (q90) and 8.5 (q50) levels; the emulation is 1.0 and 0.8
    // levels from libjpeg's pixels (float DCT and rounding against libjpeg's integer islow DCT).
    EXPECT_LT(difference, 0.3 * libjpeg_loss) << "quality " << quality << ": libjpeg loses " << libjpeg_loss;
  }
}

TEST(Synthetic, CpuAndCudaAgree) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA in this LibTorch";
  const SyntheticOptions o = small_options();
  SyntheticBatch cpu = (*SyntheticVideoGenerator::create(o, at::kCPU))->generate(4);
  SyntheticBatch cuda = (*SyntheticVideoGenerator::create(o, at::Device(at::kCUDA, 0)))->generate(4);
  EXPECT_LT((cpu.video - cuda.video.cpu()).abs().mean().item<double>(), 1e-4);
  // A candidate exactly on a mask edge may pick another layer on the other device; everything else agrees.
  at::Tensor same_layer = cpu.point_layers.eq(cuda.point_layers.cpu());
  EXPECT_GT(same_layer.to(at::kDouble).mean().item<double>(), 0.99);
  at::Tensor track_difference = (cpu.target_points_xy - cuda.target_points_xy.cpu()).abs().amax({2, 3});
  EXPECT_LT(track_difference.masked_select(same_layer).max().item<double>(), 1e-2);
  EXPECT_GT(cpu.occluded.eq(cuda.occluded.cpu()).to(at::kDouble).mean().item<double>(), 0.99);
}

}  // namespace
}  // namespace trackscope::gpu::training
