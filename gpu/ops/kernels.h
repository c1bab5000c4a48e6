#pragma once
// Internal: the per-device kernels behind gpu/ops/ops.h. The op files (gpu/ops/<op>.cpp) validate every
// argument (shapes, dtypes, devices, contiguity as stated) and then call exactly one of these; the kernels
// only assert what they rely on. CPU versions live in gpu/ops/cpu/, CUDA wrappers in
// gpu/ops/cuda/cuda_wrappers.cpp (compiled only when TRACKSCOPE_WITH_CUDA_OPS is defined).

#include <ATen/core/Tensor.h>

#include <string>

#include "gpu/ops/cuda/mixer_layout.h"
#include "gpu/ops/ops.h"

namespace trackscope::gpu::ops::detail {

// features [T,H,W,C] (channel stride 1), points [n,T,2] fp32 contiguous, supports [n,49,C] contiguous (same
// dtype as features), corr contiguous, fp32 or the features' dtype, [n,T,49,49] or padded rows [n,T,R > 2401]
// (columns >= 2401 written as zeros).
void local_corr4d_cpu(const at::Tensor& features, const at::Tensor& points, const at::Tensor& supports,
                      at::Tensor& corr);

// cost_lowres [n,T,Hl,Wl], cost_hires [n,T,Hh,Wh] contiguous (same dtype); conv_weight [18] fp32 contiguous;
// conv_bias [1] fp32; query_frames [n] fp32; query_xy [n,2] fp32 contiguous; points [n,T,2], stats [n,T,6]
// fp32 contiguous.
void init_planes_cpu(const at::Tensor& cost_lowres, const at::Tensor& cost_hires, const at::Tensor& conv_weight,
                     const at::Tensor& conv_bias, const at::Tensor& query_frames, const at::Tensor& query_xy,
                     at::Tensor& points, at::Tensor& stats);

// CmdTopFast's forward on the CPU: input [M, L] correlation rows (row stride input.stride(0), column stride 1;
// fp32/bf16/fp16), the prepared layers (cpu_weight, conv_bias, norm_weight, norm_bias: CPU float32) -> out
// [M, 2 * C_last] contiguous in the compute dtype.
void cmdtop_forward_cpu(const at::Tensor& input, const std::vector<CmdTopFast::Layer>& layers, double eps,
                        at::Tensor& out);

// x [N,C,H,W] channels-last contiguous (fp32/bf16/fp16), weight/bias [C] fp32 contiguous -> y (same shape and
// layout, x's dtype): relu(instance_norm(x) * weight + bias).
void instance_norm_relu_cpu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps,
                            at::Tensor& y);

// x [..., C] contiguous fp32/bf16 -> out (same shape, contiguous): x / sqrt(max(sum_c x^2, 1e-12)).
void l2_normalise_channels_cpu(const at::Tensor& x, at::Tensor& out);

#ifdef TRACKSCOPE_WITH_CUDA_OPS
/// overlap_previous: launch_local_corr4d_mma_pipelined's (the other kernels launch plainly).
void local_corr4d_cuda(const at::Tensor& features, const at::Tensor& points, const at::Tensor& supports,
                       at::Tensor& corr, CorrKernel kernel, bool overlap_previous = false);
void init_planes_cuda(const at::Tensor& cost_lowres, const at::Tensor& cost_hires, const at::Tensor& conv_weight,
                      const at::Tensor& conv_bias, const at::Tensor& query_frames, const at::Tensor& query_xy,
                      at::Tensor& points, at::Tensor& stats);
// grid [T,H,W,C] (channel stride 1), queries_tyx [n,3] fp32 contiguous, supports [n,7,7,C] contiguous (grid's dtype).
void query_supports_cuda(const at::Tensor& grid, const at::Tensor& queries_tyx, at::Tensor& supports);
// occlusion, expected [n,T] fp32 contiguous, encoded [n,T,768] (unit column stride, out's dtype), tracks [n,T,2] fp32
// contiguous, out [n,T,>=854] contiguous.
void mixer_input_cuda(const at::Tensor& occlusion, const at::Tensor& expected, const at::Tensor& encoded,
                      const at::Tensor& tracks, at::Tensor& out);
