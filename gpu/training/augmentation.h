#pragma once
// Photometric and compression augmentation of training clips, on the device of the video (torch side): per clip
// a gamma, a gain per colour channel (white balance), a contrast gain about mid-grey and a brightness offset,
// rounding to 8-bit levels, and optionally a JPEG-like round trip (colour conversion to YCbCr, 4:2:0 chroma, 8x8
// DCT quantised with the IJG tables of a per-clip quality, inverse, triangle-filter chroma upsampling, rounding).
// The JPEG is an emulation in float arithmetic of what libjpeg does (not bit-exact;
// core/tracking/evaluation_perturbation.h has the real codec for the evaluation): it gives the same kind of
// blocking, ringing and chroma loss, for every clip of a batch in a few batched matrix products.
//
//   at::Tensor augmented = augment_video(video, options.augmentation, derive_seed(batch_seed, 1));
//   at::Tensor compressed = jpeg_like(video01_255, at::full({B}, 90.0));
//
// Determinism: every random number comes from a CPU generator seeded with `seed` (never the global one), so a
// seed gives the same augmentation on every device (up to float rounding). Threads: the caller's.

#include <ATen/ATen.h>

#include <cstdint>

#include "gpu/training.h"

namespace trackscope::gpu::training {

/// video [B,T,H,W,3] float in [-1, 1] (the model's input) -> an augmented copy, same shape and range. Clips not
/// drawn for augmentation (options.probability) are returned unchanged; with options.enabled() false the video
/// itself is returned.
at::Tensor augment_video(const at::Tensor& video, const AugmentationOptions& options, uint64_t seed);

/// The two copies of each clip that the consistency loss compares: first = augment_video(video, options, seed_first);
/// second = augment_video(video, options, seed_second), or with jpeg_pair first itself (rounded to 8-bit levels)
/// through jpeg_like at a quality per clip uniform in [options.jpeg_min_quality, options.jpeg_max_quality] drawn
/// from seed_second, so that the copies differ by compression alone. Both [B,T,H,W,3] in [-1, 1].
struct ConsistencyCopies {
  at::Tensor first, second;
};
ConsistencyCopies consistency_copies(const at::Tensor& video, const AugmentationOptions& options, bool jpeg_pair,
                                     uint64_t seed_first, uint64_t seed_second);

/// The JPEG-like round trip of rgb [B,T,H,W,3] float in [0, 255] (any H, W) at quality[b] (a [B] float tensor,
/// IJG scale 1..100) per clip: the result is rounded to integers in [0, 255].
at::Tensor jpeg_like(const at::Tensor& rgb255, const at::Tensor& quality);

/// The IJG quantisation table (jpeg_set_quality, force_baseline) of `quality` for luminance (false) or
/// chrominance (true), row-major 8x8 in natural order.
std::array<int, 64> ijg_quantisation_table(int quality, bool chroma);

}  // namespace trackscope::gpu::training
