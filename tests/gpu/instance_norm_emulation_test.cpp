// The fused InstanceNorm + ReLU kernels (gpu/ops/cuda/instance_norm_kernel.cuh), their exact source, run on the CPU
// through tests/gpu/cuda_emulation.h (a thread per CUDA thread: the tree merge of the block's rows goes through shared
// memory and barriers, checked for races) against relu((x - mean) / sqrt(var + eps) * w + b) with the per (sample,
// channel) mean and biased variance over the positions computed in double from the stored inputs. Channel counts of
// the backbone (64, 128, 256) and small ones (one or two vectors per position: rows of 128 or 256 threads), position
// counts that leave the last split partial (threads with no position, or with a batch of four and a tail), several
// splits per sample so that the last block's merge of the splits runs, activations far from zero (100 + 20 N(0, 1) per
// channel + N(0, 1): what breaks E[x^2] - E[x]^2), float32 and 16-bit weights. The statistics blocks run in a shuffled
// order, so that the block that merges a sample (the last to take its ticket) is any of its splits; the apply runs
// with the launcher's parts and with two parts (a grid-stride loop of several steps), both must agree bit for bit.
// With a residual (the residual block's sum fused into the statistics), x is the float sum of two random inputs
// rounded to the element type: the kernel must store exactly those bits and give the plain run's statistics bit for
// bit, and the apply then reads the stored sum.
// Inputs are fresh random values each run (the seed is printed; TRACKSCOPE_TEST_SEED repeats a run). Torch-free: it
// builds in the CPU-only CI.
#include "cuda_emulation.h"  // first: the kernel header takes its primitives from it

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/ops/cuda/instance_norm_kernel.cuh"

namespace trackscope::test {
namespace {

namespace cuda = gpu::ops::cuda;
namespace norm = gpu::ops::cuda::instance_norm;
namespace emu = cuda_emulation;

template <class Element>
using Bits = emu::ElementBits<Element>;

constexpr float kEps = 1e-5f;

// A value's bit pattern (floats compared by their bits: a NaN equals itself, -0 differs from +0).
template <class T>
auto bits_of(T value) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<uint32_t>(value);
  } else {
    return value;
  }
}

template <class T>
using Buffer = emu::PoisonedBuffer<T>;

const char* element_name(float) { return "float32"; }
const char* element_name(cuda::Bf16Tag) { return "bfloat16"; }
const char* element_name(cuda::Fp16Tag) { return "float16"; }

template <class Element>
double tolerance() {
  // The CUDA test's (InstanceNormReluCuda.MatchesReferenceForTheBackboneShapes): max |diff| / max |y|.
  return std::is_same_v<Element, float> ? 2e-5 : (std::is_same_v<Element, cuda::Bf16Tag> ? 8e-3 : 2e-3);
}

