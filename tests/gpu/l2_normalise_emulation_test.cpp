// The one-pass L2 normalisation kernel (gpu/ops/cuda/l2_normalise_kernel.cuh), its exact source, run on the CPU
// through tests/gpu/cuda_emulation.h (a thread per CUDA thread: its group sums go through warp shuffles) against
// x / sqrt(max(sum_c x^2, 1e-12)) in double. Channel counts of the backbone (64, 128, 256: groups of 8, 16 and 32
// lanes, two vectors per lane for 256 float32 channels) and small ones (groups of 1, 2 and 4 lanes), pixel counts
// that leave a warp part empty, an all-zero pixel (stays zero) and the in-place form. Inputs are fresh random values
// each run (the seed is printed; TRACKSCOPE_TEST_SEED repeats a run). Torch-free: it builds in the CPU-only CI.
#include "cuda_emulation.h"  // first: the kernel header takes its primitives from it

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/ops/cuda/l2_normalise_kernel.cuh"

namespace trackscope::test {
namespace {

namespace cuda = gpu::ops::cuda;
namespace l2 = gpu::ops::cuda::l2_normalise;
namespace emu = cuda_emulation;

template <class Element>
using Bits = emu::ElementBits<Element>;

template <class Element, int Group>
std::vector<std::string> run(const l2::L2Shape& shape, const void* x, void* y) {
  return emu::run_blocks(0, l2::block_count(shape, Group), l2::kThreads, 0,
                         [&] { l2::l2_normalise_kernel<Element, Group>(shape, x, y); });
}

template <class Element>
std::vector<std::string> launch(const l2::L2Shape& shape, const void* x, void* y) {
  switch (l2::group_lanes<Element>(shape.channels)) {
    case 1: return run<Element, 1>(shape, x, y);
    case 2: return run<Element, 2>(shape, x, y);
    case 4: return run<Element, 4>(shape, x, y);
    case 8: return run<Element, 8>(shape, x, y);
    case 16: return run<Element, 16>(shape, x, y);
    case 32: return run<Element, 32>(shape, x, y);
    default: return {"channels not eligible"};
  }
}

template <class Element>
void check(int channels, int pixels, bool in_place, const char* element_name) {
  const std::string name = std::string(element_name) + " C=" + std::to_string(channels) + " " + std::to_string(pixels) +
                           " pixels" + (in_place ? " in place" : "");
  std::mt19937_64 rng(emu::test_seed("l2 emulation") ^ std::hash<std::string>{}(name));
  std::uniform_real_distribution<float> value(-3.0f, 3.0f);
  const size_t elements = static_cast<size_t>(channels) * static_cast<size_t>(pixels);
  constexpr size_t kTail = 64;  // poisoned: a store past the rows shows there
  const Bits<Element> poison = static_cast<Bits<Element>>(0x7e7e7e7eu);
  std::vector<cuda::Words4> x_storage((elements * sizeof(Bits<Element>)) / 16 + 1);
  std::vector<cuda::Words4> y_storage(((elements + kTail) * sizeof(Bits<Element>)) / 16 + 1);
  auto* x = reinterpret_cast<Bits<Element>*>(x_storage.data());
  auto* y = in_place ? x : reinterpret_cast<Bits<Element>*>(y_storage.data());
  for (size_t i = 0; i < elements; ++i) x[i] = emu::value_to_bits<Element>(value(rng));
  for (int c = 0; c < channels; ++c) x[static_cast<size_t>(channels) + static_cast<size_t>(c)] = 0;  // pixel 1: zeros
  const std::vector<double> input = [&] {
    std::vector<double> v(elements);
    for (size_t i = 0; i < elements; ++i) v[i] = emu::bits_to_value<Element>(x[i]);
    return v;
  }();
  if (!in_place) std::fill(y, y + elements + kTail, poison);

  ASSERT_GT(l2::group_lanes<Element>(channels), 0) << name;
  const l2::L2Shape shape{pixels, channels};
  for (const std::string& e : launch<Element>(shape, x, y)) ADD_FAILURE() << name << ": " << e;

  double max_error = 0.0;
  for (int p = 0; p < pixels; ++p) {
    double sum = 0.0;
    for (int c = 0; c < channels; ++c)
      sum +=
          input[static_cast<size_t>(int64_t{p} * channels + c)] * input[static_cast<size_t>(int64_t{p} * channels + c)];
    const double norm = std::sqrt(std::max(sum, 1e-12));
    for (int c = 0; c < channels; ++c) {
      const size_t i = static_cast<size_t>(int64_t{p} * channels + c);
      const double got = emu::bits_to_value<Element>(y[i]);
      max_error = std::max(max_error, std::isfinite(got) ? std::fabs(got - input[i] / norm) : INFINITY);
    }
  }
  int64_t tail_writes = 0;
  if (!in_place) {
    for (size_t i = elements; i < elements + kTail; ++i) tail_writes += y[i] != poison ? 1 : 0;
  }
  bool zero_pixel_zero = true;
  for (int c = 0; c < channels; ++c)
    zero_pixel_zero &= emu::bits_to_value<Element>(y[static_cast<size_t>(channels + c)]) == 0.0f;
  // Outputs are at most 1 in magnitude: half a unit in the last place of the type, plus float32's sum.
  const double tolerance =
      std::is_same_v<Element, float> ? 3e-7 : (std::is_same_v<Element, cuda::Bf16Tag> ? 2.5e-3 : 3.5e-4);
  std::printf("[l2 emulation] %s: max |diff| %.3g (tolerance %.3g)\n", name.c_str(), max_error, tolerance);
  EXPECT_LE(max_error, tolerance) << name;
  EXPECT_EQ(tail_writes, 0) << name;
  EXPECT_TRUE(zero_pixel_zero) << name << ": an all-zero pixel must stay zero";
}

template <class Element>
void check_all(const char* element_name) {
  for (const int channels : {64, 128, 256}) check<Element>(channels, 19, false, element_name);
  constexpr int kVector = l2::kVectorElements<Element>;
  for (const int vectors : {1, 2, 4}) check<Element>(vectors * kVector, 45, false, element_name);
  check<Element>(128, 7, true, element_name);
}

TEST(L2NormaliseEmulation, Float32MatchesFloat64) { check_all<float>("float32"); }
TEST(L2NormaliseEmulation, Bfloat16MatchesFloat64) { check_all<cuda::Bf16Tag>("bfloat16"); }
TEST(L2NormaliseEmulation, Float16MatchesFloat64) { check_all<cuda::Fp16Tag>("float16"); }
TEST(L2NormaliseEmulation, IneligibleChannelCountsAreRefused) {
  EXPECT_EQ(l2::group_lanes<cuda::Fp16Tag>(24), 0);    // three vectors: not a power of two
  EXPECT_EQ(l2::group_lanes<cuda::Fp16Tag>(12), 0);    // not whole vectors
  EXPECT_EQ(l2::group_lanes<float>(1024), 0);          // 256 vectors: more than 32 lanes x 4
  EXPECT_EQ(l2::group_lanes<float>(512), 32);          // 128 vectors: 4 per lane
  EXPECT_EQ(l2::group_lanes<cuda::Bf16Tag>(256), 32);  // the low-resolution grid
}

}  // namespace
}  // namespace trackscope::test
