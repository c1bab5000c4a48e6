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

/// The kernel taps of one output position (oy, ox) of a SAME-padded layer (TensorFlow's rule: the odd padding pixel
/// after) that fall inside its in_side x in_side input: rows [ky0, ky0 + rows) x columns [kx0, kx0 + columns).
struct CmdTopTapWindow {
  int ky0 = 0, kx0 = 0, rows = 0, columns = 0;
  constexpr int taps() const { return rows * columns; }
};
constexpr int cmdtop_out_side(int in_side, int stride) { return (in_side + stride - 1) / stride; }
/// The SAME padding's rows (columns) before the input.
constexpr int cmdtop_pad_before(int in_side, int kernel, int stride) {
  const int total = (cmdtop_out_side(in_side, stride) - 1) * stride + kernel - in_side;
  return total > 0 ? total / 2 : 0;
}
constexpr CmdTopTapWindow cmdtop_tap_window(int in_side, int kernel, int stride, int oy, int ox) {
  const int pad_before = cmdtop_pad_before(in_side, kernel, stride);
  auto range = [&](int o, int& first, int& count) {
    const int start = o * stride - pad_before;  // input coordinate of tap 0
    first = start < 0 ? -start : 0;
    const int end = start + kernel < in_side ? start + kernel : in_side;  // one past the last input coordinate
    count = end - (start + first);
  };
  CmdTopTapWindow window;
  range(oy, window.ky0, window.rows);
  range(ox, window.kx0, window.columns);
  return window;
}
/// Whether the kernels run a layer with only the taps inside the input ("position-major": an m16 tile holds 16 pairs
/// at one output position, and K runs over that position's window only, with B packed per position): where the
/// SAME padding leaves every output position the same number of taps inside, fewer than kernel x kernel. Of the
/// official stacks only LocoTrack-S's first layer (7x7 input, 5x5 kernel, stride 4: 16 of 25 taps at each of its
/// four positions) qualifies; base's first layer has 4, 6 or 9 of 9 depending on the position.
constexpr bool cmdtop_mma_skips_padding(int in_side, int kernel, int stride) {
  const int out_side = cmdtop_out_side(in_side, stride);
  const int taps = cmdtop_tap_window(in_side, kernel, stride, 0, 0).taps();
  if (taps >= kernel * kernel) return false;
  for (int oy = 0; oy < out_side; ++oy) {
    for (int ox = 0; ox < out_side; ++ox) {
      if (cmdtop_tap_window(in_side, kernel, stride, oy, ox).taps() != taps) return false;
    }
  }
  return true;
}
/// The taps a layer's K runs over per output position: the window's where the layer skips its padding, else all.
constexpr int cmdtop_mma_k_taps(int in_side, int kernel, int stride) {
  return cmdtop_mma_skips_padding(in_side, kernel, stride) ? cmdtop_tap_window(in_side, kernel, stride, 0, 0).taps()
                                                           : kernel * kernel;
}
/// How many B operands the packed weight holds one after another: one per output position where the layer skips its
/// padding, else one.
constexpr int cmdtop_mma_weight_blocks(int in_side, int kernel, int stride) {
  return cmdtop_mma_skips_padding(in_side, kernel, stride)
             ? cmdtop_out_side(in_side, stride) * cmdtop_out_side(in_side, stride)
             : 1;
}

/// Channels per tap along K for a layer with in_channels input channels (49 -> 50, else unchanged).
constexpr int cmdtop_mma_k_channels(int in_channels) { return in_channels % 2 == 0 ? in_channels : in_channels + 1; }
/// K of a layer whose positions read `taps` taps each, padded to whole k16 steps.
constexpr int cmdtop_mma_k_padded(int in_channels, int taps) {
  return (taps * cmdtop_mma_k_channels(in_channels) + 15) / 16 * 16;
}

/// The K rows of one packed B operand: all kernel x kernel taps (window == nullptr), or one position's window.
/// element(k, n) = B[k][n] for the layer's weight [out_channels][in_channels][kernel][kernel] (float, contiguous)
/// with K = (tap of the window, row-major, channel) and k_channels channels per tap; 0 past the real channels.
struct CmdTopWeightRows {
  const float* weight;
  int out_channels, in_channels, kernel, k_channels;
  CmdTopTapWindow window;
  float operator()(int k, int n) const {
    const int tap = k / k_channels;
    const int c = k % k_channels;
    if (tap >= window.taps() || c >= in_channels) return 0.0f;
    const int ky = window.ky0 + tap / window.columns;
    const int kx = window.kx0 + tap % window.columns;
    return weight[((static_cast<int64_t>(n) * in_channels + c) * kernel + ky) * kernel + kx];
  }
};
/// The B operands of a layer (cmdtop_mma_weight_blocks of them: one per output position where it skips its padding),
/// each's rows as CmdTopWeightRows, in order.
template <class Each>
void for_each_cmdtop_weight_block(const float* weight, int out_channels, int in_channels, int kernel, int in_side,
                                  int stride, int k_channels, const Each& each) {
  const int out_side = cmdtop_out_side(in_side, stride);
  if (!cmdtop_mma_skips_padding(in_side, kernel, stride)) {
    each(CmdTopWeightRows{weight, out_channels, in_channels, kernel, k_channels, {0, 0, kernel, kernel}});
    return;
  }
  for (int position = 0; position < out_side * out_side; ++position) {
    each(CmdTopWeightRows{weight, out_channels, in_channels, kernel, k_channels,
                          cmdtop_tap_window(in_side, kernel, stride, position / out_side, position % out_side)});
  }
}
/// Floats in pack_cmdtop_mma_weight's output.
constexpr int64_t cmdtop_mma_packed_floats(int out_channels, int in_channels, int kernel, int in_side, int stride) {
  return int64_t{cmdtop_mma_weight_blocks(in_side, kernel, stride)} *
         cmdtop_mma_k_padded(in_channels, cmdtop_mma_k_taps(in_side, kernel, stride)) * out_channels;
}

