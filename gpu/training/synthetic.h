#pragma once
// The synthetic training-video generator (torch side). Deterministic by seed and device-agnostic: the scene
// parameters come from an explicit CPU at::Generator seeded with the batch seed, and every bulk random field
// (texture noise, pixel noise) from a counter-based integer hash evaluated on the device, so the same seed
// gives the same clips on every device (up to float rounding) and never touches global RNG state.
//
//   Expected<std::unique_ptr<SyntheticVideoGenerator>> gen = SyntheticVideoGenerator::create(options, device);
//   SyntheticBatch batch = (*gen)->generate(/*seed=*/step);        // tensors on `device`
//   model(batch.video, batch.query_points_tyx) vs batch.target_points_xy / batch.occluded
//
// Coordinates: raster pixels of the generated video (pixel (i, j) covers [j, j+1) x [i, i+1)), like the model.
// Threads: generate() is const and keeps no mutable state; call it from the thread that owns the device.
// Failures inside generate() (device out of memory) surface as c10::Error; the trainer converts them.

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>

#include "core/status.h"
#include "gpu/training.h"
#include "gpu/training/texture_bank.h"

namespace trackscope::gpu::training {

struct SyntheticBatch {
  at::Tensor video;             // [B,T,H,W,3]: float32 in [-1,1], or uint8 (SyntheticVideoFormat)
  at::Tensor query_points_tyx;  // [B,N,3] float32: (frame, y, x); the point is visible there
  at::Tensor target_points_xy;  // [B,N,T,2] float32: (x, y) of the point on every frame (also when occluded,
                                // also outside the image)
  at::Tensor occluded;          // [B,N,T] bool: hidden by a layer above it, or outside [0,W) x [0,H)
  // Diagnostics (tests, debugging):
  at::Tensor point_layers;   // [B,N] int64: layer the point belongs to (0 = background, 1.. = objects by depth)
  at::Tensor layer_ids;      // [B,T,H,W] uint8: top-most layer at each pixel centre (render_layer_ids only)
  at::Tensor lighting_gain;  // [B,T,3] float32: frame = gain * unlit + bias, before blur and noise
  at::Tensor lighting_bias;  // [B,T,3] float32
  at::Tensor temporal_blur;  // [B] float32: weight of each neighbouring frame (0 = none)
};

class SyntheticVideoGenerator {
 public:
  /// invalid_argument when options.check() fails or the device is not usable by LibTorch. With
  /// options.photo_texture_fraction > 0 the photographs come from `bank` or, without one, are loaded from
  /// options.photo_textures (errors of TextureBank::load; invalid_argument when neither is given, or the bank is
  /// on another device).
  static core::Expected<std::unique_ptr<SyntheticVideoGenerator>> create(
      const SyntheticOptions& options, const at::Device& device, std::shared_ptr<const TextureBank> bank = nullptr);

  /// The batch for `seed`: the same seed and options give the same batch.
  SyntheticBatch generate(uint64_t seed) const;

  const SyntheticOptions& options() const { return options_; }
  const at::Device& device() const { return device_; }

 private:
  SyntheticVideoGenerator(const SyntheticOptions& options, const at::Device& device,
                          std::shared_ptr<const TextureBank> bank);

  SyntheticOptions options_;
  at::Device device_;
  std::shared_ptr<const TextureBank> bank_;  // null unless photo textures are on
};

/// A 64-bit seed for item `index` of a stream seeded with `base` (splitmix64 of both): the trainer's batch seeds.
uint64_t derive_seed(uint64_t base, uint64_t index);

}  // namespace trackscope::gpu::training
