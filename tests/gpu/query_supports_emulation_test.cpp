// The query-support gather kernel (gpu/ops/cuda/query_supports_kernel.cuh), its exact source, run on the CPU through
// tests/gpu/cuda_emulation.h (its threads one after another: the kernel has no barrier, warp operation or
// shared memory, which the serial run would report; 16-byte global accesses checked for alignment) against
//   * the eager composite's arithmetic written out here in float, operation by operation (bit for bit: the CUDA
//     kernel is meant to reproduce gpu/ops' CPU implementation exactly), and
//   * grid_sample's definition (bilinear, border padding, align_corners=False) in double (within the element's
//     rounding), which checks the formula itself.
// Both load paths run: 16-byte vectors (aligned grid and channels) and one element at a time (odd channel counts,
// a grid one element off its alignment, a grid whose cells are padded past its channels). Queries reach past every
// border, fall on half frames (round half to even) and outside the clip's frames. Inputs are fresh random values
// each run (the seed is printed; TRACKSCOPE_TEST_SEED repeats a run). Torch-free: it builds in the CPU-only CI.
#include "cuda_emulation.h"  // first: the kernel header takes its primitives from it

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/ops/cuda/query_supports_kernel.cuh"

namespace trackscope::test {
namespace {

namespace cuda = gpu::ops::cuda;
namespace qs = gpu::ops::cuda::query_supports;
namespace emu = cuda_emulation;
using core::locotrack::kSupportSize;
using core::locotrack::kSupportTaps;

uint64_t test_seed() { return cuda_emulation::test_seed("query supports emulation"); }

struct Case {
  const char* name;
  int frames, height, width, channels;
  int cell_stride;    // elements from one cell to the next (>= channels)
  int element_shift;  // the grid starts this many elements past a 16-byte boundary
  bool vectors;       // the kernel's 16-byte path is expected (support_vector_elements' rule)
};

template <class Element>
using Raw = emu::ElementBits<Element>;

// The composite's arithmetic (gpu/ops' CPU implementation), written out in float.
struct AxisF {
  int64_t first, second;
  float weight;
};
AxisF axis_float(float coordinate_256, int offset, int64_t cells) {
  float index = coordinate_256 * (static_cast<float>(cells) / 256.0f);
  index = index + static_cast<float>(offset);
  index = index - 0.5f;
  index = std::fmin(std::fmax(index, 0.0f), static_cast<float>(cells - 1));
  const float lower = std::floor(index);
  return {static_cast<int64_t>(lower), std::min<int64_t>(static_cast<int64_t>(lower) + 1, cells - 1), index - lower};
}

// grid_sample's definition in double: the index u - 0.5 of continuous coordinate u, clipped into the grid (border).
struct AxisD {
  int64_t first, second;
  double weight;
};
AxisD axis_double(double coordinate_256, int offset, int64_t cells) {
  const double index = std::clamp(coordinate_256 * static_cast<double>(cells) / 256.0 + offset - 0.5, 0.0,
                                  static_cast<double>(cells - 1));
  const double lower = std::floor(index);
  return {static_cast<int64_t>(lower), std::min<int64_t>(static_cast<int64_t>(lower) + 1, cells - 1), index - lower};
}

template <class Element>
void check_case(const Case& c, const char* element_name) {
  std::mt19937_64 rng(test_seed() ^ std::hash<std::string>{}(std::string(c.name) + element_name));
  const std::string name = std::string(element_name) + " " + c.name;
  constexpr int kBytes = sizeof(Raw<Element>);

  // Queries: inside, past every border, on half frames (2.5 -> 2, 3.5 -> 4), outside the frames, and one NaN.
  std::vector<float> queries;
  auto add = [&](float t, float y, float x) { queries.insert(queries.end(), {t, y, x}); };
  std::uniform_real_distribution<float> inside(0.0f, 256.0f), wide(-40.0f, 296.0f);
  for (int i = 0; i < 6; ++i) add(static_cast<float>(i % c.frames), inside(rng), inside(rng));
  for (int i = 0; i < 4; ++i) add(static_cast<float>((i + 1) % c.frames), wide(rng), wide(rng));
  add(2.5f, 0.0f, 255.9f);
  add(3.5f, 256.0f, 0.0f);
  add(-3.0f, 1.0f, 1.0f);
  add(static_cast<float>(c.frames) + 4.0f, 128.0f, 128.0f);
  add(0.0f, std::numeric_limits<float>::quiet_NaN(), 100.0f);
  const int64_t count = static_cast<int64_t>(queries.size()) / 3;

  // The grid: random values in [-2, 2], rounded to Element; padding elements past the channels hold NaN, which
  // would show in any output that read them.
  const int64_t cells = static_cast<int64_t>(c.frames) * c.height * c.width;
  const size_t grid_elements = static_cast<size_t>(cells * c.cell_stride);
  std::vector<cuda::Words4> grid_storage((grid_elements + static_cast<size_t>(c.element_shift)) * kBytes / 16 + 2);
  auto* grid = reinterpret_cast<Raw<Element>*>(grid_storage.data()) + c.element_shift;
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  for (int64_t cell = 0; cell < cells; ++cell) {
    for (int ch = 0; ch < c.cell_stride; ++ch) {
      grid[cell * c.cell_stride + ch] =
          emu::value_to_bits<Element>(ch < c.channels ? value(rng) : std::numeric_limits<float>::quiet_NaN());
    }
  }

  // Output with a poisoned tail: a write past the supports shows there.
  const size_t out_elements = static_cast<size_t>(count * kSupportTaps * c.channels);
  constexpr size_t kTail = 64;
  std::vector<cuda::Words4> out_storage((out_elements + kTail) * kBytes / 16 + 1);
  auto* out = reinterpret_cast<Raw<Element>*>(out_storage.data());
  const Raw<Element> poison = static_cast<Raw<Element>>(0x7e7e7e7eu);
  std::fill(out, out + out_elements + kTail, poison);

  cuda::SupportShape shape;
  shape.queries = count;
  shape.frames = c.frames;
  shape.height = c.height;
  shape.width = c.width;
  shape.channels = c.channels;
  shape.stride_column = c.cell_stride;
  shape.stride_row = static_cast<int64_t>(c.width) * c.cell_stride;
  shape.stride_frame = shape.stride_row * c.height;
  constexpr int kVector = qs::kVectorElements<Element>;
  shape.vector_elements = cuda::support_vector_elements(shape, kBytes, grid, out);
  const bool vectors = shape.vector_elements == kVector;
  ASSERT_TRUE(shape.vector_elements == 1 || vectors) << name;
  ASSERT_EQ(vectors, c.vectors) << name << ": the case does not exercise the path it names";

  const std::vector<std::string> errors =
      emu::run_blocks_serially(0, qs::block_count(shape), cuda::kSupportThreads, [&] {
        if (vectors) {
          qs::query_supports_kernel<Element, kVector>(shape, grid, queries.data(), out);
        } else {
          qs::query_supports_kernel<Element, 1>(shape, grid, queries.data(), out);
        }
      });
  for (const std::string& e : errors) ADD_FAILURE() << name << ": " << e;

  int64_t mismatches = 0;
  double max_spec_error = 0.0;
  // The float index carries up to half an ulp of ~150 cells (~1e-5); a 16-bit result adds half a unit in its last
  // place.
  const double relative =
      std::is_same_v<Element, float> ? 1e-4 : (std::is_same_v<Element, cuda::Bf16Tag> ? 4e-3 : 1e-3);
  for (int64_t q = 0; q < count; ++q) {
    const float* query = &queries[static_cast<size_t>(3 * q)];
    const bool finite = std::isfinite(query[1]) && std::isfinite(query[2]);
    const int64_t frame =
        static_cast<int64_t>(std::fmin(std::fmax(std::nearbyint(query[0]), 0.0f), static_cast<float>(c.frames - 1)));
    for (int tap = 0; tap < kSupportTaps; ++tap) {
      const int dy = tap / kSupportSize - 3, dx = tap % kSupportSize - 3;
      const AxisF ry = axis_float(query[1], dy, c.height), rx = axis_float(query[2], dx, c.width);
      const float w00 = (1.0f - ry.weight) * (1.0f - rx.weight), w01 = (1.0f - ry.weight) * rx.weight,
                  w10 = ry.weight * (1.0f - rx.weight), w11 = ry.weight * rx.weight;
      for (int ch = 0; ch < c.channels; ++ch) {
        auto at = [&](int64_t y, int64_t x) {
          return emu::bits_to_value<Element>(grid[((frame * c.height + y) * c.width + x) * c.cell_stride + ch]);
        };
        float sum = at(ry.first, rx.first) * w00;
        sum = sum + at(ry.first, rx.second) * w01;
        sum = sum + at(ry.second, rx.first) * w10;
        sum = sum + at(ry.second, rx.second) * w11;
        const Raw<Element> expected = emu::value_to_bits<Element>(sum);
        const Raw<Element> got = out[static_cast<size_t>((q * kSupportTaps + tap) * c.channels + ch)];
        if (got != expected && ++mismatches <= 5) {
          ADD_FAILURE() << name << ": query " << q << " tap " << tap << " channel " << ch << ": got "
                        << emu::bits_to_value<Element>(got) << ", the composite gives "
                        << emu::bits_to_value<Element>(expected);
        }
        if (!finite) continue;
        const AxisD dy_axis = axis_double(query[1], dy, c.height), dx_axis = axis_double(query[2], dx, c.width);
        auto atd = [&](int64_t y, int64_t x) { return static_cast<double>(at(y, x)); };
        const double spec = atd(dy_axis.first, dx_axis.first) * (1 - dy_axis.weight) * (1 - dx_axis.weight) +
                            atd(dy_axis.first, dx_axis.second) * (1 - dy_axis.weight) * dx_axis.weight +
                            atd(dy_axis.second, dx_axis.first) * dy_axis.weight * (1 - dx_axis.weight) +
                            atd(dy_axis.second, dx_axis.second) * dy_axis.weight * dx_axis.weight;
        max_spec_error =
            std::max(max_spec_error,
                     std::fabs(static_cast<double>(emu::bits_to_value<Element>(got)) - spec) / (1.0 + std::fabs(spec)));
      }
    }
  }
  int64_t tail_writes = 0;
  for (size_t i = out_elements; i < out_elements + kTail; ++i) tail_writes += out[i] != poison ? 1 : 0;
  std::printf("[query supports emulation] %s: %lld queries, %s path; %lld differ from the composite, spec max %.3g\n",
              name.c_str(), static_cast<long long>(count), vectors ? "16-byte" : "scalar",
              static_cast<long long>(mismatches), max_spec_error);
  EXPECT_EQ(mismatches, 0) << name;
  EXPECT_EQ(tail_writes, 0) << name << ": elements written past the supports";
  EXPECT_LE(max_spec_error, relative) << name;
}

// The low-resolution level as the model has it, then 8x12 grids (the clamping and rounding do not depend on the size).
// 64 channels: 16-byte vectors; 6 channels: one element at a time for 16-bit (a 16-byte fp32 vector needs 4 | C: 6 is
// not either); one element off: no 16-byte grid load; cells of 16 elements holding 8 channels: padding the kernel must
// skip (vectors for every type).
template <class Element>
std::vector<Case> cases() {
  const bool is_float = std::is_same_v<Element, float>;
  return {{"the low-resolution level, 32x32x256", 3, 32, 32, 256, 256, 0, true},
          {"64 channels", 5, 8, 12, 64, 64, 0, true},
          {"6 channels", 5, 8, 12, 6, 6, 0, false},
          {"64 channels, one element off", 5, 8, 12, 64, 64, 1, false},
          {"8 of 16 channels per cell", 5, 8, 12, 8, 16, 0, true},
          {"4 channels", 5, 8, 12, 4, 4, 0, is_float}};
}

TEST(QuerySupportsEmulation, Float32MatchesTheCompositeAndTheSpecification) {
  for (const Case& c : cases<float>()) check_case<float>(c, "float32");
}
TEST(QuerySupportsEmulation, Bfloat16MatchesTheCompositeAndTheSpecification) {
  for (const Case& c : cases<cuda::Bf16Tag>()) check_case<cuda::Bf16Tag>(c, "bfloat16");
}
TEST(QuerySupportsEmulation, Float16MatchesTheCompositeAndTheSpecification) {
  for (const Case& c : cases<cuda::Fp16Tag>()) check_case<cuda::Fp16Tag>(c, "float16");
}

}  // namespace
}  // namespace trackscope::test
