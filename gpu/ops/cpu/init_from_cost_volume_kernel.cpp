// CPU reference of the fused initialisation, one (query, frame) plane at a time (plain loops in the order
// of docs/locotrack-spec.md §2.4; sums in double so that the reference is the more accurate side).
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gpu/ops/kernels.h"

namespace trackscope::gpu::ops::detail {
namespace {

constexpr float kSoftmaxMultiplier = 20.0f;
constexpr float kWindowRadiusSquared = 25.0f;
constexpr double kDenominatorFloor = 1e-12;

struct PlaneGeometry {
  int64_t low_height, low_width, high_height, high_width;
  float output_scale_x, output_scale_y;
};

// PyTorch's upsample_bilinear2d source index (align_corners=False).
void source_index(int64_t dst, float scale, int64_t input_size, int64_t& i0, int64_t& i1, float& lambda0,
                  float& lambda1) {
  float src = scale * (static_cast<float>(dst) + 0.5f) - 0.5f;
  if (src < 0.0f) src = 0.0f;
  i0 = std::min(static_cast<int64_t>(src), input_size - 1);
  i1 = i0 + (i0 < input_size - 1 ? 1 : 0);
  lambda1 = src - static_cast<float>(i0);
  lambda0 = 1.0f - lambda1;
}

struct PlaneBuffers {
  std::vector<float> low, up, high, heat;
};

template <typename Cost>
void init_plane(const PlaneGeometry& g, const Cost* low_plane, const Cost* high_plane, const float* weight, float bias,
                float query_frame, const float* query_xy, int64_t frame, float* point, float* stat, PlaneBuffers& b) {
  const int64_t low_cells = g.low_height * g.low_width;
  const int64_t cells = g.high_height * g.high_width;
  b.low.resize(static_cast<size_t>(low_cells));
  b.up.resize(static_cast<size_t>(cells));
  b.high.resize(static_cast<size_t>(cells));
  b.heat.resize(static_cast<size_t>(cells));
  for (int64_t c = 0; c < low_cells; ++c) b.low[c] = static_cast<float>(low_plane[c]);

  const float scale_y = static_cast<float>(g.low_height) / static_cast<float>(g.high_height);
  const float scale_x = static_cast<float>(g.low_width) / static_cast<float>(g.high_width);
  double sum_up = 0.0, sum_high = 0.0;
  float max_up = -std::numeric_limits<float>::max(), max_high = max_up;
  float min_up = std::numeric_limits<float>::max(), min_high = min_up;
  for (int64_t y = 0; y < g.high_height; ++y) {
    int64_t y0, y1;
    float ly0, ly1;
    source_index(y, scale_y, g.low_height, y0, y1, ly0, ly1);
    for (int64_t x = 0; x < g.high_width; ++x) {
      int64_t x0, x1;
      float lx0, lx1;
      source_index(x, scale_x, g.low_width, x0, x1, lx0, lx1);
      const float* row0 = b.low.data() + y0 * g.low_width;
      const float* row1 = b.low.data() + y1 * g.low_width;
      const float u = ly0 * (lx0 * row0[x0] + lx1 * row0[x1]) + ly1 * (lx0 * row1[x0] + lx1 * row1[x1]);
      const int64_t c = y * g.high_width + x;
      const float h = static_cast<float>(high_plane[c]);
      b.up[c] = u;
      b.high[c] = h;
      sum_up += u;
      sum_high += h;
      max_up = std::max(max_up, u);
      max_high = std::max(max_high, h);
      min_up = std::min(min_up, u);
      min_high = std::min(min_high, h);
    }
  }

  // 3x3 SAME conv with bias, times the softmax multiplier.
  float plane_max = -std::numeric_limits<float>::infinity();
  for (int64_t y = 0; y < g.high_height; ++y) {
    for (int64_t x = 0; x < g.high_width; ++x) {
      float v = 0.0f;
      for (int64_t ky = 0; ky < 3; ++ky) {
        const int64_t yy = y + ky - 1;
        if (yy < 0 || yy >= g.high_height) continue;
        for (int64_t kx = 0; kx < 3; ++kx) {
          const int64_t xx = x + kx - 1;
          if (xx < 0 || xx >= g.high_width) continue;
          v += weight[ky * 3 + kx] * b.up[yy * g.high_width + xx] +
               weight[9 + ky * 3 + kx] * b.high[yy * g.high_width + xx];
        }
      }
      const float z = kSoftmaxMultiplier * (v + bias);
      b.heat[y * g.high_width + x] = z;
      plane_max = std::max(plane_max, z);
    }
  }
  double total = 0.0;
  for (int64_t c = 0; c < cells; ++c) {
    b.heat[c] = std::exp(b.heat[c] - plane_max);
    total += b.heat[c];
  }
  int64_t best = 0;
  for (int64_t c = 0; c < cells; ++c) {
    b.heat[c] = static_cast<float>(b.heat[c] / total);
    if (b.heat[c] > b.heat[best]) best = c;  // strict: the first index wins ties
  }
  const float peak_x = static_cast<float>(best % g.high_width) + 0.5f;
  const float peak_y = static_cast<float>(best / g.high_width) + 0.5f;
  double weight_sum = 0.0, weighted_x = 0.0, weighted_y = 0.0;
  for (int64_t c = 0; c < cells; ++c) {
    const float cx = static_cast<float>(c % g.high_width) + 0.5f;
    const float cy = static_cast<float>(c / g.high_width) + 0.5f;
    const float dx = cx - peak_x;
    const float dy = cy - peak_y;
    if (dx * dx + dy * dy < kWindowRadiusSquared) {
      weight_sum += b.heat[c];
      weighted_x += static_cast<double>(b.heat[c]) * cx;
      weighted_y += static_cast<double>(b.heat[c]) * cy;
    }
  }
  const double denominator = std::max(weight_sum, kDenominatorFloor);
  point[0] = static_cast<float>(weighted_x / denominator) * g.output_scale_x;
  point[1] = static_cast<float>(weighted_y / denominator) * g.output_scale_y;
  if (std::nearbyint(query_frame) == static_cast<float>(frame)) {  // round half to even, as torch.round
    point[0] = query_xy[0];
    point[1] = query_xy[1];
  }
  stat[0] = static_cast<float>(sum_up / static_cast<double>(cells));
  stat[1] = static_cast<float>(sum_high / static_cast<double>(cells));
  stat[2] = max_up;
  stat[3] = max_high;
  stat[4] = min_up;
  stat[5] = min_high;
}

}  // namespace

void init_planes_cpu(const at::Tensor& cost_lowres, const at::Tensor& cost_hires, const at::Tensor& conv_weight,
                     const at::Tensor& conv_bias, const at::Tensor& query_frames, const at::Tensor& query_xy,
                     at::Tensor& points, at::Tensor& stats) {
  TORCH_INTERNAL_ASSERT(cost_lowres.is_contiguous() && cost_hires.is_contiguous() && query_xy.is_contiguous());
  const int64_t queries = cost_hires.size(0);
  const int64_t frames = cost_hires.size(1);
  const PlaneGeometry g{cost_lowres.size(2),
                        cost_lowres.size(3),
                        cost_hires.size(2),
                        cost_hires.size(3),
                        256.0f / static_cast<float>(cost_hires.size(3)),
                        256.0f / static_cast<float>(cost_hires.size(2))};
  const float* weight = conv_weight.data_ptr<float>();
  const float bias = conv_bias.data_ptr<float>()[0];
  const float* frame_data = query_frames.data_ptr<float>();
  const float* xy_data = query_xy.data_ptr<float>();
  float* point_data = points.data_ptr<float>();
  float* stat_data = stats.data_ptr<float>();
  const int64_t low_cells = g.low_height * g.low_width;
  const int64_t high_cells = g.high_height * g.high_width;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, cost_hires.scalar_type(), "init_planes_cpu", [&] {
    const scalar_t* low = cost_lowres.data_ptr<scalar_t>();
    const scalar_t* high = cost_hires.data_ptr<scalar_t>();
    at::parallel_for(0, queries * frames, 1, [&](int64_t begin, int64_t end) {
      PlaneBuffers buffers;
      for (int64_t plane = begin; plane < end; ++plane) {
        const int64_t q = plane / frames;
        init_plane(g, low + plane * low_cells, high + plane * high_cells, weight, bias, frame_data[q], xy_data + q * 2,
                   plane % frames, point_data + plane * 2, stat_data + plane * 6, buffers);
      }
    });
  });
}

}  // namespace trackscope::gpu::ops::detail
