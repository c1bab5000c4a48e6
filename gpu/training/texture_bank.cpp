// TextureBank: decoding, scaling and cutting photographs into square textures (contract in texture_bank.h).
#include "gpu/training/texture_bank.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <cmath>
#include <cstring>
#include <system_error>
#include <utility>

#include "core/io/file_names.h"
#include "core/video/image_resize.h"
#include "core/video/still_image.h"

namespace trackscope::gpu::training {
namespace {

constexpr int kMaxScaledSide = 16384;  // core::ImageResizer's largest side

// The image files of `sources`: files as given, folders as their image files in name order.
core::Expected<std::vector<std::filesystem::path>> list_files(const std::vector<std::filesystem::path>& sources) {
  std::vector<std::filesystem::path> files;
  for (const std::filesystem::path& source : sources) {
    std::error_code error;
    if (std::filesystem::is_directory(source, error)) {
      static constexpr std::array<std::string_view, 3> kEndings = {".jpg", ".jpeg", ".png"};  // decode_still's
      core::Expected<std::vector<std::filesystem::path>> found = core::io::list_files_ending_with(source, kEndings);
      if (!found) return found.status();
      if (found->empty()) return core::not_found(fmt::format("no JPEG or PNG images in '{}'", source.string()));
      files.insert(files.end(), found->begin(), found->end());
    } else if (std::filesystem::is_regular_file(source, error)) {
      files.push_back(source);
    } else {
      return core::not_found(fmt::format("texture image '{}' does not exist", source.string()));
    }
  }
  if (files.empty()) return core::not_found("no texture images given");
  return files;
}

// Offsets of `count` squares of `side` along a length, evenly spaced from one end to the other.
std::vector<int> square_offsets(int length, int side, int count) {
  std::vector<int> offsets;
  for (int i = 0; i < count; ++i) {
    offsets.push_back(count == 1
                          ? (length - side) / 2
                          : static_cast<int>(std::lround(static_cast<double>(i) * (length - side) / (count - 1))));
  }
  return offsets;
}

}  // namespace

TextureBank::TextureBank(at::Tensor images, std::vector<std::string> names)
    : images_(std::move(images)), names_(std::move(names)) {}

core::Expected<TextureBank> TextureBank::load(const std::vector<std::filesystem::path>& sources, int64_t side,
                                              const at::Device& device) {
  if (side < 16 || side > 4096) return core::invalid_argument(fmt::format("texture side {} not in 16..4096", side));
  core::Expected<std::vector<std::filesystem::path>> files = list_files(sources);
  if (!files) return files.status();
  const auto s = static_cast<int>(side);
  const auto square_bytes = static_cast<size_t>(side * side * 3);
  std::vector<uint8_t> squares;  // [K, S, S, 3]
  std::vector<std::string> names;
  std::vector<uint8_t> scaled;
  for (const std::filesystem::path& file : *files) {
    core::Expected<std::vector<uint8_t>> bytes = core::still_image::read_file_bytes(file);
    if (!bytes) return bytes.status().with_context(file.string());
    core::Expected<core::still_image::StillImage> image =
        core::still_image::decode_still(*bytes, file.filename().string());
    if (!image) return image.status().with_context(file.string());
    const bool wide = image->width >= image->height;
    const int short_side = wide ? image->height : image->width;
    const int long_side = wide ? image->width : image->height;
    const double scaled_long_px = static_cast<double>(long_side) * s / short_side;
    if (scaled_long_px > kMaxScaledSide) {
      return core::invalid_argument(
          fmt::format("'{}' ({}x{}) is too elongated for {} px squares: its long side would "
                      "be {:.0f} px (at most {})",
                      file.string(), image->width, image->height, side, scaled_long_px, kMaxScaledSide));
    }
    const int scaled_long = std::max(s, static_cast<int>(std::lround(scaled_long_px)));
    const int width = wide ? scaled_long : s, height = wide ? s : scaled_long;
    const core::ImageResizer resizer(image->width, image->height, width, height, core::ResizeFilter::lanczos);
    scaled.resize(static_cast<size_t>(width) * height * 3);
    resizer.resize(image->rgb.data(), scaled.data());
    const int count = std::max(1, static_cast<int>(std::lround(static_cast<double>(long_side) / short_side)));
    const std::vector<int> offsets = square_offsets(scaled_long, s, count);
    if (static_cast<int64_t>(squares.size() + square_bytes * offsets.size()) > kMaxBankBytes) {
      return core::invalid_argument(fmt::format("the texture images exceed {} GiB as {}x{} squares (at '{}')",
                                                kMaxBankBytes >> 30, side, side, file.string()));
    }
    for (size_t k = 0; k < offsets.size(); ++k) {
      const int x0 = wide ? offsets[k] : 0, y0 = wide ? 0 : offsets[k];
      const size_t first = squares.size();
      squares.resize(first + square_bytes);
      for (int y = 0; y < s; ++y) {
        std::memcpy(squares.data() + first + static_cast<size_t>(y) * s * 3,
                    scaled.data() + (static_cast<size_t>(y0 + y) * width + x0) * 3, static_cast<size_t>(s) * 3);
      }
      names.push_back(fmt::format("{} [{}/{}]", file.filename().string(), k + 1, offsets.size()));
    }
  }
  const auto count = static_cast<int64_t>(names.size());
  at::Tensor images = at::from_blob(squares.data(), {count, side, side, 3}, at::kByte).permute({0, 3, 1, 2});
  return TextureBank(images.clone(at::MemoryFormat::Contiguous).to(device), std::move(names));
}

core::Expected<TextureBank> TextureBank::from_images(const at::Tensor& images_u8, const at::Device& device) {
  if (images_u8.dim() != 4 || images_u8.scalar_type() != at::kByte || images_u8.size(0) < 1 || images_u8.size(1) != 3 ||
      images_u8.size(2) < 16 || images_u8.size(2) != images_u8.size(3)) {
    return core::invalid_argument(fmt::format("a texture bank needs uint8 images [K >= 1, 3, S, S], S >= 16"));
  }
  std::vector<std::string> names;
  for (int64_t i = 0; i < images_u8.size(0); ++i) names.push_back(fmt::format("image {}", i));
  return TextureBank(images_u8.contiguous().to(device), std::move(names));
}

}  // namespace trackscope::gpu::training
