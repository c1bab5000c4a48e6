// CMDTop in float32 as ONE kernel per pyramid level: a block takes a tile of correlation samples, keeps their
// 7x7x7x7 rows in shared memory, and runs every layer of both branches there (SAME conv as an implicit GEMM ->
// + bias -> GroupNorm -> ReLU), writing only the final [samples, 256] encoding. Nothing of the im2col path's
// patches (2.8 GB per level and iteration for base at N = 1024) or of its intermediate activations reaches
// global memory; the correlation is read once, the weights stream from L2.
//
// The GEMM of a layer is [rows, K] x [K, C_out] with rows = (pair, output position), pair = (sample, branch),
// K = (tap, input channel), taken in chunks of kChunk along K and double-buffered in shared memory:
//  * the A chunk [kChunk][rows] is gathered shared -> shared from the layer input (the implicit im2col: a row's
//    SAME-padding taps are a bit mask, its input origin an offset; branch 1 reads the correlation with the
//    support offsets (i,j) as channels, branch 2 with the target offsets (h,w) as channels);
//  * the B chunk [kChunk][C_out] is the next rows of the prepared [K_padded, C_out] weight, loaded into
//    registers before the current chunk's FMAs and stored after them (so the L2 latency hides behind them);
//  * each thread accumulates a TR x TC register tile from float4 shared loads (two float4 halves, N/2 apart,
//    for a tile of 8, which keeps a warp's loads free of bank conflicts).
// Plain fp32 FMAs (no tensor cores: this is exact mode), accumulated in K order per output.
//
// Shared memory: base 187 KiB (8 samples = 16 pairs per block), small 214 KiB (16 samples = 32 pairs), so one
// block of 8 warps per SM on compute capability 9.x; the wrapper falls back to the im2col path when the device
// offers less (cmdtop_fused_shared_bytes).

#include <cstdint>

#include "gpu/ops/cuda/device_utils.cuh"
#include "core/tracking/locotrack_shape.h"
#include "gpu/ops/cuda/launchers.h"
#include "gpu/ops/cuda/warp_reduce.cuh"

namespace trackscope::gpu::ops::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kChunk = kCmdTopFusedKChunk;
constexpr int kCorrSide = core::locotrack::kSupportSize;
constexpr int kCorrValues = core::locotrack::kCorrPerSample;
constexpr int kCorrSharedStride = (kCorrValues + 3) / 4 * 4;  // rounded up to whole float4
constexpr int kChannelsPerGroup = 16;

constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
constexpr int max_of(int a, int b) { return a > b ? a : b; }

// One SAME-padded convolution layer on a square input.
template <int InSide, int InChannels, int Kernel, int Stride, int OutChannels>
struct Conv {
  static constexpr int in_side = InSide;
  static constexpr int in_channels = InChannels;
  static constexpr int kernel = Kernel;
  static constexpr int out_side = ceil_div(InSide, Stride);
  static constexpr int pad_before = max_of((out_side - 1) * Stride + Kernel - InSide, 0) / 2;
  static constexpr int stride = Stride;
  static constexpr int out_channels = OutChannels;
  static constexpr int positions = out_side * out_side;
  static constexpr int taps = Kernel * Kernel;
  static constexpr int k = InChannels * taps;
  static constexpr int k_padded = ceil_div(k, kChunk) * kChunk;
  static_assert(k_padded / InChannels < 32, "the tap mask is 32 bits");
  static_assert(OutChannels % kChannelsPerGroup == 0, "GroupNorm uses C/16 groups");
};

