// The pipelined tensor-core local_corr4d kernel (gpu/ops/cuda/local_corr4d_mma_pipelined_kernel.cuh: float32 as 3xTF32,
// bf16/fp16 on m16n8k16), its exact source, run on the CPU through tests/gpu/cuda_emulation.h (a thread per CUDA
// thread, mma.sync m16n8k8 / m16n8k16 from the PTX fragment tables,
// cp.async with in-flight tracking, shared-memory race and bounds checks) against the specification in double:
// grid_sample (bilinear, zeros padding, align_corners=False) of the 7x7 neighbourhood, then the dot products with the
// supports (docs/locotrack-spec.md §2.5 steps 1-2). Points inside, across the borders, on exact integers and halves,
// far away and not finite; strided feature grids; a partial frame tile; padded rows. The CUDA test (gpu/ops_cuda,
// LocalCorr4dCuda) checks the compiled kernel against the CPU implementation on a GPU. Torch-free.
#include "cuda_emulation.h"  // first: the kernel header takes its primitives from it

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/ops/cuda/local_corr4d_mma_pipelined_kernel.cuh"

namespace trackscope::test {
namespace {

namespace corr = gpu::ops::cuda::corr_mma;
namespace cuda = gpu::ops::cuda;
namespace emu = cuda_emulation;

uint64_t test_seed() { return cuda_emulation::test_seed("corr emulation"); }

struct Case {
  int queries, frames, height, width, channels;
  int64_t pitch;  // corr row pitch (2401 or the padded 2408)
  int row_gap;    // extra floats per feature row (a strided grid), a multiple of 4
};

// Bilinear sample of one frame at continuous (x, y) (array index v - 0.5) with zeros outside, in double.
double sample(const std::vector<float>& f, const Case& c, int64_t stride_frame, int64_t stride_row, int frame, double x,
              double y, int channel) {
  const double ix = x - 0.5, iy = y - 0.5;
  const double x0 = std::floor(ix), y0 = std::floor(iy);
  const double fx = ix - x0, fy = iy - y0;
  double value = 0.0;
  for (int dy = 0; dy < 2; ++dy) {
    for (int dx = 0; dx < 2; ++dx) {
      const double cx = x0 + dx, cy = y0 + dy;
      if (cx < 0 || cy < 0 || cx >= c.width || cy >= c.height) continue;
      const double weight = (dx ? fx : 1.0 - fx) * (dy ? fy : 1.0 - fy);
      value += weight * f[static_cast<size_t>(frame * stride_frame + static_cast<int64_t>(cy) * stride_row +
                                              static_cast<int64_t>(cx) * c.channels + channel)];
    }
  }
  return value;
}

// Element storage of the features / supports and of the output.
template <class Tag>
using Stored = std::conditional_t<std::is_same_v<Tag, float>, float, uint16_t>;
template <class Tag>
Stored<Tag> store_as(float v) {
  if constexpr (std::is_same_v<Tag, float>) {
    return v;
  } else {
    return emu::float_to_element<Tag>(v);
  }
}
template <class Tag>
float load_as(Stored<Tag> v) {
  if constexpr (std::is_same_v<Tag, float>) {
    return v;
  } else {
    return emu::element_to_float<Tag>(v);
  }
}
template <class Tag>
const char* name_of() {
  return std::is_same_v<Tag, float> ? "fp32 3xTF32" : std::is_same_v<Tag, cuda::Fp16Tag> ? "fp16" : "bf16";
}

// Tag: float (3xTF32) or the 16-bit tag of the features; OutTag: float or Tag (the output's storage).
template <class Tag, class OutTag>
void check(const Case& c) {
  using A = std::conditional_t<std::is_same_v<Tag, float>, corr::Tf32x3, corr::Half<Tag>>;
  using Out = std::conditional_t<std::is_same_v<OutTag, float>, corr::FloatOut, corr::HalfOut<OutTag>>;
  std::mt19937_64 rng(test_seed() + static_cast<uint64_t>(c.channels * 31 + c.frames + c.height));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t stride_row = static_cast<int64_t>(c.width) * c.channels + c.row_gap;
  const int64_t stride_frame = stride_row * c.height + 8;
  std::vector<float> features(static_cast<size_t>(stride_frame * c.frames), 1e4f);  // gaps hold large values
  std::vector<Stored<Tag>> features_stored(features.size());
  for (int t = 0; t < c.frames; ++t) {
    for (int y = 0; y < c.height; ++y) {
      for (int x = 0; x < c.width; ++x) {
        for (int ch = 0; ch < c.channels; ++ch) {
          features[static_cast<size_t>(t * stride_frame + y * stride_row + x * c.channels + ch)] =
              load_as<Tag>(store_as<Tag>(normal(rng) / std::sqrt(static_cast<float>(c.channels))));
        }
      }
    }
  }
  for (size_t i = 0; i < features.size(); ++i) features_stored[i] = store_as<Tag>(features[i]);
  std::vector<float> supports(static_cast<size_t>(c.queries * 49 * c.channels));
  for (float& s : supports) s = load_as<Tag>(store_as<Tag>(normal(rng) / std::sqrt(static_cast<float>(c.channels))));
  std::vector<Stored<Tag>> supports_stored(supports.size());
  for (size_t i = 0; i < supports.size(); ++i) supports_stored[i] = store_as<Tag>(supports[i]);
  // Points: uniform over the grid and 4 cells beyond it, plus exact integers, exact halves, far away and NaN; the
  // first one in the middle.
  std::uniform_real_distribution<float> ux(-4.0f, static_cast<float>(c.width) + 4.0f);
  std::uniform_real_distribution<float> uy(-4.0f, static_cast<float>(c.height) + 4.0f);
  std::vector<float> points(static_cast<size_t>(c.queries * c.frames * 2));
  for (int i = 0; i < c.queries * c.frames; ++i) {
    float x = ux(rng), y = uy(rng);
    if (i % 7 == 3) x = std::round(x);
    if (i % 7 == 4) y = std::round(y) + 0.5f;
    if (i % 11 == 5) x = 1000.0f;
    if (i % 13 == 6) y = std::nanf("");
    if (i == 0) {  // one window wholly inside, so that no seed leaves every window outside the grid (all zeros)
      x = static_cast<float>(c.width) / 2 + 0.3f;
      y = static_cast<float>(c.height) / 2 + 0.6f;
    }
    const size_t at = 2 * static_cast<size_t>(i);
    points[at] = x;
    points[at + 1] = y;
  }
  const Stored<OutTag> poison = store_as<OutTag>(std::nanf(""));
  std::vector<Stored<OutTag>> out(static_cast<size_t>((c.queries * c.frames + 1) * c.pitch), poison);

  corr::Params p;
  p.queries = c.queries;
  p.frames = c.frames;
  p.height = c.height;
  p.width = c.width;
  p.channels = c.channels;
  p.stride_frame = stride_frame;
  p.stride_row = stride_row;
  p.stride_column = c.channels;
  p.corr_row_pitch = c.pitch;
  p.features = features_stored.data();
  p.points = points.data();
  p.supports = supports_stored.data();
  p.corr = out.data();
  const int64_t blocks = static_cast<int64_t>(c.queries) * ((c.frames + corr::kFrames - 1) / corr::kFrames);
  const auto errors = emu::run_blocks(0, blocks, corr::kThreads, corr::Layout<A>::shared_bytes,
                                      [&] { corr::local_corr4d_mma_pipelined_kernel<A, Out>(p); });

  double max_diff = 0.0, max_ref = 0.0;
  int bad = 0;
  for (int q = 0; q < c.queries; ++q) {
    for (int t = 0; t < c.frames; ++t) {
      const size_t at = 2 * static_cast<size_t>(q * c.frames + t);
      const float px = points[at];
      const float py = points[at + 1];
      const bool finite = std::isfinite(px) && std::isfinite(py);
      const Stored<OutTag>* row = &out[static_cast<size_t>((q * c.frames + t) * c.pitch)];
      for (int h = 0; h < 7; ++h) {
        for (int w = 0; w < 7; ++w) {
          std::vector<double> neighbour(static_cast<size_t>(c.channels), 0.0);
          if (finite) {
            for (int ch = 0; ch < c.channels; ++ch) {
              neighbour[ch] = sample(features, c, stride_frame, stride_row, t, px + (w - 3), py + (h - 3), ch);
            }
          }
          for (int s = 0; s < 49; ++s) {
            double expected = 0.0;
            for (int ch = 0; ch < c.channels; ++ch) {
              expected += neighbour[ch] * supports[static_cast<size_t>(q * 49 + s) * c.channels + ch];
            }
            const double d = std::fabs(load_as<OutTag>(row[(h * 7 + w) * 49 + s]) - expected);
            max_diff = std::max(max_diff, std::isnan(d) ? INFINITY : d);
            max_ref = std::max(max_ref, std::fabs(expected));
          }
        }
      }
      for (int64_t e = 2401; e < c.pitch; ++e) bad += load_as<OutTag>(row[e]) == 0.0f ? 0 : 1;  // padding zeros
    }
  }
  for (int64_t e = 0; e < c.pitch; ++e) {
    bad += std::isnan(load_as<OutTag>(out[static_cast<size_t>(c.queries * c.frames * c.pitch + e)])) ? 0 : 1;
  }
  const double relative = max_diff / std::max(max_ref, 1e-30);
  const std::string label = std::string(name_of<Tag>()) + (std::is_same_v<OutTag, float> ? "" : " out") +
                            " n=" + std::to_string(c.queries) + " T=" + std::to_string(c.frames) + " " +
                            std::to_string(c.height) + "x" + std::to_string(c.width) + "x" +
                            std::to_string(c.channels) + " pitch " + std::to_string(c.pitch);
  // The emulated mma multiplies the TF32 parts / 16-bit operands exactly and sums in double: what remains is the split
  // (~2^-22 of each operand) and float32 sums and interpolation, and for a 16-bit output its one rounding (the
  // reference runs on the same stored inputs).
  const double tolerance = std::is_same_v<OutTag, float> ? 5e-6 : std::is_same_v<OutTag, cuda::Fp16Tag> ? 1e-3 : 8e-3;
  std::printf("[corr emulation] %s: max|diff| %.3g max|ref| %.3g rel %.3g (tolerance %.1g), layout errors %d\n",
              label.c_str(), max_diff, max_ref, relative, tolerance, bad);
  for (const std::string& e : errors) ADD_FAILURE() << label << ": " << e;
  EXPECT_TRUE(errors.empty()) << label;
  EXPECT_EQ(bad, 0) << label;
  EXPECT_LE(relative, tolerance) << label;
  EXPECT_GT(max_ref, 0.05) << label;  // not a trivial reference (the first point's window is inside the grid)
}

// Small grids so that the windows straddle the borders often; C = 64 (four chunks) with padded rows and a partial frame
// tile, C = 32 with plain rows and strided rows.
TEST(CorrMmaEmulation, Tf32x3MatchesTheSpecification) {
  check<float, float>({2, 3, 11, 13, 64, 2408, 0});
  check<float, float>({3, 2, 9, 9, 32, 2401, 4});
}
// 16-bit: C = 64 (two chunks of 32) with fp16 output and padded rows, C = 32 bf16 with float output and strided rows.
TEST(CorrMmaEmulation, HalfMatchesTheSpecification) {
  check<cuda::Fp16Tag, cuda::Fp16Tag>({2, 3, 11, 13, 64, 2408, 0});
  check<cuda::Bf16Tag, float>({3, 2, 9, 9, 32, 2401, 8});
  check<cuda::Fp16Tag, float>({1, 2, 10, 12, 96, 2408, 0});
}

}  // namespace
}  // namespace trackscope::test
