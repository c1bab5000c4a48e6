#pragma once
// TextureBank: photographs as textures for the synthetic generator (SyntheticOptions::photo_texture_fraction).
// Image files (JPEG or PNG; a folder stands for every such file in it, in name order) are decoded as image
// sequences decode them (core/video/still_image.h), scaled with Lanczos so that the short side is `side` px, and
// cut into side x side squares along the long side (round(long / short) of them, evenly spaced, overlapping
// where the length does not divide), kept on the device as uint8 [K, 3, side, side].
//
//   Expected<TextureBank> bank = TextureBank::load({"textures/"}, 512, device);
//   auto generator = SyntheticVideoGenerator::create(options, device, std::make_shared<TextureBank>(*bank));
//
// The generator crops, rotates, flips and scales them per layer (docs/training.md "Photo textures").
// Errors: not_found (a missing file or folder, a folder without images), corrupt_data / unsupported from
// decoding (the file is named), invalid_argument (side out of range, more than kMaxBankBytes of squares, an
// image so elongated that its long side would exceed 16384 px once scaled).
// Threads: load() and from_images() are independent; a bank is immutable once made.

#include <ATen/ATen.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"

namespace trackscope::gpu::training {

class TextureBank {
 public:
  static constexpr int64_t kMaxBankBytes = int64_t{2} << 30;  // 2 GiB of uint8 squares

  /// Decodes, scales and cuts the images of `sources` (files or folders) into squares of `side` px (16..4096).
  static core::Expected<TextureBank> load(const std::vector<std::filesystem::path>& sources, int64_t side,
                                          const at::Device& device);
  /// A bank of images already decoded: uint8 [K, 3, S, S], K >= 1, S >= 16 (copied to `device`).
  static core::Expected<TextureBank> from_images(const at::Tensor& images_u8, const at::Device& device);

  const at::Tensor& images() const { return images_; }  // uint8 [K, 3, side, side] on the device
  int64_t count() const { return images_.size(0); }
  int64_t side() const { return images_.size(2); }
  /// Where each square came from ("name.jpg [2/3]"), for logs.
  const std::vector<std::string>& names() const { return names_; }

 private:
  TextureBank(at::Tensor images, std::vector<std::string> names);

  at::Tensor images_;
  std::vector<std::string> names_;
};

}  // namespace trackscope::gpu::training
