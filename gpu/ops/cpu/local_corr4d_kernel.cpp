// CPU reference of local_corr4d. The neighbourhoods of a block of queries are interpolated into a small
// buffer (plain loops, grid_sample's corner order) and multiplied with the supports by one batched GEMM, so
// the CPU path keeps BLAS speed for the 49x49xC products while never holding more than one block of them.
// The block stays under a few MB: glibc returns larger blocks to the OS on free, and faulting fresh pages
// in on every call costs more than the arithmetic (measured: 118 MB took 1 s to touch on the CI-like VM).
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <cmath>

#include "gpu/ops/kernels.h"

namespace trackscope::gpu::ops::detail {
namespace {

constexpr int64_t kSide = 7;
constexpr int64_t kTaps = 49;
constexpr int64_t kRadius = 3;
constexpr int64_t kBlockBytes = int64_t{8} << 20;  // neighbourhood buffer budget

// neighbourhoods [T*49, C] of one query: bilinear samples of features[t] at (x + dx, y + dy), zeros padding.
template <typename Element>
void interpolate_query(const at::Tensor& features, const float* points, int64_t frame, float* out) {
  const int64_t height = features.size(1);
  const int64_t width = features.size(2);
  const int64_t channels = features.size(3);
  const int64_t stride_frame = features.stride(0);
  const int64_t stride_row = features.stride(1);
  const int64_t stride_column = features.stride(2);
  const Element* base = features.data_ptr<Element>() + frame * stride_frame;
  std::fill(out, out + kTaps * channels, 0.0f);

  const float ix = points[0] - 0.5f;
  const float iy = points[1] - 0.5f;
  if (!std::isfinite(ix) || !std::isfinite(iy)) return;
  const float floor_x = std::floor(ix);
  const float floor_y = std::floor(iy);
  // Far outside: every corner of every tap is outside the grid.
  if (floor_x < -16.0f || floor_y < -16.0f || floor_x > static_cast<float>(width) + 16.0f ||
      floor_y > static_cast<float>(height) + 16.0f) {
    return;
  }
  const auto x0 = static_cast<int64_t>(floor_x);
  const auto y0 = static_cast<int64_t>(floor_y);
  const float fx = ix - floor_x;
  const float fy = iy - floor_y;
  const float corner_weight[4] = {(1.0f - fx) * (1.0f - fy), fx * (1.0f - fy), (1.0f - fx) * fy, fx * fy};
  const int64_t corner_dy[4] = {0, 0, 1, 1};
  const int64_t corner_dx[4] = {0, 1, 0, 1};
  for (int64_t tap = 0; tap < kTaps; ++tap) {
    float* row = out + tap * channels;
    for (int corner = 0; corner < 4; ++corner) {
      const int64_t y = y0 + tap / kSide - kRadius + corner_dy[corner];
      const int64_t x = x0 + tap % kSide - kRadius + corner_dx[corner];
      if (y < 0 || y >= height || x < 0 || x >= width) continue;
      const Element* source = base + y * stride_row + x * stride_column;
      const float w = corner_weight[corner];
      for (int64_t c = 0; c < channels; ++c) row[c] += w * static_cast<float>(source[c]);
    }
  }
}

}  // namespace

void local_corr4d_cpu(const at::Tensor& features, const at::Tensor& points, const at::Tensor& supports,
                      at::Tensor& corr) {
  const int64_t frames = features.size(0);
  const int64_t channels = features.size(3);
  const int64_t queries = points.size(0);
  TORCH_INTERNAL_ASSERT(features.stride(3) == 1 && points.is_contiguous() && supports.is_contiguous());
  // [n, C, 49] contiguous: OpenBLAS takes a slow path for some transposed batched operands (C=256: 7x).
  const at::Tensor supports_t = supports.to(at::kFloat).transpose(1, 2).contiguous();
  const at::Tensor corr_rows = corr.view({queries, frames * kTaps, kTaps});
  const float* point_data = points.data_ptr<float>();
  const int64_t queries_per_block =
      std::max<int64_t>(1, kBlockBytes / std::max<int64_t>(1, frames * kTaps * channels * 4));

  for (int64_t q0 = 0; q0 < queries; q0 += queries_per_block) {
    const int64_t block = std::min(queries_per_block, queries - q0);
    at::Tensor neighbours = at::empty({block, frames * kTaps, channels}, features.options().dtype(at::kFloat));
    float* neighbour_data = neighbours.data_ptr<float>();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, features.scalar_type(), "local_corr4d_cpu", [&] {
      at::parallel_for(0, block * frames, 1, [&](int64_t begin, int64_t end) {
        for (int64_t pair = begin; pair < end; ++pair) {
          const int64_t q = pair / frames;
          const int64_t t = pair % frames;
          interpolate_query<scalar_t>(features, point_data + ((q0 + q) * frames + t) * 2, t,
                                      neighbour_data + (q * frames + t) * kTaps * channels);
        }
      });
    });
    at::Tensor out = corr_rows.narrow(0, q0, block);
    if (corr.scalar_type() == at::kFloat) {
      at::bmm_out(out, neighbours, supports_t.narrow(0, q0, block));
    } else {
      out.copy_(at::bmm(neighbours, supports_t.narrow(0, q0, block)));
    }
  }
}

}  // namespace trackscope::gpu::ops::detail