/// norm = LayerNorm(x) over the last dimension, or with residual defined: sum = x + residual, norm =
/// LayerNorm(sum). x, residual, weight, bias contiguous of one dtype, sum and norm contiguous like x. Returns false
/// (nothing written) where the kernel is not eligible (launchers.h layer_norm_eligible, 16-byte alignment).
bool layer_norm_cuda(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight, const at::Tensor& bias,
                     double eps, at::Tensor& sum, at::Tensor& norm);
/// The mixer's head (ops.h add_layer_norm_head): x, residual, weight, bias as layer_norm_cuda's residual form,
/// head_weight [4, W], head_bias [4] of x's dtype, all contiguous; previous and next tracks [.., 2], occlusion and
/// expected_dist float32 contiguous with x's rows. Returns false (nothing written) where the kernel is not eligible.
bool layer_norm_head_cuda(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                          const at::Tensor& bias, double eps, const at::Tensor& head_weight,
                          const at::Tensor& head_bias, const at::Tensor& tracks, const at::Tensor& occlusion,
                          const at::Tensor& expected_dist, at::Tensor& next_tracks, at::Tensor& next_occlusion,
                          at::Tensor& next_expected_dist);
/// x, out [..., C] contiguous (same dtype): out = x / sqrt(max(sum_c x^2, 1e-12)) in one pass. Returns false
/// (nothing written) where the kernel is not eligible (launchers.h l2_normalise_eligible).
bool l2_normalise_channels_cuda(const at::Tensor& x, at::Tensor& out);
void gather_columns_cuda(const at::Tensor& input, const at::Tensor& index, at::Tensor& output);
void bias_group_norm_relu_cuda(at::Tensor& x, const at::Tensor& bias, const at::Tensor& gamma, const at::Tensor& beta,
                               int64_t groups, double eps);
/// Whether the fused float32 CMDTop kernel fits the device (opt-in shared memory per block).
bool cmdtop_fused_eligible_cuda(c10::Device device, bool base);
/// conv_weight [C_out, C_in, k, k] -> the fused kernel's [K_padded, C_out] float32 weight on device (K = (ky, kx,
/// C_in), zero rows up to the kernel's K chunk): CmdTopFast::Layer::fused_weight.
at::Tensor cmdtop_fused_weight_cuda(const at::Tensor& conv_weight, c10::Device device);
/// The fused float32 CMDTop: corr [M, row_stride >= 2401] fp32 with unit column stride -> out [M, 256] fp32
/// contiguous, with the layers' fused_weight, conv_bias, norm_weight and norm_bias (2 layers small, 3 base).
void cmdtop_fused_cuda(const at::Tensor& corr, const std::vector<CmdTopFast::Layer>& layers, double eps,
                       at::Tensor& out);
/// The tile (samples per block) of the tensor-core CMDTop kernel for dtype on this device, 0 when not eligible
/// (compute capability < 8.0, too little shared memory). bf16/fp16: 8, else 16 where only that fits
/// (TRACKSCOPE_CMDTOP_MMA_TILE=8 or 16 in the environment overrides the choice where it fits: tuning); float32
/// (3xTF32): 8.
int cmdtop_mma_tile_cuda(c10::Device device, bool base, at::ScalarType dtype);
/// conv_weight [C_out, C_in, k, k] of a layer with an in_side x in_side input and this stride -> the tensor-core
/// kernel's weight in mma B-fragment order on device: cuda::pack_cmdtop_mma_weight in dtype for bf16/fp16,
/// cuda::pack_cmdtop_tf32_weight (float32) for float32 (one B operand per output position where the layer skips its
/// padding taps: cuda::cmdtop_mma_skips_padding). CmdTopFast::Layer::fused_weight.
at::Tensor cmdtop_mma_weight_cuda(const at::Tensor& conv_weight, int64_t in_side, int64_t stride, at::ScalarType dtype,
                                  c10::Device device);
