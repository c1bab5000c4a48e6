// init_from_cost_volume: argument checks, the two cost-volume GEMMs, and CPU/CUDA dispatch of the fused
// per-plane kernel (contract in gpu/ops/ops.h).
#include <ATen/ops/empty.h>
#include <ATen/ops/matmul.h>
#include <c10/util/Exception.h>

#include <algorithm>

#include "gpu/ops/kernels.h"
#include "gpu/ops/ops.h"

namespace trackscope::gpu::ops {
namespace {

constexpr int64_t kMaxHighCells = 4096;  // one CUDA block keeps <= 16 logits per thread in registers
constexpr int64_t kInitCpuPassBytes = int64_t{16} << 20;

bool is_cost_dtype(at::ScalarType t) { return t == at::kFloat || t == at::kBFloat16 || t == at::kHalf; }

void check_same_device(const at::Tensor& reference, const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.device() == reference.device(), "init_from_cost_volume: ", name, " is on ", t.device(), ", expected ",
              reference.device());
}

}  // namespace

void init_from_cost_volume_planes_out(const at::Tensor& cost_lowres, const at::Tensor& cost_hires,
                                      const at::Tensor& cost_conv_weight, const at::Tensor& cost_conv_bias,
                                      const at::Tensor& query_frames, const at::Tensor& query_xy, at::Tensor& points,
                                      at::Tensor& stats) {
  TORCH_CHECK(cost_lowres.defined() && cost_hires.defined() && cost_conv_weight.defined() && cost_conv_bias.defined() &&
                  query_frames.defined() && query_xy.defined() && points.defined() && stats.defined(),
              "init_from_cost_volume: undefined tensor argument");
  TORCH_CHECK(cost_lowres.dim() == 4 && cost_hires.dim() == 4,
              "init_from_cost_volume: cost volumes must be [n,T,H,W], got ", cost_lowres.sizes(), " and ",
              cost_hires.sizes());
  const int64_t queries = cost_hires.size(0);
  const int64_t frames = cost_hires.size(1);
  const int64_t high_height = cost_hires.size(2);
  const int64_t high_width = cost_hires.size(3);
  TORCH_CHECK(cost_lowres.size(0) == queries && cost_lowres.size(1) == frames,
              "init_from_cost_volume: low-resolution cost ", cost_lowres.sizes(), " and high-resolution cost ",
              cost_hires.sizes(), " disagree on [n,T]");
  TORCH_CHECK(high_height == 2 * cost_lowres.size(2) && high_width == 2 * cost_lowres.size(3),
              "init_from_cost_volume: the high-resolution grid must be twice the low one, got ", cost_hires.sizes(),
              " and ", cost_lowres.sizes());
  TORCH_CHECK(high_height * high_width <= kMaxHighCells && high_height > 0 && high_width > 0,
              "init_from_cost_volume: high-resolution grid ", high_height, "x", high_width,
              " is empty or has more than ", kMaxHighCells, " cells");
  TORCH_CHECK(is_cost_dtype(cost_hires.scalar_type()) && cost_lowres.scalar_type() == cost_hires.scalar_type(),
              "init_from_cost_volume: cost volumes must share a float32/bfloat16/float16 dtype, got ",
              cost_lowres.scalar_type(), " and ", cost_hires.scalar_type());
  TORCH_CHECK(cost_conv_weight.numel() == 18 && cost_conv_weight.dim() == 4 && cost_conv_weight.size(0) == 1 &&
                  cost_conv_weight.size(1) == 2 && cost_conv_weight.size(2) == 3 && cost_conv_weight.size(3) == 3,
              "init_from_cost_volume: cost_conv weight must be [1,2,3,3], got ", cost_conv_weight.sizes());
  TORCH_CHECK(cost_conv_bias.numel() == 1, "init_from_cost_volume: cost_conv bias must have 1 element, got ",
              cost_conv_bias.sizes());
  TORCH_CHECK(query_frames.dim() == 1 && query_frames.size(0) == queries,
              "init_from_cost_volume: query_frames must be [n] = [", queries, "], got ", query_frames.sizes());
  TORCH_CHECK(query_frames.is_floating_point(), "init_from_cost_volume: query_frames must be floating point, got ",
              query_frames.scalar_type());
  TORCH_CHECK(query_xy.dim() == 2 && query_xy.size(0) == queries && query_xy.size(1) == 2 &&
                  query_xy.scalar_type() == at::kFloat,
              "init_from_cost_volume: query_xy must be float32 [", queries, ",2], got ", query_xy.scalar_type(), " ",
              query_xy.sizes());
  TORCH_CHECK(points.scalar_type() == at::kFloat && points.is_contiguous() && points.dim() == 3 &&
                  points.size(0) == queries && points.size(1) == frames && points.size(2) == 2,
              "init_from_cost_volume: points must be a contiguous float32 [", queries, ",", frames, ",2], got ",
              points.scalar_type(), " ", points.sizes());
  TORCH_CHECK(stats.scalar_type() == at::kFloat && stats.is_contiguous() && stats.dim() == 3 &&
                  stats.size(0) == queries && stats.size(1) == frames && stats.size(2) == 6,
              "init_from_cost_volume: stats must be a contiguous float32 [", queries, ",", frames, ",6], got ",
              stats.scalar_type(), " ", stats.sizes());
  check_same_device(cost_hires, cost_lowres, "cost_lowres");
  check_same_device(cost_hires, cost_conv_weight, "cost_conv weight");
  check_same_device(cost_hires, cost_conv_bias, "cost_conv bias");
  check_same_device(cost_hires, query_frames, "query_frames");
  check_same_device(cost_hires, query_xy, "query_xy");
  check_same_device(cost_hires, points, "points");
  check_same_device(cost_hires, stats, "stats");
  if (queries == 0 || frames == 0) return;

  const at::Tensor low = cost_lowres.contiguous();
  const at::Tensor high = cost_hires.contiguous();
  const at::Tensor weight = cost_conv_weight.to(at::kFloat).contiguous().view({18});
  const at::Tensor bias = cost_conv_bias.to(at::kFloat).contiguous().view({1});
  const at::Tensor frames_f = query_frames.to(at::kFloat).contiguous();
  const at::Tensor xy = query_xy.contiguous();
  if (detail::use_cuda(cost_hires, "init_from_cost_volume")) {
#ifdef TRACKSCOPE_WITH_CUDA_OPS
    detail::init_planes_cuda(low, high, weight, bias, frames_f, xy, points, stats);
#endif
  } else {
    detail::init_planes_cpu(low, high, weight, bias, frames_f, xy, points, stats);
  }
}

