#pragma once
// Raw-pointer launchers of Trackscope's CUDA kernels. Torch-free on purpose: nvcc compiles the .cu files
// without ATen headers (31-71 s each otherwise, docs/architecture.md §5); gpu/ops/cuda/cuda_wrappers.cpp validates the
// tensors and calls these with data pointers, sizes, strides and the current stream.
//
// Contract for every launcher: all pointers are device pointers of the current device, the caller has
// validated shapes and strides, nothing is synchronised, and the return value is cudaGetLastError() right
// after the launch (cudaSuccess when there was nothing to do). Element types are given at run time.

#include <cstdint>

#include <cuda_runtime_api.h>

#include "core/tracking/locotrack_shape.h"
#include "gpu/ops/cuda/init_layout.h"
#include "gpu/ops/cuda/mixer_input_layout.h"
#include "gpu/ops/cuda/mixer_layout.h"
#include "gpu/ops/cuda/query_supports_layout.h"

namespace trackscope::gpu::ops::cuda {

/// Whether `pointer` is a multiple of `bytes` (the launchers' eligibility for vector loads and stores).
inline bool is_aligned(const void* pointer, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(pointer) % bytes == 0;
}

enum class ElementType : int { float32 = 0, bfloat16 = 1, float16 = 2 };

// -- local_corr4d ----------------------------------------------------------------------------------------
// features [frames, height, width, channels] with the given element strides (channel stride 1),
// points [queries, frames, 2] fp32 contiguous (x, y in grid cells), supports [queries, 49, channels]
// contiguous, corr [queries, frames, corr_row_pitch] contiguous with the 49x49 values first in each row and
// zeros written to the rest (corr_row_pitch >= 2401), float32 or element_type (fp32 accumulation either way).
// features and supports share element_type.
struct LocalCorr4dShape {
  int64_t queries = 0;
  int64_t frames = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
  int64_t stride_frame = 0;
  int64_t stride_row = 0;
  int64_t stride_column = 0;
  int64_t corr_row_pitch = core::locotrack::kCorrPerSample;
};
cudaError_t launch_local_corr4d(const LocalCorr4dShape& shape, ElementType element_type, const void* features,
                                const float* points, const void* supports, void* corr, ElementType corr_type,
                                cudaStream_t stream);

// The tensor-core variant (local_corr4d_mma_kernel.cu), same contract; eligible for bf16 (compute capability
// >= 80) or fp16 (>= 70) features with channels % 64 == 0, strides multiples of 8 elements and 16-byte aligned
// features and supports.
bool local_corr4d_mma_eligible(const LocalCorr4dShape& shape, ElementType element_type, const void* features,
                               const void* supports, int compute_capability);
cudaError_t launch_local_corr4d_mma(const LocalCorr4dShape& shape, ElementType element_type, const void* features,
                                    const float* points, const void* supports, void* corr, ElementType corr_type,
                                    cudaStream_t stream);

// The pipelined mma.sync variant (local_corr4d_mma_pipelined_kernel.cu), same contract: float32 features as 3xTF32
// (float32-level accuracy; float32 corr only; channels % 16 == 0) or bf16/fp16 features on m16n8k16 (float32 or
// element_type corr; channels % 32 == 0); strides multiples of 16 bytes, 16-byte aligned features and supports,
// compute capability >= 80. overlap_previous: as launch_cmdtop_mma's.
bool local_corr4d_mma_pipelined_eligible(const LocalCorr4dShape& shape, ElementType element_type, ElementType corr_type,
                                         const void* features, const void* supports, int compute_capability);
cudaError_t launch_local_corr4d_mma_pipelined(const LocalCorr4dShape& shape, ElementType element_type,
                                              const void* features, const float* points, const void* supports,
                                              void* corr, ElementType corr_type, bool overlap_previous,
                                              cudaStream_t stream);

// The pipelined SIMT variant for float32 (local_corr4d_pipelined_kernel.cu), same contract with float32 corr;
// eligible for float32 features with channels % 32 == 0, strides multiples of 4 elements, 16-byte aligned
// features and supports, compute capability >= 80 and at least its shared memory as the opt-in limit.
bool local_corr4d_pipelined_eligible(const LocalCorr4dShape& shape, ElementType element_type, const void* features,
                                     const void* supports, int compute_capability, int64_t shared_bytes_optin);
cudaError_t launch_local_corr4d_pipelined(const LocalCorr4dShape& shape, const float* features, const float* points,
                                          const float* supports, void* corr, cudaStream_t stream);

// -- query supports (query_supports_kernel.cu) --------------------------------------------------------------
// The 7x7 bilinear border-padded supports of one pyramid level around each query (SupportShape in
// query_supports_layout.h, with support_vector_elements for its vector width; grid and supports of element_type;
// ops.h sample_query_supports has the semantics).
cudaError_t launch_query_supports(const SupportShape& shape, ElementType element_type, const void* grid,
                                  const float* queries, void* supports, cudaStream_t stream);

// -- the backbone's L2 normalisation (l2_normalise_kernel.cu) ------------------------------------------------------
// x, y [pixels, channels] contiguous, element_type (ops.h l2_normalise_channels): y = x / sqrt(max(sum_c x^2, 1e-12)),
// the sum in float32. Eligible where the channels are a power-of-two number of 16-byte vectors (at most 128) and
// both pointers are 16-byte aligned; the launcher returns cudaErrorInvalidValue otherwise.
bool l2_normalise_eligible(int64_t channels, ElementType element_type, const void* x, const void* y);
cudaError_t launch_l2_normalise(int64_t pixels, int64_t channels, ElementType element_type, const void* x, void* y,
                                cudaStream_t stream);

// -- the mixer's residual add + LayerNorm (layer_norm_kernel.cu) ---------------------------------------------------
// x, residual, sum, norm [rows, width] contiguous, weight and bias [width], all of element_type and 16-byte aligned
// (ops.h add_layer_norm): sum = x + residual rounded, norm = LayerNorm(sum) over width; residual and sum both null
// for norm = LayerNorm(x). Eligible: widths of whole 16-byte vectors, at most 128 of them, every pointer 16-byte
// aligned, residual and sum both given or both null.
bool layer_norm_eligible(int64_t width, ElementType element_type, const void* x, const void* residual,
                         const void* weight, const void* bias, const void* sum, const void* norm);
cudaError_t launch_layer_norm(int64_t rows, int64_t width, float eps, ElementType element_type, const void* x,
                              const void* residual, const void* weight, const void* bias, void* sum, void* norm,
                              cudaStream_t stream);
// The mixer's last residual add + LayerNorm with its 4-output head and the state update (ops.h
// add_layer_norm_head): x, residual [rows, width], weight, bias [width], head_weight [4, width], head_bias [4] of
// element_type; previous_* and next_* float32 tracks [rows, 2], occlusion and expected_dist [rows]. Eligible as
// layer_norm with a residual, head_weight 16-byte aligned.
bool layer_norm_head_eligible(int64_t width, ElementType element_type, const void* x, const void* residual,
                              const void* weight, const void* bias, const void* head_weight);
cudaError_t launch_layer_norm_head(int64_t rows, int64_t width, float eps, ElementType element_type, const void* x,
                                   const void* residual, const void* weight, const void* bias, const void* head_weight,
                                   const void* head_bias, const float* previous_tracks, const float* previous_occlusion,
                                   const float* previous_expected_dist, float* next_tracks, float* next_occlusion,
                                   float* next_expected_dist, cudaStream_t stream);

// -- the mixer's input rows (mixer_input_kernel.cu) ---------------------------------------------------------------
// MixerInputShape and the column layout in mixer_input_layout.h; encoded and out of element_type; ops.h
// mixer_input_rows has the semantics.
cudaError_t launch_mixer_input(const MixerInputShape& shape, ElementType element_type, const float* occlusion,
                               const float* expected, const void* encoded, const float* tracks, void* out,
                               cudaStream_t stream);

// -- init_from_cost_volume (fused per-plane part) ----------------------------------------------------------
// cost_low [queries, frames, low_height, low_width] and cost_high [queries, frames, high_height, high_width],
// both contiguous and of element_type; conv_weight [18] = [1,2,3,3] fp32; conv_bias [1] fp32;
// query_frames [queries] fp32; query_xy [queries, 2] fp32 (256-space); points [queries, frames, 2] and
// stats [queries, frames, 6] fp32 contiguous. InitShape and kInitMaxHighCells: init_layout.h.
/// Dynamic shared memory the init kernel needs for this shape (the wrapper checks it against the device).
int64_t init_shared_bytes(const InitShape& shape);
cudaError_t launch_init_from_cost_volume(const InitShape& shape, ElementType cost_type, const void* cost_low,
                                         const void* cost_high, const float* conv_weight, const float* conv_bias,
                                         const float* query_frames, const float* query_xy, float* points, float* stats,
                                         cudaStream_t stream);

// -- CMDTop building blocks ---------------------------------------------------------------------------------
// output[r, j] = index[j] >= 0 ? input[r * input_row_stride + index[j]] : 0, converted to output_type.
// input [rows, >= max(index)+1] of input_type, index [columns] int32 (-1 = zero padding), output
// [rows, columns] contiguous.
cudaError_t launch_gather_columns(const void* input, ElementType input_type, int64_t rows, int64_t input_row_stride,
                                  const int32_t* index, int64_t columns, void* output, ElementType output_type,
                                  cudaStream_t stream);

// In place on x [rows, positions, channels] (contiguous, element_type):
// x = relu(group_norm(x + bias[channel]; groups over (channels/groups channels x positions), eps) * gamma + beta).
// bias, gamma, beta: [channels] fp32. channels % groups == 0.
cudaError_t launch_bias_group_norm_relu(void* x, ElementType element_type, int64_t rows, int64_t positions,
                                        int64_t channels, int64_t groups, const float* bias, const float* gamma,
                                        const float* beta, float eps, cudaStream_t stream);

// -- CMDTop fused, float32 (cmdtop_fused_kernel.cu) --------------------------------------------------------
// The whole encoder of one level, both branches, in one launch: corr rows [samples, row_stride] fp32 (the
// first 2401 values of a row are the [h, w, i, j] correlation; row_stride >= 2401) -> out [samples, 2 * 128]
// fp32 contiguous, 16-byte aligned ([branch 1, branch 2] per row, as CmdTopFast). Layer i's weight is
// [K_padded, C_out] fp32 with K = (ky * k + kx) * C_in + c_in (the conv weight permuted to [ky][kx][C_in]
// [C_out]) and zero rows up to K_padded = K rounded up to kCmdTopFusedKChunk; bias, gamma, beta [C_out] fp32;
// weight and bias 16-byte aligned. small: 2 layers (5x5 s4 -> 64, 2x2 s2 -> 128); base: 3 (3x3 s2 -> 64,
// 3x3 s2 -> 128, 2x2 s2 -> 128). Needs cmdtop_fused_shared_bytes(shape) of opt-in shared memory per block.
inline constexpr int kCmdTopFusedKChunk = 16;
enum class CmdTopFusedShape : int { small = 0, base = 1 };
struct CmdTopFusedLayer {
  const float* weight = nullptr;
  const float* bias = nullptr;
  const float* gamma = nullptr;
  const float* beta = nullptr;
};
int64_t cmdtop_fused_shared_bytes(CmdTopFusedShape shape);
cudaError_t launch_cmdtop_fused(CmdTopFusedShape shape, const float* corr, int64_t samples, int64_t row_stride,
                                const CmdTopFusedLayer* layers, int layer_count, float eps, float* out,
                                cudaStream_t stream);

// -- CMDTop fused on tensor cores (cmdtop_mma_kernel.cu) ------------------------------------------------------
// The whole encoder of one level in one launch, as launch_cmdtop_fused, on mma.sync tensor cores with fp32
// accumulation: element_type bfloat16 / float16 (16-bit operands) or float32 (3xTF32: float32-level accuracy).
// corr rows [samples, row_stride] of element_type (row_stride >= 2401; rows of 2408 elements or more, a multiple of
// 16 bytes, 16-byte aligned, take 16-byte loads) -> out [samples, 256] of element_type with rows out_row_stride
// elements apart (>= 256, even; e.g. one level's columns of the engine's [samples, 768] rows), aligned to two
// elements. Layer i's weight: 16-bit, pack_cmdtop_mma_weight's order (cmdtop_mma_layout.h) converted to
// element_type; float32, pack_cmdtop_tf32_weight's; 16-byte aligned. bias, gamma, beta [C_out] fp32. tile_samples
// (samples per block): 16 or 8 for 16-bit, 8 for float32. Needs cmdtop_mma_shared_bytes(...) of opt-in shared
// memory per block and compute capability 8.0 or later. overlap_previous: launch_kernel's (programmatic_launch.cuh:
// the blocks may start beside the previous kernel's last ones; compute capability 9.0+).
struct CmdTopMmaLayer {
  const void* weight = nullptr;
  const float* bias = nullptr;
  const float* gamma = nullptr;
  const float* beta = nullptr;
};
/// -1 for a tile size the kernel does not have for this element type.
int64_t cmdtop_mma_shared_bytes(CmdTopFusedShape shape, ElementType element_type, int tile_samples);
cudaError_t launch_cmdtop_mma(CmdTopFusedShape shape, ElementType element_type, int tile_samples, const void* corr,
                              int64_t samples, int64_t row_stride, const CmdTopMmaLayer* layers, int layer_count,
                              float eps, void* out, int64_t out_row_stride, bool overlap_previous, cudaStream_t stream);

// -- the fused temporal mixer (mixer_kernels.cu; operand layout and parameters in mixer_layout.h) -------------------
// Rows: y = op(x) per row (copy, LayerNorm with gamma/beta, exact GELU) written as a GEMM operand row of kp =
// mixer_padded_k(k) elements per block: plain (element_type storage) or, for float32 with split3, the three 3xTF32
// blocks. Attention: the split-direction ALiBi attention of every (sequence, head) from qkv rows [q | k | v] into
// operand rows of kp = mixer_padded_k(heads * 64). Head: final LayerNorm + the 4 used outputs of output_proj, float32.
// element_type is both the input's and the output's; split3 needs float32.
cudaError_t launch_mixer_rows(ElementType element_type, bool split3, MixerRowOp op, const MixerRowsParams& params,
                              cudaStream_t stream);
cudaError_t launch_mixer_attention(ElementType element_type, bool split3, const MixerAttentionParams& params,
                                   cudaStream_t stream);
// The attention on tensor cores (attention_mma_kernel.cuh; bfloat16/float16, compute capability 8.0+): qkv rows with a
// stride that is a multiple of 8 elements, 16-byte aligned -> plain attended rows (out_stride even, 4-byte aligned).
cudaError_t launch_mixer_attention_mma(ElementType element_type, const MixerAttentionMmaParams& params,
                                       cudaStream_t stream);
cudaError_t launch_mixer_head(ElementType element_type, const MixerHeadParams& params, cudaStream_t stream);

// -- instance_norm_relu ------------------------------------------------------------------------------------
// y = relu((x - mean) / sqrt(var + eps) * weight + bias) with mean/var per (sample, channel) over positions;
// x and y [samples, positions, channels] contiguous of element_type (y may not alias x); weight, bias
// [channels] of weight_type. workspace: instance_norm_workspace_bytes(shape) bytes (device, 8-byte aligned).
// With a residual (residual and sum both set, x's shape and type, neither aliasing x, y or each other): the input is
// x + residual rounded to element_type (as at::add), stored to sum in the same pass (ops.h add_instance_norm_relu).
struct InstanceNormShape {
  int64_t samples = 0;
  int64_t positions = 0;
  int64_t channels = 0;
};
/// channels whole 16-byte vectors (8 elements in 16-bit, 4 in fp32), a power-of-two number of them up to 256 (the
/// backbone's 64/128/256 in every dtype), x and y (and residual and sum, both null or both set) 16-byte aligned,
/// samples <= 65535, positions <= 2^24 (counted in float).
bool instance_norm_eligible(const InstanceNormShape& shape, ElementType element_type, const void* x,
                            const void* residual, const void* sum, const void* y);
int64_t instance_norm_splits(const InstanceNormShape& shape, ElementType element_type);
inline int64_t instance_norm_workspace_bytes(const InstanceNormShape& shape, ElementType element_type) {
  // Partial moments and scale/shift (8 bytes per (sample, split or 1, channel)), then one ticket per sample.
  return (shape.samples * instance_norm_splits(shape, element_type) * shape.channels + shape.samples * shape.channels) *
             8 +
         shape.samples * 4;
}
cudaError_t launch_instance_norm_relu(const InstanceNormShape& shape, ElementType element_type, const void* x,
                                      const void* residual, ElementType weight_type, const void* weight,
                                      const void* bias, float eps, void* workspace, void* sum, void* y,
                                      cudaStream_t stream);

}  // namespace trackscope::gpu::ops::cuda
