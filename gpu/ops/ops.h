#pragma once
// Trackscope's fused LocoTrack operators: functional APIs on ATen tensors (torch-side header: include it only
// from gpu/ .cpp files). Each op has a CPU reference (always built) and a CUDA kernel (built with
// TRACKSCOPE_WITH_CUDA against a CUDA LibTorch); the device of the inputs picks the implementation.
// Semantics follow docs/locotrack-spec.md (§2.4–2.5, §4) exactly; docs/kernels.md has the
// design, FLOP and byte counts of each op.
//
//   using namespace trackscope::gpu::ops;
//   at::Tensor corr = local_corr4d(hires_grid[0], points_256 * (64.0 / 256.0), hires_supports[0]);  // [n,T,7,7,7,7]
//   CmdTopFast encoder(CmdTopWeights::from_named(lookup, "cmdtop.0."), device, {});
//   at::Tensor encoded = encoder.forward(corr);                                                   // [n,T,256]
//
// Errors: invalid shapes, dtypes or devices throw c10::Error (TORCH_CHECK) with the offending values; the
// caller at the gpu/ boundary converts them to Status. Threads: the functions are reentrant; CmdTopFast is
// immutable after construction and may be shared. CUDA work is queued on the current stream of the inputs'
// device; nothing synchronises the host, so the ops can be captured in CUDA graphs (CmdTopFast keeps its
// index tables on the device for that reason).
//
// Precision: inputs may be float32, bfloat16 or float16 where stated; accumulation is always fp32. Matrix
// products go through at::matmul and follow the global TF32 flags (keep TF32 off for exact mode). On the CPU,
// LibTorch 1.13 has no float16 GEMM: there init_from_cost_volume and CmdTopFast take float32 or bfloat16.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/tracking/locotrack_shape.h"

