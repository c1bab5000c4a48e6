// The CPU kernels' GEMM and processor checks (contract in cpu_support.h).
#include "gpu/ops/cpu/cpu_support.h"

#include <ATen/ops/addmm.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/mm.h>
#include <c10/util/Exception.h>

#ifdef TRACKSCOPE_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif
#if TRACKSCOPE_CPU_X86
#include <cpuid.h>
#endif

namespace trackscope::gpu::ops::detail {

bool cpu_has_avx512() {
#if TRACKSCOPE_CPU_X86
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma");
  }();
  return has;
#else
  return false;
#endif
}

bool cpu_has_bf16_arithmetic() {
#if TRACKSCOPE_CPU_X86
  static const bool has = [] {
    // GCC 12's __builtin_cpu_supports knows neither: CPUID leaf 7, subleaf 1 EAX bit 5 (AVX512_BF16) and subleaf
    // 0 EDX bit 22 (AMX-BF16). __get_cpuid_count returns 0 where the processor has no leaf 7.
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool amx_bf16 = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (edx & (1u << 22)) != 0;
    const bool avx512_bf16 =
        __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && cpu_has_avx512() && (eax & (1u << 5)) != 0;
    return avx512_bf16 || amx_bf16;
  }();
  return has;
#else
  return false;
#endif
}

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
#ifdef TRACKSCOPE_WITH_ONEDNN
  const dnnl_status_t status =
      dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  TORCH_CHECK(status == dnnl_success, "oneDNN sgemm failed with status ", static_cast<int>(status), " (m=", m,
              ", n=", n, ", k=", k, ")");
#else
  const auto options = at::TensorOptions().dtype(at::kFloat);
  // Strided views of the caller's memory; const_cast only because from_blob takes void*: A and B are read.
  const at::Tensor a_view = trans_a ? at::from_blob(const_cast<float*>(a), {m, k}, {1, lda}, options)
                                    : at::from_blob(const_cast<float*>(a), {m, k}, {lda, 1}, options);
  const at::Tensor b_view = trans_b ? at::from_blob(const_cast<float*>(b), {k, n}, {1, ldb}, options)
                                    : at::from_blob(const_cast<float*>(b), {k, n}, {ldb, 1}, options);
  at::Tensor c_view = at::from_blob(c, {m, n}, {ldc, 1}, options);
  if (beta == 0.0f) {
    at::mm_out(c_view, a_view, b_view);
    if (alpha != 1.0f) c_view.mul_(alpha);
  } else {
    c_view.addmm_(a_view, b_view, beta, alpha);
  }
#endif
}

}  // namespace trackscope::gpu::ops::detail