// samples x splits statistics blocks; the shapes are chosen so that there are several splits and the last is short.
template <class Element, class Weight>
void check(int64_t channels, int64_t positions, int64_t samples, bool with_residual) {
  constexpr int64_t kWidth = norm::kVectorElements<Element>;
  const int64_t split_positions = norm::positions_per_split(samples, positions, channels, kWidth);
  const int64_t splits = norm::split_count(samples, positions, channels, kWidth);
  const std::string name = std::string(element_name(Element{})) + " (weights " + element_name(Weight{}) +
                           ") C=" + std::to_string(channels) + ", " + std::to_string(samples) + " samples x " +
                           std::to_string(positions) + " positions (" + std::to_string(splits) + " splits of " +
                           std::to_string(split_positions) + ")" + (with_residual ? " with a residual" : "");
  ASSERT_TRUE(norm::eligible_channels<Element>(channels)) << name;
  ASSERT_GT(splits, 1) << name;
  ASSERT_NE(positions % split_positions, 0) << name;

  std::mt19937_64 rng(emu::test_seed("instance norm emulation") ^ std::hash<std::string>{}(name));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> gain(0.5f, 1.5f);
  const size_t elements = static_cast<size_t>(samples * positions * channels);
  const auto size = [](int64_t n) { return static_cast<size_t>(n); };
  const Bits<Element> poison = static_cast<Bits<Element>>(0x7e7e7e7eu);
  const float nan = std::nanf("");
  Buffer<Bits<Element>> x(elements, 0), y(elements, poison), y_strided(elements, poison);
  Buffer<Bits<Element>> addend(with_residual ? elements : 0, 0), residual(with_residual ? elements : 0, 0),
      sum(with_residual ? elements : 0, poison);
  Buffer<Bits<Weight>> weight(size(channels), 0), bias(size(channels), 0);
  Buffer<float> partial(size(samples * splits * channels * 2), nan), scale_shift(size(samples * channels * 2), nan);
  Buffer<float> plain_scale_shift(with_residual ? size(samples * channels * 2) : 0, nan);
  Buffer<uint32_t> tickets(size(samples), 0x7e7e7e7eu);
  std::vector<float> offset(size(channels));
  for (float& o : offset) o = 100.0f + 20.0f * normal(rng);  // mean >> standard deviation
  for (size_t i = 0; i < elements; ++i) {
    if (with_residual) {
      addend[i] = emu::value_to_bits<Element>(offset[i % size(channels)] + normal(rng));
      residual[i] = emu::value_to_bits<Element>(5.0f * normal(rng));
      x[i] = emu::value_to_bits<Element>(emu::bits_to_value<Element>(addend[i]) +
                                         emu::bits_to_value<Element>(residual[i]));
    } else {
      x[i] = emu::value_to_bits<Element>(offset[i % size(channels)] + normal(rng));
    }
  }
  for (size_t c = 0; c < size(channels); ++c) {
    weight[c] = emu::value_to_bits<Weight>(gain(rng));
    bias[c] = emu::value_to_bits<Weight>(normal(rng));
  }
  // Statistics, the blocks in a shuffled order (each run by itself: the emulation runs blocks one after another).
  std::vector<int64_t> order(size(samples * splits));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::vector<std::string> errors;
  const auto run_statistics = [&](bool fused, float* out_scale_shift) {
    for (size_t s = 0; s < size(samples); ++s) tickets[s] = 0;  // the launcher's memset
    std::shuffle(order.begin(), order.end(), rng);
    for (const int64_t block : order) {
      for (std::string& e : emu::run_blocks(block, 1, norm::kThreads, norm::statistics_shared_bytes<Element>(), [&] {
             if (fused) {
               norm::statistics_kernel<Element, Weight, true>(addend.data(), residual.data(), sum.data(), positions,
                                                              channels, split_positions, static_cast<int>(splits),
                                                              partial.data(), tickets.data(), weight.data(),
                                                              bias.data(), kEps, out_scale_shift);
             } else {
               norm::statistics_kernel<Element, Weight>(
                   x.data(), nullptr, nullptr, positions, channels, split_positions, static_cast<int>(splits),
                   partial.data(), tickets.data(), weight.data(), bias.data(), kEps, out_scale_shift);
             }
           })) {
        errors.push_back(std::string(fused ? "statistics with a residual " : "statistics ") + e);
      }
    }
  };
  run_statistics(false, with_residual ? plain_scale_shift.data() : scale_shift.data());
  if (with_residual) {
    run_statistics(true, scale_shift.data());
    int64_t sum_mismatches = 0, statistics_mismatches = 0;
    for (size_t i = 0; i < elements; ++i) sum_mismatches += sum[i] != x[i] ? 1 : 0;
    for (size_t i = 0; i < size(samples * channels * 2); ++i) {
      statistics_mismatches += bits_of(scale_shift[i]) != bits_of(plain_scale_shift[i]) ? 1 : 0;
    }
    EXPECT_EQ(sum_mismatches, 0) << name << ": the stored sum must be x + residual rounded once";
    EXPECT_EQ(statistics_mismatches, 0) << name << ": the statistics of (x, residual) must be the sum's, bit for bit";
    EXPECT_EQ(sum.tail_writes() + plain_scale_shift.tail_writes(), 0) << name << ": elements written past the sum";
  }
  const Bits<Element>* const apply_input = with_residual ? sum.data() : x.data();
  // Apply (no barrier, no shared memory: its threads one after another), with the launcher's parts and with two.
  const int64_t parts = norm::apply_parts(samples, positions, channels, kWidth);
  for (Buffer<Bits<Element>>* out : {&y, &y_strided}) {
    const int run_parts = out == &y ? static_cast<int>(parts) : 2;
    for (std::string& e : emu::run_blocks_serially(0, samples * run_parts, norm::kThreads, [&] {
           norm::apply_kernel<Element>(apply_input, positions, channels, run_parts, scale_shift.data(), out->data());
         })) {
      errors.push_back("apply " + e);
    }
  }
  for (const std::string& e : errors) ADD_FAILURE() << name << ": " << e;

  double max_diff = 0.0, max_expected = 0.0;
  int64_t strided_mismatches = 0;
  for (int64_t s = 0; s < samples; ++s) {
    for (int64_t c = 0; c < channels; ++c) {
      const auto at = [&](int64_t p) { return size((s * positions + p) * channels + c); };
      double mean = 0.0, variance = 0.0;
      for (int64_t p = 0; p < positions; ++p) mean += emu::bits_to_value<Element>(x[at(p)]);
      mean /= static_cast<double>(positions);
      for (int64_t p = 0; p < positions; ++p) {
        const double d = emu::bits_to_value<Element>(x[at(p)]) - mean;
        variance += d * d;
      }
      variance /= static_cast<double>(positions);
      const double w = emu::bits_to_value<Weight>(weight[size(c)]), b = emu::bits_to_value<Weight>(bias[size(c)]);
      for (int64_t p = 0; p < positions; ++p) {
        const double want =
            std::max((emu::bits_to_value<Element>(x[at(p)]) - mean) / std::sqrt(variance + kEps) * w + b, 0.0);
        const double got = emu::bits_to_value<Element>(y[at(p)]);
        max_diff = std::max(max_diff, std::isfinite(got) ? std::fabs(got - want) : INFINITY);
        max_expected = std::max(max_expected, std::fabs(want));
        strided_mismatches += y_strided[at(p)] != y[at(p)] ? 1 : 0;
      }
    }
  }
  int64_t wrong_tickets = 0;
  for (size_t s = 0; s < size(samples); ++s) wrong_tickets += tickets[s] != static_cast<uint32_t>(splits) ? 1 : 0;
  const double relative = max_diff / max_expected;
  std::printf("[instance norm emulation] %s: max |diff| %.3g, relative %.3g (tolerance %.3g)\n", name.c_str(), max_diff,
              relative, tolerance<Element>());
  EXPECT_LE(relative, tolerance<Element>()) << name;
  EXPECT_EQ(strided_mismatches, 0) << name << ": two parts per sample must give the launcher's parts' bits";
  EXPECT_EQ(wrong_tickets, 0) << name << ": each sample's ticket must end at its splits";
  EXPECT_EQ(y.tail_writes() + y_strided.tail_writes(), 0) << name << ": elements written past y";
  EXPECT_EQ(partial.tail_writes() + scale_shift.tail_writes() + tickets.tail_writes(), 0)
      << name << ": workspace written past its end";
}