namespace trackscope::gpu::ops {

/// True when this build contains Trackscope's CUDA kernels and LibTorch sees at least one CUDA device.
bool cuda_kernels_available();
/// One line saying why cuda_kernels_available() is false (or which devices it found).
std::string cuda_kernels_status();

// ---------------------------------------------------------------------------------------------------------
// 1. Fused neighbourhood sampling + local 4D correlation (stage 5 steps 1-2), one pyramid level.
//
// features [T, H, W, C]: one level's L2-normalised feature grid, channels last (B = 1; channel stride must be
//   1, other strides are free). float32, bfloat16 or float16.
// points   [n, T, 2] float32: (x, y) in this grid's cell units (the caller scales 256-space points by W/256
//   and H/256). Continuous coordinate v is array index v - 0.5 (grid_sample, align_corners=False).
// supports [n, 7, 7, C]: the query's 7x7 support features of this level, same dtype as features.
// returns  [n, T, 7, 7, 7, 7] float32 = [n*T, 49 (h,w target offsets), 49 (i,j support offsets)] row-major:
//   corr[q,t,h,w,i,j] = sum_c neigh[q,t,h,w,c] * supports[q,i,j,c], where neigh[q,t,h,w,:] is the bilinear
//   sample of features[t] at (x + (w-3), y + (h-3)) with zeros padding (corners outside the grid count 0).
// Points that are not finite give an all-zero correlation (grid_sample would give NaN).
// The 7x7xC neighbourhoods are never materialised.
/// Row length of a padded correlation buffer: 2401 rounded up to a multiple of 8 elements, so that every row of
/// a [M, 2408] matrix starts 16-byte aligned and the CMDTop GEMMs that read it take cuBLAS's tensor-core paths
/// (with 2401-element rows bf16/fp16 GEMMs ran ~7x slower on an H200).
inline constexpr int64_t kCorrPaddedRow = core::locotrack::kCorrPaddedRow;

/// Which CUDA kernel computes it (the CPU has one implementation). All but classic take the dot products of the raw
/// 8x8 window cells with the supports (a small GEMM per (q,t)) and interpolate the products.
///   classic: the SIMT kernel (interpolate the neighbourhood, then fp32 FMAs; any dtype).
///   tensor_cores: mma.sync with a cp.async pipeline (local_corr4d_mma_pipelined_kernel.cuh), compute capability
///     >= 8.0: bf16/fp16 features on m16n8k16 (C % 32 == 0), float32 features as 3xTF32 (each operand split into a
///     TF32 value and its TF32 remainder: float32-level accuracy; C % 16 == 0, float32 output); where not eligible,
///     wmma, then classic.
///   wmma: the previous 16-bit tensor-core kernel (WMMA, no pipeline; bf16 from compute capability 8.0, fp16 from 7.0,
///     C % 64 == 0); else classic.
///   pipelined: the classic arithmetic for float32 features with the window and support loads double-buffered in
///     shared memory through cp.async (C % 32 == 0, compute capability >= 8.0); else classic.
///   automatic: tensor_cores where eligible, else wmma, else pipelined, else classic.
enum class CorrKernel { automatic, classic, tensor_cores, pipelined, wmma };

at::Tensor local_corr4d(const at::Tensor& features, const at::Tensor& points, const at::Tensor& supports,
                        CorrKernel kernel = CorrKernel::automatic);
/// Same, writing into corr: [n, T, 7, 7, 7, 7] contiguous, or a padded buffer [n, T, kCorrPaddedRow]
/// contiguous whose columns >= 2401 are written as zeros (what CmdTopFast reads fastest). On the inputs'
/// device. corr may also have the features' reduced dtype (bf16/fp16: fp32 accumulation, one rounding at the
/// store), which halves the traffic into a reduced-precision CmdTopFast. overlap_previous: the caller knows that the
/// kernel it launched last on the current stream neither writes the inputs nor touches corr (e.g. the previous
/// pyramid level's correlation), so the tensor-core kernel may start beside that kernel's last blocks (compute
/// capability 9.0+; only when no input needs a copy first).
void local_corr4d_out(const at::Tensor& features, const at::Tensor& points, const at::Tensor& supports,
                      at::Tensor& corr, CorrKernel kernel = CorrKernel::automatic, bool overlap_previous = false);

// ---------------------------------------------------------------------------------------------------------
// 2. Fused initialisation from the global cost volumes (stage 4, without the occ_linear head).
//
// query_lowres    [n, Cl] and features_lowres  [T, Hl, Wl, Cl] (Cl = 256, 32x32 at 256^2);
// query_hires     [n, Ch] and features_hires   [T, Hh, Wh, Ch] (Ch = 128, 64x64); Hh = 2 Hl, Wh = 2 Wl,
//   Hh * Wh <= 4096. Queries and features share one dtype (float32, bfloat16 or float16); the cost volumes
//   are computed in that dtype by at::matmul (fp32 accumulation).
// cost_conv_weight [1, 2, 3, 3], cost_conv_bias [1] (float32).
// query_frames [n]: the query frame index t_q (any float dtype); query_xy [n, 2] float32: (x, y) in 256-space.
// returns points [n, T, 2] float32: soft-argmax (x, y) in 256-space (cell units x 256/Wh, 256/Hh), replaced
//   by query_xy on the frame round_half_even(t_q); stats [n, T, 6] float32: [mean_up, mean_hr, max_up,
//   max_hr, min_up, min_hr] of the raw stacked cost before the conv (occ_linear's input).
// queries_per_pass bounds the cost-volume temporaries: queries_per_pass * T * (Hl*Wl + Hh*Wh) elements
// (246 MB fp32 at 256 queries, T=47) instead of the eager ~40 MB per query.
struct InitResult {
  at::Tensor points;  // [n, T, 2] float32, 256-space (x, y)
  at::Tensor stats;   // [n, T, 6] float32
};
InitResult init_from_cost_volume(const at::Tensor& query_lowres, const at::Tensor& query_hires,
                                 const at::Tensor& features_lowres, const at::Tensor& features_hires,
                                 const at::Tensor& cost_conv_weight, const at::Tensor& cost_conv_bias,
                                 const at::Tensor& query_frames, const at::Tensor& query_xy,
                                 int64_t queries_per_pass = 256);

/// The fused per-plane part on given cost volumes: cost_lowres [n, T, Hl, Wl] and cost_hires [n, T, Hh, Wh]
/// (contiguous or not; float32, bfloat16 or float16, same dtype), i.e. CV[q,t,h,w] = sum_c q[q,c] F[t,h,w,c].
/// Writes points [n, T, 2] and stats [n, T, 6] (float32, contiguous, on the inputs' device).
void init_from_cost_volume_planes_out(const at::Tensor& cost_lowres, const at::Tensor& cost_hires,
                                      const at::Tensor& cost_conv_weight, const at::Tensor& cost_conv_bias,
                                      const at::Tensor& query_frames, const at::Tensor& query_xy, at::Tensor& points,
                                      at::Tensor& stats);

// ---------------------------------------------------------------------------------------------------------
// 3. CMDTop correlation encoder, both branches in one pass (stage 5 step 3).
//
// One CMDTop (one pyramid level, cmdtop.K) is a stack of SAME-padded conv (with bias) -> GroupNorm(C/16, eps
// 1e-5) -> ReLU layers applied to the two views of the 4D correlation, then the spatial mean:
//   small (2 layers): 49x7x7 -5x5 s4-> 64x2x2 -2x2 s2-> 128x1x1;
//   base  (3 layers): 49x7x7 -3x3 s2-> 64x4x4 -3x3 s2-> 128x2x2 -2x2 s2-> 128x1x1.
struct CmdTopLayerWeights {
  at::Tensor conv_weight;  // [C_out, C_in, k, k]   cmdtop.K.conv.I.0.weight
  at::Tensor conv_bias;    // [C_out]               cmdtop.K.conv.I.0.bias
  at::Tensor norm_weight;  // [C_out]               cmdtop.K.conv.I.1.weight (GroupNorm gamma)
  at::Tensor norm_bias;    // [C_out]               cmdtop.K.conv.I.1.bias   (GroupNorm beta)
  int64_t stride = 1;
};

struct CmdTopWeights {
  std::vector<CmdTopLayerWeights> layers;

