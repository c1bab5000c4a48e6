#pragma once
// Internal to gpu/ops/cpu: what the CPU kernels share. A row-major single-precision GEMM that runs on the
// calling thread (oneDNN's AVX-512 sgemm where the build has oneDNN, else ATen's BLAS), and the AVX-512 gate
// of the hand-vectorised loops.
//
// Why oneDNN: Debian's OpenBLAS 0.3.21 does not know AMD Zen 5 (family 0x1A) and runs its AVX2 (Haswell)
// kernels there, half the machine's FMA rate; oneDNN picks its kernels by instruction set (measured on the
// 2-core development VM, one core: OpenBLAS 102 GFLOP/s, oneDNN 150-200 GFLOP/s on the shapes below).
//
// Threads: every function here may be called concurrently from the threads of an at::parallel_for; the GEMM
// never starts threads of its own inside one.

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#define TRACKSCOPE_CPU_X86 1
/// Marks a function compiled for AVX-512 (F, BW, VL, DQ) + FMA; call it only when cpu_has_avx512() is true.
#define TRACKSCOPE_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))
#else
#define TRACKSCOPE_CPU_X86 0
#define TRACKSCOPE_TARGET_AVX512
#endif

#if TRACKSCOPE_CPU_X86
// GCC 12 reports its own _mm512_undefined_* placeholders as maybe-uninitialized once inlined (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

namespace trackscope::gpu::ops::detail {

/// Whether the processor runs AVX-512 F/BW/VL/DQ (the hand-vectorised loops' requirement).
bool cpu_has_avx512();
/// Whether it has bf16 arithmetic: AVX-512 BF16 (vdpbf16ps) or AMX-BF16, which oneDNN's bf16 convolutions and
/// GEMMs use (bf16 products at twice the fp32 rate or more).
bool cpu_has_bf16_arithmetic();

/// C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C, row-major with leading dimensions lda, ldb, ldc;
/// op(X) = X^T where trans_x. Runs on the calling thread when called inside a parallel region.
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

#if TRACKSCOPE_CPU_X86
// 16 lanes of fp32 from fp32, bf16 (exact) or fp16 (exact) storage, and back (bf16: round to nearest even, as
// c10::BFloat16; finite values).
TRACKSCOPE_TARGET_AVX512 inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
TRACKSCOPE_TARGET_AVX512 inline __m512 load16(const c10::BFloat16* p) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
}
TRACKSCOPE_TARGET_AVX512 inline __m512 load16(const c10::Half* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
TRACKSCOPE_TARGET_AVX512 inline void store16(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
TRACKSCOPE_TARGET_AVX512 inline void store16(c10::BFloat16* p, __m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7FFF)), lsb);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded, 16)));
}
TRACKSCOPE_TARGET_AVX512 inline void store16(c10::Half* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
#endif

}  // namespace trackscope::gpu::ops::detail
