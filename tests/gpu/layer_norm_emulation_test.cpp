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
TEST(LayerNormEmulation, IneligibleWidthsAreRefused) {
  EXPECT_FALSE(ln::eligible_width<cuda::Fp16Tag>(260));   // not whole vectors
  EXPECT_FALSE(ln::eligible_width<cuda::Fp16Tag>(1032));  // 129 vectors: more than 32 lanes x 4
  EXPECT_TRUE(ln::eligible_width<cuda::Fp16Tag>(1024));
  EXPECT_FALSE(ln::eligible_width<float>(516));
  EXPECT_TRUE(ln::eligible_width<float>(384));
}

}  // namespace
}  // namespace trackscope::test