  /// Looks up prefix + "conv.I.{0,1}.{weight,bias}" for I = 0, 1, ... (prefix e.g. "cmdtop.0.") and sets the
  /// strides of the official configurations: 2 layers = small (4, 2), 3 layers = base (2, 2, 2).
  /// Throws c10::Error naming the key when a tensor is missing or has the wrong shape.
  using Lookup = std::function<std::optional<at::Tensor>(const std::string& key)>;
  static CmdTopWeights from_named(const Lookup& lookup, const std::string& prefix);

  /// Checks shapes and channel chaining (C_in of layer 0 = 49, C_out % 16 == 0, ...); throws c10::Error.
  void check() const;
};

/// Prepared CMDTop: weights converted to the compute dtype and reshaped for the GEMMs, im2col index tables
/// on the device. Construct once per level and device; forward() is then free of host work and host syncs.
class CmdTopFast {
 public:
  /// How a convolution layer becomes a GEMM. im2col: gather the [P, C_in*k*k] patches (index table on the
  /// device), then [rows*P, K] x [K, C_out] (the FLOPs of the conv, plus the patch traffic). dense: fold the
  /// SAME padding, stride and (layer 0) both branch layouts into one [L_in, P*C_out] matrix and multiply the
  /// input rows directly (no patches; 2x (small) to 5x (base layer 0) the FLOPs, so it pays on tensor cores).
  /// fused: the whole encoder in one CUDA kernel per call (implicit-GEMM convolutions, GroupNorm and ReLU in
  /// shared memory, no patches or intermediate activations in device memory), where eligible (a CUDA device, the
  /// official layer stacks): for float32 the FMA kernel (gpu/ops/cuda/cmdtop_fused_kernel.cu, plain fp32
  /// arithmetic; 187 KiB base / 214 KiB small of opt-in shared memory per block: compute capability 9.0 and later),
  /// for bfloat16/float16 the tensor-core kernel (gpu/ops/cuda/cmdtop_mma_kernel.cuh: mma.sync with fp32
  /// accumulation, compute capability 8.0 and later, 16-sample tiles where the device has ~175 KiB per block, else
  /// 8); elsewhere fused means automatic.
  /// automatic: for float32 the tensor-core kernel in 3xTF32 (each operand split into a TF32 value and a TF32
  /// remainder, three products: float32-level accuracy, ~2e-6 on O(1-5) outputs; compute capability 8.0 and later
  /// with ~180 KiB of shared memory per block, i.e. 9.0), else the fused FMA kernel where eligible; for bf16/fp16
  /// the tensor-core kernel; otherwise dense on CUDA for bf16/fp16 or the small configuration, im2col otherwise.
  /// Layers whose kernel covers their whole unpadded input (the last 2x2 conv) are always dense in the GEMM paths:
  /// it is a column permutation.
  enum class Convolution { automatic, im2col, dense, fused };
  struct Options {
    at::ScalarType compute_dtype = at::kFloat;  // dtype of the GEMM operands and output (fp32/bf16/fp16)
    int64_t max_samples_per_pass = 4096;        // bounds the CUDA temporaries (im2col patches: 160 MB fp32
                                                // small, 231 MB base); the CPU runs blocks of samples through
                                                // every layer in cache-sized float32 buffers instead
    Convolution convolution = Convolution::automatic;
  };
  CmdTopFast(const CmdTopWeights& weights, c10::Device device, Options options);

