// ImageResizer against values computed independently: Pillow's own output (reference hashes below), a direct
// floating-point evaluation of the separable filter, and invariants (constants, identity, antialiasing).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "core/video/image_resize.h"

namespace trackscope::core {
namespace {

// The test pattern, also used to make the Pillow references: R = (7x + 3y) mod 256, G = (x^2 + y) mod 256,
// B = 255 on a 4-pixel checkerboard.
Frame pattern(int width, int height) {
  Frame image;
  image.width = width;
  image.height = height;
  image.rgb.resize(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = image.rgb.data() + (static_cast<size_t>(y) * width + x) * 3;
      p[0] = static_cast<uint8_t>((x * 7 + y * 3) % 256);
      p[1] = static_cast<uint8_t>((x * x + y) % 256);
      p[2] = ((x / 4 + y / 4) % 2) != 0 ? 255 : 0;
    }
  }
  return image;
}

Frame noise(int width, int height, uint32_t seed) {
  Frame image;
  image.width = width;
  image.height = height;
  image.rgb.resize(static_cast<size_t>(width) * height * 3);
  uint32_t state = seed;
  for (uint8_t& value : image.rgb) {
    state = state * 1664525U + 1013904223U;
    value = static_cast<uint8_t>(state >> 24);
  }
  return image;
}

uint64_t fnv1a(const std::vector<uint8_t>& bytes) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (uint8_t b : bytes) {
    hash ^= b;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

Frame resized(const Frame& image, int width, int height, ResizeFilter filter) {
  Expected<Frame> out = resize_image(image, {width, height}, filter);
  EXPECT_TRUE(out) << out.status().message();
  return out ? *out : Frame{};
}

// Pillow 9.4.0, generated with:
//   Image.fromarray(pattern(w, h)).resize((W, H), resample=Image.LANCZOS or Image.BILINEAR)
// hashing the output bytes with FNV-1a 64 and reading two pixels ([row H/2, column W/3] and [0, 0]).
struct PillowReference {
  int source_width, source_height, width, height;
  ResizeFilter filter;
  uint64_t hash;
  std::array<int, 3> middle_pixel;
  std::array<int, 3> corner_pixel;
};

TEST(ImageResize, MatchesPillowBitForBit) {
  const PillowReference references[] = {
      {97, 61, 32, 20, ResizeFilter::lanczos, 0xa5e0adc504ce0a1eULL, {58, 126, 128}, {10, 2, 0}},
      {97, 61, 200, 150, ResizeFilter::lanczos, 0x4fd9bc0826c1de6ULL, {57, 69, 209}, {0, 0, 0}},
      {97, 61, 32, 20, ResizeFilter::bilinear, 0x3af8cd5a09a3eb31ULL, {58, 134, 128}, {13, 4, 3}},
      {1280, 720, 256, 256, ResizeFilter::lanczos, 0x77f55b8a93c40455ULL, {233, 158, 119}, {17, 6, 74}},
  };
  for (const PillowReference& reference : references) {
    const Frame out = resized(pattern(reference.source_width, reference.source_height), reference.width,
                              reference.height, reference.filter);
    const uint8_t* middle = out.pixel(reference.width / 3, reference.height / 2);
    const uint8_t* corner = out.pixel(0, 0);
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(middle[c], reference.middle_pixel[c]) << reference.width << "x" << reference.height;
      EXPECT_EQ(corner[c], reference.corner_pixel[c]) << reference.width << "x" << reference.height;
    }
    EXPECT_EQ(fnv1a(out.rgb), reference.hash) << reference.source_width << "x" << reference.source_height << " -> "
                                              << reference.width << "x" << reference.height;
  }
}

// The filter evaluated directly in double precision over the whole input (no fixed point, no truncated
// windows), horizontal pass first and rounded to uint8 like Pillow's intermediate image.
double lanczos3(double x) {
  auto sinc = [](double t) { return t == 0.0 ? 1.0 : std::sin(std::numbers::pi * t) / (std::numbers::pi * t); };
  return std::abs(x) < 3.0 ? sinc(x) * sinc(x / 3.0) : 0.0;
}

std::vector<double> direct_weights(int input_size, int output_size, int out) {
  const double scale = static_cast<double>(input_size) / output_size;
  const double widen = std::max(scale, 1.0);
  const double center = (out + 0.5) * scale;
  std::vector<double> weights(static_cast<size_t>(input_size));
  double sum = 0.0;
  for (int i = 0; i < input_size; ++i) {
    weights[static_cast<size_t>(i)] = lanczos3((i + 0.5 - center) / widen);
    sum += weights[static_cast<size_t>(i)];
  }
  for (double& w : weights) w /= sum;
  return weights;
}

TEST(ImageResize, AgreesWithADirectFloatingPointEvaluation) {
  const Frame image = noise(90, 70, 3);
  for (auto [width, height] : {std::pair{32, 24}, std::pair{256, 200}, std::pair{45, 70}}) {
    const Frame out = resized(image, width, height, ResizeFilter::lanczos);
    int max_difference = 0;
    for (int y = 0; y < height; y += 3) {
      const std::vector<double> wy = direct_weights(image.height, height, y);
      for (int x = 0; x < width; x += 5) {
        const std::vector<double> wx = direct_weights(image.width, width, x);
        for (int c = 0; c < 3; ++c) {
          double value = 0.0;
          for (int j = 0; j < image.height; ++j) {
            if (wy[static_cast<size_t>(j)] == 0.0) continue;
            double row = 0.0;
            for (int i = 0; i < image.width; ++i) row += wx[static_cast<size_t>(i)] * image.pixel(i, j)[c];
            value += wy[static_cast<size_t>(j)] * static_cast<double>(std::lround(std::clamp(row, 0.0, 255.0)));
          }
          const int expected = static_cast<int>(std::lround(std::clamp(value, 0.0, 255.0)));
          max_difference = std::max(max_difference, std::abs(expected - out.pixel(x, y)[c]));
        }
      }
    }
    // 22-bit weights and windows cut where the filter is nearly zero: at most one level apart.
    EXPECT_LE(max_difference, 1) << width << "x" << height;
  }
}

TEST(ImageResize, ConstantImagesStayConstant) {
  for (ResizeFilter filter : {ResizeFilter::lanczos, ResizeFilter::bilinear}) {
    for (auto [width, height] : {std::pair{7, 5}, std::pair{256, 256}, std::pair{31, 400}}) {
      Frame image;
      image.width = 123;
      image.height = 77;
      image.rgb.assign(static_cast<size_t>(123) * 77 * 3, 0);
      for (size_t i = 0; i < image.rgb.size(); i += 3) {
        image.rgb[i] = 17;
        image.rgb[i + 1] = 200;
        image.rgb[i + 2] = 255;
      }
      const Frame out = resized(image, width, height, filter);
      for (size_t i = 0; i < out.rgb.size(); i += 3) {
        ASSERT_EQ(out.rgb[i], 17);
        ASSERT_EQ(out.rgb[i + 1], 200);
        ASSERT_EQ(out.rgb[i + 2], 255);
      }
    }
  }
}

TEST(ImageResize, SameSizeIsACopy) {
  const Frame image = noise(64, 48, 9);
  const Frame out = resized(image, 64, 48, ResizeFilter::lanczos);
  EXPECT_TRUE(out.rgb == image.rgb);
}

TEST(ImageResize, DownscalingAntialiasesACheckerboard) {
  Frame board;
  board.width = 200;
  board.height = 120;
  board.rgb.resize(static_cast<size_t>(200) * 120 * 3);
  for (int y = 0; y < 120; ++y) {
    for (int x = 0; x < 200; ++x)
      std::fill_n(board.rgb.data() + (static_cast<size_t>(y) * 200 + x) * 3, 3, ((x + y) % 2) != 0 ? 255 : 0);
  }
  for (ResizeFilter filter : {ResizeFilter::lanczos, ResizeFilter::bilinear}) {
    for (auto [width, height] : {std::pair{100, 60}, std::pair{64, 64}, std::pair{37, 23}}) {
      const Frame out = resized(board, width, height, filter);
      for (int y = 2; y < height - 2; ++y) {
        for (int x = 2; x < width - 2; ++x) {
          EXPECT_NEAR(out.pixel(x, y)[0], 127.5, 8.0)
              << "aliasing at " << x << "," << y << " for " << width << "x" << height;
        }
      }
    }
  }
}

TEST(ImageResize, UpscalingInterpolatesBetweenSamples) {
  // Bilinear upscaling of a 2-pixel ramp by 4: the middle outputs lie between the two values, in order.
  Frame ramp;
  ramp.width = 2;
  ramp.height = 1;
  ramp.rgb = {0, 0, 0, 200, 200, 200};
  const Frame out = resized(ramp, 8, 1, ResizeFilter::bilinear);
  for (int x = 1; x < 8; ++x) EXPECT_GE(out.pixel(x, 0)[0], out.pixel(x - 1, 0)[0]);
  EXPECT_EQ(out.pixel(0, 0)[0], 0);
  EXPECT_EQ(out.pixel(7, 0)[0], 200);
  // Pillow's bilinear weights for output 3 of 8 from 2: centre 0.875, samples at 0.5 and 1.5 -> 0.625/0.375.
  EXPECT_EQ(out.pixel(3, 0)[0], 75);
}

TEST(ImageResize, TapsAreNormalised) {
  const ImageResizer resizer(1280, 720, 256, 256, ResizeFilter::lanczos);
  const ImageResizer::Taps& taps = resizer.horizontal_taps();
  EXPECT_EQ(taps.taps, 2 * 15 + 1) << "support 3 widened by the scale 5";
  for (size_t i = 0; i < taps.first.size(); ++i) {
    int64_t sum = 0;
    for (int k = 0; k < taps.size[i]; ++k)
      sum += taps.weights[i * static_cast<size_t>(taps.taps) + static_cast<size_t>(k)];
    EXPECT_NEAR(static_cast<double>(sum), 1 << 22, taps.taps) << "output column " << i;
  }
}

TEST(ImageResize, RejectsBadInput) {
  Frame broken;
  broken.width = 10;
  broken.height = 10;
  broken.rgb.resize(7);
  EXPECT_EQ(resize_image(broken, {5, 5}, ResizeFilter::lanczos).status().code(), StatusCode::invalid_argument);
  const Frame image = noise(8, 8, 1);
  EXPECT_EQ(resize_image(image, {0, 5}, ResizeFilter::lanczos).status().code(), StatusCode::invalid_argument);
  EXPECT_EQ(resize_image(image, {5, 20000}, ResizeFilter::bilinear).status().code(), StatusCode::invalid_argument);
  EXPECT_THROW(ImageResizer(0, 5, 5, 5, ResizeFilter::lanczos), InvariantError);
}

}  // namespace
}  // namespace trackscope::core
