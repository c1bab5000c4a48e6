// CPU l2_normalise_channels: one read and one write per pixel row (the reference's square, sum, clamp, sqrt and
// divide are five passes over the backbone's outputs). The sum of squares is float32 like the reference's.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "gpu/ops/cpu/cpu_support.h"
#include "gpu/ops/kernels.h"

namespace trackscope::gpu::ops::detail {
namespace {

constexpr float kMinSquaredNorm = 1e-12f;

template <typename T>
void normalise_rows_generic(const T* x, T* y, int64_t rows, int64_t channels) {
  for (int64_t r = 0; r < rows; ++r) {
    float squares = 0.0f;
    for (int64_t c = 0; c < channels; ++c) {
      const float v = static_cast<float>(x[r * channels + c]);
      squares += v * v;
    }
    const float norm = std::sqrt(std::max(squares, kMinSquaredNorm));
    for (int64_t c = 0; c < channels; ++c)
      y[r * channels + c] = static_cast<T>(static_cast<float>(x[r * channels + c]) / norm);
  }
}

#if TRACKSCOPE_CPU_X86
template <typename T>
TRACKSCOPE_TARGET_AVX512 void normalise_rows_avx512(const T* x, T* y, int64_t rows, int64_t channels) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* in = x + r * channels;
    __m512 squares = _mm512_setzero_ps();
    for (int64_t c = 0; c < channels; c += 16) {
      const __m512 v = load16(in + c);
      squares = _mm512_fmadd_ps(v, v, squares);
    }
    const float norm = std::sqrt(std::max(_mm512_reduce_add_ps(squares), kMinSquaredNorm));
    const __m512 divisor = _mm512_set1_ps(norm);
    for (int64_t c = 0; c < channels; c += 16) store16(y + r * channels + c, _mm512_div_ps(load16(in + c), divisor));
  }
}
#endif

template <typename T>
void normalise_rows(const T* x, T* y, int64_t rows, int64_t channels) {
#if TRACKSCOPE_CPU_X86
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, c10::BFloat16>) {
    if (channels % 16 == 0 && cpu_has_avx512()) return normalise_rows_avx512(x, y, rows, channels);
  }
#endif
  normalise_rows_generic(x, y, rows, channels);
}

}  // namespace

void l2_normalise_channels_cpu(const at::Tensor& x, at::Tensor& out) {
  TORCH_INTERNAL_ASSERT(x.is_contiguous() && out.is_contiguous() && out.sizes() == x.sizes());
  const int64_t channels = x.size(-1);
  const int64_t rows = channels == 0 ? 0 : x.numel() / channels;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "l2_normalise_channels_cpu", [&] {
    const scalar_t* in = x.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    at::parallel_for(0, rows, 256, [&](int64_t begin, int64_t end) {
      normalise_rows(in + begin * channels, o + begin * channels, end - begin, channels);
    });
  });
}

}  // namespace trackscope::gpu::ops::detail