  /// corr [..., 7, 7, 7, 7] (axes h, w, i, j as written by local_corr4d; float32/bfloat16/float16, on this
  /// encoder's device), or padded rows [M, kCorrPaddedRow] (columns >= 2401 zero) -> [..., 2 * C_last] ([M,
  /// 2 * C_last] for padded rows) in the compute dtype: [branch 1 (support offsets as channels), branch 2
  /// (target offsets as channels)], i.e. [..., 256] for both official sizes.
  at::Tensor forward(const at::Tensor& corr) const;
  /// Same into out ([M, 2 * C_last], compute dtype, M = the number of correlation rows, unit column stride; any row
  /// stride, e.g. one level's columns of wider rows: the tensor-core kernel writes there directly, the other paths
  /// through a contiguous temporary). overlap_previous: the caller knows that the kernel it launched last on the
  /// current stream neither writes corr nor touches out (e.g. the previous pyramid level's encoder), so the
  /// tensor-core kernel may start beside that kernel's last blocks (a programmatic launch, compute capability 9.0+;
  /// only when corr needs no conversion first; ignored on the other paths).
  void forward_out(const at::Tensor& corr, at::Tensor& out, bool overlap_previous = false) const;

  int64_t output_channels() const { return 2 * last_channels_; }
  /// Whether forward() runs a fused CUDA kernel (Convolution::fused or automatic, where eligible).
  bool fused() const { return fused_; }
  /// Samples per block of the tensor-core kernel (bf16/fp16: 16 or 8; float32 3xTF32: 8); 0 when it does not run
  /// (another path, or the float32 FMA kernel).
  int fused_tile_samples() const { return fused_tile_; }

  struct Layer {
    at::Tensor weight_matrix;  // im2col: [C_out, K], columns in gather_index order; dense: [blocks*C_out, L_in]
    at::Tensor gather_index;   // [columns] int32 on the device; undefined for a dense layer
    at::Tensor conv_bias;      // [C_out] float32
    at::Tensor norm_weight;    // [C_out] float32
    at::Tensor norm_bias;      // [C_out] float32
    int64_t positions = 1;     // output spatial positions
    int64_t channels = 0;      // C_out
    int64_t groups = 1;        // C_out / 16
    int64_t patch_length = 0;  // K
    at::Tensor fused_weight;   // fused FMA kernel: [K rounded up to 16, C_out] fp32, K = (ky, kx, C_in); tensor-core
                               // kernel: the mma B-fragment order (cuda::pack_cmdtop_mma_weight in bf16/fp16,
                               // cuda::pack_cmdtop_tf32_weight for float32); else undefined
    // Geometry (SAME padding: the extra pixel of an odd total goes after) and the CPU kernel's weight.
    int64_t kernel = 0, stride = 1, in_height = 0, in_width = 0, in_channels = 0, pad_top = 0, pad_left = 0;
    int64_t out_width = 0;
    at::Tensor cpu_weight;  // CPU: [C_out, k*k*C_in] float32, columns (ky, kx, ci); else undefined
  };

