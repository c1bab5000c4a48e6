// CPU CMDTop: blocks of correlation samples run through every layer on one thread, in float32 buffers that stay
// in that core's caches. Both branches are read channels-last: branch 1 (support offsets (i, j) as channels over
// the target grid (h, w)) is the correlation row itself, branch 2 its 49x49 transpose; every layer then gathers
// channels-last patches in (ky, kx, c_in) order, i.e. contiguous runs of k * C_in values (zeros for the SAME
// padding), multiplies them with the layer's weight (CmdTopFast::Layer::cpu_weight) by one GEMM on that thread
// (cpu_support.h: oneDNN sgemm), and applies bias + GroupNorm + ReLU in place; the mean over the last layer's
// positions goes to the output rows. The former path gathered element by element through the CUDA index tables,
// layer by layer over 16 MB passes, with the GEMMs in OpenBLAS's AVX2 kernels on the development VM's Zen 5.
// Reduced compute dtypes (bf16/fp16) read their correlations exactly and compute in float32 with float32 weights,
// rounding once at the output.
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "gpu/ops/cpu/cpu_support.h"
#include "gpu/ops/kernels.h"

namespace trackscope::gpu::ops::detail {
namespace {

// The largest per-layer buffer of one block. 2 MB (in L2 + L3 of a Zen 5 core) rather than 512 KB: the GEMMs get
// 4x the rows per call (layer 0 of the small model: M = 416 instead of 104, N = 64, K = 1,225) and CMDTop ran 1.4x
// faster on the 2-core VM (820 -> 590 ms, small, N = 64, T = 47); 8 MB was slower again.
constexpr int64_t kCmdTopBlockBytes = int64_t{2} << 20;

constexpr int64_t kCmdTopSide = 7;
constexpr int64_t kCmdTopCells = 49;

// Patches of channels-last rows [rows, H, W, C] of one layer: [rows * positions, k * k * C], columns (ky, kx, c).
void gather_patches(const float* in, int64_t rows, const CmdTopFast::Layer& l, float* out) {
  const int64_t c = l.in_channels;
  const int64_t run = l.kernel * c;  // one kernel row of the window
  const int64_t patch = l.kernel * run;
  const int64_t out_height = l.positions / l.out_width;
  const int64_t in_row = l.in_height * l.in_width * c;
  for (int64_t r = 0; r < rows; ++r) {
    const float* image = in + r * in_row;
    for (int64_t oy = 0; oy < out_height; ++oy) {
      for (int64_t ox = 0; ox < l.out_width; ++ox) {
        float* dst = out + ((r * out_height + oy) * l.out_width + ox) * patch;
        const int64_t x0 = ox * l.stride - l.pad_left;
        const bool columns_inside = x0 >= 0 && x0 + l.kernel <= l.in_width;
        for (int64_t ky = 0; ky < l.kernel; ++ky, dst += run) {
          const int64_t y = oy * l.stride - l.pad_top + ky;
          if (y < 0 || y >= l.in_height) {
            std::memset(dst, 0, sizeof(float) * static_cast<size_t>(run));
            continue;
          }
          const float* line = image + y * l.in_width * c;
          if (columns_inside) {
            std::memcpy(dst, line + x0 * c, sizeof(float) * static_cast<size_t>(run));
            continue;
          }
          for (int64_t kx = 0; kx < l.kernel; ++kx) {
            const int64_t x = x0 + kx;
            if (x < 0 || x >= l.in_width) {
              std::memset(dst + kx * c, 0, sizeof(float) * static_cast<size_t>(c));
            } else {
              std::memcpy(dst + kx * c, line + x * c, sizeof(float) * static_cast<size_t>(c));
            }
          }
        }
      }
    }
  }
}

// Layer 0's input of one sample: branch 1 = the row [h, w, (i, j)], branch 2 = its transpose [i, j, (h, w)].
template <typename T>
void branch_inputs(const T* row, float* branch1, float* branch2) {
  for (int64_t hw = 0; hw < kCmdTopCells; ++hw) {
    for (int64_t ij = 0; ij < kCmdTopCells; ++ij) {
      const float v = static_cast<float>(row[hw * kCmdTopCells + ij]);
      branch1[hw * kCmdTopCells + ij] = v;
      branch2[ij * kCmdTopCells + hw] = v;
    }
  }
}

// x [rows, positions, channels] += bias, then GroupNorm (groups of channels / groups over positions x group
// channels, biased variance, float64 statistics) and ReLU, in place.
void bias_group_norm_relu_rows(float* x, int64_t rows, int64_t positions, int64_t channels, const float* bias,
                               const float* gamma, const float* beta, int64_t groups, double eps) {
  const int64_t group_channels = channels / groups;
  const auto count = static_cast<double>(positions * group_channels);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * positions * channels;
    for (int64_t p = 0; p < positions; ++p) {
      for (int64_t c = 0; c < channels; ++c) row[p * channels + c] += bias[c];
    }
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t c0 = g * group_channels;
      double sum = 0.0;
      for (int64_t p = 0; p < positions; ++p) {
        for (int64_t c = c0; c < c0 + group_channels; ++c) sum += row[p * channels + c];
      }
      const double mean = sum / count;
      double squares = 0.0;
      for (int64_t p = 0; p < positions; ++p) {
        for (int64_t c = c0; c < c0 + group_channels; ++c) {
          const double d = row[p * channels + c] - mean;
          squares += d * d;
        }
      }
      const double inverse_std = 1.0 / std::sqrt(squares / count + eps);
      for (int64_t p = 0; p < positions; ++p) {
        for (int64_t c = c0; c < c0 + group_channels; ++c) {
          const double y = (row[p * channels + c] - mean) * inverse_std * gamma[c] + beta[c];
          row[p * channels + c] = y < 0.0 ? 0.0f : static_cast<float>(y);
        }
      }
    }
  }
}

