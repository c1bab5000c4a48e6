// The residual add + LayerNorm kernel (gpu/ops/cuda/layer_norm_kernel.cuh), its exact source, run on the CPU through
// tests/gpu/cuda_emulation.h (a thread per CUDA thread: the row sums go through warp shuffles). The sum must be the
// composite's add bit for bit (float32 add, one rounding); the norm must be LayerNorm of the *rounded* sum computed
// in double, within the output type's rounding. Widths of the mixer (256 small, 384 base: three vectors on some
// lanes, two on others in float32), a narrow one (lanes without a vector), row counts that leave a block's warps
// empty, the plain form (no residual) and the in-place forms. Inputs are fresh random values each run (the seed is
// printed; TRACKSCOPE_TEST_SEED repeats a run). Torch-free: it builds in the CPU-only CI.
#include "cuda_emulation.h"  // first: the kernel header takes its primitives from it

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/ops/cuda/layer_norm_kernel.cuh"

namespace trackscope::test {
namespace {

namespace cuda = gpu::ops::cuda;
namespace ln = gpu::ops::cuda::layer_norm;
namespace emu = cuda_emulation;

template <class Element>
using Bits = emu::ElementBits<Element>;

enum class Form { plain, residual, sum_in_place, norm_in_place };

const char* form_name(Form form) {
  switch (form) {
    case Form::plain: return "plain";
    case Form::residual: return "with residual";
    case Form::sum_in_place: return "with residual, sum into x";
    case Form::norm_in_place: return "plain, norm into x";
  }
  return "?";
}

template <class Element>
void check(int width, int rows, Form form, const char* element_name) {
  const std::string name = std::string(element_name) + " width " + std::to_string(width) + ", " + std::to_string(rows) +
                           " rows, " + form_name(form);
  std::mt19937_64 rng(emu::test_seed("layer norm emulation") ^ std::hash<std::string>{}(name));
  std::uniform_real_distribution<float> value(-4.0f, 4.0f), offset(-2.0f, 2.0f), gain(0.5f, 1.5f);
  const size_t elements = static_cast<size_t>(width) * static_cast<size_t>(rows);
  const Bits<Element> poison = static_cast<Bits<Element>>(0x7e7e7e7eu);
  emu::PoisonedBuffer<Bits<Element>> x(elements, 0), residual(elements, 0), sum(elements, poison),
      norm(elements, poison), weight(width, 0), bias(width, 0);
  std::vector<float> row_offset(static_cast<size_t>(rows));
  for (float& v : row_offset) v = offset(rng) * 4.0f;  // rows with a large mean: the centring matters
  for (size_t i = 0; i < elements; ++i) {
    x[i] = emu::value_to_bits<Element>(value(rng) + row_offset[i / static_cast<size_t>(width)]);
    residual[i] = emu::value_to_bits<Element>(value(rng));
  }
  for (int c = 0; c < width; ++c) {
    weight[static_cast<size_t>(c)] = emu::value_to_bits<Element>(gain(rng));
    bias[static_cast<size_t>(c)] = emu::value_to_bits<Element>(offset(rng));
  }
  const bool with_residual = form != Form::plain && form != Form::norm_in_place;
  // The expected sum: each element's float32 add rounded once (the composite's add), from the inputs before the run.
  std::vector<Bits<Element>> want_sum(elements);
  std::vector<double> normalised_input(elements);
  for (size_t i = 0; i < elements; ++i) {
    want_sum[i] =
        with_residual
            ? emu::value_to_bits<Element>(emu::bits_to_value<Element>(x[i]) + emu::bits_to_value<Element>(residual[i]))
            : x[i];
    normalised_input[i] = emu::bits_to_value<Element>(want_sum[i]);
  }
  Bits<Element>* sum_out = form == Form::sum_in_place ? x.data() : sum.data();
  Bits<Element>* norm_out = form == Form::norm_in_place ? x.data() : norm.data();

  ASSERT_TRUE(ln::eligible_width<Element>(width)) << name;
  const ln::LayerNormShape shape{rows, width, 1e-5f};
  const std::vector<std::string> errors = emu::run_blocks(0, ln::block_count(shape), ln::kThreads, 0, [&] {
    if (with_residual) {
      ln::layer_norm_kernel<Element, true>(shape, x.data(), residual.data(), weight.data(), bias.data(), sum_out,
                                           norm_out);
    } else {
      ln::layer_norm_kernel<Element, false>(shape, x.data(), nullptr, weight.data(), bias.data(), nullptr, norm_out);
    }
  });
  for (const std::string& e : errors) ADD_FAILURE() << name << ": " << e;

  int64_t sum_mismatches = 0;
  double max_excess = 0.0;  // |got - want| / tolerance, worst element
  for (int r = 0; r < rows; ++r) {
    const size_t first = static_cast<size_t>(r) * static_cast<size_t>(width);
    double mean = 0.0, variance = 0.0;
    for (int c = 0; c < width; ++c) mean += normalised_input[first + static_cast<size_t>(c)];
    mean /= width;
    for (int c = 0; c < width; ++c) {
      const double d = normalised_input[first + static_cast<size_t>(c)] - mean;
      variance += d * d;
    }
    variance /= width;
    for (int c = 0; c < width; ++c) {
      const size_t i = first + static_cast<size_t>(c);
      if (with_residual && sum_out[i] != want_sum[i]) ++sum_mismatches;
      const double want = (normalised_input[i] - mean) / std::sqrt(variance + 1e-5) *
                              emu::bits_to_value<Element>(weight[static_cast<size_t>(c)]) +
                          emu::bits_to_value<Element>(bias[static_cast<size_t>(c)]);
      const double got = emu::bits_to_value<Element>(norm_out[i]);
      // Half a unit in the last place of the type (relative), plus float32's statistics.
      const double relative =
          std::is_same_v<Element, float> ? 6e-8 : (std::is_same_v<Element, cuda::Bf16Tag> ? 3.9e-3 : 4.9e-4);
      const double tolerance = std::fabs(want) * relative * 1.05 + 2e-5;
      max_excess = std::max(max_excess, std::isfinite(got) ? std::fabs(got - want) / tolerance : INFINITY);
    }
  }
  const int64_t tail_writes = norm.tail_writes() + sum.tail_writes();
  std::printf("[layer norm emulation] %s: worst error %.2f of the tolerance, %lld sums differ\n", name.c_str(),
              max_excess, static_cast<long long>(sum_mismatches));
  EXPECT_LE(max_excess, 1.0) << name;
  EXPECT_EQ(sum_mismatches, 0) << name << ": the sum must be the composite's add, bit for bit";
  EXPECT_EQ(tail_writes, 0) << name << ": elements written past the rows";
  if (!with_residual && form != Form::norm_in_place) {
    int64_t sum_writes = 0;
    for (size_t i = 0; i < elements; ++i) sum_writes += sum[i] != poison ? 1 : 0;
    EXPECT_EQ(sum_writes, 0) << name << ": the plain form writes no sum";
  }
}

template <class Element>
void check_all(const char* element_name) {
  for (const int width : {256, 384}) {
    check<Element>(width, 13, Form::residual, element_name);
    check<Element>(width, 9, Form::plain, element_name);
  }
  check<Element>(2 * ln::kVectorElements<Element>, 5, Form::residual, element_name);  // 30 lanes without a vector
  check<Element>(256, 8, Form::sum_in_place, element_name);
  check<Element>(384, 3, Form::norm_in_place, element_name);
}

TEST(LayerNormEmulation, Float32MatchesFloat64) { check_all<float>("float32"); }
TEST(LayerNormEmulation, Bfloat16MatchesFloat64) { check_all<cuda::Bf16Tag>("bfloat16"); }
TEST(LayerNormEmulation, Float16MatchesFloat64) { check_all<cuda::Fp16Tag>("float16"); }
// head_kernel: the norm of x + residual rounded to the element type (as stored), its four head outputs rounded to the
// element type (the GEMM's output) and added to the float32 state. The reference computes the head in double from
// the double norm; the kernel's norm is rounded first, so the bound is the norm's rounding carried through the
// products: sum_c |w_c| x |norm_c| x (half an ulp) + the output's own rounding.
template <class Element>
void check_head(int width, int rows, const char* element_name) {
  const std::string name =
      std::string(element_name) + " head, width " + std::to_string(width) + ", " + std::to_string(rows) + " rows";
  std::mt19937_64 rng(emu::test_seed("layer norm head emulation") ^ std::hash<std::string>{}(name));
  std::uniform_real_distribution<float> value(-4.0f, 4.0f), offset(-2.0f, 2.0f), gain(0.5f, 1.5f), small(-0.1f, 0.1f);
  const size_t elements = static_cast<size_t>(width) * static_cast<size_t>(rows);
  const auto count = static_cast<size_t>(rows);
  emu::PoisonedBuffer<Bits<Element>> x(elements, 0), residual(elements, 0), weight(width, 0), bias(width, 0),
      head_weight(static_cast<size_t>(4 * width), 0), head_bias(4, 0);
  for (size_t i = 0; i < elements; ++i) {
    x[i] = emu::value_to_bits<Element>(value(rng) + 3.0f);
    residual[i] = emu::value_to_bits<Element>(value(rng));
  }
  for (int c = 0; c < width; ++c) {
    weight[static_cast<size_t>(c)] = emu::value_to_bits<Element>(gain(rng));
    bias[static_cast<size_t>(c)] = emu::value_to_bits<Element>(offset(rng));
  }
  for (size_t i = 0; i < head_weight.size; ++i) head_weight[i] = emu::value_to_bits<Element>(small(rng));
  for (size_t o = 0; o < 4; ++o) head_bias[o] = emu::value_to_bits<Element>(offset(rng));
  const float poison = -7.25e30f;
  emu::PoisonedBuffer<float> tracks(2 * count, 0), occlusion(count, 0), expected(count, 0),
      next_tracks(2 * count, poison), next_occlusion(count, poison), next_expected(count, poison);
  for (size_t i = 0; i < 2 * count; ++i) tracks[i] = value(rng) * 30.0f;
  for (size_t i = 0; i < count; ++i) occlusion[i] = value(rng), expected[i] = value(rng);

  const ln::LayerNormShape shape{rows, width, 1e-5f};
  const ln::HeadState state{tracks.data(),      occlusion.data(),      expected.data(),
                            next_tracks.data(), next_occlusion.data(), next_expected.data()};
  const std::vector<std::string> errors = emu::run_blocks(0, ln::block_count(shape), ln::kThreads, 0, [&] {
    ln::head_kernel<Element>(shape, x.data(), residual.data(), weight.data(), bias.data(), head_weight.data(),
                             head_bias.data(), state);
  });
  for (const std::string& e : errors) ADD_FAILURE() << name << ": " << e;

  const double half_ulp =
      std::is_same_v<Element, float> ? 6e-8 : (std::is_same_v<Element, cuda::Bf16Tag> ? 3.9e-3 : 4.9e-4);
  double max_excess = 0.0;
  for (int r = 0; r < rows; ++r) {
    const size_t first = static_cast<size_t>(r) * static_cast<size_t>(width);
    std::vector<double> sum(static_cast<size_t>(width));
    double mean = 0.0, variance = 0.0;
    for (int c = 0; c < width; ++c) {
      const size_t i = first + static_cast<size_t>(c);
      sum[static_cast<size_t>(c)] = emu::bits_to_value<Element>(
          emu::value_to_bits<Element>(emu::bits_to_value<Element>(x[i]) + emu::bits_to_value<Element>(residual[i])));
      mean += sum[static_cast<size_t>(c)];
    }
    mean /= width;
    for (const double v : sum) variance += (v - mean) * (v - mean);
    variance /= width;
    const double inverse_deviation = 1.0 / std::sqrt(variance + 1e-5);
    for (int o = 0; o < 4; ++o) {
      double want = emu::bits_to_value<Element>(head_bias[static_cast<size_t>(o)]), spread = 0.0;
      for (int c = 0; c < width; ++c) {
        const double norm = (sum[static_cast<size_t>(c)] - mean) * inverse_deviation *
                                emu::bits_to_value<Element>(weight[static_cast<size_t>(c)]) +
                            emu::bits_to_value<Element>(bias[static_cast<size_t>(c)]);
        const double w = emu::bits_to_value<Element>(
            head_weight[static_cast<size_t>(o) * static_cast<size_t>(width) + static_cast<size_t>(c)]);
        want += norm * w;
        spread += std::fabs(norm * w);
      }
      const double tolerance = (spread + std::fabs(want)) * half_ulp * 1.05 + 1e-4;
      const double previous = o < 2 ? tracks[2 * static_cast<size_t>(r) + static_cast<size_t>(o)]
                                    : (o == 2 ? occlusion[static_cast<size_t>(r)] : expected[static_cast<size_t>(r)]);
      const double got =
          o < 2 ? next_tracks[2 * static_cast<size_t>(r) + static_cast<size_t>(o)]
                : (o == 2 ? next_occlusion[static_cast<size_t>(r)] : next_expected[static_cast<size_t>(r)]);
      // The state is float32: previous + update rounds once more.
      const double excess = std::fabs(got - (previous + want)) / (tolerance + std::fabs(previous + want) * 6e-8);
      max_excess = std::max(max_excess, std::isfinite(got) ? excess : INFINITY);
    }
  }
  std::printf("[layer norm emulation] %s: worst error %.2f of the tolerance\n", name.c_str(), max_excess);
  EXPECT_LE(max_excess, 1.0) << name;
  EXPECT_EQ(next_tracks.tail_writes() + next_occlusion.tail_writes() + next_expected.tail_writes(), 0)
      << name << ": state written past the rows";
}

TEST(LayerNormEmulation, HeadIsTheNormTimesTheHeadAddedToTheState) {
  for (const int width : {256, 384}) {
    check_head<float>(width, 11, "float32");
    check_head<cuda::Bf16Tag>(width, 11, "bfloat16");
    check_head<cuda::Fp16Tag>(width, 11, "float16");
  }
  check_head<cuda::Fp16Tag>(2 * ln::kVectorElements<cuda::Fp16Tag>, 3, "float16");  // 30 lanes without a vector
}

TEST(LayerNormEmulation, IneligibleWidthsAreRefused) {
  EXPECT_FALSE(ln::eligible_width<cuda::Fp16Tag>(260));   // not whole vectors
  EXPECT_FALSE(ln::eligible_width<cuda::Fp16Tag>(1032));  // 129 vectors: more than 32 lanes x 4
  EXPECT_TRUE(ln::eligible_width<cuda::Fp16Tag>(1024));
  EXPECT_FALSE(ln::eligible_width<float>(516));
  EXPECT_TRUE(ln::eligible_width<float>(384));
}

}  // namespace
}  // namespace trackscope::test
