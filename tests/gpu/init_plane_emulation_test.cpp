// The fused init_from_cost_volume plane kernel (gpu/ops/cuda/init_plane_kernel.cuh), its exact source, run on the
// CPU through tests/gpu/cuda_emulation.h (one thread per CUDA thread, shuffles through a warp barrier, shared-memory
// race and bounds checks, 16-byte global loads checked for alignment) against a double-precision reference of
// docs/locotrack-spec.md §2.4 written here. This is how the kernel's reductions, barriers and its two load paths
// (16-byte vectors for aligned planes, one element at a time otherwise) are checked where there is no GPU; the
// CUDA test (gpu/ops_cuda, InitFromCostVolumeCuda) checks the compiled kernel against the CPU implementation.
//
// Each plane has one planted peak (like a real cost volume: the query's feature at one cell), so the argmax is
// never a near-tie that rounding could flip; one flat case makes every cell tie instead (the first cell must win,
// which the kernel's argmax over its candidate cells has to keep). Inputs are fresh random values each run (the seed is
// printed; TRACKSCOPE_TEST_SEED repeats a run). Torch-free: it builds in the CPU-only CI.
#include "cuda_emulation.h"  // first: the kernel header takes its primitives from it

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/ops/cuda/init_plane_kernel.cuh"