// Register tile of a layer: TR rows x TC columns per thread, (rows / TR) * (C_out / TC) == kThreads; a warp
// covers WR consecutive row groups x (32 / WR) consecutive column groups, chosen per layer so that a warp's
// fragment loads of one k touch few distinct 16-byte words (shared-memory wavefronts per FMA).
template <class L, int Pairs, int TR, int TC, int WR>
struct Tiling {
  using Layer = L;
  static constexpr int pairs = Pairs;
  static constexpr int rows = Pairs * L::positions;
  static constexpr int n = L::out_channels;
  static constexpr int tile_rows = TR;
  static constexpr int tile_columns = TC;
  static constexpr int row_groups = rows / TR;
  static constexpr int column_groups = n / TC;
  static constexpr int warp_row_groups = WR;
  static constexpr int warp_column_groups = 32 / WR;
  static constexpr int warps_down = row_groups / WR;
  static_assert(row_groups * column_groups == kThreads, "one register tile per thread");
  static_assert(row_groups % WR == 0 && column_groups % warp_column_groups == 0 &&
                    warps_down * (column_groups / warp_column_groups) == kThreads / 32,
                "the warps tile the layer's outputs");
  static_assert(rows <= kThreads && kThreads % rows == 0, "each thread gathers one A row");
  static_assert(TR == 1 || TR == 2 || TR == 4 || TR == 8, "TR is 1, 2, 4 or 8");
  static_assert(TC == 4 || TC == 8, "TC is 4 or 8");
  static_assert((kChunk * n) % (4 * kThreads) == 0, "the B chunk is whole float4 per thread");
};

struct SmallConfig {
  using L0 = Conv<7, 49, 5, 4, 64>;
  using L1 = Conv<2, 64, 2, 2, 128>;
  static constexpr int samples = 16;
  static constexpr int pairs = 2 * samples;
  using T0 = Tiling<L0, pairs, 8, 4, 4>;
  using T1 = Tiling<L1, pairs, 4, 4, 8>;
  static constexpr int layers = 2;
  static constexpr int buffer_a = max_of(samples * kCorrSharedStride, pairs* L1::positions* L1::out_channels);
  static constexpr int buffer_b = pairs * L0::positions * L0::out_channels;
  static constexpr int max_rows = max_of(T0::rows, T1::rows);
  static constexpr int max_n = max_of(T0::n, T1::n);
  static constexpr int last_channels = L1::out_channels;
};

struct BaseConfig {
  using L0 = Conv<7, 49, 3, 2, 64>;
  using L1 = Conv<4, 64, 3, 2, 128>;
  using L2 = Conv<2, 128, 2, 2, 128>;
  static constexpr int samples = 8;
  static constexpr int pairs = 2 * samples;
  using T0 = Tiling<L0, pairs, 8, 8, 4>;
  using T1 = Tiling<L1, pairs, 4, 8, 4>;
  using T2 = Tiling<L2, pairs, 2, 4, 8>;
  static constexpr int layers = 3;
  static constexpr int buffer_a = max_of(samples * kCorrSharedStride, pairs* L1::positions* L1::out_channels);
  static constexpr int buffer_b =
      max_of(pairs * L0::positions * L0::out_channels, pairs* L2::positions* L2::out_channels);
  static constexpr int max_rows = max_of(max_of(T0::rows, T1::rows), T2::rows);
  static constexpr int max_n = max_of(max_of(T0::n, T1::n), T2::n);
  static constexpr int last_channels = L2::out_channels;
};

template <class Config>
constexpr int shared_floats() {
  return Config::buffer_a + Config::buffer_b + 2 * kChunk * Config::max_rows + 2 * kChunk * Config::max_n;
}

struct LayerParams {
  CmdTopFusedLayer layer[3];
};

// Offsets of element (channel, y, x) in a layer input: channel * dc + y * dy + x * dx (+ the row's origin).
struct InputStrides {
  int dy = 0;
  int dx = 0;
  int dc = 0;
};

// Where this thread's A row reads: origin of its (pair, output position) window and which taps are inside.
template <class L>
struct RowWindow {
  int origin = 0;
  uint32_t tap_mask = 0;
  InputStrides strides;
};

