// CPU versions of CMDTop's two non-GEMM building blocks (the GEMMs are at::matmul on every device).
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <cmath>

#include "gpu/ops/kernels.h"

namespace trackscope::gpu::ops::detail {

void gather_columns_cpu(const at::Tensor& input, const at::Tensor& index, at::Tensor& output) {
  TORCH_INTERNAL_ASSERT(input.dim() == 2 && input.stride(1) == 1 && output.is_contiguous() &&
                        index.scalar_type() == at::kInt && index.is_contiguous());
  const at::Tensor source = input.scalar_type() == at::kFloat ? input : input.to(at::kFloat);
  const int64_t rows = source.size(0);
  const int64_t row_stride = source.stride(0);
  const int64_t columns = index.size(0);
  const float* in = source.data_ptr<float>();
  const int32_t* table = index.data_ptr<int32_t>();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, output.scalar_type(), "gather_columns_cpu", [&] {
    scalar_t* out = output.data_ptr<scalar_t>();
    at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* in_row = in + r * row_stride;
        scalar_t* out_row = out + r * columns;
        for (int64_t j = 0; j < columns; ++j) {
          out_row[j] = static_cast<scalar_t>(table[j] >= 0 ? in_row[table[j]] : 0.0f);
        }
      }
    });
  });
}

void bias_group_norm_relu_cpu(at::Tensor& x, const at::Tensor& bias, const at::Tensor& gamma, const at::Tensor& beta,
                              int64_t groups, double eps) {
  TORCH_INTERNAL_ASSERT(x.dim() == 3 && x.is_contiguous() && x.size(2) % groups == 0);
  const int64_t rows = x.size(0);
  const int64_t positions = x.size(1);
  const int64_t channels = x.size(2);
  const int64_t group_channels = channels / groups;
  const auto count = static_cast<double>(positions * group_channels);
  const float* b = bias.data_ptr<float>();
  const float* g = gamma.data_ptr<float>();
  const float* be = beta.data_ptr<float>();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "bias_group_norm_relu_cpu", [&] {
    scalar_t* data = x.data_ptr<scalar_t>();
    at::parallel_for(0, rows * groups, 16, [&](int64_t begin, int64_t end) {
      for (int64_t work = begin; work < end; ++work) {
        scalar_t* row = data + (work / groups) * positions * channels;
        const int64_t c0 = (work % groups) * group_channels;
        double sum = 0.0;
        for (int64_t p = 0; p < positions; ++p) {
          for (int64_t c = c0; c < c0 + group_channels; ++c) sum += static_cast<float>(row[p * channels + c]) + b[c];
        }
        const double mean = sum / count;
        double squares = 0.0;
        for (int64_t p = 0; p < positions; ++p) {
          for (int64_t c = c0; c < c0 + group_channels; ++c) {
            const double d = static_cast<double>(static_cast<float>(row[p * channels + c]) + b[c]) - mean;
            squares += d * d;
          }
        }
        const double inverse_std = 1.0 / std::sqrt(squares / count + eps);
        for (int64_t p = 0; p < positions; ++p) {
          for (int64_t c = c0; c < c0 + group_channels; ++c) {
            const double v = static_cast<double>(static_cast<float>(row[p * channels + c]) + b[c]);
            const double y = (v - mean) * inverse_std * g[c] + be[c];
            row[p * channels + c] = static_cast<scalar_t>(static_cast<float>(y < 0.0 ? 0.0 : y));
          }
        }
      }
    });
  });
}

}  // namespace trackscope::gpu::ops::detail
