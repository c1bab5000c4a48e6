// The tensor-core attention of the module mixer (gpu/ops/cuda/attention_mma_kernel.cuh), its exact source, run on the
// CPU through tests/gpu/cuda_emulation.h (a thread per CUDA thread; mma.sync's fragments exchanged as the hardware
// does, shared memory checked for races and bounds) against softmax(q k^T / 8 + ALiBi) v computed in double from the
// same 16-bit inputs by alibi_attention_reference.h, the bias written out from its definition (forward heads:
// slope * (j - i) for j <= i, backward heads: slope * (i - j) for j >= i, the rest excluded). Frame counts that leave
// the last query tile and key chunk partial (5, 47), two and three query groups and key chunks (70, 130: the online
// softmax across chunks, the chunks a group skips: after its rows for forward heads, before them for backward heads),
// heads with both directions, both 16-bit types; rows of qkv with a stride wider than their columns and an output
// stride wider than its columns, whose extra columns must stay untouched. Inputs are fresh random values each run (the
// seed is printed; TRACKSCOPE_TEST_SEED repeats a run). Torch-free.
#include "cuda_emulation.h"  // first: the kernel header takes its primitives from it

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "alibi_attention_reference.h"
#include "gpu/ops/cuda/attention_mma_kernel.cuh"

namespace trackscope::test {
namespace {

namespace cuda = gpu::ops::cuda;
namespace attention = gpu::ops::cuda::attention_mma;
namespace emu = cuda_emulation;

template <class Element>
void check(int frames, int heads, double tolerance) {
  constexpr int kDim = attention::kHeadDim;
  const int sequences = 2;
  const int dim = heads * kDim;
  const int64_t qkv_stride = 3 * dim + 8, out_stride = dim + 6;  // wider rows than their columns
  const int64_t rows = int64_t{sequences} * frames;
  const std::string name = std::string(std::is_same_v<Element, cuda::Fp16Tag> ? "float16" : "bfloat16") +
                           " T=" + std::to_string(frames) + ", " + std::to_string(heads) + " heads";
  std::mt19937_64 rng(emu::test_seed("attention mma emulation") ^ std::hash<std::string>{}(name));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  emu::PoisonedBuffer<uint16_t> qkv(static_cast<size_t>(rows * qkv_stride), 0);
  for (size_t i = 0; i < qkv.size; ++i) qkv[i] = emu::value_to_bits<Element>(2.0f * normal(rng));
  const uint16_t poison = 0x7e7e;
  emu::PoisonedBuffer<uint16_t> out(static_cast<size_t>(rows * out_stride), poison);
  const std::vector<float> slopes = alibi_slopes_reference(heads);
  cuda::MixerAttentionMmaParams p;
  p.qkv = qkv.data();
  p.qkv_stride = qkv_stride;
  p.sequences = sequences;
  p.frames = frames;
  p.heads = heads;
  p.slopes = slopes.data();
  p.out = out.data();
  p.out_stride = out_stride;
  const int64_t blocks = sequences * heads * attention::query_groups(frames);
  for (const std::string& e : emu::run_blocks(0, blocks, attention::kThreads, attention::kSharedBytes,
                                              [&] { attention::attention_kernel<Element>(p); })) {
    ADD_FAILURE() << name << ": " << e;
  }

  double max_diff = 0.0, max_expected = 0.0;
  int64_t untouched = 0, extra_columns = 0;
  for (int s = 0; s < sequences; ++s) {
    std::vector<double> sequence_qkv(static_cast<size_t>(int64_t{frames} * 3 * dim));
    for (int i = 0; i < frames; ++i) {
      for (int c = 0; c < 3 * dim; ++c) {
        sequence_qkv[static_cast<size_t>(int64_t{i} * 3 * dim + c)] = static_cast<double>(
            emu::bits_to_value<Element>(qkv[static_cast<size_t>((int64_t{s} * frames + i) * qkv_stride + c)]));
      }
    }
    const std::vector<double> expected = reference_alibi_attention(sequence_qkv, frames, heads, slopes);
    for (int i = 0; i < frames; ++i) {
      for (int c = 0; c < dim; ++c) {
        const double want = expected[static_cast<size_t>(int64_t{i} * dim + c)];
        const uint16_t bits = out[static_cast<size_t>((int64_t{s} * frames + i) * out_stride + c)];
        untouched += bits == poison ? 1 : 0;
        const double got = emu::bits_to_value<Element>(bits);
        max_diff = std::max(max_diff, std::isfinite(got) ? std::fabs(got - want) : INFINITY);
        max_expected = std::max(max_expected, std::fabs(want));
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = dim; c < out_stride; ++c) extra_columns += out[static_cast<size_t>(r * out_stride + c)] != poison;
  }
  const double relative = max_diff / max_expected;
  std::printf("[attention mma emulation] %s: max |diff| %.3g, relative %.3g (tolerance %.3g)\n", name.c_str(), max_diff,
              relative, tolerance);
  EXPECT_LE(relative, tolerance) << name;
  EXPECT_EQ(untouched, 0) << name << ": every attended value must be written";
  EXPECT_EQ(extra_columns, 0) << name << ": columns past heads * 64 must stay untouched";
  EXPECT_EQ(out.tail_writes() + qkv.tail_writes(), 0) << name << ": written past a buffer";
}

// Tolerances against float64 from the same inputs: the probabilities are rounded to the element type for the second
// product (2^-11 in float16, 2^-8 in bfloat16), the output once more.
TEST(AttentionMmaEmulation, Float16MatchesFloat64) {
  for (const int frames : {5, 47, 70, 130}) check<cuda::Fp16Tag>(frames, frames == 47 ? 6 : 2, 1e-3);
}
TEST(AttentionMmaEmulation, Bfloat16MatchesFloat64) {
  for (const int frames : {47, 70}) check<cuda::Bf16Tag>(frames, 2, 8e-3);
}

}  // namespace
}  // namespace trackscope::test