template <class L>
__device__ __forceinline__ RowWindow<L> row_window(int row, bool first_layer) {
  RowWindow<L> w;
  const int pair = row / L::positions;
  const int position = row - pair * L::positions;
  const int oy = position / L::out_side;
  const int ox = position - oy * L::out_side;
  const int y0 = oy * L::stride - L::pad_before;
  const int x0 = ox * L::stride - L::pad_before;
  int base = 0;
  if (first_layer) {
    // Correlation sample X[h][w][i][j] at ((h*7 + w)*7 + i)*7 + j. Branch 1 (pair even): channels (i,j) over
    // space (h,w); branch 2 (pair odd): channels (h,w) over space (i,j).
    base = (pair >> 1) * kCorrSharedStride;
    if ((pair & 1) == 0) {
      w.strides = {kCorrSide * 49, 49, 1};
    } else {
      w.strides = {kCorrSide, 1, 49};
    }
  } else {
    // The previous layer's output, channels-last per pair: [pair][y][x][channel].
    base = pair * L::in_side * L::in_side * L::in_channels;
    w.strides = {L::in_side * L::in_channels, L::in_channels, 1};
  }
  w.origin = base + y0 * w.strides.dy + x0 * w.strides.dx;
#pragma unroll
  for (int ky = 0; ky < L::kernel; ++ky) {
#pragma unroll
    for (int kx = 0; kx < L::kernel; ++kx) {
      const bool inside = y0 + ky >= 0 && y0 + ky < L::in_side && x0 + kx >= 0 && x0 + kx < L::in_side;
      if (inside) w.tap_mask |= 1u << (ky * L::kernel + kx);
    }
  }
  return w;
}

// Where this thread's next A element comes from: its K index k advances by kThreads / rows (the thread's stride
// through every chunk), so (tap, channel) and the input offset are carried along instead of divided out.
struct GatherCursor {
  int channel = 0;
  int tap = 0;
  int kx = 0;
  int offset = 0;  // ky * dy + kx * dx + channel * dc
};

template <class T>
__device__ __forceinline__ GatherCursor gather_start(const RowWindow<typename T::Layer>& w) {
  GatherCursor c;
  c.channel = static_cast<int>(threadIdx.x) / T::rows;  // the first K index of this thread (< channels)
  c.offset = c.channel * w.strides.dc;
  return c;
}

// Gathers this thread's share of the next A chunk (its row, every (kThreads / rows)-th K index) into stage.
template <class T>
__device__ __forceinline__ void gather_a(const float* __restrict__ input, const RowWindow<typename T::Layer>& w,
                                         GatherCursor& c, float* __restrict__ stage) {
  using L = typename T::Layer;
  constexpr int k_step = kThreads / T::rows;
  static_assert(k_step < L::in_channels, "at most one tap change per step");
  const int row = threadIdx.x % T::rows;
  const int first = threadIdx.x / T::rows;
#pragma unroll
  for (int i = 0; i < kChunk / k_step; ++i) {
    float v = 0.0f;
    if ((w.tap_mask >> c.tap) & 1u) v = input[w.origin + c.offset];
    stage[(first + i * k_step) * T::rows + row] = v;
    c.channel += k_step;
    c.offset += k_step * w.strides.dc;
    if (c.channel >= L::in_channels) {
      c.channel -= L::in_channels;
      c.offset += w.strides.dx - L::in_channels * w.strides.dc;
      ++c.tap;
      if (++c.kx == L::kernel) {
        c.kx = 0;
        c.offset += w.strides.dy - L::kernel * w.strides.dx;
      }
    }
  }
}

template <class T>
__device__ __forceinline__ void load_b(const float* __restrict__ weight, int chunk,
                                       float4 (&b)[kChunk * T::n / (4 * kThreads)]) {
  constexpr int per_thread = kChunk * T::n / (4 * kThreads);
  const float4* source = reinterpret_cast<const float4*>(weight + static_cast<int64_t>(chunk) * kChunk * T::n);
#pragma unroll
  for (int i = 0; i < per_thread; ++i) b[i] = __ldg(source + threadIdx.x + i * kThreads);
}

template <class T>
__device__ __forceinline__ void store_b(const float4 (&b)[kChunk * T::n / (4 * kThreads)], float* __restrict__ stage) {
  constexpr int per_thread = kChunk * T::n / (4 * kThreads);
#pragma unroll
  for (int i = 0; i < per_thread; ++i) reinterpret_cast<float4*>(stage)[threadIdx.x + i * kThreads] = b[i];
}