 private:
  std::vector<Layer> layers_;
  c10::Device device_;
  Options options_;
  int64_t last_channels_ = 0;
  bool fused_ = false;
  int fused_tile_ = 0;
};

/// Convenience: builds a CmdTopFast for corr's device and dtype float32 and runs it (tests, one-off calls).
at::Tensor cmdtop_fast(const at::Tensor& corr, const CmdTopWeights& weights);

// ---------------------------------------------------------------------------------------------------------
// 4. InstanceNorm + ReLU (the backbone's normalisation, stage 1; docs/locotrack-spec.md §4).
//
/// relu(instance_norm(x) * weight + bias): per-sample, per-channel statistics over H x W, biased variance,
/// eps. x [N, C, H, W] float32/bfloat16/float16 (channels-last is the fast layout; others are made so);
/// weight, bias [C] float32 or x's dtype. Returns a new channels-last tensor of x's dtype.
/// CUDA: one fused kernel set (Welford statistics in fp32, one rounding at the store) where
/// cuda::instance_norm_eligible holds (the backbone's 64/128/256 channels), else the reference.
/// CPU: one statistics pass (float64 sums around a per-channel shift) and one normalisation pass (the reference's
/// float arithmetic), AVX-512 where C % 16 == 0 and the processor has it (gpu/ops/cpu/instance_norm_kernel.cpp).
at::Tensor instance_norm_relu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps = 1e-5);
/// A residual addition and the following norm (the residual blocks' sum and the next block's first activation, or a
/// pre-LN transformer's sum and its LayerNorm): sum = x + residual, norm = the norm of the sum as rounded to the dtype.
struct SumAndNorm {
  at::Tensor sum, norm;
};
/// sum = x + residual (x's shape and dtype, as at::add rounds it), norm = instance_norm_relu(sum, weight, bias, eps).
/// residual: x's shape, dtype and device. CUDA (where instance_norm_relu's kernels take x): the statistics kernel
/// reads x and residual and writes the sum, so the sum is read once fewer than by an addition and instance_norm_relu;
/// the results are those of the two, bit for bit. Elsewhere the two ops. Both results channels-last on CUDA.
SumAndNorm add_instance_norm_relu(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                                  const at::Tensor& bias, double eps = 1e-5);
/// The reference on any device, in x's dtype (float64 too): what the eager model computes.
at::Tensor instance_norm_relu_reference(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                        double eps = 1e-5);

// ---------------------------------------------------------------------------------------------------------
// 5. The backbone's feature normalisation (stage 1).
//
/// x / sqrt(max(sum_c x^2, 1e-12)) along the last axis of x [..., C] (the backbone's feature normalisation, on
/// the [N, H, W, C] view of its channels-last output) -> a new contiguous tensor of x's shape and dtype.
/// CPU (float32/bfloat16, C % 16 == 0 with AVX-512): one read and one write, the sum in float32 like the reference
/// (another summation order). CUDA (float32/bfloat16/float16, C a power-of-two number of 16-byte vectors up to 128,
/// e.g. the backbone's 64/128/256): one kernel, one read and one write, the sum in float32 (the 16-bit reference rounds
/// its squares and their sum to 16 bits). Elsewhere the reference ops (gpu/model's l2_normalise_channels).
at::Tensor l2_normalise_channels(const at::Tensor& x);
/// The same written into out (contiguous, x's shape and dtype, on x's device; e.g. a slice of a feature grid).
void l2_normalise_channels_out(const at::Tensor& x, at::Tensor& out);

// ---------------------------------------------------------------------------------------------------------
// 6-7. Glue: the short op sequences between the large stages, as one CUDA kernel each.
//
/// Which implementation computes a glue op:
///   composite: the ATen op sequence (tens of small launches on CUDA); the CPU's implementation and the reference.
///   automatic: on CUDA the op's kernel (the composite's operations in its order, each rounded on its own: the same
///     values); on the CPU the composite.
enum class GluePath { automatic, composite };

