#include "gpu/training/augmentation.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

namespace trackscope::gpu::training {
namespace {

// The example tables of the JPEG standard (Annex K), natural order, as libjpeg's jcparam.c.
constexpr std::array<int, 64> kLuminance = {16, 11, 10, 16, 24,  40,  51,  61,  12, 12, 14, 19, 26,  58,  60,  55,
                                            14, 13, 16, 24, 40,  57,  69,  56,  14, 17, 22, 29, 51,  87,  80,  62,
                                            18, 22, 37, 56, 68,  109, 103, 77,  24, 35, 55, 64, 81,  104, 113, 92,
                                            49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99};
constexpr std::array<int, 64> kChrominance = {17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99,
                                              24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99, 99, 99, 99, 99, 99,
                                              99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
                                              99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99};

// The orthonormal 8-point DCT-II matrix: JPEG's FDCT coefficients are D X D^T.
at::Tensor dct_matrix(const at::TensorOptions& options) {
  std::array<float, 64> d{};
  for (int k = 0; k < 8; ++k) {
    for (int n = 0; n < 8; ++n) {
      const double scale = k == 0 ? std::sqrt(1.0 / 8.0) : std::sqrt(2.0 / 8.0);
      d[static_cast<size_t>(k * 8 + n)] =
          static_cast<float>(scale * std::cos(std::numbers::pi * (2.0 * n + 1.0) * k / 16.0));
    }
  }
  return at::tensor(at::ArrayRef<float>(d.data(), d.size()), at::TensorOptions(at::kFloat)).view({8, 8}).to(options);
}

// Qualities (IJG scale) uniform over the integers of [jpeg_min_quality, jpeg_max_quality], from draws u in [0, 1).
at::Tensor jpeg_qualities(const at::Tensor& u, const AugmentationOptions& options) {
  const double span = static_cast<double>(options.jpeg_max_quality - options.jpeg_min_quality + 1);
  return (u * span).floor_().add_(options.jpeg_min_quality).clamp_max_(options.jpeg_max_quality);
}

// Tables [B,8,8] for each clip's quality.
at::Tensor quantisation_tables(const at::Tensor& quality, bool chroma, const at::TensorOptions& options) {
  at::Tensor q = quality.to(at::kCPU, at::kDouble).contiguous();
  std::vector<float> tables;
  for (int64_t b = 0; b < q.numel(); ++b) {
    const std::array<int, 64> table =
        ijg_quantisation_table(static_cast<int>(std::lround(q[b].item<double>())), chroma);
    tables.insert(tables.end(), table.begin(), table.end());
  }
  return at::tensor(tables, at::TensorOptions(at::kFloat)).view({q.numel(), 8, 8}).to(options);
}

// Quantises the 8x8 blocks of planes [N,C,H,W] (H, W multiples of 8, level-shifted) with tables [N,8,8].
at::Tensor quantise_blocks(const at::Tensor& planes, const at::Tensor& tables, const at::Tensor& dct) {
  const int64_t n = planes.size(0), c = planes.size(1), h = planes.size(2), w = planes.size(3);
  at::Tensor blocks = planes.reshape({n, c, h / 8, 8, w / 8, 8}).permute({0, 1, 2, 4, 3, 5});  // [N,C,hb,wb,8,8]
  at::Tensor coefficients = at::matmul(at::matmul(dct, blocks), dct.t());
  at::Tensor q = tables.view({n, 1, 1, 1, 8, 8});
  coefficients = at::round(coefficients / q) * q;
  blocks = at::matmul(at::matmul(dct.t(), coefficients), dct);
  return blocks.permute({0, 1, 2, 4, 3, 5}).reshape({n, c, h, w});
}

}  // namespace

std::array<int, 64> ijg_quantisation_table(int quality, bool chroma) {
  quality = std::clamp(quality, 1, 100);
  const int scale = quality < 50 ? 5000 / quality : 200 - quality * 2;  // jpeg_quality_scaling
  std::array<int, 64> table{};
  const std::array<int, 64>& basic = chroma ? kChrominance : kLuminance;
  for (size_t i = 0; i < 64; ++i) table[i] = std::clamp((basic[i] * scale + 50) / 100, 1, 255);
  return table;
}

at::Tensor jpeg_like(const at::Tensor& rgb255, const at::Tensor& quality) {
  const int64_t b_count = rgb255.size(0), t_count = rgb255.size(1), height = rgb255.size(2), width = rgb255.size(3);
  const int64_t n = b_count * t_count;
  const int64_t padded_h = (height + 15) / 16 * 16, padded_w = (width + 15) / 16 * 16;
  const auto options = rgb255.options().dtype(at::kFloat);
  at::Tensor x = rgb255.to(at::kFloat).reshape({n, height, width, 3}).permute({0, 3, 1, 2});  // [N,3,H,W]
  // libjpeg fills partial MCUs by repeating the last column and row.
  if (padded_h != height || padded_w != width)
    x = at::replication_pad2d(x, {0, padded_w - width, 0, padded_h - height});
  at::Tensor r = x.select(1, 0), g = x.select(1, 1), b = x.select(1, 2);
  // libjpeg keeps every stage in 8-bit samples: YCbCr rounded after the conversion, chroma after the 2x2 mean,
  // every plane after the inverse DCT.
  at::Tensor y = (0.299 * r + 0.587 * g + 0.114 * b).round_().unsqueeze(1);
  at::Tensor cb = (-0.168736 * r - 0.331264 * g + 0.5 * b + 128.0).round_();
  at::Tensor cr = (0.5 * r - 0.418688 * g - 0.081312 * b + 128.0).round_();
  at::Tensor chroma = at::avg_pool2d(at::stack({cb, cr}, 1), {2, 2}).round_();  // 4:2:0
  const at::Tensor dct = dct_matrix(options);
  const at::Tensor per_frame_quality = quality.to(at::kCPU, at::kDouble).repeat_interleave(t_count);
  y = (quantise_blocks(y - 128.0, quantisation_tables(per_frame_quality, false, options), dct) + 128.0)
          .round_()
          .clamp_(0.0, 255.0);
  chroma = (quantise_blocks(chroma - 128.0, quantisation_tables(per_frame_quality, true, options), dct) + 128.0)
               .round_()
               .clamp_(0.0, 255.0);
  // Fancy upsampling: the 3/4, 1/4 triangle filter, which is bilinear interpolation at half-pixel centres.
  chroma = at::upsample_bilinear2d(chroma, at::IntArrayRef{padded_h, padded_w}, /*align_corners=*/false);
  cb = chroma.select(1, 0) - 128.0;
  cr = chroma.select(1, 1) - 128.0;
  y = y.squeeze(1);
  at::Tensor out = at::stack({y + 1.402 * cr, y - 0.344136 * cb - 0.714136 * cr, y + 1.772 * cb}, 1);
  out = out.narrow(2, 0, height).narrow(3, 0, width).round_().clamp_(0.0, 255.0);
  return out.permute({0, 2, 3, 1}).reshape({b_count, t_count, height, width, 3}).contiguous();
}

at::Tensor augment_video(const at::Tensor& video, const AugmentationOptions& options, uint64_t seed) {
  if (!options.enabled()) return video;
  const int64_t b_count = video.size(0);
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  // The same draws for every option set: a seed means the same clips' parameters whatever is turned on.
  at::Tensor u = at::rand({b_count, 6}, generator, at::TensorOptions(at::kDouble));
  auto column = [&](int64_t i) { return u.select(1, i); };
  at::Tensor apply = column(0) < options.probability;
  at::Tensor gamma = at::exp((column(1) * 2.0 - 1.0) * options.max_gamma);
  at::Tensor contrast = 1.0 + (column(2) * 2.0 - 1.0) * options.max_contrast;
  at::Tensor brightness = (column(3) * 2.0 - 1.0) * (options.max_brightness_levels / 255.0);
  at::Tensor compress = at::logical_and(apply, column(4) < options.jpeg_probability);
  at::Tensor quality = jpeg_qualities(column(5), options);
  // Drawn after the columns above so that turning the colour gain on leaves every other parameter as it was.
  at::Tensor colour_gain =
      1.0 + (at::rand({b_count, 3}, generator, at::TensorOptions(at::kDouble)) * 2.0 - 1.0) * options.max_colour_gain;

  // [B] -> [B,1,1,1,1] (one value per clip), [B,3] -> [B,1,1,1,3] (one per clip and channel).
  const auto shape = [&](const at::Tensor& per_clip) {
    return per_clip.to(video.options()).view({b_count, 1, 1, 1, -1});
  };
  at::Tensor v = ((video + 1.0) * 0.5).clamp(0.0, 1.0);
  v = v.pow(shape(gamma));
  if (options.max_colour_gain > 0.0) v = v * shape(colour_gain);
  v = ((v - 0.5) * shape(contrast) + 0.5 + shape(brightness)).clamp_(0.0, 1.0).mul_(255.0).round_();
  if (compress.any().item<bool>()) {
    const at::Tensor chosen = compress.nonzero().squeeze(1);
    const at::Tensor on_device = chosen.to(video.device());
    v.index_copy_(0, on_device, jpeg_like(v.index_select(0, on_device), quality.index_select(0, chosen)));
  }
  const at::Tensor augmented = v.mul_(2.0 / 255.0).sub_(1.0);
  return at::where(shape(apply.to(at::kFloat)) > 0.5, augmented, video);
}

ConsistencyCopies consistency_copies(const at::Tensor& video, const AugmentationOptions& options, bool jpeg_pair,
                                     uint64_t seed_first, uint64_t seed_second) {
  ConsistencyCopies copies;
  copies.first = augment_video(video, options, seed_first);
  if (!jpeg_pair) {
    copies.second = augment_video(video, options, seed_second);
    return copies;
  }
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed_second);
  const at::Tensor quality =
      jpeg_qualities(at::rand({video.size(0)}, generator, at::TensorOptions(at::kDouble)), options);
  const at::Tensor levels = ((copies.first + 1.0) * 127.5).round_().clamp_(0.0, 255.0);
  copies.second = jpeg_like(levels, quality).mul_(2.0 / 255.0).sub_(1.0);
  return copies;
}

}  // namespace trackscope::gpu::training