// Row index of element r of this thread's tile (rg = row group).
template <class T>
__device__ __forceinline__ int tile_row(int rg, int r) {
  if constexpr (T::tile_rows == 8)
    return r < 4 ? rg * 4 + r : T::rows / 2 + rg * 4 + (r - 4);
  else
    return rg * T::tile_rows + r;
}
template <class T>
__device__ __forceinline__ int tile_column(int cg, int c) {
  if constexpr (T::tile_columns == 8)
    return c < 4 ? cg * 4 + c : T::n / 2 + cg * 4 + (c - 4);
  else
    return cg * 4 + c;
}

template <class T>
__device__ __forceinline__ void load_a_fragment(const float* __restrict__ row, int rg, float (&a)[T::tile_rows]) {
  if constexpr (T::tile_rows == 8) {
    const float4 lo = *reinterpret_cast<const float4*>(row + rg * 4);
    const float4 hi = *reinterpret_cast<const float4*>(row + T::rows / 2 + rg * 4);
    a[0] = lo.x;
    a[1] = lo.y;
    a[2] = lo.z;
    a[3] = lo.w;
    a[4] = hi.x;
    a[5] = hi.y;
    a[6] = hi.z;
    a[7] = hi.w;
  } else if constexpr (T::tile_rows == 4) {
    const float4 v = *reinterpret_cast<const float4*>(row + rg * 4);
    a[0] = v.x;
    a[1] = v.y;
    a[2] = v.z;
    a[3] = v.w;
  } else if constexpr (T::tile_rows == 2) {
    const float2 v = *reinterpret_cast<const float2*>(row + rg * 2);
    a[0] = v.x;
    a[1] = v.y;
  } else {
    a[0] = row[rg];
  }
}

template <class T>
__device__ __forceinline__ void load_b_fragment(const float* __restrict__ row, int cg, float (&b)[T::tile_columns]) {
  const float4 lo = *reinterpret_cast<const float4*>(row + cg * 4);
  b[0] = lo.x;
  b[1] = lo.y;
  b[2] = lo.z;
  b[3] = lo.w;
  if constexpr (T::tile_columns == 8) {
    const float4 hi = *reinterpret_cast<const float4*>(row + T::n / 2 + cg * 4);
    b[4] = hi.x;
    b[5] = hi.y;
    b[6] = hi.z;
    b[7] = hi.w;
  }
}