// 6. The query supports of one pyramid level (stage 3 in bf16/fp16: the query features).
//
/// grid [T, H, W, C]: one level's feature grid, channels last (channel stride 1, other strides free), float32,
///   bfloat16 or float16. queries_tyx [n, 3] float32: (t, y, x) with y, x in 256-space, on the grid's device.
/// supports [n, 7, 7, C] contiguous, the grid's dtype, on its device: supports[q, i, j, :] is the bilinear sample
///   with border padding (grid_sample, align_corners=False) of frame round_half_even(t) (clamped into the clip) at
///   cell offsets (i - 3, j - 3) around (y H/256, x W/256), computed in float32 and rounded once into the dtype.
/// Non-finite coordinates: the composite raises (it cannot index with them), the CUDA kernel samples cell 0.
/// The model's fp32 path (grid_sample in float32) differs from this by float rounding only (a few ulps).
/// composite: corner gathers and float32 weights (~40 launches per call on CUDA), in blocks of 1,024 queries. The
/// CUDA kernel (ops/cuda/query_supports_kernel.cuh): a thread per 16-byte vector of one support point; bit-identical.
void sample_query_supports_out(const at::Tensor& grid, const at::Tensor& queries_tyx, at::Tensor& supports,
                               GluePath path = GluePath::automatic);
at::Tensor sample_query_supports(const at::Tensor& grid, const at::Tensor& queries_tyx,
                                 GluePath path = GluePath::automatic);

// 7. The temporal mixer's input rows (stage 5 step 4).
//
/// out [n, T, W] (W >= 854, contiguous, float32, bfloat16 or float16) = per (query, frame) [occlusion, expected,
///   encoded (768), relative motion (84), zeros (W - 854)], each value rounded once into out's dtype (the layout is
///   ops/cuda/mixer_input_layout.h's). The relative motion (docs/locotrack-spec.md §2.5): u = [(p_t - p_{t+1}),
///   (p_t - p_{t-1})] / 256 for the x, y of tracks (0 past either end of the clip), then sin(u 2^s) and
///   sin(u 2^s + pi/2) for s = 0..9 (s-major: index 4 s + c).
/// occlusion, expected [n, T] float32; encoded [n, T, 768] of out's dtype (unit column stride); tracks [n, T, 2]
///   float32 (x, y in 256-space); all on out's device.
/// composite: the motion differences, pad, scale, sine arguments, sin and concatenations (~20 launches on CUDA);
/// the CUDA kernel (ops/cuda/mixer_input_kernel.cuh): a block per (query, frame) row, the same values up to the
/// sine's last place between math libraries.
/// The 84 relative-motion values of tracks [..., T, 2] float32 (x, y in 256-space) -> [..., T, 84] float32: the
/// composite above (u, then the sines in their s-major order), which gpu/model's apply_mixer uses too.
at::Tensor relative_motion_encoding(const at::Tensor& tracks);
void mixer_input_rows_out(const at::Tensor& occlusion, const at::Tensor& expected, const at::Tensor& encoded,
                          const at::Tensor& tracks, at::Tensor& out, GluePath path = GluePath::automatic);

// 8. The temporal mixer's residual adds and LayerNorms (stage 5).
//
/// LayerNorm over the last dimension (biased variance, eps): x [..., W] float32/bfloat16/float16; weight, bias [W]
/// of x's dtype on its device -> [..., W] contiguous.
/// composite: at::layer_norm. The CUDA kernel (ops/cuda/layer_norm_kernel.cuh; W whole 16-byte vectors, at most 128
/// of them: the mixer's 256 and 384; contiguous, 16-byte aligned data, else the composite): a warp per row, the
/// statistics in float32 (two passes over registers; ATen's Welford gives another summation order), one rounding.
at::Tensor layer_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps,
                      GluePath path = GluePath::automatic);
/// The pre-LN transformer's residual step: sum = x + residual (x's shape and dtype), norm = layer_norm(sum, ...),
/// the LayerNorm reading the sum as rounded to the dtype (the composite's add, then its LayerNorm). On CUDA one
/// kernel reads x and residual once and writes both (where layer_norm's kernel is eligible).
SumAndNorm add_layer_norm(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                          const at::Tensor& bias, double eps, GluePath path = GluePath::automatic);
/// The state a refinement iteration hands on: tracks [S, T, 2], occlusion and expected_dist logits [S, T], float32.
struct MixerState {
  at::Tensor tracks, occlusion, expected_dist;
};
/// next = previous + update in float32 as the model applies the mixer's output: tracks + update[..., 0:2], occlusion
/// + update[..., 2], expected_dist + update[..., 3]; update [S, T, >=4] float32.
MixerState apply_mixer_update(const at::Tensor& update, const MixerState& previous);
/// The mixer's last step and the state update, as the module computes them: norm = add_layer_norm(x, residual,
/// weight, bias, eps).norm, update = linear(norm, head_weight, head_bias) in x's dtype (head_weight [4, W], head_bias
/// [4]: the output projection's rows for the two position deltas and the two logit deltas), then, in float32,
/// next.tracks = previous.tracks + update[..., 0:2], next.occlusion = previous.occlusion + update[..., 2],
/// next.expected_dist = previous.expected_dist + update[..., 3]. x, residual [S, T, W]; previous float32 of the
/// shapes above on x's device. On CUDA (automatic path, where layer_norm's kernel takes the rows and head_weight is
/// 16-byte aligned) one kernel: neither the sum nor the norm is written, and the head's products are summed in
/// float32 in another order than the GEMM's (the update may differ by a rounding of x's dtype). Else the composite:
/// add_layer_norm, at::linear, the conversion and the three additions.
MixerState add_layer_norm_head(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                               const at::Tensor& bias, double eps, const at::Tensor& head_weight,
                               const at::Tensor& head_bias, const MixerState& previous,
                               GluePath path = GluePath::automatic);

