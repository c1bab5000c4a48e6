#pragma once
// Device primitives of the tensor-core CMDTop kernel (cmdtop_mma_kernel.cuh), for nvcc. The kernel reaches the
// hardware only through these (thread and block indices, barriers, shuffles, shared and global memory, mma.sync,
// conversions), so that tests/gpu/cuda_emulation.h can supply host versions of the same functions and run the very
// same kernel source on the CPU (one std::thread per CUDA thread), with shared-memory race and bounds checks.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/ops/cuda/cmdtop_mma_layout.h"

#define TRACKSCOPE_DEVICE_FN __device__ __forceinline__
/// blocks: the minimum of resident blocks per SM ptxas must allow (0: none, a plain __launch_bounds__(threads)).
#define TRACKSCOPE_KERNEL(threads, blocks) __global__ void __launch_bounds__(threads, blocks)
#define TRACKSCOPE_UNROLL _Pragma("unroll")
#define TRACKSCOPE_PRAGMA(text) _Pragma(#text)
/// Unrolls a loop whose trip count is not a constant n times (TRACKSCOPE_UNROLL leaves such a loop rolled).
#define TRACKSCOPE_UNROLL_BY(n) TRACKSCOPE_PRAGMA(unroll n)

namespace trackscope::gpu::ops::cuda::primitives {

TRACKSCOPE_DEVICE_FN int thread_index() { return static_cast<int>(threadIdx.x); }
TRACKSCOPE_DEVICE_FN int64_t block_index() { return static_cast<int64_t>(blockIdx.x); }
TRACKSCOPE_DEVICE_FN void block_sync() { __syncthreads(); }
/// Lets a kernel launched after this one with overlap_previous (programmatic_launch.cuh) start its blocks once every
/// block of this grid has made this call, i.e. on the SMs this grid's last blocks leave idle. A no-op before compute
/// capability 9.0 and where no such kernel follows.
TRACKSCOPE_DEVICE_FN void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
TRACKSCOPE_DEVICE_FN float warp_xor(float v, int offset) { return __shfl_xor_sync(0xffffffffu, v, offset); }
TRACKSCOPE_DEVICE_FN float reciprocal_sqrt(float x) { return rsqrtf(x); }

/// The block's dynamic shared memory (16-byte aligned).
TRACKSCOPE_DEVICE_FN void* dynamic_shared() {
  extern __shared__ uint4 trackscope_dynamic_shared[];
  return trackscope_dynamic_shared;
}

template <class T>
TRACKSCOPE_DEVICE_FN T shared_load(const T* p) {
  return *p;
}
template <class T>
TRACKSCOPE_DEVICE_FN void shared_store(T* p, const T& v) {
  *p = v;
}

/// Read-only global loads (the non-coherent path: the data does not change during the kernel).
TRACKSCOPE_DEVICE_FN Words4 global_load16(const void* p) {
  const uint4 v = __ldg(static_cast<const uint4*>(p));
  Words4 w;
  w.x = v.x;
  w.y = v.y;
  w.z = v.z;
  w.w = v.w;
  return w;
}
TRACKSCOPE_DEVICE_FN uint16_t global_load_u16(const uint16_t* p) { return __ldg(p); }
TRACKSCOPE_DEVICE_FN uint32_t global_load_u32(const uint32_t* p) { return __ldg(p); }
TRACKSCOPE_DEVICE_FN float global_load_f32(const float* p) { return __ldg(p); }
TRACKSCOPE_DEVICE_FN void global_store_u32(uint32_t* p, uint32_t v) { *p = v; }
TRACKSCOPE_DEVICE_FN void global_store_u16(uint16_t* p, uint16_t v) { *p = v; }
TRACKSCOPE_DEVICE_FN void global_store_f32(float* p, float v) { *p = v; }
TRACKSCOPE_DEVICE_FN void global_store16(void* p, const Words4& w) {
  *static_cast<uint4*>(p) = make_uint4(w.x, w.y, w.z, w.w);
}

/// Global memory shared between the blocks of one launch: global_fence() (__threadfence: this thread's global writes
/// before it are seen by any thread of the device before its writes after it), an atomic add that returns the old
/// value, and a load through L2 (ld.global.cg: not the non-coherent read-only path nor L1, so that it sees what
/// another block wrote before its fence).
TRACKSCOPE_DEVICE_FN void global_fence() { __threadfence(); }
TRACKSCOPE_DEVICE_FN uint32_t global_atomic_add_u32(uint32_t* p, uint32_t v) { return atomicAdd(p, v); }
TRACKSCOPE_DEVICE_FN float global_load_f32_coherent(const float* p) { return __ldcg(p); }

/// One float product or sum rounded on its own: never contracted into a fused multiply-add, so that a kernel can
/// reproduce an op-by-op (ATen) evaluation bit for bit.
TRACKSCOPE_DEVICE_FN float mul_rn(float a, float b) { return __fmul_rn(a, b); }
TRACKSCOPE_DEVICE_FN float add_rn(float a, float b) { return __fadd_rn(a, b); }
/// Nearest integer, halves to even (torch.round).
TRACKSCOPE_DEVICE_FN float round_half_even(float x) { return rintf(x); }

/// expf / erff (full-accuracy device versions; the emulation uses the host's).
TRACKSCOPE_DEVICE_FN float exp_f32(float x) { return expf(x); }
TRACKSCOPE_DEVICE_FN float erf_f32(float x) { return erff(x); }
/// sinf (full accuracy: what ATen's CUDA sin computes for float).
TRACKSCOPE_DEVICE_FN float sin_f32(float x) { return sinf(x); }

/// One 16-bit element (bit pattern) to float, and a float rounded to nearest-even into one.
template <class Element>
TRACKSCOPE_DEVICE_FN float half_to_float(uint16_t bits);
template <>
TRACKSCOPE_DEVICE_FN float half_to_float<Fp16Tag>(uint16_t bits) {
  return __half2float(__ushort_as_half(bits));
}
template <>
TRACKSCOPE_DEVICE_FN float half_to_float<Bf16Tag>(uint16_t bits) {
  return __uint_as_float(static_cast<uint32_t>(bits) << 16);
}
template <class Element>
TRACKSCOPE_DEVICE_FN uint16_t float_to_half(float x);
template <>
TRACKSCOPE_DEVICE_FN uint16_t float_to_half<Fp16Tag>(float x) {
  return __half_as_ushort(__float2half_rn(x));
}
template <>
TRACKSCOPE_DEVICE_FN uint16_t float_to_half<Bf16Tag>(float x) {
  const __nv_bfloat16 h = __float2bfloat16_rn(x);
  return *reinterpret_cast<const uint16_t*>(&h);
}

/// cp.async (compute capability 8.0+): a 16-byte global -> shared copy that bypasses the registers; inside == false
/// zero-fills the 16 bytes without reading (the source must still be a valid address). The copies of a thread land
/// after its async_wait_all(); other threads see them after a barrier that follows that wait. Older targets compile
/// a plain copy (kernels using it are not launched there).
TRACKSCOPE_DEVICE_FN void async_copy16(void* shared_destination, const void* global_source, bool inside) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto destination = static_cast<unsigned>(__cvta_generic_to_shared(shared_destination));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(destination), "l"(global_source),
               "r"(inside ? 16 : 0));
