// A reimplementation of the uint8 path of Pillow's Resample.c (see image_resize.h for what must match).
#include "core/video/image_resize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

namespace trackscope::core {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's: 8 result bits, 2 bits of headroom for negative lobes
constexpr int kMaxSide = 16384;

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x = x * std::numbers::pi;
  return std::sin(x) / x;
}

double filter_value(ResizeFilter filter, double x) {
  if (filter == ResizeFilter::lanczos) return (-3.0 <= x && x < 3.0) ? sinc(x) * sinc(x / 3) : 0.0;
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double filter_support(ResizeFilter filter) { return filter == ResizeFilter::lanczos ? 3.0 : 1.0; }

// The expressions and their order follow Pillow so that every double comes out bit-identical.
ImageResizer::Taps compute_taps(int input_size, int output_size, ResizeFilter filter) {
  ImageResizer::Taps taps;
  const double scale = static_cast<double>(static_cast<float>(input_size)) / output_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter_support(filter) * filter_scale;
  taps.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  taps.first.resize(static_cast<size_t>(output_size));
  taps.size.resize(static_cast<size_t>(output_size));
  taps.weights.assign(static_cast<size_t>(output_size) * static_cast<size_t>(taps.taps), 0);
  std::vector<double> weights(static_cast<size_t>(taps.taps));
  for (int out = 0; out < output_size; ++out) {
    const double center = (out + 0.5) * scale;
    const double inverse_scale = 1.0 / filter_scale;
    const int first = std::max(static_cast<int>(center - support + 0.5), 0);
    const int size = std::min(static_cast<int>(center + support + 0.5), input_size) - first;
    double sum = 0.0;
    for (int k = 0; k < size; ++k) {
      const double weight = filter_value(filter, (k + first - center + 0.5) * inverse_scale);
      weights[static_cast<size_t>(k)] = weight;
      sum += weight;
    }
    int32_t* fixed = taps.weights.data() + static_cast<size_t>(out) * static_cast<size_t>(taps.taps);
    for (int k = 0; k < size; ++k) {
      double weight = weights[static_cast<size_t>(k)];
      if (sum != 0.0) weight /= sum;
      fixed[k] = weight < 0 ? static_cast<int32_t>(-0.5 + weight * (1 << kPrecisionBits))
                            : static_cast<int32_t>(0.5 + weight * (1 << kPrecisionBits));
    }
    taps.first[static_cast<size_t>(out)] = first;
    taps.size[static_cast<size_t>(out)] = size;
  }
  return taps;
}

uint8_t clip8(int64_t accumulator) {
  return static_cast<uint8_t>(std::clamp<int64_t>(accumulator >> kPrecisionBits, 0, 255));
}

}  // namespace

ImageResizer::ImageResizer(int source_width, int source_height, int width, int height, ResizeFilter filter)
    : source_width_(source_width), source_height_(source_height), width_(width), height_(height) {
  TRACKSCOPE_CHECK(source_width >= 1 && source_height >= 1 && width >= 1 && height >= 1 && source_width <= kMaxSide &&
                       source_height <= kMaxSide && width <= kMaxSide && height <= kMaxSide,
                   fmt::format("resize sizes must be within 1..{}: {}x{} -> {}x{}", kMaxSide, source_width,
                               source_height, width, height));
  horizontal_ = compute_taps(source_width, width, filter);
  vertical_ = compute_taps(source_height, height, filter);
}