/// The tensor-core CMDTop: corr [M, row_stride >= 2401] bf16/fp16/float32 with unit column stride -> out [M, 256] of
/// the same dtype (unit column stride, an even row stride >= 256), with the layers' fused_weight
/// (cmdtop_mma_weight_cuda), conv_bias, norm_weight and norm_bias; tile from cmdtop_mma_tile_cuda.
/// overlap_previous: launch_cmdtop_mma's (programmatic launch beside the previous kernel; compute capability 9.0+,
/// ignored below).
void cmdtop_mma_cuda(const at::Tensor& corr, const std::vector<CmdTopFast::Layer>& layers, int tile, double eps,
                     at::Tensor& out, bool overlap_previous = false);
/// Returns false (nothing written) when the fused kernel is not eligible for these tensors. x, y (and residual, sum
/// when residual is defined: sum = x + residual in the same pass) channels-last of one shape and dtype.
bool instance_norm_relu_cuda(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                             const at::Tensor& bias, double eps, at::Tensor& sum, at::Tensor& y);
bool cuda_device_present(std::string& status);
/// major * 10 + minor of a CUDA device (device.index() < 0: the current device).
int cuda_compute_capability(c10::Device device);
// The fused mixer's kernels (gpu/ops/mixer_fast.h; launchers.h). x [rows, k] (unit column stride, any row stride)
// -> y [rows, blocks * mixer_padded_k(k)] (unit column stride) of x's dtype; split3 needs float32. gamma, beta: [k]
// float32 for layer_norm, else null.
void mixer_rows_cuda(const at::Tensor& x, cuda::MixerRowOp op, const at::Tensor* gamma, const at::Tensor* beta,
                     double eps, bool split3, at::Tensor& y);
/// qkv [sequences * frames, 3 * heads * 64] -> out [sequences * frames, blocks * mixer_padded_k(heads * 64)];
/// slopes [heads] float32.
void mixer_attention_cuda(const at::Tensor& qkv, int64_t sequences, int64_t frames, int64_t heads,
                          const at::Tensor& slopes, bool split3, at::Tensor& out);
/// The same attention on tensor cores into plain rows: qkv [sequences * frames, 3 * heads * 64] bfloat16/float16 ->
/// out [sequences * frames, heads * 64]. false (nothing launched) where it does not run: float32, compute capability
/// below 8.0, rows not 16-byte multiples.
bool mixer_attention_mma_cuda(const at::Tensor& qkv, int64_t sequences, int64_t frames, int64_t heads,
                              const at::Tensor& slopes, at::Tensor& out);
/// x [rows, k] -> out [rows, 4] float32 (contiguous): LayerNorm(gamma, beta, eps), then weight [4, k] and bias [4].
void mixer_head_cuda(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, const at::Tensor& weight,
                     const at::Tensor& bias, double eps, at::Tensor& out);
/// c [R, N] (+)= a [R, K] w [N, K]^T on TF32 tensor cores (cuBLAS, CUBLAS_COMPUTE_32F_FAST_TF32), float32 operands that
/// are exact TF32 values (mixer_layout.h's split3 form); unit column strides.
void mixer_gemm_tf32x3_cuda(const at::Tensor& a, const at::Tensor& w, at::Tensor& c, bool accumulate);
#endif

/// Throws the standard "this build has no CUDA kernels" error for op when t is a CUDA tensor and the
/// kernels are not compiled in; returns true when t should go to the CUDA kernels.
bool use_cuda(const at::Tensor& t, const char* op);

}  // namespace trackscope::gpu::ops::detail
