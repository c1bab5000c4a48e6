// CPU local_corr4d. Work items are (query, block of frames): the neighbourhoods of the block are interpolated
// into a thread-local buffer that stays in L2 (plain loops in grid_sample's corner order; AVX-512 when C is a
// multiple of 16), then multiplied with the query's supports by one GEMM on that thread (cpu_support.h: oneDNN
// sgemm), straight into corr where its rows are contiguous fp32, else into a buffer that is converted/placed.
// One item = one GEMM of [frames*49, C] x [C, 49]: measured ~150 GFLOP/s per core on the development VM's Zen 5
// against ~30 GFLOP/s for the former block-wide bmm through OpenBLAS (which ran its AVX2 kernels there).
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/tracking/locotrack_shape.h"
#include "gpu/ops/cpu/cpu_support.h"
#include "gpu/ops/kernels.h"

namespace trackscope::gpu::ops::detail {
namespace {

constexpr int64_t kSide = core::locotrack::kSupportSize;
constexpr int64_t kTaps = core::locotrack::kSupportTaps;
constexpr int64_t kRadius = 3;
constexpr int64_t kCorrRow = core::locotrack::kCorrPerSample;
constexpr int64_t kItemBufferBytes = int64_t{192} << 10;  // neighbourhoods of one work item: L2-resident

struct Grid {
  int64_t height, width, channels, stride_frame, stride_row, stride_column;
};

// Bilinear taps of one point: the integer corner and weights, or false when every corner of every tap is outside
// the grid (far or non-finite points give zero rows).
struct Taps {
  int64_t x0, y0;
  float weight[4];
};
bool point_taps(const float* point, const Grid& g, Taps& taps) {
  const float ix = point[0] - 0.5f;
  const float iy = point[1] - 0.5f;
  if (!std::isfinite(ix) || !std::isfinite(iy)) return false;
  const float floor_x = std::floor(ix);
  const float floor_y = std::floor(iy);
  if (floor_x < -16.0f || floor_y < -16.0f || floor_x > static_cast<float>(g.width) + 16.0f ||
      floor_y > static_cast<float>(g.height) + 16.0f) {
    return false;
  }
  taps.x0 = static_cast<int64_t>(floor_x);
  taps.y0 = static_cast<int64_t>(floor_y);
  const float fx = ix - floor_x;
  const float fy = iy - floor_y;
  taps.weight[0] = (1.0f - fx) * (1.0f - fy);
  taps.weight[1] = fx * (1.0f - fy);
  taps.weight[2] = (1.0f - fx) * fy;
  taps.weight[3] = fx * fy;
  return true;
}

constexpr int64_t kCornerDy[4] = {0, 0, 1, 1};
constexpr int64_t kCornerDx[4] = {0, 1, 0, 1};

// neighbourhood [49, C] of one point in frame `base`: sum over the four corners (in this order) of weight x cell.
template <typename Element>
void interpolate_generic(const Element* base, const Grid& g, const float* point, float* out) {
  std::fill(out, out + kTaps * g.channels, 0.0f);
  Taps taps;
  if (!point_taps(point, g, taps)) return;
  for (int64_t tap = 0; tap < kTaps; ++tap) {
    float* row = out + tap * g.channels;
    for (int corner = 0; corner < 4; ++corner) {
      const int64_t y = taps.y0 + tap / kSide - kRadius + kCornerDy[corner];
      const int64_t x = taps.x0 + tap % kSide - kRadius + kCornerDx[corner];
      if (y < 0 || y >= g.height || x < 0 || x >= g.width) continue;
      const Element* source = base + y * g.stride_row + x * g.stride_column;
      const float w = taps.weight[corner];
      for (int64_t c = 0; c < g.channels; ++c) row[c] += w * static_cast<float>(source[c]);
    }
  }
}

#if TRACKSCOPE_CPU_X86
// Same arithmetic as interpolate_generic (corner order, fp32 products and sums; FMA rounding), C % 16 == 0.
template <typename Element>
TRACKSCOPE_TARGET_AVX512 void interpolate_avx512(const Element* base, const Grid& g, const float* point, float* out) {
  Taps taps;
  if (!point_taps(point, g, taps)) {
    std::memset(out, 0, sizeof(float) * static_cast<size_t>(kTaps * g.channels));
    return;
  }
  for (int64_t tap = 0; tap < kTaps; ++tap) {
    float* row = out + tap * g.channels;
    const Element* source[4];
    float weight[4];
    int used = 0;
    for (int corner = 0; corner < 4; ++corner) {
      const int64_t y = taps.y0 + tap / kSide - kRadius + kCornerDy[corner];
      const int64_t x = taps.x0 + tap % kSide - kRadius + kCornerDx[corner];
      if (y < 0 || y >= g.height || x < 0 || x >= g.width) continue;
      source[used] = base + y * g.stride_row + x * g.stride_column;
      weight[used] = taps.weight[corner];
      ++used;
    }
    for (int64_t c = 0; c < g.channels; c += 16) {
      __m512 sum = _mm512_setzero_ps();
      for (int i = 0; i < used; ++i) sum = _mm512_fmadd_ps(_mm512_set1_ps(weight[i]), load16(source[i] + c), sum);
      _mm512_storeu_ps(row + c, sum);
    }
  }
}
#endif

// Asks for the 8x8-cell window of a point (the taps' corners) ahead of its interpolation: the windows of
// successive frames are far apart in the grid, so the hardware prefetchers see 8 short streams per frame and the
// interpolation was bound by their misses (as long as the block's GEMM, measured).
template <typename Element>
void prefetch_window(const Element* base, const Grid& g, const float* point) {
  Taps taps;
  if (!point_taps(point, g, taps)) return;
  const int64_t x_begin = std::max<int64_t>(0, taps.x0 - kRadius), x_end = std::min(g.width, taps.x0 + kRadius + 2);
  if (x_begin >= x_end) return;
  const int64_t bytes = (x_end - x_begin) * g.stride_column * static_cast<int64_t>(sizeof(Element));
  for (int64_t y = std::max<int64_t>(0, taps.y0 - kRadius); y < std::min(g.height, taps.y0 + kRadius + 2); ++y) {
    const char* row = reinterpret_cast<const char*>(base + y * g.stride_row + x_begin * g.stride_column);
    for (int64_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(row + offset);
  }
}

template <typename Element>
void interpolate(const Element* base, const Grid& g, const float* point, float* out) {
#if TRACKSCOPE_CPU_X86
  if constexpr (!std::is_same_v<Element, double>) {
    if (g.channels % 16 == 0 && cpu_has_avx512()) return interpolate_avx512(base, g, point, out);
  }
#endif
  interpolate_generic(base, g, point, out);
}

}  // namespace

void local_corr4d_cpu(const at::Tensor& features, const at::Tensor& points, const at::Tensor& supports,
                      at::Tensor& corr) {
  const int64_t frames = features.size(0);
  const int64_t channels = features.size(3);
  const int64_t queries = points.size(0);
  TORCH_INTERNAL_ASSERT(features.stride(3) == 1 && points.is_contiguous() && supports.is_contiguous() &&
                        corr.is_contiguous());
  const int64_t row_stride = corr.numel() / std::max<int64_t>(1, queries * frames);  // 2401, or padded rows
  TORCH_INTERNAL_ASSERT(row_stride >= kCorrRow);
  const Grid g{features.size(1),   features.size(2),   channels,
               features.stride(0), features.stride(1), features.stride(2)};
  // The GEMM's B operand: supports [n, 49, C] as float32 (read transposed).
  const at::Tensor supports_f = supports.scalar_type() == at::kFloat ? supports : supports.to(at::kFloat);
  const float* support_data = supports_f.data_ptr<float>();
  const float* point_data = points.data_ptr<float>();
  const int64_t frames_per_item =
      std::clamp<int64_t>(kItemBufferBytes / (kTaps * channels * 4), 1, std::max<int64_t>(1, frames));
  const int64_t items_per_query = (frames + frames_per_item - 1) / frames_per_item;
  const bool direct = corr.scalar_type() == at::kFloat && row_stride == kCorrRow;

  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, features.scalar_type(), "local_corr4d_cpu", [&] {
    const scalar_t* feature_data = features.data_ptr<scalar_t>();
    at::parallel_for(0, queries * items_per_query, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> neighbours(static_cast<size_t>(frames_per_item * kTaps * channels));
      std::vector<float> products(direct ? 0 : static_cast<size_t>(frames_per_item * kCorrRow));
      for (int64_t item = begin; item < end; ++item) {
        const int64_t q = item / items_per_query;
        const int64_t t0 = (item % items_per_query) * frames_per_item;
        const int64_t count = std::min(frames_per_item, frames - t0);
        for (int64_t i = 0; i < count; ++i) {
          const int64_t t = t0 + i;
          if (i + 1 < count)
            prefetch_window(feature_data + (t + 1) * g.stride_frame, g, point_data + (q * frames + t + 1) * 2);
          interpolate(feature_data + t * g.stride_frame, g, point_data + (q * frames + t) * 2,
                      neighbours.data() + i * kTaps * channels);
        }
        float* target = direct ? corr.data_ptr<float>() + (q * frames + t0) * kCorrRow : products.data();
        // [count*49, C] x [49, C]^T -> [count*49, 49] = rows (t, h, w), columns (i, j).
        sgemm(false, true, count * kTaps, kTaps, channels, 1.0f, neighbours.data(), channels,
              support_data + q * kTaps * channels, channels, 0.0f, target, kTaps);
        if (direct) continue;
        for (int64_t i = 0; i < count; ++i) {
          const float* source = products.data() + i * kCorrRow;
          const int64_t offset = (q * frames + t0 + i) * row_stride;
          if (corr.scalar_type() == at::kFloat) {
            float* row = corr.data_ptr<float>() + offset;
            std::memcpy(row, source, sizeof(float) * kCorrRow);
            std::fill(row + kCorrRow, row + row_stride, 0.0f);
          } else {
            scalar_t* row = corr.data_ptr<scalar_t>() + offset;  // the features' reduced dtype
            for (int64_t j = 0; j < kCorrRow; ++j) row[j] = static_cast<scalar_t>(source[j]);
            std::fill(row + kCorrRow, row + row_stride, static_cast<scalar_t>(0.0f));
          }
        }
      }
    });
  });
}

}  // namespace trackscope::gpu::ops::detail
