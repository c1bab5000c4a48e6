// The tensor-core CMDTop kernel (gpu/ops/cuda/cmdtop_mma_kernel.cuh), its exact source, run on the CPU through
// tests/gpu/cuda_emulation.h (one thread per CUDA thread, mma.sync from the PTX fragment layouts, shared-memory
// race and bounds checks) against a plain double-precision reference of the layer stack. This is how the kernel's
// indexing, fragment layouts, barriers and GroupNorm reductions are checked where there is no GPU; the CUDA test
// (gpu/ops_cuda, CmdTopCuda) checks the compiled kernel on a GPU against the CPU implementation.
//
// The reference rounds where the kernel rounds (inputs and weights to the element type, each layer's output to the
// element type), so the two differ only by the order and precision of the fp32 sums and by rare flips of a rounding
// of an intermediate value. Inputs are fresh random values each run (the seed is printed; TRACKSCOPE_TEST_SEED
// repeats a run). Torch-free: it builds in the CPU-only CI.
#include "cuda_emulation.h"  // first: the kernel header takes its primitives from it

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu/ops/cuda/cmdtop_mma_kernel.cuh"
#include "gpu/ops/cuda/cmdtop_mma_layout.h"

namespace trackscope::test {
namespace {

namespace cuda = gpu::ops::cuda;
namespace mma = gpu::ops::cuda::cmdtop_mma;
namespace emu = cuda_emulation;

constexpr int kCorrValues = 2401;
constexpr float kEps = 1e-5f;

uint64_t test_seed() { return cuda_emulation::test_seed("emulation"); }

struct LayerSpec {
  int in_channels, out_channels, kernel, stride;
};
std::vector<LayerSpec> stack(bool base) {
  if (base) return {{49, 64, 3, 2}, {64, 128, 3, 2}, {128, 128, 2, 2}};
  return {{49, 64, 5, 4}, {64, 128, 2, 2}};
}

struct Layer {
  LayerSpec spec;
  std::vector<float> weight;  // [C_out][C_in][k][k], rounded to the element type
  std::vector<float> bias, gamma, beta;
  std::vector<cuda::Words4> packed;  // the kernel's operand
};

template <class Element>
std::vector<Layer> random_layers(bool base, std::mt19937_64& rng) {
  std::vector<Layer> layers;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int side = 7;  // the layer's input side
  for (const LayerSpec& spec : stack(base)) {
    Layer l;
    l.spec = spec;
    const float bound = 1.0f / std::sqrt(static_cast<float>(spec.in_channels * spec.kernel * spec.kernel));
    std::uniform_real_distribution<float> uniform(-bound, bound);
    l.weight.resize(static_cast<size_t>(int64_t{spec.out_channels} * spec.in_channels * spec.kernel * spec.kernel));
    for (float& w : l.weight) w = emu::element_to_float<Element>(emu::float_to_element<Element>(uniform(rng)));
    for (int c = 0; c < spec.out_channels; ++c) {
      l.bias.push_back(uniform(rng));
      l.gamma.push_back(1.0f + 0.2f * normal(rng));
      l.beta.push_back(0.2f * normal(rng));
    }
    if constexpr (std::is_same_v<Element, cuda::Tf32x3Tag>) {
      std::vector<float> packed(static_cast<size_t>(cuda::cmdtop_tf32_packed_floats(
          spec.out_channels, spec.in_channels, spec.kernel, side, spec.stride)));  // parts and remainders
      cuda::pack_cmdtop_tf32_weight(l.weight.data(), spec.out_channels, spec.in_channels, spec.kernel, side,
                                    spec.stride, packed.data());
      l.packed.resize(packed.size() / 4);
      std::memcpy(static_cast<void*>(l.packed.data()), packed.data(), packed.size() * sizeof(float));
    } else {
      std::vector<float> packed(static_cast<size_t>(
          cuda::cmdtop_mma_packed_floats(spec.out_channels, spec.in_channels, spec.kernel, side, spec.stride)));
      cuda::pack_cmdtop_mma_weight(l.weight.data(), spec.out_channels, spec.in_channels, spec.kernel, side, spec.stride,
                                   packed.data());
      l.packed.resize(packed.size() / 8);
      auto* halves = reinterpret_cast<uint16_t*>(l.packed.data());
      for (size_t i = 0; i < packed.size(); ++i) halves[i] = emu::float_to_element<Element>(packed[i]);
    }
    side = cuda::cmdtop_out_side(side, spec.stride);
    layers.push_back(std::move(l));
  }
  return layers;
}

// SAME conv (TensorFlow padding: the odd pixel after) + bias -> GroupNorm(C/16) -> ReLU, in double, on one image
// [side][side][C]; the result is rounded to the element type (as the kernel stores it).
template <class Element>
std::vector<double> reference_layer(const std::vector<double>& in, int side, const Layer& l, int& out_side) {
  const LayerSpec& s = l.spec;
  out_side = (side + s.stride - 1) / s.stride;
  const int pad_before = std::max((out_side - 1) * s.stride + s.kernel - side, 0) / 2;
  const int positions = out_side * out_side;
  std::vector<double> out(static_cast<size_t>(positions * s.out_channels));
  for (int oy = 0; oy < out_side; ++oy) {
    for (int ox = 0; ox < out_side; ++ox) {
      for (int co = 0; co < s.out_channels; ++co) {
        double sum = l.bias[static_cast<size_t>(co)];
        for (int ky = 0; ky < s.kernel; ++ky) {
          for (int kx = 0; kx < s.kernel; ++kx) {
            const int y = oy * s.stride - pad_before + ky, x = ox * s.stride - pad_before + kx;
            if (y < 0 || y >= side || x < 0 || x >= side) continue;
            for (int ci = 0; ci < s.in_channels; ++ci) {
              sum +=
                  in[static_cast<size_t>((int64_t{y} * side + x) * s.in_channels + ci)] *
                  l.weight[static_cast<size_t>(((int64_t{co} * s.in_channels + ci) * s.kernel + ky) * s.kernel + kx)];
            }
          }
        }
        out[static_cast<size_t>((int64_t{oy} * out_side + ox) * s.out_channels + co)] = sum;
      }
    }
  }
  for (int group = 0; group < s.out_channels / 16; ++group) {
    double mean = 0.0, variance = 0.0;
    for (int p = 0; p < positions; ++p) {
      for (int c = 0; c < 16; ++c) mean += out[static_cast<size_t>(int64_t{p} * s.out_channels + group * 16 + c)];
    }
    mean /= positions * 16;
    for (int p = 0; p < positions; ++p) {
      for (int c = 0; c < 16; ++c) {
        const double d = out[static_cast<size_t>(int64_t{p} * s.out_channels + group * 16 + c)] - mean;
        variance += d * d;
      }
    }
    variance /= positions * 16;
    for (int p = 0; p < positions; ++p) {
      for (int c = 0; c < 16; ++c) {
        double& v = out[static_cast<size_t>(int64_t{p} * s.out_channels + group * 16 + c)];
        const int channel = group * 16 + c;
        v = (v - mean) / std::sqrt(variance + kEps) * l.gamma[static_cast<size_t>(channel)] +
            l.beta[static_cast<size_t>(channel)];
        v = v < 0.0 ? 0.0 : v;
        v = emu::element_to_float<Element>(emu::float_to_element<Element>(static_cast<float>(v)));
      }
    }
  }
  return out;
}

// [256] = [branch 1 | branch 2] of one correlation sample X[h][w][i][j].
template <class Element>
std::vector<double> reference_sample(const float* corr, const std::vector<Layer>& layers) {
  std::vector<double> result;
  for (int branch = 0; branch < 2; ++branch) {
    std::vector<double> image(kCorrValues);
    for (int p = 0; p < 49; ++p) {
      for (int c = 0; c < 49; ++c) {
        // Branch 1: channels (i, j) over space (h, w); branch 2: channels (h, w) over space (i, j).
        image[static_cast<size_t>(int64_t{p} * 49 + c)] = branch == 0 ? corr[p * 49 + c] : corr[c * 49 + p];
      }
    }
    int side = 7;
    for (const Layer& l : layers) {
      int out_side = 0;
      image = reference_layer<Element>(image, side, l, out_side);
      side = out_side;
    }
    result.insert(result.end(), image.begin(), image.end());
  }
  return result;
}

struct RunFigures {
  double max_abs_diff = 0.0;
  double mean_abs_diff = 0.0;
  double max_abs_expected = 0.0;
  int unwritten = 0;    // output elements of valid rows still holding the poison
  int overwritten = 0;  // elements of rows past the end that were written
};

// out_stride: elements between output rows; the kernel writes columns [out_offset, out_offset + 256) of each
// (the engine's [M, 768] rows take the three levels side by side), and nothing else.
template <class Config, class Element>
RunFigures run_case(bool padded_rows, int64_t first_block, int64_t block_count, int64_t samples, int64_t out_stride,
                    int64_t out_offset, std::vector<std::string>& errors, double& seconds) {
  std::mt19937_64 rng(test_seed() + (Config::layers == 3 ? 1000u : 0u) + static_cast<uint64_t>(Config::samples) +
                      (std::is_same_v<Element, cuda::Bf16Tag> ? 7u : 0u) + (padded_rows ? 13u : 0u));
  const std::vector<Layer> layers = random_layers<Element>(Config::layers == 3, rng);
  const int64_t row_stride = padded_rows ? 2408 : kCorrValues;
  // Correlation rows (rounded to the element type); the padding columns hold large values that must not be read.
  std::normal_distribution<float> normal(0.0f, 1.0f);
  using Raw = emu::RawOf<Element>;
  std::vector<float> corr(static_cast<size_t>(samples * kCorrValues));
  std::vector<cuda::Words4> corr_storage(
      static_cast<size_t>((samples * row_stride * static_cast<int64_t>(sizeof(Raw)) + 15) / 16 + 1));
  auto* corr_raw = reinterpret_cast<Raw*>(corr_storage.data());
  for (int64_t s = 0; s < samples; ++s) {
    for (int64_t e = 0; e < row_stride; ++e) {
      if (e < kCorrValues) {
        const Raw v = emu::float_to_element<Element>(normal(rng));
        corr_raw[s * row_stride + e] = v;
        corr[static_cast<size_t>(s * kCorrValues + e)] = emu::element_to_float<Element>(v);
      } else {
        corr_raw[s * row_stride + e] = emu::float_to_element<Element>(30000.0f);
      }
    }
  }
  const Raw poison = std::is_same_v<Element, cuda::Bf16Tag>   ? Raw{0x7fc1}
                     : std::is_same_v<Element, cuda::Fp16Tag> ? Raw{0x7e01}
                                                              : static_cast<Raw>(0x7fc00001u);  // NaN
  std::vector<Raw> out(static_cast<size_t>((samples + 1) * out_stride), poison);

  mma::Params params;
  params.out_row_stride = out_stride;
  for (size_t i = 0; i < layers.size(); ++i) {
    params.layer[i] = {layers[i].packed.data(), layers[i].bias.data(), layers[i].gamma.data(), layers[i].beta.data()};
  }
  const bool vector_rows = row_stride % (16 / static_cast<int64_t>(sizeof(Raw))) == 0 && row_stride >= 2408;
  const auto start = std::chrono::steady_clock::now();
  errors = emu::run_blocks(first_block, block_count, mma::kThreads,
                           static_cast<size_t>(mma::Layout<Config>::shared_bytes), [&] {
                             mma::cmdtop_mma_kernel<Config>(corr_raw, samples, row_stride, vector_rows, params, kEps,
                                                            out.data() + out_offset);
                           });
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  RunFigures f;
  int64_t compared = 0;
  for (int64_t s = 0; s < samples + 1; ++s) {
    const bool computed = s >= first_block * Config::samples && s < (first_block + block_count) * Config::samples;
    for (int64_t c = 0; c < out_stride; ++c) {  // the columns outside the written ones
      const bool written = computed && s < samples && c >= out_offset && c < out_offset + 256;
      if (!written) f.overwritten += out[static_cast<size_t>(s * out_stride + c)] != poison ? 1 : 0;
    }
    if (s >= samples || !computed) continue;
    const std::vector<double> expected = reference_sample<Element>(&corr[static_cast<size_t>(s * kCorrValues)], layers);
    for (int c = 0; c < 256; ++c) {
      const Raw bits = out[static_cast<size_t>(s * out_stride + out_offset + c)];
      if (bits == poison) {
        ++f.unwritten;
        continue;
      }
      const double d = std::fabs(emu::element_to_float<Element>(bits) - expected[static_cast<size_t>(c)]);
      f.max_abs_diff = std::max(f.max_abs_diff, std::isnan(d) ? INFINITY : d);
      f.mean_abs_diff += d;
      f.max_abs_expected = std::max(f.max_abs_expected, std::fabs(expected[static_cast<size_t>(c)]));
      ++compared;
    }
  }
  f.mean_abs_diff /= static_cast<double>(std::max<int64_t>(compared, 1));
  return f;
}

template <class Config, class Element>
void check(const char* label, bool padded_rows, int64_t first_block, int64_t block_count, int64_t samples,
           int64_t out_stride = 256, int64_t out_offset = 0) {
  std::vector<std::string> errors;
  double seconds = 0.0;
  const RunFigures f = run_case<Config, Element>(padded_rows, first_block, block_count, samples, out_stride, out_offset,
                                                 errors, seconds);
  // One ulp of the element type at the outputs' magnitude (O(1-5) after GroupNorm) bounds the difference, except
  // where an intermediate rounding flipped; the mean stays far below it.
  // 3xTF32: float32-level accuracy (the emulated products are exact; the split leaves ~2^-22 of each operand).
  const bool bf16 = std::is_same_v<Element, cuda::Bf16Tag>;
  const bool tf32 = std::is_same_v<Element, cuda::Tf32x3Tag>;
  const double max_tolerance = tf32 ? 2e-5 : bf16 ? 0.1 : 0.015;
  const double mean_tolerance = tf32 ? 2e-6 : bf16 ? 2e-3 : 3e-4;
  std::printf(
      "[emulation] %s %s, %s rows, out stride %lld, samples %lld, blocks %lld..%lld: max|diff| %.3g mean|diff| %.3g "
      "max|ref| %.3g (tolerance max %.3g mean %.3g), %.1f s\n",
      label,
      tf32   ? "3xtf32"
      : bf16 ? "bf16"
             : "fp16",
      padded_rows ? "padded 2408" : "plain 2401", static_cast<long long>(out_stride), static_cast<long long>(samples),
      static_cast<long long>(first_block), static_cast<long long>(first_block + block_count - 1), f.max_abs_diff,
      f.mean_abs_diff, f.max_abs_expected, max_tolerance, mean_tolerance, seconds);
  for (const std::string& e : errors) ADD_FAILURE() << label << ": " << e;
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(f.unwritten, 0) << label;
  EXPECT_EQ(f.overwritten, 0) << label;
  EXPECT_LE(f.max_abs_diff, max_tolerance) << label;
  EXPECT_LE(f.mean_abs_diff, mean_tolerance) << label;
  EXPECT_GT(f.max_abs_expected, 0.5) << label;  // the comparison saw real values
}

// The 16-sample tile (compute capability 8.0 and 9.x): a full block (16 of 21 samples) in fp16 and the partial
// one (5 samples) in bf16, padded rows (the engine's layout, 16-byte loads).
// The layers that run position-major (their padding taps skipped) and the taps each position keeps, against a count
// of the taps inside the input done here tap by tap.
TEST(CmdTopMmaEmulation, OnlyLayersWithTheSameTapsAtEveryPositionSkipTheirPadding) {
  for (const bool base : {false, true}) {
    int side = 7;
    for (const LayerSpec& spec : stack(base)) {
      const int out_side = cuda::cmdtop_out_side(side, spec.stride);
      const int pad_before = std::max((out_side - 1) * spec.stride + spec.kernel - side, 0) / 2;
      std::vector<int> inside;  // per position
      for (int oy = 0; oy < out_side; ++oy) {
        for (int ox = 0; ox < out_side; ++ox) {
          int count = 0;
          for (int ky = 0; ky < spec.kernel; ++ky) {
            for (int kx = 0; kx < spec.kernel; ++kx) {
              const int y = oy * spec.stride - pad_before + ky, x = ox * spec.stride - pad_before + kx;
              count += y >= 0 && y < side && x >= 0 && x < side ? 1 : 0;
            }
          }
          const cuda::CmdTopTapWindow w = cuda::cmdtop_tap_window(side, spec.kernel, spec.stride, oy, ox);
          EXPECT_EQ(w.taps(), count) << "position " << oy << "," << ox;
          EXPECT_GE(oy * spec.stride - pad_before + w.ky0, 0);
          EXPECT_LE(oy * spec.stride - pad_before + w.ky0 + w.rows, side);
          inside.push_back(count);
        }
      }
      const bool uniform = std::all_of(inside.begin(), inside.end(), [&](int c) { return c == inside[0]; });
      const bool skips = uniform && inside[0] < spec.kernel * spec.kernel;
      EXPECT_EQ(cuda::cmdtop_mma_skips_padding(side, spec.kernel, spec.stride), skips)
          << (base ? "base" : "small") << " layer with a " << side << "x" << side << " input";
      side = out_side;
    }
  }
  // LocoTrack-S's first layer is the one that does: 16 of its 25 taps at each of its 4 positions.
  EXPECT_TRUE(cuda::cmdtop_mma_skips_padding(7, 5, 4));
  EXPECT_EQ(cuda::cmdtop_mma_k_taps(7, 5, 4), 16);
  EXPECT_FALSE(cuda::cmdtop_mma_skips_padding(7, 3, 2));
}

TEST(CmdTopMmaEmulation, SmallTile16MatchesTheReference) {
  check<mma::SmallConfig<mma::HalfArithmetic<cuda::Fp16Tag>, 16>, cuda::Fp16Tag>("small tile 16", true, 0, 1, 21);
  check<mma::SmallConfig<mma::HalfArithmetic<cuda::Bf16Tag>, 16>, cuda::Bf16Tag>("small tile 16", true, 1, 1, 21);
}
TEST(CmdTopMmaEmulation, BaseTile16MatchesTheReference) {
  check<mma::BaseConfig<mma::HalfArithmetic<cuda::Fp16Tag>, 16>, cuda::Fp16Tag>("base tile 16", true, 0, 1, 21);
  check<mma::BaseConfig<mma::HalfArithmetic<cuda::Bf16Tag>, 16>, cuda::Bf16Tag>("base tile 16", true, 1, 1, 21);
}
// The 8-sample tile (GPUs with less shared memory) and plain 2401-element rows (the scalar load path).
TEST(CmdTopMmaEmulation, Tile8AndPlainRowsMatchTheReference) {
  check<mma::SmallConfig<mma::HalfArithmetic<cuda::Fp16Tag>, 8>, cuda::Fp16Tag>("small tile 8", false, 1, 1, 13);
  // The engine's layout: the middle level's columns of [M, 768] rows.
  check<mma::SmallConfig<mma::HalfArithmetic<cuda::Fp16Tag>, 8>, cuda::Fp16Tag>("small tile 8", true, 1, 1, 13, 768,
                                                                                256);
  check<mma::BaseConfig<mma::HalfArithmetic<cuda::Bf16Tag>, 8>, cuda::Bf16Tag>("base tile 8", false, 1, 1, 13);
  check<mma::SmallConfig<mma::HalfArithmetic<cuda::Bf16Tag>, 16>, cuda::Bf16Tag>("small tile 16", false, 0, 1, 11);
}

// float32 as 3xTF32 (exact mode): a full block with padded rows, a partial one with plain rows, and base's partial
// block with padded rows (its zero word lies inside the staging copy of the padded-row load).
TEST(CmdTopMmaEmulation, Tf32x3MatchesTheReference) {
  check<mma::SmallTf32Config, cuda::Tf32x3Tag>("small", true, 0, 1, 13);
  check<mma::BaseTf32Config, cuda::Tf32x3Tag>("base", false, 1, 1, 13);
  check<mma::BaseTf32Config, cuda::Tf32x3Tag>("base", true, 1, 1, 13);
  check<mma::SmallTf32Config, cuda::Tf32x3Tag>("small", true, 0, 1, 13, 768, 512);
}

}  // namespace
}  // namespace trackscope::test