/// The ALiBi slopes of the mixer's split-direction attention (docs/locotrack-spec.md §2.5): [heads] float32 on
/// `device`, the forward heads' heads/2 slopes 1 / 24^(i / (heads/2)), i = 1.., then the same for the backward heads,
/// in double on the device, rounded once. The one definition: gpu/model's alibi_bias and MixerFast take theirs from it.
at::Tensor alibi_slopes(int64_t heads, c10::Device device);
/// The mixer's multi-head attention with the split-direction ALiBi bias (forward heads attend to frames j <= i with
/// bias slope * (j - i), backward heads to j >= i with slope * (i - j); scale 1/8) from the QKV projection's rows:
/// qkv [S, T, 3 * heads * 64] (q | k | v, head h at columns h * 64 of each; bfloat16/float16/float32, contiguous,
/// CUDA), slopes from alibi_slopes -> the attended values [S * T, heads * 64] of qkv's dtype (at::linear reads them as
/// they are: contiguous, or rows cuda::mixer_padded_k(heads * 64) elements apart). Unlike the module's
/// scaled_dot_product_attention with the bias as a tensor, it skips the keys the mask hides: in bfloat16/float16 on
/// compute capability 8.0+ the tensor-core kernel (gpu/ops/cuda/attention_mma_kernel.cuh: scores and output accumulated
/// in float32, online softmax in float32, the probabilities rounded to the dtype for the second product), elsewhere the
/// fused mixer's SIMT kernel (a thread per query row, float32 throughout). CUDA builds only; c10::Error elsewhere.
at::Tensor alibi_attention(const at::Tensor& qkv, const at::Tensor& slopes);

// 9. The temporal mixer's first MLP layer and its GELU (stage 5).
//
/// How GELU follows the MLP's first linear layer (dense.0):
///   exact: the linear layer, then the exact (erf) GELU as a pass of its own over the [rows, 4D] activations: the
///     official model's function.
///   fused_tanh: the tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), within 4.8e-4 of the exact
///     function for every x (the largest gap near x = -2.7), below half a float16 ulp for |gelu(x)| >= 1. On CUDA
///     one GEMM applies it in its epilogue (at::_addmm_activation: cuBLASLt's GELU_BIAS epilogue), which saves that
///     pass (reading and writing 4D values per row); elsewhere the linear layer, then at::gelu(..., "tanh"). For
///     reduced-precision fast mode.
enum class MlpGelu { exact, fused_tanh };
/// gelu(x weight^T + bias) in the form `form`: x [..., K] (float32/bfloat16/float16), weight [N, K], bias [N] of x's
/// dtype on its device -> [..., N] contiguous.
at::Tensor linear_gelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, MlpGelu form);

/// input x weight^T + bias: input [..., K] (float32/bfloat16/float16), weight [N, K], bias [N] or undefined (the
/// input's dtype) -> [..., N] contiguous. CPU float32: one GEMM through the CPU kernels' sgemm (oneDNN: AVX-512 where
/// Debian's OpenBLAS runs AVX2 kernels, gpu/ops/cpu/cpu_support.h) with the bias added in its output; elsewhere
/// at::linear.
at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias);

}  // namespace trackscope::gpu::ops
