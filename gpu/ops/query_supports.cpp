// sample_query_supports: argument checks, the ATen composite (the CPU's implementation and the reference) and the
// CUDA dispatch (contract in gpu/ops/ops.h).
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <algorithm>

#include "core/tracking/locotrack_shape.h"
#include "gpu/ops/kernels.h"
#include "gpu/ops/ops.h"

namespace trackscope::gpu::ops {
namespace {

using core::locotrack::kSupportSize;
constexpr int64_t kSupportRadius = kSupportSize / 2;
constexpr double kModelResolution = 256.0;
// Queries per composite call: bounds its float32 corner temporaries (4 x n x 49 x C).
constexpr int64_t kCompositeBlock = 1024;

bool is_support_dtype(at::ScalarType t) { return t == at::kFloat || t == at::kBFloat16 || t == at::kHalf; }

// The composite for queries [n, 3] -> [n, 7, 7, C] float32. Continuous coordinate v is array index v - 0.5;
// border padding clips the index into the grid before the corners are taken.
at::Tensor composite_supports(const at::Tensor& grid, const at::Tensor& queries_tyx) {
  const int64_t frames = grid.size(0), height = grid.size(1), width = grid.size(2), channels = grid.size(3);
  const int64_t count = queries_tyx.size(0);
  const auto float_options = queries_tyx.options().dtype(at::kFloat);
  const at::Tensor steps = at::arange(-kSupportRadius, kSupportRadius + 1, float_options);
  const at::Tensor offset_y = steps.repeat_interleave(kSupportSize), offset_x = steps.repeat({kSupportSize});
  const at::Tensor t = queries_tyx.select(1, 0).round().clamp(0, static_cast<double>(frames - 1)).to(at::kLong);
  const double to_cells_y = static_cast<double>(height) / kModelResolution;
  const double to_cells_x = static_cast<double>(width) / kModelResolution;
  const at::Tensor iy = (queries_tyx.select(1, 1).mul(to_cells_y).unsqueeze(1) + offset_y - 0.5)
                            .clamp(0, static_cast<double>(height - 1));
  const at::Tensor ix =
      (queries_tyx.select(1, 2).mul(to_cells_x).unsqueeze(1) + offset_x - 0.5).clamp(0, static_cast<double>(width - 1));
  const at::Tensor y0 = iy.floor(), x0 = ix.floor();
  const at::Tensor wy = (iy - y0).unsqueeze(-1), wx = (ix - x0).unsqueeze(-1);
  const at::Tensor y0i = y0.to(at::kLong), x0i = x0.to(at::kLong);
  const at::Tensor y1i = (y0i + 1).clamp_max(height - 1), x1i = (x0i + 1).clamp_max(width - 1);
  const at::Tensor frame_base = (t * (height * width)).unsqueeze(1);
  const at::Tensor flat = grid.reshape({frames * height * width, channels});
  auto corner = [&](const at::Tensor& y, const at::Tensor& x) {
    return flat.index_select(0, (frame_base + y * width + x).reshape({-1})).to(at::kFloat).view({count, -1, channels});
  };
  const at::Tensor out = corner(y0i, x0i) * ((1 - wy) * (1 - wx)) + corner(y0i, x1i) * ((1 - wy) * wx) +
                         corner(y1i, x0i) * (wy * (1 - wx)) + corner(y1i, x1i) * (wy * wx);
  return out.view({count, kSupportSize, kSupportSize, channels});
}

}  // namespace

void sample_query_supports_out(const at::Tensor& grid, const at::Tensor& queries_tyx, at::Tensor& supports,
                               GluePath path) {
  TORCH_CHECK(grid.defined() && queries_tyx.defined() && supports.defined(),
              "sample_query_supports: undefined tensor argument");
  TORCH_CHECK(grid.dim() == 4 && grid.size(0) > 0 && grid.size(1) > 0 && grid.size(2) > 0 && grid.size(3) > 0,
              "sample_query_supports: grid must be a non-empty [T,H,W,C], got ", grid.sizes());
  TORCH_CHECK(grid.stride(3) == 1, "sample_query_supports: grid's channel stride must be 1, got ", grid.strides());
  TORCH_CHECK(is_support_dtype(grid.scalar_type()),
              "sample_query_supports: grid must be float32, bfloat16 or float16, got ", grid.scalar_type());
  TORCH_CHECK(queries_tyx.dim() == 2 && queries_tyx.size(1) == 3 && queries_tyx.scalar_type() == at::kFloat,
              "sample_query_supports: queries must be float32 [n,3] (t, y, x), got ", queries_tyx.scalar_type(), " ",
              queries_tyx.sizes());
  const int64_t count = queries_tyx.size(0), channels = grid.size(3);
  TORCH_CHECK(supports.dim() == 4 && supports.size(0) == count && supports.size(1) == kSupportSize &&
                  supports.size(2) == kSupportSize && supports.size(3) == channels && supports.is_contiguous() &&
                  supports.scalar_type() == grid.scalar_type(),
              "sample_query_supports: supports must be a contiguous ", grid.scalar_type(), " [", count, ",",
              kSupportSize, ",", kSupportSize, ",", channels, "], got ", supports.scalar_type(), " ", supports.sizes(),
              (supports.is_contiguous() ? "" : " (not contiguous)"));
  TORCH_CHECK(queries_tyx.device() == grid.device() && supports.device() == grid.device(),
              "sample_query_supports: grid on ", grid.device(), ", queries on ", queries_tyx.device(), ", supports on ",
              supports.device());
  if (count == 0) return;
  if (path == GluePath::automatic && detail::use_cuda(grid, "sample_query_supports")) {
#ifdef TRACKSCOPE_WITH_CUDA_OPS
    detail::query_supports_cuda(grid, queries_tyx.contiguous(), supports);
    return;
#endif
  }
  for (int64_t begin = 0; begin < count; begin += kCompositeBlock) {
    const int64_t length = std::min(kCompositeBlock, count - begin);
    supports.narrow(0, begin, length).copy_(composite_supports(grid, queries_tyx.narrow(0, begin, length)));
  }
}

at::Tensor sample_query_supports(const at::Tensor& grid, const at::Tensor& queries_tyx, GluePath path) {
  TORCH_CHECK(grid.defined() && grid.dim() == 4 && queries_tyx.defined() && queries_tyx.dim() == 2,
              "sample_query_supports: grid must be [T,H,W,C] and queries [n,3]");
  at::Tensor supports = at::empty({queries_tyx.size(0), kSupportSize, kSupportSize, grid.size(3)}, grid.options());
  sample_query_supports_out(grid, queries_tyx, supports, path);
  return supports;
}

}  // namespace trackscope::gpu::ops