// out.flat[offset + j] = values[j], j < count, in out's dtype (float32, bfloat16 or float16).
void store_rows(const float* values, int64_t count, at::Tensor& out, int64_t offset) {
  if (out.scalar_type() == at::kFloat) {
    std::copy(values, values + count, out.data_ptr<float>() + offset);
  } else if (out.scalar_type() == at::kBFloat16) {
    std::transform(values, values + count, out.data_ptr<at::BFloat16>() + offset,
                   [](float v) { return static_cast<at::BFloat16>(v); });
  } else {
    TORCH_INTERNAL_ASSERT(out.scalar_type() == at::kHalf);
    std::transform(values, values + count, out.data_ptr<at::Half>() + offset,
                   [](float v) { return static_cast<at::Half>(v); });
  }
}

}  // namespace

void cmdtop_forward_cpu(const at::Tensor& input, const std::vector<CmdTopFast::Layer>& layers, double eps,
                        at::Tensor& out) {
  TORCH_INTERNAL_ASSERT(input.dim() == 2 && input.stride(1) == 1 && out.is_contiguous() && !layers.empty());
  const int64_t samples = input.size(0);
  const int64_t in_stride = input.stride(0);
  const int64_t last_channels = layers.back().channels;
  TORCH_INTERNAL_ASSERT(layers.front().in_channels == kCmdTopCells && layers.front().in_height == kCmdTopSide);
  // Per (sample, branch): the largest of the layer inputs, the gathered patches and the outputs (floats).
  int64_t largest_row = kCmdTopSide * kCmdTopSide * kCmdTopCells;
  for (const CmdTopFast::Layer& l : layers) {
    TORCH_INTERNAL_ASSERT(l.cpu_weight.defined() && l.cpu_weight.size(1) == l.kernel * l.kernel * l.in_channels);
    largest_row = std::max({largest_row, l.positions * l.kernel * l.kernel * l.in_channels, l.positions * l.channels});
  }
  const int64_t samples_per_block =
      std::clamp<int64_t>(kCmdTopBlockBytes / (2 * largest_row * 4), 1, std::max<int64_t>(1, samples));
  const int64_t blocks = (samples + samples_per_block - 1) / samples_per_block;

  auto run_blocks = [&](auto element) {
    using T = decltype(element);
    const T* in = reinterpret_cast<const T*>(input.data_ptr());
    at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
      const auto buffer_floats = static_cast<size_t>(2 * samples_per_block * largest_row);
      std::unique_ptr<float[]> activation(new float[buffer_floats]);
      const std::unique_ptr<float[]> patches(new float[buffer_floats]);
      for (int64_t block = begin; block < end; ++block) {
        const int64_t m0 = block * samples_per_block;
        const int64_t count = std::min(samples_per_block, samples - m0);
        const int64_t rows = 2 * count;  // (sample, branch), branch-major within a sample
        for (int64_t m = 0; m < count; ++m) {
          branch_inputs(in + (m0 + m) * in_stride, activation.get() + (2 * m) * kCmdTopCells * kCmdTopCells,
                        activation.get() + (2 * m + 1) * kCmdTopCells * kCmdTopCells);
        }
        for (const CmdTopFast::Layer& l : layers) {
          const int64_t patch = l.kernel * l.kernel * l.in_channels;
          const bool whole = l.positions == 1 && l.kernel == l.in_height && l.kernel == l.in_width;
          const float* operand = activation.get();  // a kernel covering its whole unpadded input reads the row
          if (!whole) {
            gather_patches(activation.get(), rows, l, patches.get());
            operand = patches.get();
          }
          float* output = whole ? patches.get() : activation.get();
          sgemm(false, true, rows * l.positions, l.channels, patch, 1.0f, operand, patch,
                l.cpu_weight.data_ptr<float>(), patch, 0.0f, output, l.channels);
          bias_group_norm_relu_rows(output, rows, l.positions, l.channels, l.conv_bias.data_ptr<float>(),
                                    l.norm_weight.data_ptr<float>(), l.norm_bias.data_ptr<float>(), l.groups, eps);
          if (output != activation.get())
            std::memcpy(activation.get(), output, sizeof(float) * static_cast<size_t>(rows * l.positions * l.channels));
        }
        // Mean over the last layer's positions -> out rows (2 * count rows of C_last: [branch 1, branch 2]).
        const int64_t positions = layers.back().positions;
        float* pooled = patches.get();
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < last_channels; ++c) {
            float sum = 0.0f;
            for (int64_t p = 0; p < positions; ++p) sum += activation[(r * positions + p) * last_channels + c];
            pooled[r * last_channels + c] = sum / static_cast<float>(positions);
          }
        }
        store_rows(pooled, rows * last_channels, out, m0 * 2 * last_channels);
      }
    });
  };
  switch (input.scalar_type()) {
    case at::kFloat: run_blocks(float{}); break;
    case at::kBFloat16: run_blocks(at::BFloat16{}); break;
    case at::kHalf: run_blocks(at::Half{}); break;
    default: TORCH_CHECK(false, "cmdtop_fast: unsupported correlation dtype ", input.scalar_type());
  }
}

}  // namespace trackscope::gpu::ops::detail