// One layer: input (shared) -> GEMM -> + bias -> output (shared, [pair][position][channel]) -> GroupNorm + ReLU
// in place. Ends with the output complete and visible to the whole block.
template <class T>
__device__ void conv_layer(const float* __restrict__ input, float* __restrict__ output, const CmdTopFusedLayer& p,
                           bool first_layer, float eps, float* __restrict__ stage_a, float* __restrict__ stage_b) {
  using L = typename T::Layer;
  constexpr int chunks = L::k_padded / kChunk;
  constexpr int b_per_thread = kChunk * T::n / (4 * kThreads);
  const RowWindow<L> window = row_window<L>(static_cast<int>(threadIdx.x) % T::rows, first_layer);
  GatherCursor cursor = gather_start<T>(window);
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int rg = (warp % T::warps_down) * T::warp_row_groups + lane % T::warp_row_groups;
  const int cg = (warp / T::warps_down) * T::warp_column_groups + lane / T::warp_row_groups;

  float acc[T::tile_rows][T::tile_columns];
#pragma unroll
  for (int r = 0; r < T::tile_rows; ++r) {
#pragma unroll
    for (int c = 0; c < T::tile_columns; ++c) acc[r][c] = 0.0f;
  }

  float4 b_next[b_per_thread];
  gather_a<T>(input, window, cursor, stage_a);
  load_b<T>(p.weight, 0, b_next);
  store_b<T>(b_next, stage_b);
  __syncthreads();
  for (int chunk = 0; chunk < chunks; ++chunk) {
    const int current = chunk & 1;
    const bool more = chunk + 1 < chunks;
    if (more) {
      load_b<T>(p.weight, chunk + 1, b_next);
      gather_a<T>(input, window, cursor, stage_a + (current ^ 1) * kChunk * T::rows);
    }
    const float* a_chunk = stage_a + current * kChunk * T::rows;
    const float* b_chunk = stage_b + current * kChunk * T::n;
#pragma unroll
    for (int kk = 0; kk < kChunk; ++kk) {
      float a[T::tile_rows];
      float b[T::tile_columns];
      load_a_fragment<T>(a_chunk + kk * T::rows, rg, a);
      load_b_fragment<T>(b_chunk + kk * T::n, cg, b);
#pragma unroll
      for (int r = 0; r < T::tile_rows; ++r) {
#pragma unroll
        for (int c = 0; c < T::tile_columns; ++c) acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
      }
    }
    if (more) store_b<T>(b_next, stage_b + (current ^ 1) * kChunk * T::n);
    __syncthreads();
  }

  // Epilogue: + bias, into [row][channel] (row = pair * positions + position).
#pragma unroll
  for (int c4 = 0; c4 < T::tile_columns; c4 += 4) {
    const int column = tile_column<T>(cg, c4);
    const float4 bias = __ldg(reinterpret_cast<const float4*>(p.bias + column));
#pragma unroll
    for (int r = 0; r < T::tile_rows; ++r) {
      const int row = tile_row<T>(rg, r);
      *reinterpret_cast<float4*>(output + row * T::n + column) =
          make_float4(acc[r][c4] + bias.x, acc[r][c4 + 1] + bias.y, acc[r][c4 + 2] + bias.z, acc[r][c4 + 3] + bias.w);
    }
  }
  __syncthreads();

  // GroupNorm (two passes, fp32) + ReLU: one warp per (pair, group) of positions x 16 values.
  constexpr int groups = T::n / kChannelsPerGroup;
  constexpr int count = L::positions * kChannelsPerGroup;
  constexpr int per_lane = ceil_div(count, 32);
  for (int unit = static_cast<int>(threadIdx.x) >> 5; unit < T::pairs * groups; unit += kThreads / 32) {
    const int pair = unit / groups;
    const int group = unit - pair * groups;
    float* base = output + pair * L::positions * T::n + group * kChannelsPerGroup;
    float values[per_lane];
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < per_lane; ++i) {
      const int e = lane + i * 32;
      values[i] = 0.0f;
      if (e < count) {
        values[i] = base[(e / kChannelsPerGroup) * T::n + (e % kChannelsPerGroup)];
        sum += values[i];
      }
    }
    const float mean = warp_reduce(sum, Sum{}) / static_cast<float>(count);
    float squares = 0.0f;
#pragma unroll
    for (int i = 0; i < per_lane; ++i) {
      const int e = lane + i * 32;
      if (e < count) {
        const float d = values[i] - mean;
        squares = fmaf(d, d, squares);
      }
    }
    const float inverse_std = rsqrtf(warp_reduce(squares, Sum{}) / static_cast<float>(count) + eps);
#pragma unroll
    for (int i = 0; i < per_lane; ++i) {
      const int e = lane + i * 32;
      if (e < count) {
        const int channel = group * kChannelsPerGroup + e % kChannelsPerGroup;
        const float y = (values[i] - mean) * inverse_std * __ldg(p.gamma + channel) + __ldg(p.beta + channel);
        base[(e / kChannelsPerGroup) * T::n + (e % kChannelsPerGroup)] = y < 0.0f ? 0.0f : y;  // NaN stays NaN
      }
    }
  }
  __syncthreads();
}

