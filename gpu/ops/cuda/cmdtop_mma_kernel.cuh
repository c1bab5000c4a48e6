#pragma once
// CMDTop on tensor cores as ONE kernel per pyramid level (the tensor-core sibling of cmdtop_fused_kernel.cu): a block
// takes a tile of correlation samples, builds both branches' input images in shared memory, and runs every layer
// there (SAME conv as an implicit GEMM on mma.sync with fp32 accumulators -> + bias -> GroupNorm -> ReLU), writing
// only the final [samples, 256] encoding. Two arithmetics (the Arithmetic policy below):
//  * bf16 / fp16 (fast mode): 16-bit operands, mma.m16n8k16, one rounding of each layer's output;
//  * float32 as 3xTF32 (exact mode): every operand x is split into a TF32 part and a TF32 remainder (x = big +
//    small up to ~2^-22 x), and a * b = a_small * b_big + a_big * b_small + a_big * b_big on mma.m16n8k8 (the
//    dropped a_small * b_small is ~2^-22 of the product): float32-level accuracy at tensor-core rates.
//
// Per layer the GEMM is [rows, K] x [K, C_out], rows = (pair, output position), pair = (sample, branch), K = (tap,
// channel) (cmdtop_mma_layout.h):
//  * A fragments come straight from the layer's input images in shared memory (no im2col tile): a thread's
//    registers hold 32-bit words of one tap (two K-consecutive 16-bit elements, or one float), one load each, at the
//    pair's image + an offset from a per-layer table of (k step, output position, K column) entries (built once per
//    block). A tap in the SAME padding (or a K column past K) points at the pair image's zero word, a word of the
//    image no data occupies, kept zero: the K loop has no masks and no branches. An m16 tile is one pair (16
//    positions), four pairs (4 positions) or 16 pairs (1).
//  * A layer whose positions all keep the same number of taps inside the input (cmdtop_mma_skips_padding:
//    LocoTrack-S's first, 16 of 25 taps) runs position-major instead: an m16 tile is 16 pairs at one position, K
//    runs over that position's taps only (50 k16 steps instead of 79), each warp multiplies its position's own B,
//    and GroupNorm's sums over a pair's positions meet in shared memory (two more barriers).
//  * B fragments come from the prepared weight in fragment order, one (16-bit) or two (3xTF32: part, remainder)
//    16-byte read-only global loads per 16 output channels and k step (L1/L2 resident: every block reads the same
//    weights), prefetched one or two steps ahead (a ring of registers; the loads are unconditional, the last steps
//    reload the last step's words).
//  * The accumulators start at the conv bias. GroupNorm (C/16 groups, two-pass fp32 statistics) is computed in
//    registers: a warp's tile always holds whole (pair, 16-channel group) blocks, reduced with warp shuffles. The
//    normalised, ReLU'd values go (rounded once to the compute dtype) into the next layer's input images (which alias
//    the previous images: a barrier separates them), or, after the last layer (one position), into the output rows.
// Nothing but the correlation rows (read once) and the output reaches device memory.
//
// Every layer runs without barriers inside its K loop (A is resident, B comes from global memory); a block has
// 8 warps. Tiles (shared memory, small / base): 16-bit, 8 samples (87 / 96 KiB: two blocks per SM on compute
// capability 8.0 and 9.x, one on 8.6 / 8.9; the default) or 16 samples (164 / 179 KiB: 9.x, for tuning); 3xTF32,
// 8 samples (171 / 188 KiB: 9.x). The source is shared with the CPU emulation test (tests/gpu/cuda_emulation.h): the
// hardware is reached only through mma_primitives.cuh.

#include <cstdint>
#include <type_traits>

#include "core/tracking/locotrack_shape.h"
#include "gpu/ops/cuda/cmdtop_mma_layout.h"
#ifndef TRACKSCOPE_CUDA_EMULATION
#include "gpu/ops/cuda/mma_primitives.cuh"
#endif

