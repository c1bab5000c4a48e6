// The mixer-input kernel (gpu/ops/cuda/mixer_input_kernel.cuh), its exact source, run on the CPU through
// tests/gpu/cuda_emulation.h's serial mode (the kernel has no barrier, warp operation or shared memory) against the
// composite's arithmetic written out here in float (u = (p_t - p_t') * 2^-8, u * 2^s, + float(pi/2), sin, one
// rounding into the row's type), bit for bit: the emulation's sin is the host's on both sides. On the GPU,
// gpu/ops_cuda compares the compiled kernel with ATen's composite. Inputs are fresh random values each run (the seed
// is printed; TRACKSCOPE_TEST_SEED repeats a run). Torch-free: it builds in the CPU-only CI.
#include "cuda_emulation.h"  // first: the kernel header takes its primitives from it

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/ops/cuda/mixer_input_kernel.cuh"

namespace trackscope::test {
namespace {

namespace cuda = gpu::ops::cuda;
namespace mi = gpu::ops::cuda::mixer_input;
namespace emu = cuda_emulation;

uint64_t test_seed() { return cuda_emulation::test_seed("mixer input emulation"); }

template <class Element>
using Raw = emu::ElementBits<Element>;

struct Case {
  const char* name;
  int queries, frames, row;
  int encoded_stride_frame;  // >= 768: encoded rows inside wider ones
};

// The composite's value of column `column` (>= 770) of frame t of one track, in float.
float motion_value(const std::vector<float>& track, int t, int frames, int column) {
  auto u = [&](int k) {
    const int neighbour = k < 2 ? t + 1 : t - 1;
    if (neighbour < 0 || neighbour >= frames) return 0.0f;
    const float difference =
        track[static_cast<size_t>(int64_t{2} * t + k % 2)] - track[static_cast<size_t>(int64_t{2} * neighbour + k % 2)];
    return difference * (1.0f / 256.0f);
  };
  if (column < cuda::kMixerSineBegin) return u(column - cuda::kMixerMotionBegin);
  const bool cosine = column >= cuda::kMixerCosineBegin;
  const int index = column - (cosine ? cuda::kMixerCosineBegin : cuda::kMixerSineBegin);
  const float scaled = u(index % 4) * std::ldexp(1.0f, index / 4);
  return std::sin(cosine ? scaled + static_cast<float>(0.5 * 3.14159265358979323846) : scaled);
}

template <class Element>
void check_case(const Case& c, const char* element_name, bool paired = false) {
  std::mt19937_64 rng(test_seed() ^ std::hash<std::string>{}(std::string(c.name) + element_name));
  const std::string name = std::string(element_name) + " " + c.name + (paired ? ", paired" : "");
  const int64_t rows = static_cast<int64_t>(c.queries) * c.frames;
  std::uniform_real_distribution<float> logit(-8.0f, 8.0f), position(-40.0f, 296.0f), code(-3.0f, 3.0f);
  std::vector<float> occlusion(static_cast<size_t>(rows)), expected(static_cast<size_t>(rows));
  for (float& v : occlusion) v = logit(rng);
  for (float& v : expected) v = logit(rng);
  std::vector<float> tracks(static_cast<size_t>(rows * 2));
  for (float& v : tracks) v = position(rng);
  // Encoded values in the row's type; the padding between rows holds a marker that must not reach the output.
  const Raw<Element> marker = static_cast<Raw<Element>>(0x7c01u);
  std::vector<Raw<Element>> encoded(static_cast<size_t>(rows) * static_cast<size_t>(c.encoded_stride_frame), marker);
  for (int64_t r = 0; r < rows; ++r) {
    for (int k = 0; k < cuda::kMixerEncodedColumns; ++k) {
      encoded[static_cast<size_t>(r * c.encoded_stride_frame + k)] = emu::value_to_bits<Element>(code(rng));
    }
  }
  constexpr size_t kTail = 32;
  const Raw<Element> poison = static_cast<Raw<Element>>(0x7e7e7e7eu);
  std::vector<Raw<Element>> out(static_cast<size_t>(rows * c.row) + kTail, poison);

  cuda::MixerInputShape shape;
  shape.queries = c.queries;
  shape.frames = c.frames;
  shape.row = c.row;
  shape.encoded_stride_frame = c.encoded_stride_frame;
  shape.encoded_stride_query = static_cast<int64_t>(c.frames) * c.encoded_stride_frame;
  shape.paired = paired;
  const std::vector<std::string> errors =
      emu::run_blocks_serially(0, mi::block_count(shape), cuda::kMixerInputThreads, [&] {
        mi::mixer_input_kernel<Element>(shape, occlusion.data(), expected.data(), encoded.data(), tracks.data(),
                                        out.data());
      });
  for (const std::string& e : errors) ADD_FAILURE() << name << ": " << e;

  int64_t mismatches = 0;
  for (int q = 0; q < c.queries; ++q) {
    const std::vector<float> track(tracks.begin() + 2 * q * c.frames, tracks.begin() + 2 * (q + 1) * c.frames);
    for (int t = 0; t < c.frames; ++t) {
      const int64_t r = static_cast<int64_t>(q) * c.frames + t;
      for (int column = 0; column < c.row; ++column) {
        Raw<Element> want = emu::value_to_bits<Element>(0.0f);
        if (column == 0) {
          want = emu::value_to_bits<Element>(occlusion[static_cast<size_t>(r)]);
        } else if (column == 1) {
          want = emu::value_to_bits<Element>(expected[static_cast<size_t>(r)]);
        } else if (column < cuda::kMixerMotionBegin) {
          want = encoded[static_cast<size_t>(r * c.encoded_stride_frame + column - cuda::kMixerEncodedBegin)];
        } else if (column < cuda::kMixerInputColumns) {
          want = emu::value_to_bits<Element>(motion_value(track, t, c.frames, column));
        }
        const Raw<Element> got = out[static_cast<size_t>(r * c.row + column)];
        if (got != want && ++mismatches <= 5) {
          ADD_FAILURE() << name << ": query " << q << " frame " << t << " column " << column << ": got bits " << got
                        << ", the composite gives " << want;
        }
      }
    }
  }
  int64_t tail_writes = 0;
  for (size_t i = out.size() - kTail; i < out.size(); ++i) tail_writes += out[i] != poison ? 1 : 0;
  std::printf("[mixer input emulation] %s: %lld rows of %d; %lld differ from the composite\n", name.c_str(),
              static_cast<long long>(rows), c.row, static_cast<long long>(mismatches));
  EXPECT_EQ(mismatches, 0) << name;
  EXPECT_EQ(tail_writes, 0) << name << ": elements written past the rows";
}

// The engine's padded rows (864) from packed encodings; the unpadded 854-column rows from encodings inside wider
// rows; one frame (no neighbour on either side: the motion is all zeros, its cosines 1).
const Case kCases[] = {{"3 queries x 9 frames, rows of 864", 3, 9, 864, 768},
                       {"2 queries x 5 frames, rows of 854, encodings strided", 2, 5, 854, 800},
                       {"4 queries x 1 frame", 4, 1, 864, 768}};

TEST(MixerInputEmulation, Float32MatchesTheComposite) {
  for (const Case& c : kCases) check_case<float>(c, "float32");
}
// 16-bit rows both ways: a column at a time, and two per 32-bit word (every case has even rows and strides).
TEST(MixerInputEmulation, Bfloat16MatchesTheComposite) {
  for (const Case& c : kCases) {
    check_case<cuda::Bf16Tag>(c, "bfloat16");
    check_case<cuda::Bf16Tag>(c, "bfloat16", /*paired=*/true);
  }
}
TEST(MixerInputEmulation, Float16MatchesTheComposite) {
  for (const Case& c : kCases) {
    check_case<cuda::Fp16Tag>(c, "float16");
    check_case<cuda::Fp16Tag>(c, "float16", /*paired=*/true);
  }
}

}  // namespace
}  // namespace trackscope::test
