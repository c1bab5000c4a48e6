#pragma once
// The operand layout of the tensor-core CMDTop kernel (cmdtop_mma_kernel.cuh), shared by the kernel, the host code
// that prepares its weights (cuda_wrappers.cpp) and the CPU emulation test (tests/gpu/cmdtop_mma_emulation_test.cpp).
// Plain C++: no torch, no CUDA headers.
//
// The kernel multiplies with mma.sync.m16n8k16 (bf16 or fp16 operands, fp32 accumulators). Its GEMM per layer is
// [rows, K] x [K, C_out] with rows = (pair, output position) and K = (tap, channel), tap = ky * kernel + kx, channel
// fastest. The first layer's 49 correlation channels get one zero channel (K channels 50: a pair of K-consecutive
// elements, which one 32-bit register of an mma fragment holds, then never straddles two taps); K is padded with
// zero rows up to a multiple of 16.

#include <cstdint>
#include <cstring>

namespace trackscope::gpu::ops::cuda {

/// Arithmetic tags of the tensor-core kernels: 16-bit operands (raw bit patterns, fp32 accumulation), or float32
/// operands as 3xTF32 (each operand split into a TF32 value and a TF32 remainder, three TF32 products).
struct Fp16Tag {};
struct Bf16Tag {};
struct Tf32x3Tag {};

/// 16 bytes: four 32-bit words (one 16-byte load of a B fragment pair).
struct alignas(16) Words4 {
  uint32_t x = 0, y = 0, z = 0, w = 0;
};

/// Channels per tap along K for a layer with in_channels input channels (49 -> 50, else unchanged).
constexpr int cmdtop_mma_k_channels(int in_channels) { return in_channels % 2 == 0 ? in_channels : in_channels + 1; }
/// K of a layer padded to whole k16 steps.
constexpr int cmdtop_mma_k_padded(int in_channels, int kernel) {
  return (kernel * kernel * cmdtop_mma_k_channels(in_channels) + 15) / 16 * 16;
}

/// Packs one conv weight for the kernel: weight [out_channels][in_channels][kernel][kernel] (float, contiguous) ->
/// packed [k_padded * out_channels] floats in mma B-fragment order:
///   packed[(((s * (out_channels / 16) + q) * 32 + lane) * 4 + r) * 2 + e] = B[16 s + kk][16 q + nn]
///   with g = lane / 4, t = lane % 4, kk = 8 (r % 2) + 2 t + e, nn = 8 (r / 2) + g,
/// B[k][n] = weight[n][c][ky][kx] for k = (ky * kernel + kx) * k_channels + c, c < in_channels, and 0 elsewhere.
/// Converted to 16-bit elements in this order, lane `lane` of a warp reads its B registers of k16 step s and
/// output channels [16 q, 16 q + 16) as one 16-byte word: {b0, b1} of the n8 tile 2q and {b0, b1} of 2q + 1 (PTX ISA,
/// "Matrix Fragments for mma.m16n8k16 with floating point type": b0 holds rows 2t, 2t + 1 and b1 rows 2t + 8,
/// 2t + 9 of column g, lower row in the lower half). out_channels must be a multiple of 16.
inline void pack_cmdtop_mma_weight(const float* weight, int out_channels, int in_channels, int kernel, float* packed) {
  const int k_channels = cmdtop_mma_k_channels(in_channels);
  const int k_real = kernel * kernel * k_channels;
  const int k_steps = cmdtop_mma_k_padded(in_channels, kernel) / 16;
  const int column_blocks = out_channels / 16;
  auto element = [&](int k, int n) -> float {
    if (k >= k_real) return 0.0f;
    const int tap = k / k_channels;
    const int c = k % k_channels;
    if (c >= in_channels) return 0.0f;
    const int ky = tap / kernel;
    const int kx = tap % kernel;
    return weight[((static_cast<int64_t>(n) * in_channels + c) * kernel + ky) * kernel + kx];
  };
  int64_t index = 0;
  for (int s = 0; s < k_steps; ++s) {
    for (int q = 0; q < column_blocks; ++q) {
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4;
        const int t = lane % 4;
        for (int r = 0; r < 4; ++r) {
          for (int e = 0; e < 2; ++e) {
            const int kk = 8 * (r % 2) + 2 * t + e;
            const int nn = 8 * (r / 2) + g;
            packed[index++] = element(16 * s + kk, 16 * q + nn);
          }
        }
      }
    }
  }
}

/// Float32 rounded to TF32 (10 explicit mantissa bits) to nearest, ties away from zero, as cvt.rna.tf32.f32: the
/// lower 13 bits of the result are zero. Finite inputs.
inline float round_to_tf32(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, 4);
  bits = (bits + 0x1000u) & ~0x1fffu;
  float rounded = 0.0f;
  std::memcpy(&rounded, &bits, 4);
  return rounded;
}

/// K of a layer for the 3xTF32 kernel: channels unpadded (one element per register), whole k8 steps.
constexpr int cmdtop_tf32_k_padded(int in_channels, int kernel) { return (kernel * kernel * in_channels + 7) / 8 * 8; }

/// Packs one conv weight for the 3xTF32 kernel (m16n8k8 B fragments): packed [k_padded / 8][out_channels / 16][32
/// lanes][2][4] floats: for k8 step s, output channels [16 q, 16 q + 16) and lane (g = lane / 4, t = lane % 4), first
/// the TF32 parts {b0, b1 of the n8 tile 2q, b0, b1 of 2q + 1}, then the same four TF32 remainders, with b0 = row t
/// and b1 = row t + 4 of column g (PTX ISA, "Matrix Fragments for mma.m16n8k8", .tf32), B[k][n] = weight[n][c][ky][kx]
/// for k = (ky * kernel + kx) * in_channels + c (0 past the end of K). value = part + remainder up to ~2^-22 of it.
inline void pack_cmdtop_tf32_weight(const float* weight, int out_channels, int in_channels, int kernel, float* packed) {
  const int k_real = kernel * kernel * in_channels;
  const int k_steps = cmdtop_tf32_k_padded(in_channels, kernel) / 8;
  auto element = [&](int k, int n) -> float {
    if (k >= k_real) return 0.0f;
    const int tap = k / in_channels;
    const int c = k % in_channels;
    return weight[((static_cast<int64_t>(n) * in_channels + c) * kernel + tap / kernel) * kernel + tap % kernel];
  };
  int64_t index = 0;
  for (int s = 0; s < k_steps; ++s) {
    for (int q = 0; q < out_channels / 16; ++q) {
      for (int lane = 0; lane < 32; ++lane) {
        float parts[4];
        float remainders[4];
        for (int r = 0; r < 4; ++r) {
          const float value = element(8 * s + lane % 4 + 4 * (r % 2), 16 * q + 8 * (r / 2) + lane / 4);
          parts[r] = round_to_tf32(value);
          remainders[r] = round_to_tf32(value - parts[r]);
        }
        for (int r = 0; r < 4; ++r) packed[index++] = parts[r];
        for (int r = 0; r < 4; ++r) packed[index++] = remainders[r];
      }
    }
  }
}

}  // namespace trackscope::gpu::ops::cuda