namespace trackscope::test {
namespace {

namespace cuda = gpu::ops::cuda;
namespace init = gpu::ops::cuda::init_plane;
namespace emu = cuda_emulation;

uint64_t test_seed() { return cuda_emulation::test_seed("init emulation"); }

struct Case {
  int queries, frames, low_height, low_width;
  bool offset;        // the cost volumes start one element past a 16-byte boundary: no plane is vector-aligned
  bool flat = false;  // every cost zero: every cell's logit is the bias, every cell ties for the argmax
};

std::string describe(const Case& c) {
  return std::to_string(2 * c.low_height) + "x" + std::to_string(2 * c.low_width) +
         (c.offset ? " offset by one element" : " aligned") + (c.flat ? ", flat" : "");
}

template <class Element>
using Raw = std::conditional_t<std::is_same_v<Element, float>, float, uint16_t>;

template <class Element>
Raw<Element> to_raw(float v) {
  if constexpr (std::is_same_v<Element, float>) {
    return v;
  } else {
    return emu::float_to_element<Element>(v);
  }
}
template <class Element>
float from_raw(Raw<Element> v) {
  if constexpr (std::is_same_v<Element, float>) {
    return v;
  } else {
    return emu::element_to_float<Element>(v);
  }
}

// Device-like storage: 16-byte aligned, or one element past that when `offset`.
template <class Element>
struct CostBuffer {
  std::vector<cuda::Words4> storage;
  Raw<Element>* values = nullptr;
  CostBuffer(size_t count, bool offset) : storage((count + 1) * sizeof(Raw<Element>) / 16 + 2) {
    values = reinterpret_cast<Raw<Element>*>(storage.data()) + (offset ? 1 : 0);
  }
};

struct Reference {
  std::vector<double> points;  // [plane][2]
  std::vector<double> stats;   // [plane][6]
};

// docs/locotrack-spec.md §2.4 on the stored (rounded) cost values, in double.
Reference reference(const Case& c, const std::vector<float>& low, const std::vector<float>& high,
                    const std::vector<float>& weight, const std::vector<float>& query_frames,
                    const std::vector<float>& query_xy) {
  const int hl = c.low_height, wl = c.low_width, hh = 2 * hl, wh = 2 * wl;
  const int planes = c.queries * c.frames;
  Reference r{std::vector<double>(static_cast<size_t>(planes) * 2),
              std::vector<double>(static_cast<size_t>(planes) * 6)};
  auto source = [](int dst, int input_size, int& i0, int& i1, double& l1) {
    double src = 0.5 * (dst + 0.5) - 0.5;
    if (src < 0) src = 0;
    i0 = std::min(static_cast<int>(src), input_size - 1);
    i1 = i0 + (i0 < input_size - 1 ? 1 : 0);
    l1 = src - i0;
  };
  for (int p = 0; p < planes; ++p) {
    const float* lp = &low[static_cast<size_t>(p) * hl * wl];
    const float* hp = &high[static_cast<size_t>(p) * hh * wh];
    auto cell = [wh](int y, int x) {
      return static_cast<size_t>(y) * static_cast<size_t>(wh) + static_cast<size_t>(x);
    };
    std::vector<double> up(static_cast<size_t>(hh) * static_cast<size_t>(wh));
    for (int y = 0; y < hh; ++y) {
      for (int x = 0; x < wh; ++x) {
        int y0, y1, x0, x1;
        double ly, lx;
        source(y, hl, y0, y1, ly);
        source(x, wl, x0, x1, lx);
        up[cell(y, x)] = (1 - ly) * ((1 - lx) * lp[y0 * wl + x0] + lx * lp[y0 * wl + x1]) +
                         ly * ((1 - lx) * lp[y1 * wl + x0] + lx * lp[y1 * wl + x1]);
      }
    }
    std::vector<double> logit(up.size());
    double max_logit = -INFINITY;
    for (int y = 0; y < hh; ++y) {
      for (int x = 0; x < wh; ++x) {
        double v = weight[18];
        for (int ky = 0; ky < 3; ++ky) {
          for (int kx = 0; kx < 3; ++kx) {
            const int yy = y + ky - 1, xx = x + kx - 1;
            if (yy < 0 || yy >= hh || xx < 0 || xx >= wh) continue;
            v += weight[ky * 3 + kx] * up[cell(yy, xx)] + weight[9 + ky * 3 + kx] * hp[yy * wh + xx];
          }
        }
        logit[cell(y, x)] = 20.0 * v;
        max_logit = std::max(max_logit, 20.0 * v);
      }
    }
    double sum = 0;
    for (double& v : logit) sum += (v = std::exp(v - max_logit));
    int best = 0;
    for (int i = 1; i < hh * wh; ++i)
      if (logit[static_cast<size_t>(i)] > logit[static_cast<size_t>(best)]) best = i;
    const int best_row = best / wh, best_column = best % wh;  // cell centres are at index + 0.5
    const double px = best_column + 0.5, py = best_row + 0.5;
    double ws = 0, wx = 0, wy = 0;
    for (int i = 0; i < hh * wh; ++i) {
      const int row = i / wh, column = i % wh;
      const double cx = column + 0.5, cy = row + 0.5;
      if ((cx - px) * (cx - px) + (cy - py) * (cy - py) < 25.0) {
        const double h = logit[static_cast<size_t>(i)] / sum;
        ws += h;
        wx += h * cx;
        wy += h * cy;
      }
    }
    const int query = p / c.frames, frame = p % c.frames;
    double x = wx / std::max(ws, 1e-12) * 256.0 / wh, y = wy / std::max(ws, 1e-12) * 256.0 / hh;
    if (std::nearbyint(query_frames[static_cast<size_t>(query)]) == frame) {
      x = query_xy[static_cast<size_t>(query) * 2];
      y = query_xy[static_cast<size_t>(query) * 2 + 1];
    }
    r.points[static_cast<size_t>(p) * 2] = x;
    r.points[static_cast<size_t>(p) * 2 + 1] = y;
    double su = 0, sh = 0, mu = -INFINITY, mh = -INFINITY, nu = INFINITY, nh = INFINITY;
    for (int i = 0; i < hh * wh; ++i) {
      su += up[static_cast<size_t>(i)];
      sh += hp[i];
      mu = std::max(mu, up[static_cast<size_t>(i)]);
      mh = std::max(mh, static_cast<double>(hp[i]));
      nu = std::min(nu, up[static_cast<size_t>(i)]);
      nh = std::min(nh, static_cast<double>(hp[i]));
    }
    const double stats[6] = {su / (hh * wh), sh / (hh * wh), mu, mh, nu, nh};
    std::copy(stats, stats + 6, r.stats.begin() + static_cast<std::ptrdiff_t>(p) * 6);
  }
  return r;
}

template <class Element>
void check_case(const Case& c, const char* element_name) {
  const int hl = c.low_height, wl = c.low_width, hh = 2 * hl, wh = 2 * wl;
  const int planes = c.queries * c.frames;
  const size_t low_count = static_cast<size_t>(planes) * hl * wl;
  const size_t high_count = static_cast<size_t>(planes) * hh * wh;
  std::mt19937_64 rng(test_seed() + static_cast<uint64_t>(hh * 131 + wh * 7 + (c.offset ? 1 : 0)) +
                      sizeof(Raw<Element>) * 1000003u + (std::is_same_v<Element, cuda::Bf16Tag> ? 17u : 0u));
  std::normal_distribution<float> noise(0.0f, 0.1f);

  // Noise everywhere, one planted peak per plane (the same place in both planes); stored values rounded to the
  // element type, and the reference reads the stored values.
  CostBuffer<Element> low(low_count, c.offset), high(high_count, c.offset);
  std::vector<float> low_values(low_count), high_values(high_count);
  for (int p = 0; p < planes; ++p) {
    const int peak = std::uniform_int_distribution<int>(0, hh * wh - 1)(rng);
    const int peak_low = (peak / wh / 2) * wl + (peak % wh) / 2;
    for (int i = 0; i < hl * wl; ++i) {
      const size_t at = static_cast<size_t>(p) * hl * wl + static_cast<size_t>(i);
      low.values[at] = to_raw<Element>(c.flat ? 0.0f : noise(rng) + (i == peak_low ? 0.6f : 0.0f));
      low_values[at] = from_raw<Element>(low.values[at]);
    }
    for (int i = 0; i < hh * wh; ++i) {
      const size_t at = static_cast<size_t>(p) * hh * wh + static_cast<size_t>(i);
      high.values[at] = to_raw<Element>(c.flat ? 0.0f : noise(rng) + (i == peak ? 1.0f : 0.0f));
      high_values[at] = from_raw<Element>(high.values[at]);
    }
  }
  // A positive, centre-heavy kernel, like a trained cost_conv.
  std::vector<float> weight(19);
  for (int i = 0; i < 18; ++i) weight[static_cast<size_t>(i)] = 0.1f + noise(rng) * 0.5f + (i % 9 == 4 ? 0.5f : 0.0f);
  weight[18] = noise(rng);
  // Query 0 is pinned on frame 1, query 1 on frame 0 (0.5 rounds half to even), any others nowhere.
  std::vector<float> query_frames(static_cast<size_t>(c.queries), -5.0f);
  query_frames[0] = 1.0f;
  if (c.queries > 1) query_frames[1] = 0.5f;
  std::vector<float> query_xy(static_cast<size_t>(c.queries) * 2);
  for (float& v : query_xy) v = std::uniform_real_distribution<float>(0.0f, 256.0f)(rng);

  const float poison = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> points(static_cast<size_t>(planes) * 2, poison), stats(static_cast<size_t>(planes) * 6, poison);
  cuda::InitShape shape;
  shape.queries = c.queries;
  shape.frames = c.frames;
  shape.low_height = hl;
  shape.low_width = wl;
  shape.high_height = hh;
  shape.high_width = wh;
  shape.output_scale_x = 256.0f / static_cast<float>(wh);
  shape.output_scale_y = 256.0f / static_cast<float>(hh);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> errors =
      emu::run_blocks(0, planes, init::kThreads, static_cast<size_t>(init::shared_bytes(hl * wl, hh, wh)), [&] {
        init::init_plane_kernel<Element>(shape, low.values, high.values, weight.data(), weight.data() + 18,
                                         query_frames.data(), query_xy.data(), points.data(), stats.data());
      });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string name = std::string(element_name) + " " + describe(c);
  for (const std::string& e : errors) ADD_FAILURE() << name << ": " << e;

  const Reference expected = reference(c, low_values, high_values, weight, query_frames, query_xy);
  double max_point = 0, max_stat = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const double d = std::fabs(points[i] - expected.points[i]);
    max_point = std::max(max_point, std::isnan(d) ? INFINITY : d);
  }
  for (size_t i = 0; i < stats.size(); ++i) {
    const double d = std::fabs(stats[i] - expected.stats[i]);
    max_stat = std::max(max_stat, std::isnan(d) ? INFINITY : d);
  }
  std::printf("[init emulation] %s: %d planes in %.2f s; points max |diff| %.3g px (1e-3), stats %.3g (1e-5)\n",
              name.c_str(), planes, seconds, max_point, max_stat);
  EXPECT_LE(max_point, 1e-3) << name;
  EXPECT_LE(max_stat, 1e-5) << name;
  // The pins: exactly the query's point on its (rounded) frame.
  EXPECT_EQ(points[2], query_xy[0]) << name;  // query 0, frame 1
  if (c.queries > 1) {
    EXPECT_EQ(points[static_cast<size_t>(c.frames) * 2], query_xy[2]) << name;  // query 1, frame 0
  }
}

// 64x64: both planes load as 16-byte vectors. Offset by one element: every load one element at a time. 6x10:
// 60 high cells (a whole number of fp32 vectors, not of 16-bit ones) and 15 low cells (neither). 20x40: rows of
// whole vectors, 800 cells (3-4 per thread) whose step of 256 cells wraps rows (6 rows + 16 columns). Flat: every
// cell ties for the argmax, which must be the first cell (a window clipped by the plane's corner).
const Case kCases[] = {{2, 2, 32, 32, false},
                       {2, 2, 32, 32, true},
                       {3, 3, 3, 5, false},
                       {1, 2, 10, 20, false},
                       {1, 2, 32, 32, false, true}};

TEST(InitPlaneEmulation, Float32MatchesTheSpecification) {
  for (const Case& c : kCases) check_case<float>(c, "float32");
}
TEST(InitPlaneEmulation, Bfloat16MatchesTheSpecification) {
  for (const Case& c : kCases) check_case<cuda::Bf16Tag>(c, "bfloat16");
}
TEST(InitPlaneEmulation, Float16MatchesTheSpecification) {
  for (const Case& c : kCases) check_case<cuda::Fp16Tag>(c, "float16");
}

}  // namespace
}  // namespace trackscope::test
