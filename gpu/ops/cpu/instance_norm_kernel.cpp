// CPU instance_norm_relu: one read for the statistics, one read and one write for the normalisation, where the
// written-out reference of gpu/model (mean, subtract, square, mean, rsqrt, multiply, add, relu as separate ATen
// ops) makes about eight passes over each backbone activation (47 frames x 64 x 128 x 128 fp32 = 197 MB).
// Statistics in float64 around a per-channel shift (the first pixel): sum(x - k) and sum((x - k)^2) give the
// mean and the biased variance to ~1e-16 relative for these magnitudes, i.e. at least as accurate as the
// reference's two float passes; the normalisation itself is the reference's float arithmetic.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "gpu/ops/cpu/cpu_support.h"
#include "gpu/ops/kernels.h"

namespace trackscope::gpu::ops::detail {
namespace {

constexpr int64_t kRowTile = 64;  // pixels per statistics tile: a tile of 256 channels is 64 KB (L2)

struct Moments {
  std::vector<double> shift, sum, squares;
  explicit Moments(int64_t channels)
      : shift(static_cast<size_t>(channels)),
        sum(static_cast<size_t>(channels)),
        squares(static_cast<size_t>(channels)) {}
};

template <typename T>
void moments_generic(const T* x, int64_t pixels, int64_t channels, Moments& m) {
  for (int64_t p = 0; p < pixels; ++p) {
    const T* row = x + p * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const double d = static_cast<double>(static_cast<float>(row[c])) - m.shift[c];
      m.sum[c] += d;
      m.squares[c] += d * d;
    }
  }
}

template <typename T>
void normalise_generic(const T* x, T* y, int64_t pixels, int64_t channels, const float* mean, const float* scale,
                       const float* bias) {
  for (int64_t p = 0; p < pixels; ++p) {
    for (int64_t c = 0; c < channels; ++c) {
      const float v = (static_cast<float>(x[p * channels + c]) - mean[c]) * scale[c] + bias[c];
      y[p * channels + c] = static_cast<T>(v > 0.0f ? v : 0.0f);
    }
  }
}

#if TRACKSCOPE_CPU_X86
// channels % 16 == 0. Tiles of kRowTile pixels x 64 channels accumulate in registers (float64), then into m.
template <typename T>
TRACKSCOPE_TARGET_AVX512 void moments_avx512(const T* x, int64_t pixels, int64_t channels, Moments& m) {
  for (int64_t p0 = 0; p0 < pixels; p0 += kRowTile) {
    const int64_t p1 = std::min(pixels, p0 + kRowTile);
    for (int64_t c0 = 0; c0 < channels; c0 += 64) {
      const int chunks = static_cast<int>(std::min<int64_t>(64, channels - c0) / 16);
      __m512d shift[8], sum[8], squares[8];
      for (int k = 0; k < 2 * chunks; ++k) {
        shift[k] = _mm512_loadu_pd(m.shift.data() + c0 + 8 * k);
        sum[k] = _mm512_setzero_pd();
        squares[k] = _mm512_setzero_pd();
      }
      for (int64_t p = p0; p < p1; ++p) {
        const T* row = x + p * channels + c0;
        for (int k = 0; k < chunks; ++k) {
          const __m512 v = load16(row + 16 * k);
          const __m512d lo = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), shift[2 * k]);
          const __m512d hi = _mm512_sub_pd(
              _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))), shift[2 * k + 1]);
          sum[2 * k] = _mm512_add_pd(sum[2 * k], lo);
          sum[2 * k + 1] = _mm512_add_pd(sum[2 * k + 1], hi);
          squares[2 * k] = _mm512_fmadd_pd(lo, lo, squares[2 * k]);
          squares[2 * k + 1] = _mm512_fmadd_pd(hi, hi, squares[2 * k + 1]);
        }
      }
      for (int k = 0; k < 2 * chunks; ++k) {
        double* s = m.sum.data() + c0 + 8 * k;
        double* q = m.squares.data() + c0 + 8 * k;
        _mm512_storeu_pd(s, _mm512_add_pd(_mm512_loadu_pd(s), sum[k]));
        _mm512_storeu_pd(q, _mm512_add_pd(_mm512_loadu_pd(q), squares[k]));
      }
    }
  }
}