/// Packs one conv weight for the kernel: weight [out_channels][in_channels][kernel][kernel] (float, contiguous) of a
/// layer with an in_side x in_side input and this stride -> packed [cmdtop_mma_packed_floats(...)] floats: for each
/// B operand (for_each_cmdtop_weight_block: one per output position where the layer skips its padding), its
/// k_padded(in_channels, k_taps) x out_channels elements in mma B-fragment order:
///   packed[(((s * (out_channels / 16) + q) * 32 + lane) * 4 + r) * 2 + e] = B[16 s + kk][16 q + nn]
///   with g = lane / 4, t = lane % 4, kk = 8 (r % 2) + 2 t + e, nn = 8 (r / 2) + g,
/// B[k][n] = weight[n][c][ky][kx] for k = (tap, c) (CmdTopWeightRows), and 0 elsewhere.
/// Converted to 16-bit elements in this order, lane `lane` of a warp reads its B registers of k16 step s and
/// output channels [16 q, 16 q + 16) as one 16-byte word: {b0, b1} of the n8 tile 2q and {b0, b1} of 2q + 1 (PTX ISA,
/// "Matrix Fragments for mma.m16n8k16 with floating point type": b0 holds rows 2t, 2t + 1 and b1 rows 2t + 8,
/// 2t + 9 of column g, lower row in the lower half). out_channels must be a multiple of 16.
inline void pack_cmdtop_mma_weight(const float* weight, int out_channels, int in_channels, int kernel, int in_side,
                                   int stride, float* packed) {
  const int k_steps = cmdtop_mma_k_padded(in_channels, cmdtop_mma_k_taps(in_side, kernel, stride)) / 16;
  const int column_blocks = out_channels / 16;
  int64_t index = 0;
  for_each_cmdtop_weight_block(weight, out_channels, in_channels, kernel, in_side, stride,
                               cmdtop_mma_k_channels(in_channels), [&](const CmdTopWeightRows& element) {
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
                               });
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

/// K of a layer for the 3xTF32 kernel whose positions read `taps` taps each: channels unpadded (one element per
/// register), whole k8 steps.
constexpr int cmdtop_tf32_k_padded(int in_channels, int taps) { return (taps * in_channels + 7) / 8 * 8; }
/// Floats in pack_cmdtop_tf32_weight's output.
constexpr int64_t cmdtop_tf32_packed_floats(int out_channels, int in_channels, int kernel, int in_side, int stride) {
  return int64_t{2} * cmdtop_mma_weight_blocks(in_side, kernel, stride) *
         cmdtop_tf32_k_padded(in_channels, cmdtop_mma_k_taps(in_side, kernel, stride)) * out_channels;
}

/// Packs one conv weight for the 3xTF32 kernel (m16n8k8 B fragments), per B operand as pack_cmdtop_mma_weight:
/// [k_padded / 8][out_channels / 16][32 lanes][2][4] floats: for k8 step s, output channels [16 q, 16 q + 16) and
/// lane (g = lane / 4, t = lane % 4), first the TF32 parts {b0, b1 of the n8 tile 2q, b0, b1 of 2q + 1}, then the
/// same four TF32 remainders, with b0 = row t and b1 = row t + 4 of column g (PTX ISA, "Matrix Fragments for
/// mma.m16n8k8", .tf32), B[k][n] = weight[n][c][ky][kx] for k = (tap, c) with in_channels channels per tap (0 past
/// the end of K). value = part + remainder up to ~2^-22 of it.
inline void pack_cmdtop_tf32_weight(const float* weight, int out_channels, int in_channels, int kernel, int in_side,
                                    int stride, float* packed) {
  const int k_steps = cmdtop_tf32_k_padded(in_channels, cmdtop_mma_k_taps(in_side, kernel, stride)) / 8;
  int64_t index = 0;
  for_each_cmdtop_weight_block(
      weight, out_channels, in_channels, kernel, in_side, stride, in_channels, [&](const CmdTopWeightRows& element) {
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
      });
}

}  // namespace trackscope::gpu::ops::cuda
