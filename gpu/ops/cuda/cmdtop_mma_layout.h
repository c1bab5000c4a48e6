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

namespace trackscope::gpu::ops::cuda {

/// Element type tags of the tensor-core kernels (the kernels move raw 16-bit patterns).
struct Fp16Tag {};
struct Bf16Tag {};

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

}  // namespace trackscope::gpu::ops::cuda
