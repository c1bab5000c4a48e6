#pragma once
// FLOP and byte counts of the fused ops (gpu/ops/ops.h) from their shapes, for stage instrumentation and
// roofline floors. Torch-free on purpose: the bench and the perf model can include it anywhere.
// FLOPs count 2 per multiply-add and follow docs/locotrack-spec.md §5.1 (docs/kernels.md derives each formula).
//
//   const OpCost corr = local_corr4d_cost({1024, 47, 64, 64, 128}, 4);   // one level, one iteration, fp32
//   double floor_ms = std::max(corr.flops / peak_flops, corr.min_bytes / peak_bytes_per_s) * 1e3;

#include <algorithm>
#include <cstdint>

#include "core/tracking/locotrack_shape.h"

namespace trackscope::gpu::ops {

struct OpCost {
  double flops = 0.0;         // floating-point operations, 2 per multiply-add
  double min_bytes = 0.0;     // every input read once, every output written once (the roofline floor)
  double design_bytes = 0.0;  // DRAM traffic of this implementation without cache reuse (temporaries included)
  double eager_bytes = 0.0;   // the same for the official eager composition (materialised intermediates)
};

struct CorrShape {
  int64_t queries = 0;
  int64_t frames = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
};

/// local_corr4d on one level. element_bytes: 4 (fp32), 2 (bf16/fp16) for features and supports.
/// FLOPs: 2*49*49*C correlation + 8*49*C sampling per (q,t), as §5.1 counts einsum and grid_sample.
inline OpCost local_corr4d_cost(const CorrShape& s, int element_bytes) {
  const double pairs = static_cast<double>(s.queries) * static_cast<double>(s.frames);
  const double c = static_cast<double>(s.channels);
  const double e = element_bytes;
  const double grid = static_cast<double>(s.frames * s.height * s.width) * c * e;
  const double windows = pairs * 64.0 * c * e;
  const double taps = core::locotrack::kSupportTaps;
  const double corr_values = core::locotrack::kCorrPerSample;
  const double supports = static_cast<double>(s.queries) * taps * c * e;
  const double io = pairs * (2.0 * 4.0 + corr_values * 4.0);
  const double neighbourhoods = pairs * taps * c * 4.0;  // fp32 [n,T,7,7,C] in the eager path
  OpCost cost;
  cost.flops = pairs * c * (2.0 * corr_values + 8.0 * taps);
  cost.min_bytes = std::min(grid, windows) + supports + io;
  const double blocks_per_query = static_cast<double>((s.frames + 3) / 4);
  cost.design_bytes = windows + supports * blocks_per_query + io;
  // grid_sample reads the same windows and writes the neighbourhood; einsum copies it (read + write) and
  // bmm reads it again.
  cost.eager_bytes = windows + neighbourhoods * 4.0 + supports + io;
  return cost;
}

struct InitShape {
  int64_t queries = 0;
  int64_t frames = 0;
  int64_t low_height = 32, low_width = 32, low_channels = 256;
  int64_t high_height = 64, high_width = 64, high_channels = 128;
};

/// init_from_cost_volume (both GEMMs and the fused planes). FLOPs per high cell: 36 conv + 29 upsample,
/// softmax, soft-argmax and statistics (§5.1: 86.4 MFLOP per query at T=47).
inline OpCost init_cost(const InitShape& s, int element_bytes, int64_t queries_per_pass = 256) {
  const double n = static_cast<double>(s.queries);
  const double t = static_cast<double>(s.frames);
  const double e = element_bytes;
  const double low_cells = static_cast<double>(s.low_height * s.low_width);
  const double high_cells = static_cast<double>(s.high_height * s.high_width);
  const double features =
      t * (low_cells * static_cast<double>(s.low_channels) + high_cells * static_cast<double>(s.high_channels)) * e;
  const double queries = n * static_cast<double>(s.low_channels + s.high_channels) * e + n * 3.0 * 4.0;
  const double outputs = n * t * 8.0 * 4.0;
  const double cost_volumes = n * t * (low_cells + high_cells) * e;
  OpCost cost;
  cost.flops =
      2.0 * n * t *
          (low_cells * static_cast<double>(s.low_channels) + high_cells * static_cast<double>(s.high_channels)) +
      n * t * high_cells * 65.0;
  cost.min_bytes = features + queries + outputs;
  const double passes =
      static_cast<double>((s.queries + queries_per_pass - 1) / std::max<int64_t>(queries_per_pass, 1));
  cost.design_bytes = features * passes + queries + outputs + 2.0 * cost_volumes;
  // Eager (fp32): cost volumes, upsampled plane, stacked copy, conv output, heatmap, and the soft-argmax's
  // [n,T,Hh,Wh,2] temporaries (about six of them), each written and read once.
  cost.eager_bytes =
      features + queries + outputs + 2.0 * 4.0 * n * t * (low_cells + high_cells * (1.0 + 2.0 + 1.0 + 1.0 + 12.0));
  return cost;
}

/// CMDTop on `samples` correlation volumes (n*T), both branches; base = 3-layer configuration.
/// FLOPs count the convolutions (§5.1: 195.4 / 458.0 MFLOP per query-iteration over 3 levels at T=47);
/// dense = CmdTopFast's dense strategy (no patches; it executes more FLOPs than counted here, see
/// docs/kernels.md). The last 2x2 layer never needs patches.
inline OpCost cmdtop_cost(int64_t samples, bool base, int input_bytes, int compute_bytes, bool dense = false) {
  struct Layer {
    double positions, patch, channels;
  };
  const Layer small_layers[] = {{4, 49 * 25, 64}, {1, 64 * 4, 128}};
  const Layer base_layers[] = {{16, 49 * 9, 64}, {4, 64 * 9, 128}, {1, 128 * 4, 128}};
  const Layer* layers = base ? base_layers : small_layers;
  const int count = base ? 3 : 2;
  const double m = static_cast<double>(samples);
  const double ce = compute_bytes;
  double flops = 0.0, weights = 0.0, activations = 0.0, patches = 0.0;
  for (int i = 0; i < count; ++i) {
    flops += 2.0 * 2.0 * m * layers[i].positions * layers[i].patch * layers[i].channels;
    weights += (layers[i].patch + 3.0) * layers[i].channels * ce;
    activations += 2.0 * m * layers[i].positions * layers[i].channels;  // per layer output, both branches
    if (!dense && (i == 0 || layers[i].positions > 1)) patches += 2.0 * m * layers[i].positions * layers[i].patch;
  }
  const double corr_values = core::locotrack::kCorrPerSample;
  OpCost cost;
  cost.flops = flops;
  cost.min_bytes = m * corr_values * input_bytes + weights + m * 256.0 * ce;
  // Patches written by the gather and read by the GEMM; each layer output written by the GEMM and read +
  // written by the fused GroupNorm+ReLU.
  cost.design_bytes = m * corr_values * input_bytes + weights + 2.0 * patches * ce + 3.0 * activations * ce;
  if (dense && input_bytes != compute_bytes) cost.design_bytes += m * corr_values * (input_bytes + compute_bytes);
  // Eager: branch-1 permute copy, per layer and branch F.pad copy, conv (implicit GEMM: input + output),
  // GroupNorm read + write, ReLU read + write, all fp32.
  const double padded_inputs = 2.0 * m * (base ? 49.0 * 81.0 + 64.0 * 25.0 : 49.0 * 81.0);
  cost.eager_bytes = m * corr_values * 4.0 * 3.0 + padded_inputs * 4.0 * 3.0 + activations * 4.0 * 5.0 + weights;
  return cost;
}

}  // namespace trackscope::gpu::ops
