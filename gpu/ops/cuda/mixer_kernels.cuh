#pragma once
// The kernels of the fused temporal mixer (gpu/ops/mixer_fast.h): the producers of every GEMM operand row and the
// attention. Each writes its output straight in the operand form of the next linear layer (mixer_layout.h: a ones
// column for the bias, and in exact mode the 3xTF32 split), so that between two GEMMs there is exactly one pass over
// the activations:
//  * mixer_rows_kernel    one warp per row: copy (the mixer input), LayerNorm (two-pass fp32 statistics in
//                         registers, rows of at most kMixerMaxNormWidth values) or exact GELU (erf), then the row;
//  * mixer_attention_kernel  one block of kMixerAttentionRows threads per (sequence, head, tile of query rows),
//                         a thread per query row: its q and output (64 channels each) in registers, keys and values
//                         in shared memory in tiles of kMixerAttentionKeys, online softmax in fp32. The additive bias
//                         is the split-direction ALiBi of the official model (docs/locotrack-spec.md §4; gpu/model
//                         alibi_bias): heads [0, H/2) attend to keys j <= i with slope * (j - i), heads [H/2, H) to j
//                         >= i with slope * (i - j), -1e9 elsewhere (computed here with the same float products);
//  * mixer_head_kernel    one warp per row: the final LayerNorm and the 4 used rows of output_proj, in fp32.
// Element types: float32 or 16-bit (Fp16Tag / Bf16Tag) storage, fp32 arithmetic. The source reaches the hardware
// only through mma_primitives.cuh, so tests/gpu/cuda_emulation.h runs it on the CPU (tests/gpu/mixer_emulation_test).

#include <cmath>
#include <cstdint>

#include "gpu/ops/cuda/mixer_layout.h"
#include "gpu/ops/cuda/warp_reduce.cuh"
#ifndef TRACKSCOPE_CUDA_EMULATION
#include "gpu/ops/cuda/mma_primitives.cuh"
#endif