namespace trackscope::gpu::ops::cuda::cmdtop_mma {

using namespace primitives;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kCorrValues = core::locotrack::kCorrPerSample;
constexpr int kCorrPaddedRow = core::locotrack::kCorrPaddedRow;
constexpr int kCorrCells = core::locotrack::kSupportTaps;
constexpr int kChannelsPerGroup = 16;
constexpr int kOutputChannels = 256;  // [branch 1 | branch 2] x 128

constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
constexpr int max_of(int a, int b) { return a > b ? a : b; }

// 16-bit operands (Tag = Fp16Tag / Bf16Tag): a 32-bit register holds two K-consecutive elements, mma.m16n8k16.
template <class Tag>
struct HalfArithmetic {
  using Raw = uint16_t;  // one element's bit pattern
  static constexpr int elements_per_word = 2;
  static constexpr int k_step = 16;
  static constexpr int b_vectors = 1;  // 16-byte B vectors per (k step, 16 output channels, lane)
  static constexpr int k_channels(int in_channels) { return cmdtop_mma_k_channels(in_channels); }
  static constexpr int k_padded(int in_channels, int taps) { return cmdtop_mma_k_padded(in_channels, taps); }
  // This thread's K column j (0, 1) within a k step: registers {a0, a1} / {a2, a3} start at 2t / 2t + 8.
  TRACKSCOPE_DEVICE_FN static int k_column(int t, int j) { return 2 * t + 8 * j; }
  struct Fragment {
    uint32_t a[4];
  };
  TRACKSCOPE_DEVICE_FN static Fragment fragment(const uint32_t (&words)[4]) {
    return Fragment{{words[0], words[1], words[2], words[3]}};
  }
  // d += A * B for n8 tile `half` (0 / 1) of the 16 output channels of b.
  TRACKSCOPE_DEVICE_FN static void mma(float (&d)[4], const Fragment& f, const Words4 (&b)[b_vectors], int half) {
    mma_16816<Tag>(d, f.a, half == 0 ? b[0].x : b[0].z, half == 0 ? b[0].y : b[0].w);
  }
  // Two adjacent output channels (element, element + 1) of one row: the next layer's image / the output.
  TRACKSCOPE_DEVICE_FN static void store_shared(uint32_t* words, int element, float y0, float y1) {
    shared_store(words + element / 2, pack2<Tag>(y0, y1));
  }
  TRACKSCOPE_DEVICE_FN static void store_global(void* out, int64_t element, float y0, float y1) {
    global_store_u32(static_cast<uint32_t*>(out) + element / 2, pack2<Tag>(y0, y1));
  }
};

// float32 operands as 3xTF32 on mma.m16n8k8: a register holds one element.
struct Tf32x3Arithmetic {
  using Raw = uint32_t;  // one float's bit pattern
  static constexpr int elements_per_word = 1;
  static constexpr int k_step = 8;
  static constexpr int b_vectors = 2;  // TF32 parts, then remainders
  static constexpr int k_channels(int in_channels) { return in_channels; }
  static constexpr int k_padded(int in_channels, int taps) { return cmdtop_tf32_k_padded(in_channels, taps); }
  // Registers {a0, a1} / {a2, a3} hold K columns t / t + 4.
  TRACKSCOPE_DEVICE_FN static int k_column(int t, int j) { return t + 4 * j; }
  struct Fragment {
    uint32_t big[4];
    uint32_t small[4];
  };
  TRACKSCOPE_DEVICE_FN static Fragment fragment(const uint32_t (&words)[4]) {
    Fragment f;
    TRACKSCOPE_UNROLL
    for (int r = 0; r < 4; ++r) {
      const float x = bits_to_float(words[r]);
      f.big[r] = to_tf32(x);
      f.small[r] = to_tf32(x - bits_to_float(f.big[r]));
    }
    return f;
  }
  TRACKSCOPE_DEVICE_FN static void mma(float (&d)[4], const Fragment& f, const Words4 (&b)[b_vectors], int half) {
    const uint32_t big0 = half == 0 ? b[0].x : b[0].z, big1 = half == 0 ? b[0].y : b[0].w;
    const uint32_t small0 = half == 0 ? b[1].x : b[1].z, small1 = half == 0 ? b[1].y : b[1].w;
    // The small products first, so that they are not lost below the large one's last bits.
    mma_1688_tf32(d, f.small, big0, big1);
    mma_1688_tf32(d, f.big, small0, small1);
    mma_1688_tf32(d, f.big, big0, big1);
  }
  TRACKSCOPE_DEVICE_FN static void store_shared(uint32_t* words, int element, float y0, float y1) {
    shared_store(words + element, float_to_bits(y0));
    shared_store(words + element + 1, float_to_bits(y1));
  }
  TRACKSCOPE_DEVICE_FN static void store_global(void* out, int64_t element, float y0, float y1) {
    global_store_u32(static_cast<uint32_t*>(out) + element, float_to_bits(y0));
    global_store_u32(static_cast<uint32_t*>(out) + element + 1, float_to_bits(y1));
  }
};

// One SAME-padded convolution layer. Its input images: pair p's element (y, x, c) is element [p * ImageStride +
// (y * InSide + x) * ChannelStride + c] of the region (strides chosen so that the A loads of a warp hit distinct
// shared-memory banks: docs/kernels.md).
template <class A, int InSide, int InChannels, int Kernel, int Stride, int OutChannels, int ChannelStride,
          int ImageStride>
struct Conv {
  using Arithmetic = A;
  static constexpr int in_side = InSide;
  static constexpr int in_channels = InChannels;
  static constexpr int k_channels = A::k_channels(InChannels);
  static constexpr int channel_stride = ChannelStride;
  static constexpr int image_stride = ImageStride;
  static constexpr int kernel = Kernel;
  static constexpr int stride = Stride;
  static constexpr int out_side = cmdtop_out_side(InSide, Stride);
  static constexpr int pad_before = cmdtop_pad_before(InSide, Kernel, Stride);
  static constexpr int positions = out_side * out_side;
  // Position-major (cmdtop_mma_layout.h): K runs over each position's taps inside the input only, B per position.
  static constexpr bool skip_padding = cmdtop_mma_skips_padding(InSide, Kernel, Stride);
  static constexpr int k_taps = cmdtop_mma_k_taps(InSide, Kernel, Stride);
  static constexpr int k = k_taps * k_channels;
  static constexpr int k_steps = A::k_padded(InChannels, k_taps) / A::k_step;
  static constexpr int out_channels = OutChannels;
  static constexpr int e = A::elements_per_word;
  // The pair image's zero word (an element index, word-aligned): cell 0's first spare channel where the channel
  // stride leaves one, else the first element past the last cell. No data is ever stored there.
  static constexpr int zero_element = ChannelStride - k_channels >= e ? k_channels : InSide * InSide * ChannelStride;
  static_assert(zero_element % e == 0 && zero_element + e <= ImageStride,
                "each pair image needs a spare word for the SAME padding's zeros");
  static_assert(k_channels % e == 0 && ChannelStride >= k_channels && ChannelStride % e == 0 && ImageStride % e == 0 &&
                    ImageStride >= InSide * InSide * ChannelStride,
                "whole 32-bit words per register, images that do not overlap");
  static_assert(positions == 16 || positions == 4 || positions == 1, "an m16 tile holds whole pairs");
  static_assert(OutChannels % kChannelsPerGroup == 0, "GroupNorm uses C/16 groups");
};

// A layer's warp tiling: WarpsM warps along the rows, each MT m16 tiles; kWarps / WarpsM along the output channels,
// each NT n8 tiles (NT even: whole 16-channel groups). Rows are (pair, position) pairs in the order (pair, position)
// (an m16 tile holds one pair of 16 positions, 4 pairs of 4 or 16 pairs of 1), or, for a layer that skips its
// padding, (position, pair): m-tile m is 16 pairs (block m % pair_blocks) at position m / pair_blocks, and a warp's
// MT m-tiles share one position (they multiply the same B).
// BAhead: how many k steps ahead the B fragments are loaded (1 or 2: registers for 2 + 1 steps of B). AAhead: 1 loads
// the next step's A words (and the table entry of the step after) before this step's MMAs, 0 loads them in the step
// (base's first layer: its 64 accumulators per m-tile leave no registers for a second A fragment).
template <class L, int Pairs, int WarpsM, int MT, int NT, int BAhead = 1, int AAhead = 1>
struct Tiling {
  using Layer = L;
  static constexpr int pairs = Pairs;
  static constexpr int rows = Pairs * L::positions;
  static constexpr int m_tiles = rows / 16;
  static constexpr int warps_m = WarpsM;
  static constexpr int warps_n = kWarps / WarpsM;
  static constexpr int mt = MT;
  static constexpr int nt = NT;
  static constexpr int b_ahead = BAhead;
  static constexpr bool a_ahead = AAhead == 1;
  static constexpr bool position_major = L::skip_padding;
  static constexpr int pair_blocks = Pairs / 16;
  static constexpr int pairs_per_m_tile = position_major ? 16 : 16 / L::positions;
  static constexpr int m_tile_words = pairs_per_m_tile * L::image_stride / L::e;
  static_assert(!position_major || (Pairs % 16 == 0 && pair_blocks % MT == 0), "a warp's m-tiles share a position");
  static_assert(BAhead == 1 || BAhead == 2, "B is loaded one or two k steps ahead");
  static_assert(rows % 16 == 0 && WarpsM * MT == m_tiles && kWarps % WarpsM == 0, "the warps tile the rows");
  static_assert(warps_n * NT * 8 == L::out_channels && NT % 2 == 0, "the warps tile the output channels");
};

// The official stacks (docs/locotrack-spec.md §2.5 step 3; docs/kernels.md has the bank analysis behind the strides).
// 16-bit (A = HalfArithmetic<Tag>): 16- or 8-sample tiles.
template <class A, int Samples>
struct SmallConfig;
template <class A>
struct SmallConfig<A, 16> {
  using Arithmetic = A;
  static constexpr int samples = 16, pairs = 32, min_blocks = 1;
  using L0 = Conv<A, 7, 49, 5, 4, 64, 58, 2856>;
  using L1 = Conv<A, 2, 64, 2, 2, 128, 68, 280>;
  using T0 = Tiling<L0, pairs, 4, 2, 4, 2>;
  using T1 = Tiling<L1, pairs, 1, 2, 2>;
  static constexpr int layers = 2;
};
template <class A>
struct SmallConfig<A, 8> {
  using Arithmetic = A;
  static constexpr int samples = 8, pairs = 16, min_blocks = 2;
  using L0 = Conv<A, 7, 49, 5, 4, 64, 58, 2856>;
  using L1 = Conv<A, 2, 64, 2, 2, 128, 68, 280>;
  using T0 = Tiling<L0, pairs, 4, 1, 4, 2>;
  using T1 = Tiling<L1, pairs, 1, 1, 2>;
  static constexpr int layers = 2;
};
template <class A, int Samples>
struct BaseConfig;
template <class A>
struct BaseConfig<A, 16> {
  using Arithmetic = A;
  static constexpr int samples = 16, pairs = 32, min_blocks = 1;
  using L0 = Conv<A, 7, 49, 3, 2, 64, 54, 2646>;
  using L1 = Conv<A, 4, 64, 3, 2, 128, 68, 1104>;
  using L2 = Conv<A, 2, 128, 2, 2, 128, 132, 536>;
  using T0 = Tiling<L0, pairs, 8, 4, 8, 1, 0>;
  using T1 = Tiling<L1, pairs, 4, 2, 8>;
  using T2 = Tiling<L2, pairs, 1, 2, 2>;
  static constexpr int layers = 3;
};
template <class A>
struct BaseConfig<A, 8> {
  using Arithmetic = A;
  static constexpr int samples = 8, pairs = 16, min_blocks = 2;
  using L0 = Conv<A, 7, 49, 3, 2, 64, 54, 2646>;
  using L1 = Conv<A, 4, 64, 3, 2, 128, 68, 1104>;
  using L2 = Conv<A, 2, 128, 2, 2, 128, 132, 536>;
  using T0 = Tiling<L0, pairs, 8, 2, 8, 1, 0>;
  using T1 = Tiling<L1, pairs, 2, 2, 4>;
  using T2 = Tiling<L2, pairs, 1, 1, 2>;
  static constexpr int layers = 3;
};
// 3xTF32: 8-sample tiles (float images take twice the shared memory), one block of 8 warps per SM.
struct SmallTf32Config {
  using Arithmetic = Tf32x3Arithmetic;
  static constexpr int samples = 8, pairs = 16, min_blocks = 1;
  using L0 = Conv<Arithmetic, 7, 49, 5, 4, 64, 49, 2412>;
  using L1 = Conv<Arithmetic, 2, 64, 2, 2, 128, 64, 260>;
  using T0 = Tiling<L0, pairs, 4, 1, 4, 2>;
  using T1 = Tiling<L1, pairs, 1, 1, 2>;
  static constexpr int layers = 2;
};
struct BaseTf32Config {
  using Arithmetic = Tf32x3Arithmetic;
  static constexpr int samples = 8, pairs = 16, min_blocks = 1;
  using L0 = Conv<Arithmetic, 7, 49, 3, 2, 64, 53, 2597>;
  using L1 = Conv<Arithmetic, 4, 64, 3, 2, 128, 66, 1064>;
  using L2 = Conv<Arithmetic, 2, 128, 2, 2, 128, 128, 516>;
  using T0 = Tiling<L0, pairs, 8, 2, 8, 1, 0>;
  using T1 = Tiling<L1, pairs, 2, 2, 4>;
  using T2 = Tiling<L2, pairs, 1, 1, 2>;
  static constexpr int layers = 3;
};

// Where a thread's two K columns of one k step read for one output position, in bytes from the start of the row's
// pair image: the tap's element, or the pair's zero word for a tap in the SAME padding and for the zero columns that
// pad K.
struct alignas(8) TapEntry {
  int32_t offset[2];
};
// The same two offsets as 16-bit halves (offset[0] low), for the layers with 16 output positions (base's first):
// their table is 16 positions deep, and at 8 bytes an entry base's 8-sample tile would no longer fit the 99 KiB of
// shared memory a block gets on compute capability 8.6 / 8.9. One unpacking per entry costs little there (16 MMAs
// per k step).
struct alignas(4) PackedTapEntry {
  uint32_t offsets;
};
template <class L>
using TableEntry = std::conditional_t<L::positions == 16, PackedTapEntry, TapEntry>;

// Entries (k step s, output position, threadID_in_group t) at index (s * positions + position) * 4 + t, for
// k_steps + 2 steps: the K loop reads the entries of two steps past the end (all on the zero word) instead of
// testing for it.
template <class L>
constexpr int table_entries() {
  return (L::k_steps + 2) * L::positions * 4;
}
template <class L>
constexpr int table_bytes() {
  return table_entries<L>() * static_cast<int>(sizeof(TableEntry<L>));
}

// The third layer's share of the shared memory (base only).
template <class Config, bool = (Config::layers == 3)>
struct ThirdLayer {
  static constexpr int bytes = 0;
  static constexpr int image_stride = 0;
};
template <class Config>
struct ThirdLayer<Config, true> {
  static constexpr int bytes = table_bytes<typename Config::L2>();
  static constexpr int image_stride = Config::L2::image_stride;
};

// Dynamic shared memory: the tap tables of every layer, then the image region (pairs x the largest image stride).
template <class Config>
struct Layout {
  using L0 = typename Config::L0;
  using L1 = typename Config::L1;
  // Byte offsets of the tables (each a multiple of 32 bytes long) and of the image region.
  static constexpr int table0 = 0;
  static constexpr int table1 = table0 + table_bytes<L0>();
  static constexpr int table2 = table1 + table_bytes<L1>();
  static constexpr int region = table2 + ThirdLayer<Config>::bytes;
  static_assert(table1 % 32 == 0 && table2 % 32 == 0 && region % 32 == 0, "aligned tables and region");
  static constexpr int region_stride =
      max_of(max_of(L0::image_stride, L1::image_stride), ThirdLayer<Config>::image_stride);
  static constexpr int region_elements = Config::pairs * region_stride;
  static constexpr int64_t shared_bytes =
      static_cast<int64_t>(region) +
      static_cast<int64_t>(sizeof(typename Config::Arithmetic::Raw)) * static_cast<int64_t>(region_elements);
  static_assert(L0::in_channels == kCorrCells && L0::in_side == 7, "layer 0 reads the 7x7x49 correlation views");
};

struct LayerParams {
  const Words4* weight = nullptr;  // [k_steps][C_out / 16][32][b_vectors] (pack_cmdtop_mma_weight in 16-bit elements,
                                   // or pack_cmdtop_tf32_weight)
  const float* bias = nullptr;     // [C_out]
  const float* gamma = nullptr;    // [C_out]
  const float* beta = nullptr;     // [C_out]
};
struct Params {
  LayerParams layer[3];
  int64_t out_row_stride = kOutputChannels;  // elements between output rows (>= 256, even)
};

// The tap table of one layer (table_entries's order).
template <class L>
TRACKSCOPE_DEVICE_FN void build_table(void* table_start) {
  auto* const table = static_cast<TableEntry<L>*>(table_start);
  for (int index = thread_index(); index < table_entries<L>(); index += kThreads) {
    const int t = index % 4;
    const int position = (index / 4) % L::positions;
    const int s = index / (4 * L::positions);
    const int oy = position / L::out_side;
    const int ox = position - oy * L::out_side;
    TapEntry entry;
    for (int j = 0; j < 2; ++j) {
      const int k = L::Arithmetic::k_step * s + L::Arithmetic::k_column(t, j);
      int element = L::zero_element;
      if (k < L::k) {
        const int tap = k / L::k_channels;  // within the position's window (all taps unless it skips its padding)
        const int c = k % L::k_channels;
        const CmdTopTapWindow window = L::skip_padding ? cmdtop_tap_window(L::in_side, L::kernel, L::stride, oy, ox)
                                                       : CmdTopTapWindow{0, 0, L::kernel, L::kernel};
        const int y = oy * L::stride - L::pad_before + window.ky0 + tap / window.columns;
        const int x = ox * L::stride - L::pad_before + window.kx0 + tap % window.columns;
        if (y >= 0 && y < L::in_side && x >= 0 && x < L::in_side)
          element = (y * L::in_side + x) * L::channel_stride + c;
      }
      entry.offset[j] = element * static_cast<int>(sizeof(typename L::Arithmetic::Raw));
    }
    if constexpr (std::is_same_v<TableEntry<L>, PackedTapEntry>) {
      static_assert(L::image_stride * sizeof(typename L::Arithmetic::Raw) <= 0x10000, "16-bit byte offsets");
      shared_store(table + index, PackedTapEntry{static_cast<uint32_t>(entry.offset[0]) |
                                                 static_cast<uint32_t>(entry.offset[1]) << 16});
    } else {
      shared_store(table + index, entry);
    }
  }
}

// Zeros the zero word of every pair image of layer L (before the layer runs; the region's earlier contents there
// are another layer's data).
template <class L, int Pairs>
TRACKSCOPE_DEVICE_FN void clear_zero_words(typename L::Arithmetic::Raw* region) {
  using Raw = typename L::Arithmetic::Raw;
  for (int index = thread_index(); index < Pairs * L::e; index += kThreads) {
    shared_store(region + (index / L::e) * L::image_stride + L::zero_element + index % L::e, static_cast<Raw>(0));
  }
}

TRACKSCOPE_DEVICE_FN uint16_t global_load_raw(const uint16_t* p) { return global_load_u16(p); }
TRACKSCOPE_DEVICE_FN uint32_t global_load_raw(const uint32_t* p) { return global_load_u32(p); }

// Both branch images of every sample of the tile: pair 2s (branch 1) = channels (i, j) over space (h, w), i.e.
// image[(h*7 + w)][(i*7 + j)] = X[h][w][i][j]; pair 2s + 1 (branch 2) = channels (h, w) over space (i, j). K channels
// past 49 (16-bit: channel 49) are zero. Samples past the end of the input are zeros (their outputs are not written).
// Elements move as raw bit patterns. (Measured on the H100, 2026-12-05: this phase is bound by its loads, not its
// instructions: a thread per cell reading its 49 values with 32-bit loads, and a staged copy through shared memory,
// both cutting the kernel's instructions by a quarter to a third, were no faster; docs/kernels.md §3c.)
template <class Config>
TRACKSCOPE_DEVICE_FN void load_images(const typename Config::Arithmetic::Raw* __restrict__ corr, int valid,
                                      int64_t row_stride, bool vector_rows,
                                      typename Config::Arithmetic::Raw* __restrict__ region) {
  using L0 = typename Config::L0;
  using Raw = typename Config::Arithmetic::Raw;
  constexpr int cs = L0::channel_stride;
  constexpr int is = L0::image_stride;
  constexpr int extra_channels = L0::k_channels - kCorrCells;
  if constexpr (extra_channels > 0) {
    for (int index = thread_index(); index < Config::pairs * kCorrCells * extra_channels; index += kThreads) {
      const int extra = index % extra_channels;
      const int cell = (index / extra_channels) % kCorrCells;
      const int pair = index / (extra_channels * kCorrCells);
      shared_store(region + pair * is + cell * cs + kCorrCells + extra, static_cast<Raw>(0));
    }
  }
  clear_zero_words<L0, Config::pairs>(region);
  auto scatter = [&](int sample, int e, Raw value) {
    const int p = e / kCorrCells;      // (h, w)
    const int c = e - p * kCorrCells;  // (i, j)
    shared_store(region + (2 * sample) * is + p * cs + c, value);
    shared_store(region + (2 * sample + 1) * is + c * cs + p, value);
  };
  if (vector_rows) {
    constexpr int per_vector = 16 / static_cast<int>(sizeof(Raw));  // elements per 16-byte load
    constexpr int vectors = kCorrPaddedRow / per_vector;            // covers the 2401 values
    // Loads in flight per thread before their scatters: the tile's rows in one round where 10 cover them (16-bit,
    // 8 samples: 9.4 per thread), else rounds of 10 (the load phase waits on these loads, not on its instructions).
    constexpr int kBatch =
        ceil_div(Config::samples * vectors, kThreads) < 10 ? ceil_div(Config::samples * vectors, kThreads) : 10;
    for (int first = thread_index(); first < Config::samples * vectors; first += kBatch * kThreads) {
      Words4 words[kBatch];
      TRACKSCOPE_UNROLL
      for (int u = 0; u < kBatch; ++u) {
        const int index = first + u * kThreads;
        const int sample = index / vectors;
        const int vector = index - sample * vectors;
        words[u] = Words4{};
        if (index < Config::samples * vectors && sample < valid) {
          words[u] = global_load16(corr + sample * row_stride + per_vector * vector);
        }
      }
      TRACKSCOPE_UNROLL
      for (int u = 0; u < kBatch; ++u) {
        const int index = first + u * kThreads;
        if (index >= Config::samples * vectors) break;
        const int sample = index / vectors;
        const int e0 = per_vector * (index - sample * vectors);
        const uint32_t parts[4] = {words[u].x, words[u].y, words[u].z, words[u].w};
        auto value = [&](int j) -> Raw {
          if constexpr (sizeof(Raw) == 2) {
            return static_cast<Raw>(j % 2 == 0 ? parts[j / 2] & 0xffffu : parts[j / 2] >> 16);
          } else {
            return static_cast<Raw>(parts[j]);
          }
        };
        if (e0 + per_vector <= kCorrValues) {
          // One division per vector: element e0 + j is (p0, c0 + j) until c0 + j reaches 49, then (p0 + 1,
          // c0 + j - 49) (a vector is shorter than a cell: at most one wrap). Each branch's destination moves by a
          // fixed amount at the wrap: branch 1 (p * cs + c) by cs - 49, branch 2 (c * cs + p) by 1 - 49 cs.
          const int p0 = e0 / kCorrCells;
          const int c0 = e0 - p0 * kCorrCells;
          const int wrap_from = kCorrCells - c0;
          Raw* const first1 = region + (2 * sample) * is + p0 * cs + c0;
          Raw* const first2 = region + (2 * sample + 1) * is + c0 * cs + p0;
          TRACKSCOPE_UNROLL
          for (int j = 0; j < per_vector; ++j) {
            const bool wrapped = j >= wrap_from;
            shared_store(first1 + j + (wrapped ? cs - kCorrCells : 0), value(j));
            shared_store(first2 + j * cs + (wrapped ? 1 - kCorrCells * cs : 0), value(j));
          }
        } else {
          TRACKSCOPE_UNROLL
          for (int j = 0; j < per_vector; ++j) {
            if (e0 + j < kCorrValues) scatter(sample, e0 + j, value(j));
          }
        }
      }
    }
  } else {
    for (int index = thread_index(); index < Config::samples * kCorrValues; index += kThreads) {
      const int sample = index / kCorrValues;
      const int e = index - sample * kCorrValues;
      scatter(sample, e, sample < valid ? global_load_raw(corr + sample * row_stride + e) : static_cast<Raw>(0));
    }
  }
}

// Marks "the next layer is the output" for run_layer.
struct Output {
  static constexpr bool is_output = true;
  static constexpr int in_side = 0;
  static constexpr int in_channels = 0;
  static constexpr int image_stride = 0;
  static constexpr int channel_stride = 0;
};
template <class L>
struct Next : L {
  static constexpr bool is_output = false;
};

// One layer: GEMM from the input images, + bias, GroupNorm, ReLU -> the next layer's images (or the output rows
// after the last layer). Starts after a barrier that published its input; ends with a barrier when it wrote images.
template <class T, class NextLayer>
TRACKSCOPE_DEVICE_FN void run_layer(void* __restrict__ region, const void* __restrict__ table_start,
                                    const LayerParams& p, float eps, void* __restrict__ out, int64_t out_row_stride,
                                    int64_t sample0, int valid) {
  using L = typename T::Layer;
  using A = typename L::Arithmetic;
  constexpr int P = L::positions;
  constexpr int MT = T::mt;
  constexpr int NT = T::nt;
  constexpr int kColumnBlocks = L::out_channels / 16;
  constexpr bool last = NextLayer::is_output;
  static_assert(last || (NextLayer::in_side == L::out_side && NextLayer::in_channels == L::out_channels),
                "the next layer reads this layer's output");
  const int warp = thread_index() >> 5;
  const int lane = thread_index() & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int m_tile0 = (warp % T::warps_m) * MT;
  const int n0 = (warp / T::warps_m) * NT * 8;

  // The accumulators start at the conv bias of their columns.
  float acc[MT][NT][4];
  TRACKSCOPE_UNROLL
  for (int nt = 0; nt < NT; ++nt) {
    const int column = n0 + 8 * nt + 2 * t;
    const float b0 = global_load_f32(p.bias + column);
    const float b1 = global_load_f32(p.bias + column + 1);
    TRACKSCOPE_UNROLL
    for (int mt = 0; mt < MT; ++mt) {
      acc[mt][nt][0] = b0;
      acc[mt][nt][1] = b1;
      acc[mt][nt][2] = b0;
      acc[mt][nt][3] = b1;
    }
  }

  // This thread's rows in its first m-tile: h = 0 -> row g, h = 1 -> row g + 8 (later m-tiles: + m_tile_words).
  // Row 8 below a row is the same position two pairs on (4 positions), eight pairs on (1 position, or any layer that
  // skips its padding), or the same pair eight positions on (16 positions: a table entry of its own).
  constexpr bool position_major = T::position_major;
  constexpr bool own_position = P == 16 && !position_major;
  constexpr int second_row_bytes =
      own_position ? 0 : (position_major ? 8 : 8 / P) * L::image_stride * static_cast<int>(sizeof(typename A::Raw));
  constexpr int m_tile_bytes = T::m_tile_words * 4;
  // The pair and position of row (m-tile m, h): (pair, position) order, or (position, pair) when position-major.
  auto pair_of = [&](int m, int h) {
    return position_major ? (m % T::pair_blocks) * 16 + g + 8 * h : (m * 16 + g + 8 * h) / P;
  };
  auto position_of = [&](int m, int h) { return position_major ? m / T::pair_blocks : (m * 16 + g + 8 * h) % P; };
  const int pair0 = pair_of(m_tile0, 0);
  const int position0 = position_of(m_tile0, 0);
  const char* const pair_bytes =
      static_cast<const char*>(region) + pair0 * L::image_stride * static_cast<int>(sizeof(typename A::Raw));

  // B vectors of (k step s, 16-column block q, lane): b_source[(s * kColumnBlocks + q) * 32 * BV + v] (v < BV).
  constexpr int BV = A::b_vectors;
  constexpr int kAhead = T::b_ahead;
  constexpr int kRing = kAhead + 1;
  constexpr int kStepVectors = kColumnBlocks * 32 * BV;
  // Position-major: the B operand of this warp's position (one per position, one after another).
  const Words4* b_source =
      p.weight + (position_major ? position0 * L::k_steps * kStepVectors : 0) + ((n0 / 16) * 32 + lane) * BV;
  Words4 b[kRing][NT / 2][BV];
  auto load_b = [&](Words4(&into)[NT / 2][BV], int s) {
    const int step = s < L::k_steps ? s : L::k_steps - 1;  // past the end: the last step again (never used)
    TRACKSCOPE_UNROLL
    for (int q = 0; q < NT / 2; ++q) {
      TRACKSCOPE_UNROLL
      for (int v = 0; v < BV; ++v) into[q][v] = global_load16(b_source + step * kStepVectors + q * 32 * BV + v);
    }
  };
  TRACKSCOPE_UNROLL
  for (int u = 0; u < kAhead; ++u) load_b(b[u], u);

  // The table entries of one step: this thread's first rows' and (16 positions) its second rows'.
  using Entry = TableEntry<L>;
  const Entry* entries = static_cast<const Entry*>(table_start) + position0 * 4 + t;
  struct Entries {
    TapEntry first, second;
  };
  auto unpack = [](const Entry& entry) {
    if constexpr (std::is_same_v<Entry, PackedTapEntry>) {
      return TapEntry{{static_cast<int32_t>(entry.offsets & 0xffffu), static_cast<int32_t>(entry.offsets >> 16)}};
    } else {
      return entry;
    }
  };
  auto load_entries = [&](int s) {
    Entries e;
    e.first = unpack(shared_load(entries + s * (P * 4)));
    e.second = e.first;
    if constexpr (own_position) e.second = unpack(shared_load(entries + s * (P * 4) + 8 * 4));
    return e;
  };
  // A registers: {row g, k 2t..}, {row g+8, k 2t..}, {row g, k 2t+8..}, {row g+8, k 2t+8..}.
  auto load_a = [&](uint32_t(&a)[MT][4], const Entries& e) {
    TRACKSCOPE_UNROLL
    for (int mt = 0; mt < MT; ++mt) {
      const char* const first = pair_bytes + mt * m_tile_bytes;
      a[mt][0] = shared_load(reinterpret_cast<const uint32_t*>(first + e.first.offset[0]));
      a[mt][1] = shared_load(reinterpret_cast<const uint32_t*>(first + second_row_bytes + e.second.offset[0]));
      a[mt][2] = shared_load(reinterpret_cast<const uint32_t*>(first + e.first.offset[1]));
      a[mt][3] = shared_load(reinterpret_cast<const uint32_t*>(first + second_row_bytes + e.second.offset[1]));
    }
  };
  uint32_t a_current[MT][4];
  Entries entries_next;  // a_ahead: the entries of the step after the one whose A is loaded
  if constexpr (T::a_ahead) {
    load_a(a_current, load_entries(0));
    entries_next = load_entries(1);
  }
  // One k step with the B words of one ring slot, after starting the loads of step s + kAhead into the slot that
  // step s - 1 used (and, a_ahead, the A words of step s + 1 and the entries of step s + 2).
  auto step = [&](int s, Words4(&current)[NT / 2][BV], Words4(&ahead)[NT / 2][BV]) {
    load_b(ahead, s + kAhead);
    uint32_t a_next[MT][4];
    if constexpr (T::a_ahead) {
      load_a(a_next, entries_next);
      entries_next = load_entries(s + 2);
    } else {
      load_a(a_current, load_entries(s));
    }
    TRACKSCOPE_UNROLL
    for (int mt = 0; mt < MT; ++mt) {
      const typename A::Fragment fragment = A::fragment(a_current[mt]);
      TRACKSCOPE_UNROLL
      for (int nt = 0; nt < NT; ++nt) A::mma(acc[mt][nt], fragment, current[nt / 2], nt % 2);
    }
    if constexpr (T::a_ahead) {
      TRACKSCOPE_UNROLL
      for (int mt = 0; mt < MT; ++mt) {
        TRACKSCOPE_UNROLL
        for (int r = 0; r < 4; ++r) a_current[mt][r] = a_next[mt][r];
      }
    }
  };
  // The ring's slots are compile-time indices: the loop advances kRing steps at a time.
  for (int s0 = 0; s0 < L::k_steps; s0 += kRing) {
    TRACKSCOPE_UNROLL
    for (int u = 0; u < kRing; ++u) {
      if (s0 + u < L::k_steps) step(s0 + u, b[u], b[(u + kAhead) % kRing]);
    }
  }
  if constexpr (!last) {
    block_sync();  // every warp is done reading the input images: they may be overwritten
    clear_zero_words<NextLayer, T::pairs>(static_cast<typename A::Raw*>(region));
  }

  // GroupNorm + ReLU per (pair, 16-channel group) = (the rows of one pair, n8 tiles 2 grp and 2 grp + 1).
  constexpr int count = P * kChannelsPerGroup;
  constexpr float inverse_count = 1.0f / static_cast<float>(count);
  // This thread's part of the sums of half h (rows g / g + 8) of (m-tile mt, group grp), or of the squares of their
  // deviations from mean[h].
  auto partial = [&](int mt, int grp, const float(&mean)[2], bool squares, float(&v)[2]) {
    v[0] = 0.0f;
    v[1] = 0.0f;
    TRACKSCOPE_UNROLL
    for (int u = 0; u < 2; ++u) {
      TRACKSCOPE_UNROLL
      for (int i = 0; i < 4; ++i) {
        const float x = acc[mt][2 * grp + u][i];
        if (squares) {
          const float d = x - mean[i >> 1];
          v[i >> 1] = fmaf(d, d, v[i >> 1]);
        } else {
          v[i >> 1] += x;
        }
      }
    }
  };
  // Over the lanes holding the same rows' values of the group: for 16 positions both halves belong to one pair.
  auto reduce = [&](float(&v)[2]) {
    if constexpr (own_position) {
      v[0] += v[1];
      TRACKSCOPE_UNROLL
      for (int offset = 1; offset < 32; offset <<= 1) v[0] += warp_xor(v[0], offset);
      v[1] = v[0];
    } else {
      constexpr int lanes = P == 4 && !position_major ? 16 : 4;  // lanes sharing a pair: t (and g % 4 when 4 positions)
      TRACKSCOPE_UNROLL
      for (int offset = 1; offset < lanes; offset <<= 1) {
        v[0] += warp_xor(v[0], offset);
        v[1] += warp_xor(v[1], offset);
      }
    }
  };
  // The normalised, ReLU'd values of (m-tile mt, group grp) -> the next layer's images or the output rows.
  auto apply = [&](int mt, int grp, const float(&mean)[2], const float(&inverse_std)[2]) {
    TRACKSCOPE_UNROLL
    for (int u = 0; u < 2; ++u) {
      const int nt = 2 * grp + u;
      const int column = n0 + 8 * nt + 2 * t;
      const float gamma[2] = {global_load_f32(p.gamma + column), global_load_f32(p.gamma + column + 1)};
      const float beta[2] = {global_load_f32(p.beta + column), global_load_f32(p.beta + column + 1)};
      TRACKSCOPE_UNROLL
      for (int h = 0; h < 2; ++h) {
        float y[2];
        TRACKSCOPE_UNROLL
        for (int e = 0; e < 2; ++e) {
          const float v = (acc[mt][nt][2 * h + e] - mean[h]) * inverse_std[h] * gamma[e] + beta[e];
          y[e] = v < 0.0f ? 0.0f : v;  // NaN stays NaN
        }
        const int pair = pair_of(m_tile0 + mt, h);
        const int position = position_of(m_tile0 + mt, h);
        if constexpr (last) {
          static_assert(P == 1, "the last layer has one position: its rows are the output rows");
          const int64_t sample = sample0 + (pair >> 1);
          if ((pair >> 1) < valid) {
            A::store_global(out, sample * out_row_stride + (pair & 1) * L::out_channels + column, y[0], y[1]);
          }
        } else {
          A::store_shared(static_cast<uint32_t*>(region),
                          pair * NextLayer::image_stride + position * NextLayer::channel_stride + column, y[0], y[1]);
        }
      }
    }
  };
  if constexpr (position_major) {
    // A pair's positions are in other warps' m-tiles: each warp's per-position sums meet in shared memory, past the
    // next layer's images (the input images are dead), [group][pair][position] for the sums, then the squares; every
    // warp adds a pair's P values in the same order, so all of them see the same statistics.
    static_assert(!last, "a layer that skips its padding has more than one position");
    constexpr int groups = L::out_channels / kChannelsPerGroup;
    constexpr int scratch_floats = groups * T::pairs * P;
    constexpr int scratch_byte =
        ceil_div(T::pairs * NextLayer::image_stride * static_cast<int>(sizeof(typename A::Raw)), 16) * 16;
    static_assert(
        scratch_byte + 2 * scratch_floats * 4 <= T::pairs * L::image_stride * static_cast<int>(sizeof(typename A::Raw)),
        "the statistics fit in the dead input images");
    float* const scratch = reinterpret_cast<float*>(static_cast<char*>(region) + scratch_byte);
    float mean[MT][NT / 2][2];
    float inverse_std[MT][NT / 2][2];
    // Publishes this warp's part (lanes t = 0 hold it after the reduction) and, after a barrier, adds the P parts.
    auto exchange = [&](float* part_base, float(&totals)[MT][NT / 2][2], const float(&means)[MT][NT / 2][2],
                        bool squares) {
      TRACKSCOPE_UNROLL
      for (int mt = 0; mt < MT; ++mt) {
        TRACKSCOPE_UNROLL
        for (int grp = 0; grp < NT / 2; ++grp) {
          float v[2];
          partial(mt, grp, means[mt][grp], squares, v);
          reduce(v);
          const int group = n0 / kChannelsPerGroup + grp;
          if (t == 0) {
            TRACKSCOPE_UNROLL
            for (int h = 0; h < 2; ++h) {
              shared_store(part_base + (group * T::pairs + pair_of(m_tile0 + mt, h)) * P + position0, v[h]);
            }
          }
        }
      }
      block_sync();
      TRACKSCOPE_UNROLL
      for (int mt = 0; mt < MT; ++mt) {
        TRACKSCOPE_UNROLL
        for (int grp = 0; grp < NT / 2; ++grp) {
          const int group = n0 / kChannelsPerGroup + grp;
          TRACKSCOPE_UNROLL
          for (int h = 0; h < 2; ++h) {
            const float* const parts = part_base + (group * T::pairs + pair_of(m_tile0 + mt, h)) * P;
            float total = 0.0f;
            TRACKSCOPE_UNROLL
            for (int q = 0; q < P; ++q) total += shared_load(parts + q);
            totals[mt][grp][h] = total;
          }
        }
      }
    };
    float zeros[MT][NT / 2][2] = {};
    exchange(scratch, mean, zeros, false);
    TRACKSCOPE_UNROLL
    for (int mt = 0; mt < MT; ++mt) {
      TRACKSCOPE_UNROLL
      for (int grp = 0; grp < NT / 2; ++grp) {
        mean[mt][grp][0] *= inverse_count;
        mean[mt][grp][1] *= inverse_count;
      }
    }
    exchange(scratch + scratch_floats, inverse_std, mean, true);
    TRACKSCOPE_UNROLL
    for (int mt = 0; mt < MT; ++mt) {
      TRACKSCOPE_UNROLL
      for (int grp = 0; grp < NT / 2; ++grp) {
        inverse_std[mt][grp][0] = reciprocal_sqrt(inverse_std[mt][grp][0] * inverse_count + eps);
        inverse_std[mt][grp][1] = reciprocal_sqrt(inverse_std[mt][grp][1] * inverse_count + eps);
        apply(mt, grp, mean[mt][grp], inverse_std[mt][grp]);
      }
    }
  } else {
    TRACKSCOPE_UNROLL
    for (int mt = 0; mt < MT; ++mt) {
      TRACKSCOPE_UNROLL
      for (int grp = 0; grp < NT / 2; ++grp) {
        const float no_mean[2] = {0.0f, 0.0f};
        float mean[2];
        partial(mt, grp, no_mean, false, mean);
        reduce(mean);
        mean[0] *= inverse_count;
        mean[1] *= inverse_count;
        float inverse_std[2];
        partial(mt, grp, mean, true, inverse_std);
        reduce(inverse_std);
        inverse_std[0] = reciprocal_sqrt(inverse_std[0] * inverse_count + eps);
        inverse_std[1] = reciprocal_sqrt(inverse_std[1] * inverse_count + eps);
        apply(mt, grp, mean, inverse_std);
      }
    }
  }
  if constexpr (!last) block_sync();  // the next layer's images are complete
}

template <class Config>
TRACKSCOPE_KERNEL(kThreads, Config::min_blocks)
cmdtop_mma_kernel(const void* __restrict__ corr, int64_t samples, int64_t row_stride, bool vector_rows, Params params,
                  float eps, void* __restrict__ out) {
  using Shape = Layout<Config>;
  using Raw = typename Config::Arithmetic::Raw;
  // A kernel launched after this one with overlap_previous (the next pyramid level's encoder) may start on the SMs
  // our last blocks leave idle (programmatic_launch.cuh).
  allow_dependent_launch();
  char* const tables = static_cast<char*>(dynamic_shared());
  Raw* const region = reinterpret_cast<Raw*>(tables + Shape::region);
  build_table<typename Config::L0>(tables + Shape::table0);
  build_table<typename Config::L1>(tables + Shape::table1);
  if constexpr (Config::layers == 3) build_table<typename Config::L2>(tables + Shape::table2);

  const int64_t sample0 = block_index() * Config::samples;
  const int valid = static_cast<int>(samples - sample0 < Config::samples ? samples - sample0 : Config::samples);
  load_images<Config>(static_cast<const Raw*>(corr) + sample0 * row_stride, valid, row_stride, vector_rows, region);
  block_sync();

  if constexpr (Config::layers == 3) {
    run_layer<typename Config::T0, Next<typename Config::L1>>(region, tables + Shape::table0, params.layer[0], eps, out,
                                                              params.out_row_stride, sample0, valid);
    run_layer<typename Config::T1, Next<typename Config::L2>>(region, tables + Shape::table1, params.layer[1], eps, out,
                                                              params.out_row_stride, sample0, valid);
    run_layer<typename Config::T2, Output>(region, tables + Shape::table2, params.layer[2], eps, out,
                                           params.out_row_stride, sample0, valid);
  } else {
    run_layer<typename Config::T0, Next<typename Config::L1>>(region, tables + Shape::table0, params.layer[0], eps, out,
                                                              params.out_row_stride, sample0, valid);
    run_layer<typename Config::T1, Output>(region, tables + Shape::table1, params.layer[1], eps, out,
                                           params.out_row_stride, sample0, valid);
  }
}

}  // namespace trackscope::gpu::ops::cuda::cmdtop_mma
