#pragma once
// Test-only: the LocoTrack stages that the fused ops replace, written as compositions of plain ATen ops
// exactly as docs/locotrack-spec.md §2 describes them (grid_sample, einsum, interpolate, conv2d,
// softmax, group_norm ...), plus random inputs shaped like the model's.

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "gpu/ops/ops.h"

namespace trackscope::test {

/// Stage 5 steps 1-2 for one level: map_coordinates_2d (grid_sample bilinear, zeros, align_corners=False)
/// then einsum('nthwc,nijc->nthwij'). features [T,H,W,C], points [n,T,2] (x,y cells), supports [n,7,7,C];
/// computed in float32 from the given values. Returns [n,T,7,7,7,7].
at::Tensor reference_local_corr4d(const at::Tensor& features, const at::Tensor& points, const at::Tensor& supports);

struct ReferenceInit {
  at::Tensor points;  // [n,T,2] 256-space (x,y), query-frame pin applied
  at::Tensor stats;   // [n,T,6] [mean_up, mean_hr, max_up, max_hr, min_up, min_hr]
};
/// Stage 4 (tracks_from_cost_volume without occ_linear), in float32.
ReferenceInit reference_init(const at::Tensor& query_lowres, const at::Tensor& query_hires,
                             const at::Tensor& features_lowres, const at::Tensor& features_hires,
                             const at::Tensor& conv_weight, const at::Tensor& conv_bias, const at::Tensor& query_frames,
                             const at::Tensor& query_xy);
/// The part of reference_init after the cost volumes: cost_lowres [n,T,Hl,Wl], cost_hires [n,T,Hh,Wh].
ReferenceInit reference_init_from_planes(const at::Tensor& cost_lowres, const at::Tensor& cost_hires,
                                         const at::Tensor& conv_weight, const at::Tensor& conv_bias,
                                         const at::Tensor& query_frames, const at::Tensor& query_xy);

/// Stage 5 step 3: CMDTop on corr [...,7,7,7,7] with the official explicit paddings per configuration
/// (small: (1,1,1,1), none; base: (1,1,1,1), (0,1,0,1), none); conv2d -> group_norm -> relu; mean; concat.
/// Returns [M, 2*C_last] float32.
at::Tensor reference_cmdtop(const at::Tensor& corr, const gpu::ops::CmdTopWeights& weights);

/// Random CMDTop weights of the official shapes (PyTorch-like uniform conv init, GroupNorm affine near 1/0).
gpu::ops::CmdTopWeights random_cmdtop_weights(bool base);

/// L2-normalised random feature grid [T,H,W,C] (as the backbone produces).
at::Tensor random_features(int64_t frames, int64_t height, int64_t width, int64_t channels);

/// Points [n,T,2] (x,y) in cell units of a width x height grid: mostly uniform in a band `margin` cells
/// beyond every border, plus exact integers, exact half-integers, and points far outside.
at::Tensor random_points(int64_t queries, int64_t frames, int64_t height, int64_t width, double margin);

/// Largest |actual - expected| and largest |expected| (both computed in double on the CPU). NaN anywhere in
/// actual where expected is finite (e.g. an unwritten poisoned output) makes max_abs_diff infinite.
struct Difference {
  double max_abs_diff = 0.0;
  double max_abs_expected = 0.0;
  double mean_abs_diff = 0.0;
  double relative() const { return max_abs_diff / (max_abs_expected > 1e-30 ? max_abs_expected : 1.0); }
};
Difference difference(const at::Tensor& actual, const at::Tensor& expected);

/// Prints one line "[ops] <what>: max|diff| ... max|ref| ... rel ... (tolerance ...)" for the test log.
void report(const std::string& what, const Difference& d, const std::string& tolerance);

}  // namespace trackscope::test
