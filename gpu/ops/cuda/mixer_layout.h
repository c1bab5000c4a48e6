#pragma once
// The operand layout of the fused temporal mixer (gpu/ops/mixer_fast.h), shared by the host code that prepares its
// weights (gpu/ops/mixer_fast.cpp), its kernels (mixer_kernels.cuh) and the CPU emulation test
// (tests/gpu/mixer_emulation_test.cpp). Plain C++: no torch, no CUDA headers.
//
// Every linear layer y = W x + b of the mixer runs as one GEMM whose A operand is a row written by the kernel that
// produces x (LayerNorm, attention, GELU): the row carries a ones column at index K, so that the bias is the weight's
// extra column and the GEMM's epilogue has nothing to add. Rows are padded to kp = mixer_padded_k(K) elements
// (a multiple of 8: 16-byte aligned rows in every element type).
//
// Two operand forms:
//  * plain  : A row = [x_0 .. x_{K-1}, 1, 0 ..] (kp elements), W' row n = [W[n][0..K-1], b[n], 0 ..];
//  * split3 : float32 as 3xTF32 on TF32 tensor cores. Every value v is split into big = tf32(v) and
//             small = tf32(v - big) (both exact TF32 values, v = big + small up to ~2^-22 |v|), and
//               A row  = [small(x), 0, 0.. | big(x), 1, 0.. | big(x), 1, 0..]   (3 kp elements)
//               W' row = [big(W), big(b), 0.. | small(W), small(b), 0.. | big(W), big(b), 0..],
//             so that one TF32 GEMM over 3 kp computes small(x) big(W) + big(x) small(W) + big(x) big(W) (+ the bias
//             parts): float32-level accuracy (the dropped small x small is ~2^-22 of each product), the small terms
//             first. The products of TF32 values are exact in the tensor cores, which accumulate in float32.

#include <cstdint>
#include <cstring>

#include "gpu/ops/cuda/cmdtop_mma_layout.h"  // round_to_tf32, the arithmetic tags

namespace trackscope::gpu::ops::cuda {

/// Elements of one operand block of a row with K values: K + the ones column, rounded up to a multiple of 8.
constexpr int mixer_padded_k(int k) { return (k + 1 + 7) / 8 * 8; }
/// Blocks per operand row: 1 (plain) or 3 (split3).
constexpr int mixer_blocks(bool split3) { return split3 ? 3 : 1; }

/// The TF32 split of a float32 value: big = tf32(v) (nearest, ties away, as cvt.rna.tf32.f32), small = tf32(v - big).
inline void split_tf32(float v, float& big, float& small) {
  big = round_to_tf32(v);
  small = round_to_tf32(v - big);
}

/// Packs one linear layer: weight [n][k] and bias [n] (float, contiguous; bias may be null = zeros) -> out [n][blocks
/// * kp] floats in the W' form above (the caller converts to the compute dtype for plain bf16/fp16).
inline void pack_mixer_linear(const float* weight, const float* bias, int n, int k, bool split3, float* out) {
  const int kp = mixer_padded_k(k);
  const int blocks = mixer_blocks(split3);
  for (int row = 0; row < n; ++row) {
    float* o = out + static_cast<int64_t>(row) * blocks * kp;
    for (int i = 0; i < blocks * kp; ++i) o[i] = 0.0f;
    for (int c = 0; c <= k; ++c) {
      const float v = c < k ? weight[static_cast<int64_t>(row) * k + c] : (bias != nullptr ? bias[row] : 0.0f);
      if (!split3) {
        o[c] = v;
        continue;
      }
      float big = 0.0f, small = 0.0f;
      split_tf32(v, big, small);
      o[c] = big;
      o[kp + c] = small;
      o[2 * kp + c] = big;
    }
  }
}

/// Launch-independent facts of the kernels (mixer_kernels.cuh): the attention's query rows per block and key tile,
/// and the largest LayerNorm width (values held in registers, 12 per lane).
inline constexpr int kMixerHeadDim = 64;
inline constexpr int kMixerAttentionRows = 64;
inline constexpr int kMixerAttentionKeys = 16;
inline constexpr int kMixerMaxNormWidth = 384;
inline constexpr int kMixerRowThreads = 256;  // 8 warps: one row per warp

/// Element tag of float32 storage (the 16-bit tags Fp16Tag / Bf16Tag are cmdtop_mma_layout.h's).
struct F32Tag {};

// Kernel arguments (mixer_kernels.cuh has the kernels, launchers.h the launchers).
enum class MixerRowOp : int { copy = 0, layer_norm = 1, gelu = 2 };

struct MixerRowsParams {
  const void* x = nullptr;  // [rows, >= k] of In, row stride x_stride
  int64_t x_stride = 0;
  int64_t rows = 0;
  int k = 0;                     // values per row (layer_norm: <= kMixerMaxNormWidth)
  const float* gamma = nullptr;  // layer_norm: [k]
  const float* beta = nullptr;
  float eps = 1e-5f;
  void* y = nullptr;  // [rows, blocks * kp] of Out, row stride y_stride
  int64_t y_stride = 0;
  int kp = 0;  // mixer_padded_k(k)
};

struct MixerAttentionParams {
  const void* qkv = nullptr;  // [sequences * frames, 3 * dim] of In: q | k | v, head h at columns h * 64
  int64_t qkv_stride = 0;
  int64_t sequences = 0;
  int frames = 0;
  int heads = 0;                  // dim = heads * 64
  const float* slopes = nullptr;  // [heads] ALiBi slopes (forward heads first, then backward heads)
  float scale = 0.125f;
  void* out = nullptr;  // [sequences * frames, blocks * kp] of Out (mixer_layout.h), row stride out_stride
  int64_t out_stride = 0;
  int kp = 0;  // mixer_padded_k(dim)
};

/// The tensor-core attention (attention_mma_kernel.cuh, bfloat16/float16) of the module mixer's QKV rows: the same
/// attention as MixerAttentionParams' kernel, written as plain rows (no ones column, no padding).
struct MixerAttentionMmaParams {
  const void* qkv = nullptr;  // [sequences * frames, qkv_stride] 16-bit: q | k | v, head h at columns h * 64 of each
  int64_t qkv_stride = 0;     // elements, a multiple of 8 (16-byte rows)
  int64_t sequences = 0;
  int frames = 0;
  int heads = 0;                  // even: the first heads / 2 forward, the rest backward
  const float* slopes = nullptr;  // [heads] ALiBi slopes
  float scale = 0.125f;
  void* out = nullptr;  // [sequences * frames, out_stride] 16-bit: head h at columns h * 64 (out_stride even)
  int64_t out_stride = 0;
};

struct MixerHeadParams {
  const void* x = nullptr;  // [rows, k] of In, row stride x_stride
  int64_t x_stride = 0;
  int64_t rows = 0;
  int k = 0;  // <= kMixerMaxNormWidth
  const float* gamma = nullptr;
  const float* beta = nullptr;
  float eps = 1e-5f;
  const float* weight = nullptr;  // [4, k] float32
  const float* bias = nullptr;    // [4]
  float* out = nullptr;           // [rows, 4] float32
};

}  // namespace trackscope::gpu::ops::cuda