void ImageResizer::resize(const uint8_t* source_rgb, uint8_t* destination_rgb) const {
  const bool horizontal = width_ != source_width_;
  const bool vertical = height_ != source_height_;
  const size_t source_stride = static_cast<size_t>(source_width_) * 3;
  const size_t stride = static_cast<size_t>(width_) * 3;
  if (!horizontal && !vertical) {
    std::memcpy(destination_rgb, source_rgb, source_stride * static_cast<size_t>(source_height_));
    return;
  }
  constexpr int64_t kHalf = int64_t{1} << (kPrecisionBits - 1);

  // Horizontal pass over the rows the vertical pass reads, rounded to uint8 like Pillow's intermediate image.
  const int first_row = vertical_.first.front();
  const int end_row = vertical_.first.back() + vertical_.size.back();
  std::vector<uint8_t> intermediate;
  const uint8_t* rows = source_rgb;
  int row_offset = 0;
  if (horizontal) {
    const int row_count = end_row - first_row;
    uint8_t* out = destination_rgb;
    if (vertical) {
      intermediate.resize(stride * static_cast<size_t>(row_count));
      out = intermediate.data();
    }
    for (int row = 0; row < row_count; ++row) {
      const uint8_t* in = source_rgb + source_stride * static_cast<size_t>(row + first_row);
      uint8_t* line = out + stride * static_cast<size_t>(row);
      for (int x = 0; x < width_; ++x) {
        const int32_t* weights =
            horizontal_.weights.data() + static_cast<size_t>(x) * static_cast<size_t>(horizontal_.taps);
        const uint8_t* pixel = in + static_cast<size_t>(horizontal_.first[static_cast<size_t>(x)]) * 3;
        int64_t red = kHalf, green = kHalf, blue = kHalf;
        for (int k = 0; k < horizontal_.size[static_cast<size_t>(x)]; ++k, pixel += 3) {
          red += pixel[0] * int64_t{weights[k]};
          green += pixel[1] * int64_t{weights[k]};
          blue += pixel[2] * int64_t{weights[k]};
        }
        line[x * 3 + 0] = clip8(red);
        line[x * 3 + 1] = clip8(green);
        line[x * 3 + 2] = clip8(blue);
      }
    }
    if (!vertical) return;
    rows = intermediate.data();
    row_offset = first_row;
  }

  // Vertical pass, accumulated row by row (integer sums: the order does not change the result).
  const size_t row_bytes = stride;
  std::vector<int64_t> accumulator(row_bytes);
  for (int y = 0; y < height_; ++y) {
    std::fill(accumulator.begin(), accumulator.end(), kHalf);
    const int32_t* weights = vertical_.weights.data() + static_cast<size_t>(y) * static_cast<size_t>(vertical_.taps);
    const int first = vertical_.first[static_cast<size_t>(y)] - row_offset;
    for (int k = 0; k < vertical_.size[static_cast<size_t>(y)]; ++k) {
      const uint8_t* in = rows + row_bytes * static_cast<size_t>(first + k);
      const int64_t weight = weights[k];
      for (size_t i = 0; i < row_bytes; ++i) accumulator[i] += in[i] * weight;
    }
    uint8_t* out = destination_rgb + stride * static_cast<size_t>(y);
    for (size_t i = 0; i < row_bytes; ++i) out[i] = clip8(accumulator[i]);
  }
}

Expected<Frame> resize_image(const Frame& image, FrameSize size, ResizeFilter filter) {
  if (image.width < 1 || image.height < 1 || image.width > kMaxSide || image.height > kMaxSide ||
      image.rgb.size() != static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3) {
    return invalid_argument(
        fmt::format("not a packed RGB24 image: {}x{} with {} bytes", image.width, image.height, image.rgb.size()));
  }
  if (size.width < 1 || size.height < 1 || size.width > kMaxSide || size.height > kMaxSide) {
    return invalid_argument(
        fmt::format("resize target must be within 1..{} per side, got {}x{}", kMaxSide, size.width, size.height));
  }
  const ImageResizer resizer(image.width, image.height, size.width, size.height, filter);
  Frame out;
  out.index = image.index;
  out.pts_us = image.pts_us;
  out.width = size.width;
  out.height = size.height;
  out.rgb.resize(static_cast<size_t>(size.width) * static_cast<size_t>(size.height) * 3);
  resizer.resize(image.rgb.data(), out.rgb.data());
  return out;
}

}  // namespace trackscope::core