// The backbone's widths and a small one (`small_channels`: one or two vectors per position). 20 rows + 1 positions of
// 2 samples: 5 splits of 4 rows, the last holding one position (threads without a position, one only in the tail
// loop); 11 rows + 2 of 3 samples: 2 splits of 6 rows, the last of five rows and two (a batch of four, then a tail).
// The first and the last shape also with a residual (the test's time: each run emulates every thread).
template <class Element, class Weight>
void check_all(int64_t small_channels) {
  constexpr int64_t kWidth = norm::kVectorElements<Element>;
  const auto rows = [](int64_t channels) { return norm::kThreads / (channels / kWidth); };
  for (const bool with_residual : {false, true}) {
    check<Element, Weight>(64, 20 * rows(64) + 1, 2, with_residual);
    if (!with_residual) {
      check<Element, Weight>(128, 11 * rows(128) + 2, 3, false);
      check<Element, Weight>(256, 20 * rows(256) + 1, 2, false);
    }
    check<Element, Weight>(small_channels, 11 * rows(small_channels) + 2, 3, with_residual);
  }
}

TEST(InstanceNormEmulation, Float32MatchesFloat64) { check_all<float, float>(4); }
TEST(InstanceNormEmulation, Bfloat16MatchesFloat64) { check_all<cuda::Bf16Tag, float>(16); }
TEST(InstanceNormEmulation, Bfloat16WithBfloat16WeightsMatchesFloat64) { check_all<cuda::Bf16Tag, cuda::Bf16Tag>(8); }
TEST(InstanceNormEmulation, Float16MatchesFloat64) { check_all<cuda::Fp16Tag, float>(8); }
TEST(InstanceNormEmulation, Float16WithFloat16WeightsMatchesFloat64) { check_all<cuda::Fp16Tag, cuda::Fp16Tag>(16); }