template <class Config>
__global__ void __launch_bounds__(kThreads, 1)
    cmdtop_fused_kernel(const float* __restrict__ corr, int64_t samples, int64_t row_stride, bool vector_rows,
                        LayerParams params, float eps, float* __restrict__ out) {
  extern __shared__ float4 shared_raw[];
  float* const buffer_a = reinterpret_cast<float*>(shared_raw);
  float* const buffer_b = buffer_a + Config::buffer_a;
  float* const stage_a = buffer_b + Config::buffer_b;
  float* const stage_b = stage_a + 2 * kChunk * Config::max_rows;

  const int64_t sample0 = static_cast<int64_t>(blockIdx.x) * Config::samples;
  const int valid = static_cast<int>(samples - sample0 < Config::samples ? samples - sample0 : Config::samples);

  // The tile's correlation rows; samples past the end are zeros (their outputs are not written).
  if (vector_rows) {
    // All of the tile's copies in flight at once (cp.async), rather than one load round trip per iteration.
    constexpr int vectors = kCorrSharedStride / 4;
    for (int e = threadIdx.x; e < Config::samples * vectors; e += kThreads) {
      const int s = e / vectors;
      const int v = e - s * vectors;
      const float* source = s < valid ? corr + (sample0 + s) * row_stride + 4 * v : corr;
      copy16_async(buffer_a + s * kCorrSharedStride + 4 * v, source, s < valid);
    }
    commit_copies();
    wait_for_copies<0>();
  } else {
    for (int e = threadIdx.x; e < Config::samples * kCorrSharedStride; e += kThreads) {
      const int s = e / kCorrSharedStride;
      const int v = e - s * kCorrSharedStride;
      buffer_a[e] = s < valid && v < kCorrValues ? __ldg(corr + (sample0 + s) * row_stride + v) : 0.0f;
    }
  }
  __syncthreads();

  conv_layer<typename Config::T0>(buffer_a, buffer_b, params.layer[0], true, eps, stage_a, stage_b);
  conv_layer<typename Config::T1>(buffer_b, buffer_a, params.layer[1], false, eps, stage_a, stage_b);
  const float* result = buffer_a;
  if constexpr (Config::layers == 3) {
    conv_layer<typename Config::T2>(buffer_a, buffer_b, params.layer[2], false, eps, stage_a, stage_b);
    result = buffer_b;
  }
  // The last layer has one position: result is [pair][channel] = [sample][branch][channel], the output rows.
  const int values = valid * 2 * Config::last_channels;
  float4* destination = reinterpret_cast<float4*>(out + sample0 * 2 * Config::last_channels);
  for (int v = threadIdx.x; v < values / 4; v += kThreads) destination[v] = reinterpret_cast<const float4*>(result)[v];
}

template <class Config>
cudaError_t launch_typed(const float* corr, int64_t samples, int64_t row_stride, const LayerParams& params, float eps,
                         float* out, cudaStream_t stream) {
  const int64_t blocks = (samples + Config::samples - 1) / Config::samples;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  constexpr int shared_bytes = shared_floats<Config>() * static_cast<int>(sizeof(float));
  const cudaError_t error =
      cudaFuncSetAttribute(cmdtop_fused_kernel<Config>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes);
  if (error != cudaSuccess) return error;
  const bool vector_rows = row_stride % 4 == 0 && is_aligned(corr, 16);
  cmdtop_fused_kernel<Config><<<static_cast<unsigned>(blocks), kThreads, shared_bytes, stream>>>(
      corr, samples, row_stride, vector_rows, params, eps, out);
  return cudaGetLastError();
}

}  // namespace

int64_t cmdtop_fused_shared_bytes(CmdTopFusedShape shape) {
  return static_cast<int64_t>(sizeof(float)) *
         (shape == CmdTopFusedShape::base ? shared_floats<BaseConfig>() : shared_floats<SmallConfig>());
}

cudaError_t launch_cmdtop_fused(CmdTopFusedShape shape, const float* corr, int64_t samples, int64_t row_stride,
                                const CmdTopFusedLayer* layers, int layer_count, float eps, float* out,
                                cudaStream_t stream) {
  if (samples == 0) return cudaSuccess;
  const int expected = shape == CmdTopFusedShape::base ? 3 : 2;
  if (layer_count != expected || row_stride < kCorrValues || !is_aligned(out, 16)) {
    return cudaErrorInvalidValue;
  }
  LayerParams params;
  for (int i = 0; i < layer_count; ++i) {
    params.layer[i] = layers[i];
    if (!is_aligned(layers[i].weight, 16) || !is_aligned(layers[i].bias, 16)) {
      return cudaErrorInvalidValue;
    }
  }
  return shape == CmdTopFusedShape::base
             ? launch_typed<BaseConfig>(corr, samples, row_stride, params, eps, out, stream)
             : launch_typed<SmallConfig>(corr, samples, row_stride, params, eps, out, stream);
}

}  // namespace trackscope::gpu::ops::cuda