#else
  *static_cast<uint4*>(shared_destination) =
      inside ? *static_cast<const uint4*>(global_source) : make_uint4(0, 0, 0, 0);
#endif
}
/// Waits for every cp.async this thread issued.
TRACKSCOPE_DEVICE_FN void async_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

/// Two floats rounded to nearest-even 16-bit elements, `low` in the lower half.
template <class Element>
TRACKSCOPE_DEVICE_FN uint32_t pack2(float low, float high);
template <>
TRACKSCOPE_DEVICE_FN uint32_t pack2<Fp16Tag>(float low, float high) {
  const __half2 h = __floats2half2_rn(low, high);
  return *reinterpret_cast<const uint32_t*>(&h);
}
template <>
TRACKSCOPE_DEVICE_FN uint32_t pack2<Bf16Tag>(float low, float high) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(low, high);
  return *reinterpret_cast<const uint32_t*>(&h);
}

/// d += A * B for one m16n8k16 tile: a = the A fragment (4 registers), b0/b1 = the B fragment, d = fp32
/// accumulators (PTX ISA layouts). Compute capability 8.0 and later; older targets compile a trap (the wrapper
/// never launches the kernel there).
template <class Element>
TRACKSCOPE_DEVICE_FN void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
template <>
TRACKSCOPE_DEVICE_FN void mma_16816<Fp16Tag>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();
#endif
}
template <>
TRACKSCOPE_DEVICE_FN void mma_16816<Bf16Tag>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();
#endif
}

/// cvt.rna.tf32.f32: x rounded to TF32 (nearest, ties away from zero), as a 32-bit pattern whose lower 13 bits are 0.
TRACKSCOPE_DEVICE_FN uint32_t to_tf32(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
#else
  return __float_as_uint(x) & ~0x1fffu;
#endif
}
TRACKSCOPE_DEVICE_FN float bits_to_float(uint32_t bits) { return __uint_as_float(bits); }
TRACKSCOPE_DEVICE_FN uint32_t float_to_bits(float x) { return __float_as_uint(x); }

/// d += A * B for one m16n8k8 tile with TF32 operands (a: 4 registers, b0/b1; PTX ISA layouts), fp32 accumulators.
TRACKSCOPE_DEVICE_FN void mma_1688_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();
#endif
}

}  // namespace trackscope::gpu::ops::cuda::primitives