template <typename T>
TRACKSCOPE_TARGET_AVX512 void normalise_avx512(const T* x, T* y, int64_t pixels, int64_t channels, const float* mean,
                                               const float* scale, const float* bias) {
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t p = 0; p < pixels; ++p) {
    for (int64_t c = 0; c < channels; c += 16) {
      const __m512 centred = _mm512_sub_ps(load16(x + p * channels + c), _mm512_loadu_ps(mean + c));
      const __m512 v = _mm512_fmadd_ps(centred, _mm512_loadu_ps(scale + c), _mm512_loadu_ps(bias + c));
      store16(y + p * channels + c, _mm512_max_ps(v, zero));
    }
  }
}
#endif

template <typename T>
void normalise_sample(const T* x, T* y, int64_t pixels, int64_t channels, const float* weight, const float* bias,
                      double eps) {
  Moments m(channels);
  for (int64_t c = 0; c < channels; ++c) m.shift[c] = static_cast<double>(static_cast<float>(x[c]));
  bool vectorised = false;
#if TRACKSCOPE_CPU_X86
  vectorised = channels % 16 == 0 && cpu_has_avx512() && !std::is_same_v<T, c10::Half> && !std::is_same_v<T, double>;
#endif
  if (vectorised) {
#if TRACKSCOPE_CPU_X86
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, c10::BFloat16>) moments_avx512(x, pixels, channels, m);
#endif
  } else {
    moments_generic(x, pixels, channels, m);
  }
  std::vector<float> mean(static_cast<size_t>(channels)), scale(static_cast<size_t>(channels));
  const double count = static_cast<double>(pixels);
  for (int64_t c = 0; c < channels; ++c) {
    const double shifted_mean = m.sum[c] / count;
    const double variance = std::max(0.0, m.squares[c] / count - shifted_mean * shifted_mean);
    mean[c] = static_cast<float>(m.shift[c] + shifted_mean);
    // The reference's float arithmetic: rsqrt(var + eps) * weight.
    scale[c] = (1.0f / std::sqrt(static_cast<float>(variance) + static_cast<float>(eps))) * weight[c];
  }
  if (vectorised) {
#if TRACKSCOPE_CPU_X86
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, c10::BFloat16>) {
      normalise_avx512(x, y, pixels, channels, mean.data(), scale.data(), bias);
    }
#endif
  } else {
    normalise_generic(x, y, pixels, channels, mean.data(), scale.data(), bias);
  }
}

}  // namespace

void instance_norm_relu_cpu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps,
                            at::Tensor& y) {
  TORCH_INTERNAL_ASSERT(x.dim() == 4 && x.is_contiguous(at::MemoryFormat::ChannelsLast) &&
                        y.is_contiguous(at::MemoryFormat::ChannelsLast) && y.sizes() == x.sizes() &&
                        weight.scalar_type() == at::kFloat && bias.scalar_type() == at::kFloat &&
                        weight.is_contiguous() && bias.is_contiguous());
  const int64_t samples = x.size(0), channels = x.size(1), pixels = x.size(2) * x.size(3);
  if (samples == 0 || channels == 0 || pixels == 0) return;
  const float* w = weight.data_ptr<float>();
  const float* b = bias.data_ptr<float>();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "instance_norm_relu_cpu", [&] {
    const scalar_t* in = x.data_ptr<scalar_t>();
    scalar_t* out = y.data_ptr<scalar_t>();
    at::parallel_for(0, samples, 1, [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) {
        normalise_sample(in + s * pixels * channels, out + s * pixels * channels, pixels, channels, w, b, eps);
      }
    });
  });
}

}  // namespace trackscope::gpu::ops::detail