TEST(InstanceNormEmulation, EligibleChannelsAndSplits) {
  EXPECT_FALSE(norm::eligible_channels<cuda::Fp16Tag>(24));  // three vectors: not a power of two
  EXPECT_FALSE(norm::eligible_channels<cuda::Fp16Tag>(12));  // not whole vectors
  EXPECT_FALSE(norm::eligible_channels<float>(2048));        // 512 vectors: more than the block's threads
  EXPECT_TRUE(norm::eligible_channels<float>(1024));
  EXPECT_TRUE(norm::eligible_channels<cuda::Bf16Tag>(8));
  // The backbone's planes at 47 frames: 512 / 47 = 10 splits each, runs of whole rows of threads (32 / 16 / 8 rows
  // in 16-bit at 64 / 128 / 256 channels), the last split shorter.
  EXPECT_EQ(norm::positions_per_split(47, 128 * 128, 64, 8), 1664);
  EXPECT_EQ(norm::split_count(47, 128 * 128, 64, 8), 10);
  EXPECT_EQ(norm::positions_per_split(47, 64 * 64, 128, 8), 416);
  EXPECT_EQ(norm::positions_per_split(47, 32 * 32, 256, 8), 104);
  EXPECT_EQ(norm::split_count(47, 32 * 32, 256, 8), 10);
  // At least kMinPositionsPerThread positions per thread: few positions make few splits; many samples one each.
  EXPECT_EQ(norm::split_count(2, 257, 64, 4), 4);  // 16 rows: 257 / 64 = 4 splits of 80 positions
  EXPECT_EQ(norm::split_count(2, 63, 64, 4), 1);
  EXPECT_EQ(norm::split_count(1000, 128 * 128, 64, 8), 1);
  // The apply: four vectors per thread at the backbone's planes (47 frames: 128 / 64 / 32 parts of 256 threads); more
  // parts when that leaves less than about a wave (one sample: 512 parts, a vector per thread); never more parts
  // than vectors need.
  EXPECT_EQ(norm::apply_parts(47, 128 * 128, 64, 8), 128);
  EXPECT_EQ(norm::apply_parts(47, 64 * 64, 128, 8), 64);
  EXPECT_EQ(norm::apply_parts(47, 32 * 32, 256, 8), 32);
  EXPECT_EQ(norm::apply_parts(1, 128 * 128, 64, 8), 512);
  EXPECT_EQ(norm::apply_parts(4, 128 * 128, 64, 8), 256);
  EXPECT_EQ(norm::apply_parts(2, 3, 64, 8), 1);
}

}  // namespace
}  // namespace trackscope::test