namespace trackscope::gpu::ops::cuda::mixer {

using namespace primitives;

// Storage of one element type: raw pointer type, load and store with conversion to/from float.
template <class Tag>
struct Storage;
template <>
struct Storage<F32Tag> {
  using Raw = float;
  TRACKSCOPE_DEVICE_FN static float load(const float* p) { return global_load_f32(p); }
  TRACKSCOPE_DEVICE_FN static void store(float* p, float v) { global_store_f32(p, v); }
};
template <class Tag>
struct HalfStorage {
  using Raw = uint16_t;
  TRACKSCOPE_DEVICE_FN static float load(const uint16_t* p) { return half_to_float<Tag>(global_load_u16(p)); }
  TRACKSCOPE_DEVICE_FN static void store(uint16_t* p, float v) { global_store_u16(p, float_to_half<Tag>(v)); }
};
template <>
struct Storage<Fp16Tag> : HalfStorage<Fp16Tag> {};
template <>
struct Storage<Bf16Tag> : HalfStorage<Bf16Tag> {};

// Writes value v as column c of an operand row y of `kp` elements per block (mixer_layout.h).
template <class Out, bool Split>
TRACKSCOPE_DEVICE_FN void emit(typename Storage<Out>::Raw* y, int kp, int c, float v) {
  if constexpr (Split) {
    const float big = bits_to_float(to_tf32(v));
    const float small = bits_to_float(to_tf32(v - big));
    Storage<Out>::store(y + c, small);
    Storage<Out>::store(y + kp + c, big);
    Storage<Out>::store(y + 2 * kp + c, big);
  } else {
    Storage<Out>::store(y + c, v);
  }
}
// Columns [k, kp) of every block: the ones column (0 in the split's small block) and zeros. `first`/`step`: this
// thread's share.
template <class Out, bool Split>
TRACKSCOPE_DEVICE_FN void emit_tail(typename Storage<Out>::Raw* y, int k, int kp, int first, int step) {
  for (int c = k + first; c < kp; c += step) {
    const float one = c == k ? 1.0f : 0.0f;
    if constexpr (Split) {
      Storage<Out>::store(y + c, 0.0f);
      Storage<Out>::store(y + kp + c, one);
      Storage<Out>::store(y + 2 * kp + c, one);
    } else {
      Storage<Out>::store(y + c, one);
    }
  }
}

TRACKSCOPE_DEVICE_FN float warp_sum(float v) { return warp_reduce(v, Sum{}); }

// A LayerNorm row of k <= kMixerMaxNormWidth channels, one warp per row: lane l holds channels l, l + 32, ... in v
// (0 past k); mean and 1 / sqrt(variance + eps) in fp32, two passes (as the reference's statistics).
constexpr int kNormPerLane = kMixerMaxNormWidth / 32;
template <class In>
TRACKSCOPE_DEVICE_FN void warp_layer_norm_statistics(const typename Storage<In>::Raw* x, int k, float eps, int lane,
                                                     float (&v)[kNormPerLane], float& mean, float& inverse_std) {
  float sum = 0.0f;
  TRACKSCOPE_UNROLL
  for (int i = 0; i < kNormPerLane; ++i) {
    const int c = lane + 32 * i;
    v[i] = c < k ? Storage<In>::load(x + c) : 0.0f;
    sum += v[i];
  }
  const float inverse_k = 1.0f / static_cast<float>(k);
  mean = warp_sum(sum) * inverse_k;
  float squares = 0.0f;
  TRACKSCOPE_UNROLL
  for (int i = 0; i < kNormPerLane; ++i) {
    const float d = lane + 32 * i < k ? v[i] - mean : 0.0f;
    squares += d * d;
  }
  inverse_std = reciprocal_sqrt(warp_sum(squares) * inverse_k + eps);
}

// -- rows ------------------------------------------------------------------------------------------------------
constexpr int kRowWarps = kMixerRowThreads / 32;

// The operation is a run-time argument (uniform per launch): one instantiation per storage form instead of three.
template <class In, class Out, bool Split>
TRACKSCOPE_KERNEL(kMixerRowThreads, 1)
mixer_rows_kernel(MixerRowsParams p, MixerRowOp op) {
  const int lane = thread_index() & 31;
  const int64_t row = block_index() * kRowWarps + (thread_index() >> 5);
  if (row >= p.rows) return;  // whole warps: a warp owns one row
  const auto* x = static_cast<const typename Storage<In>::Raw*>(p.x) + row * p.x_stride;
  auto* y = static_cast<typename Storage<Out>::Raw*>(p.y) + row * p.y_stride;
  if (op == MixerRowOp::layer_norm) {
    float v[kNormPerLane];
    float mean = 0.0f, inverse_std = 0.0f;
    warp_layer_norm_statistics<In>(x, p.k, p.eps, lane, v, mean, inverse_std);
    TRACKSCOPE_UNROLL
    for (int i = 0; i < kNormPerLane; ++i) {
      const int c = lane + 32 * i;
      if (c < p.k) {
        emit<Out, Split>(y, p.kp, c,
                         (v[i] - mean) * inverse_std * global_load_f32(p.gamma + c) + global_load_f32(p.beta + c));
      }
    }
  } else {
    for (int c = lane; c < p.k; c += 32) {
      float v = Storage<In>::load(x + c);
      if (op == MixerRowOp::gelu) {
        // PyTorch's exact GELU (approximate='none') in float: x * 0.5 * (1 + erf(x / sqrt(2))).
        constexpr float kAlpha = 0.70710678118654752440f;
        v = v * 0.5f * (1.0f + erf_f32(v * kAlpha));
      }
      emit<Out, Split>(y, p.kp, c, v);
    }
  }
  emit_tail<Out, Split>(y, p.k, p.kp, lane, 32);
}

// -- attention -------------------------------------------------------------------------------------------------
constexpr int kAttentionSharedBytes = 2 * kMixerAttentionKeys * kMixerHeadDim * 4;  // keys and values, float

template <class In, class Out, bool Split>
TRACKSCOPE_KERNEL(kMixerAttentionRows, 4)
mixer_attention_kernel(MixerAttentionParams p) {
  using Raw = typename Storage<In>::Raw;
  constexpr int D = kMixerHeadDim;
  constexpr int J = kMixerAttentionKeys;
  float* const keys = static_cast<float*>(dynamic_shared());  // [J][D]
  float* const values = keys + J * D;                         // [J][D]
  const int tid = thread_index();
  const int64_t tiles = (p.frames + kMixerAttentionRows - 1) / kMixerAttentionRows;
  const int64_t tile = block_index() % tiles;
  const int head = static_cast<int>((block_index() / tiles) % p.heads);
  const int64_t sequence = block_index() / (tiles * p.heads);
  const int dim = p.heads * D;
  const int i = static_cast<int>(tile) * kMixerAttentionRows + tid;  // this thread's query frame
  const bool active = i < p.frames;
  const Raw* base = static_cast<const Raw*>(p.qkv) + sequence * p.frames * p.qkv_stride;

  float q[D];
  float o[D];
  TRACKSCOPE_UNROLL
  for (int c = 0; c < D; ++c) {
    q[c] = active ? Storage<In>::load(base + i * p.qkv_stride + head * D + c) : 0.0f;
    o[c] = 0.0f;
  }
  const bool forward = head < p.heads / 2;
  const float slope = global_load_f32(p.slopes + head);
  float running_max = -INFINITY;
  float running_sum = 0.0f;

  for (int j0 = 0; j0 < p.frames; j0 += J) {
    block_sync();  // the previous tile's readers are done
    for (int e = tid; e < J * D; e += kMixerAttentionRows) {
      const int key = j0 + e / D;
      const int c = e % D;
      float k = 0.0f, v = 0.0f;
      if (key < p.frames) {
        const Raw* row = base + key * p.qkv_stride + head * D + c;
        k = Storage<In>::load(row + dim);
        v = Storage<In>::load(row + 2 * dim);
      }
      shared_store(keys + e, k);
      shared_store(values + e, v);
    }
    block_sync();
    if (active) {
      const int count = p.frames - j0 < J ? p.frames - j0 : J;
      float s[J];
      TRACKSCOPE_UNROLL
      for (int u = 0; u < J; ++u) s[u] = 0.0f;
      TRACKSCOPE_UNROLL
      for (int c = 0; c < D; c += 4) {
        TRACKSCOPE_UNROLL
        for (int u = 0; u < J; ++u) {
          const Words4 k4 = shared_load(reinterpret_cast<const Words4*>(keys + u * D + c));
          s[u] = fmaf(q[c], bits_to_float(k4.x), s[u]);
          s[u] = fmaf(q[c + 1], bits_to_float(k4.y), s[u]);
          s[u] = fmaf(q[c + 2], bits_to_float(k4.z), s[u]);
          s[u] = fmaf(q[c + 3], bits_to_float(k4.w), s[u]);
        }
      }
      float tile_max = -INFINITY;
      TRACKSCOPE_UNROLL
      for (int u = 0; u < J; ++u) {
        if (u < count) {
          const int j = j0 + u;
          // gpu/model alibi_bias: slope * (j - i) (forward, j <= i) or slope * (i - j) (backward, j >= i), else -1e9.
          const float bias = forward ? (j <= i ? slope * static_cast<float>(j - i) : -1e9f)
                                     : (j >= i ? slope * static_cast<float>(i - j) : -1e9f);
          s[u] = s[u] * p.scale + bias;
          tile_max = s[u] > tile_max ? s[u] : tile_max;
        }
      }
      const float new_max = running_max > tile_max ? running_max : tile_max;
      const float correction = exp_f32(running_max - new_max);  // 0 on the first tile (exp(-inf))
      running_sum *= correction;
      TRACKSCOPE_UNROLL
      for (int c = 0; c < D; ++c) o[c] *= correction;
      TRACKSCOPE_UNROLL
      for (int u = 0; u < J; ++u) {
        if (u < count) {
          const float w = exp_f32(s[u] - new_max);
          running_sum += w;
          TRACKSCOPE_UNROLL
          for (int c = 0; c < D; c += 4) {
            const Words4 v4 = shared_load(reinterpret_cast<const Words4*>(values + u * D + c));
            o[c] = fmaf(w, bits_to_float(v4.x), o[c]);
            o[c + 1] = fmaf(w, bits_to_float(v4.y), o[c + 1]);
            o[c + 2] = fmaf(w, bits_to_float(v4.z), o[c + 2]);
            o[c + 3] = fmaf(w, bits_to_float(v4.w), o[c + 3]);
          }
        }
      }
      running_max = new_max;
    }
  }
  if (active) {
    auto* y = static_cast<typename Storage<Out>::Raw*>(p.out) + (sequence * p.frames + i) * p.out_stride;
    const float inverse = 1.0f / running_sum;
    TRACKSCOPE_UNROLL
    for (int c = 0; c < D; ++c) emit<Out, Split>(y, p.kp, head * D + c, o[c] * inverse);
    if (head == 0) emit_tail<Out, Split>(y, dim, p.kp, 0, 1);
  }
}

// -- head: final LayerNorm and the 4 used outputs of output_proj --------------------------------------------
template <class In>
TRACKSCOPE_KERNEL(kMixerRowThreads, 1)
mixer_head_kernel(MixerHeadParams p) {
  const int lane = thread_index() & 31;
  const int64_t row = block_index() * kRowWarps + (thread_index() >> 5);
  if (row >= p.rows) return;
  const auto* x = static_cast<const typename Storage<In>::Raw*>(p.x) + row * p.x_stride;
  float v[kNormPerLane];
  float mean = 0.0f, inverse_std = 0.0f;
  warp_layer_norm_statistics<In>(x, p.k, p.eps, lane, v, mean, inverse_std);
  float partial[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  TRACKSCOPE_UNROLL
  for (int i = 0; i < kNormPerLane; ++i) {
    const int c = lane + 32 * i;
    if (c < p.k) {
      const float normalised = (v[i] - mean) * inverse_std * global_load_f32(p.gamma + c) + global_load_f32(p.beta + c);
      TRACKSCOPE_UNROLL
      for (int o = 0; o < 4; ++o) partial[o] = fmaf(normalised, global_load_f32(p.weight + o * p.k + c), partial[o]);
    }
  }
  TRACKSCOPE_UNROLL
  for (int o = 0; o < 4; ++o) partial[o] = warp_sum(partial[o]);
  if (lane < 4) {
    float result = partial[0];
    TRACKSCOPE_UNROLL
    for (int o = 1; o < 4; ++o) result = lane == o ? partial[o] : result;
    global_store_f32(p.out + row * 4 + lane, result + global_load_f32(p.bias + lane));
  }
}

}  // namespace trackscope::gpu::ops::cuda::mixer