InitResult init_from_cost_volume(const at::Tensor& query_lowres, const at::Tensor& query_hires,
                                 const at::Tensor& features_lowres, const at::Tensor& features_hires,
                                 const at::Tensor& cost_conv_weight, const at::Tensor& cost_conv_bias,
                                 const at::Tensor& query_frames, const at::Tensor& query_xy, int64_t queries_per_pass) {
  TORCH_CHECK(query_lowres.defined() && query_hires.defined() && features_lowres.defined() && features_hires.defined(),
              "init_from_cost_volume: undefined tensor argument");
  TORCH_CHECK(features_lowres.dim() == 4 && features_hires.dim() == 4,
              "init_from_cost_volume: feature grids must be [T,H,W,C], got ", features_lowres.sizes(), " and ",
              features_hires.sizes());
  const int64_t frames = features_hires.size(0);
  TORCH_CHECK(features_lowres.size(0) == frames,
              "init_from_cost_volume: feature grids disagree on T: ", features_lowres.sizes(), " and ",
              features_hires.sizes());
  TORCH_CHECK(query_lowres.dim() == 2 && query_hires.dim() == 2 && query_lowres.size(0) == query_hires.size(0),
              "init_from_cost_volume: query features must be [n,Cl] and [n,Ch], got ", query_lowres.sizes(), " and ",
              query_hires.sizes());
  TORCH_CHECK(query_lowres.size(1) == features_lowres.size(3) && query_hires.size(1) == features_hires.size(3),
              "init_from_cost_volume: channel counts disagree: query_lowres ", query_lowres.sizes(),
              " vs features_lowres ", features_lowres.sizes(), ", query_hires ", query_hires.sizes(),
              " vs features_hires ", features_hires.sizes());
  TORCH_CHECK(query_lowres.scalar_type() == features_lowres.scalar_type() &&
                  query_hires.scalar_type() == features_hires.scalar_type() &&
                  features_lowres.scalar_type() == features_hires.scalar_type(),
              "init_from_cost_volume: queries and features must share one dtype, got ", query_lowres.scalar_type(),
              ", ", query_hires.scalar_type(), ", ", features_lowres.scalar_type(), ", ", features_hires.scalar_type());
  TORCH_CHECK(queries_per_pass > 0, "init_from_cost_volume: queries_per_pass must be positive, got ", queries_per_pass);
  check_same_device(query_lowres, query_hires, "query_hires");
  check_same_device(query_lowres, features_lowres, "features_lowres");
  check_same_device(query_lowres, features_hires, "features_hires");
  const int64_t queries = query_lowres.size(0);
  TORCH_CHECK(query_frames.defined() && query_frames.dim() == 1 && query_frames.size(0) == queries,
              "init_from_cost_volume: query_frames must be [n] = [", queries, "], got ",
              query_frames.defined() ? query_frames.sizes() : at::IntArrayRef{});
  TORCH_CHECK(query_xy.defined() && query_xy.dim() == 2 && query_xy.size(0) == queries,
              "init_from_cost_volume: query_xy must be [n,2] = [", queries, ",2], got ",
              query_xy.defined() ? query_xy.sizes() : at::IntArrayRef{});
  const int64_t low_height = features_lowres.size(1);
  const int64_t low_width = features_lowres.size(2);
  const int64_t high_height = features_hires.size(1);
  const int64_t high_width = features_hires.size(2);
  const auto out_options = query_lowres.options().dtype(at::kFloat);
  InitResult result{at::empty({queries, frames, 2}, out_options), at::empty({queries, frames, 6}, out_options)};

  // On the CPU a pass also stays under kInitCpuPassBytes of cost volume: glibc hands larger blocks back to the
  // OS on free, and faulting them in again on every pass costs more than the GEMMs.
  if (!query_lowres.is_cuda()) {
    const int64_t bytes_per_query = frames * (low_height * low_width + high_height * high_width) *
                                    static_cast<int64_t>(query_lowres.element_size());
    queries_per_pass =
        std::min(queries_per_pass, std::max<int64_t>(1, kInitCpuPassBytes / std::max<int64_t>(1, bytes_per_query)));
  }
  // CV[q, (t,h,w)] = q[q,:] . F[t,h,w,:]: one GEMM per resolution with the grid as the long dimension.
  const at::Tensor low_grid = features_lowres.reshape({frames * low_height * low_width, features_lowres.size(3)});
  const at::Tensor high_grid = features_hires.reshape({frames * high_height * high_width, features_hires.size(3)});
  for (int64_t q0 = 0; q0 < queries; q0 += queries_per_pass) {
    const int64_t count = std::min(queries_per_pass, queries - q0);
    const at::Tensor cost_low =
        at::matmul(query_lowres.narrow(0, q0, count), low_grid.t()).view({count, frames, low_height, low_width});
    const at::Tensor cost_high =
        at::matmul(query_hires.narrow(0, q0, count), high_grid.t()).view({count, frames, high_height, high_width});
    at::Tensor points = result.points.narrow(0, q0, count);
    at::Tensor stats = result.stats.narrow(0, q0, count);
    init_from_cost_volume_planes_out(cost_low, cost_high, cost_conv_weight, cost_conv_bias,
                                     query_frames.narrow(0, q0, count), query_xy.narrow(0, q0, count), points, stats);
  }
  return result;
}

}  // namespace trackscope::gpu::ops
