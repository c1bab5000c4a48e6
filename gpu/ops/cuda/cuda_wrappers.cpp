// Torch-side wrappers of the CUDA launchers (the only torch translation unit that sees CUDA headers):
// device guard, current stream, the checks the kernels rely on, and the launch-error check. Compiled only
// when TRACKSCOPE_WITH_CUDA is on and LibTorch has CUDA (TRACKSCOPE_WITH_CUDA_OPS).
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/util/Exception.h>
#include <cublas_v2.h>

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "core/tracking/locotrack_shape.h"
#include "gpu/ops/cuda/cmdtop_mma_layout.h"
#include "gpu/ops/cuda/launchers.h"
#include "gpu/ops/cuda/mixer_layout.h"
#include "gpu/ops/kernels.h"

namespace trackscope::gpu::ops::detail {
namespace {

cuda::ElementType element_type(at::ScalarType t, const char* op) {
  switch (t) {
    case at::kFloat: return cuda::ElementType::float32;
    case at::kBFloat16: return cuda::ElementType::bfloat16;
    case at::kHalf: return cuda::ElementType::float16;
    default: TORCH_CHECK(false, op, ": unsupported dtype ", t, " (float32, bfloat16 or float16)");
  }
  return cuda::ElementType::float32;
}

void check_launch(cudaError_t error, const char* op) {
  TORCH_CHECK(error == cudaSuccess, op, ": CUDA kernel launch failed: ", cudaGetErrorName(error), " (",
              cudaGetErrorString(error), ")");
}

cudaStream_t current_stream(const at::Tensor& t) { return at::cuda::getCurrentCUDAStream(t.device().index()).stream(); }

}  // namespace

bool cuda_device_present(std::string& status) {
  const int count = static_cast<int>(c10::cuda::device_count());
  if (count <= 0) {
    status = "LibTorch sees no CUDA device (no GPU, or no usable driver)";
    return false;
  }
  status = std::to_string(count) + " CUDA device(s) visible; Trackscope CUDA kernels compiled in";
  return true;
}

void local_corr4d_cuda(const at::Tensor& features, const at::Tensor& points, const at::Tensor& supports,
                       at::Tensor& corr, CorrKernel kernel, bool overlap_previous) {
  const c10::cuda::CUDAGuard guard(features.device());
  cuda::LocalCorr4dShape shape;
  shape.queries = points.size(0);
  shape.frames = features.size(0);
  shape.height = features.size(1);
  shape.width = features.size(2);
  shape.channels = features.size(3);
  shape.stride_frame = features.stride(0);
  shape.stride_row = features.stride(1);
  shape.stride_column = features.stride(2);
  shape.corr_row_pitch = corr.dim() == 3 ? corr.size(2) : core::locotrack::kCorrPerSample;
  TORCH_CHECK(features.stride(3) == 1 && points.is_contiguous() && supports.is_contiguous() && corr.is_contiguous(),
              "local_corr4d: internal layout error");
  const int64_t frame_span =
      (shape.height - 1) * shape.stride_row + (shape.width - 1) * shape.stride_column + shape.channels;
  TORCH_CHECK(frame_span < std::numeric_limits<int32_t>::max() && shape.stride_row >= 0 && shape.stride_column >= 0,
              "local_corr4d: one frame spans ", frame_span, " elements; the CUDA kernel needs < 2^31");
  const cuda::ElementType type = element_type(features.scalar_type(), "local_corr4d");
  const cuda::ElementType out_type = element_type(corr.scalar_type(), "local_corr4d");
  const cudaDeviceProp* properties = at::cuda::getCurrentDeviceProperties();
  const int capability = properties->major * 10 + properties->minor;
  const bool any_tensor_cores = kernel == CorrKernel::automatic || kernel == CorrKernel::tensor_cores;
  if (any_tensor_cores && cuda::local_corr4d_mma_pipelined_eligible(shape, type, out_type, features.data_ptr(),
                                                                    supports.data_ptr(), capability)) {
    check_launch(cuda::launch_local_corr4d_mma_pipelined(
                     shape, type, features.data_ptr(), points.data_ptr<float>(), supports.data_ptr(), corr.data_ptr(),
                     out_type, overlap_previous && capability >= 90, current_stream(features)),
                 type == cuda::ElementType::float32 ? "local_corr4d (3xTF32 tensor cores)"
                                                    : "local_corr4d (pipelined tensor cores)");
    return;
  }
  if ((any_tensor_cores || kernel == CorrKernel::wmma) &&
      cuda::local_corr4d_mma_eligible(shape, type, features.data_ptr(), supports.data_ptr(), capability)) {
    check_launch(
        cuda::launch_local_corr4d_mma(shape, type, features.data_ptr(), points.data_ptr<float>(), supports.data_ptr(),
                                      corr.data_ptr(), out_type, current_stream(features)),
        "local_corr4d (WMMA tensor cores)");
    return;
  }
  if ((kernel == CorrKernel::automatic || kernel == CorrKernel::pipelined) && out_type == cuda::ElementType::float32 &&
      cuda::local_corr4d_pipelined_eligible(shape, type, features.data_ptr(), supports.data_ptr(), capability,
                                            static_cast<int64_t>(properties->sharedMemPerBlockOptin))) {
    check_launch(
        cuda::launch_local_corr4d_pipelined(shape, features.data_ptr<float>(), points.data_ptr<float>(),
                                            supports.data_ptr<float>(), corr.data_ptr(), current_stream(features)),
        "local_corr4d (pipelined)");
    return;
  }
  check_launch(cuda::launch_local_corr4d(shape, type, features.data_ptr(), points.data_ptr<float>(),
                                         supports.data_ptr(), corr.data_ptr(), out_type, current_stream(features)),
               "local_corr4d");
}

void init_planes_cuda(const at::Tensor& cost_lowres, const at::Tensor& cost_hires, const at::Tensor& conv_weight,
                      const at::Tensor& conv_bias, const at::Tensor& query_frames, const at::Tensor& query_xy,
                      at::Tensor& points, at::Tensor& stats) {
  const c10::cuda::CUDAGuard guard(cost_hires.device());
  cuda::InitShape shape;
  shape.queries = cost_hires.size(0);
  shape.frames = cost_hires.size(1);
  shape.low_height = static_cast<int>(cost_lowres.size(2));
  shape.low_width = static_cast<int>(cost_lowres.size(3));
  shape.high_height = static_cast<int>(cost_hires.size(2));
  shape.high_width = static_cast<int>(cost_hires.size(3));
  shape.output_scale_x = 256.0f / static_cast<float>(shape.high_width);
  shape.output_scale_y = 256.0f / static_cast<float>(shape.high_height);
  TORCH_CHECK(shape.high_height * shape.high_width <= cuda::kInitMaxHighCells,
              "init_from_cost_volume: ", shape.high_height, "x", shape.high_width, " cells exceed the CUDA kernel's ",
              cuda::kInitMaxHighCells);
  const int64_t shared = cuda::init_shared_bytes(shape);
  const int64_t shared_limit = at::cuda::getCurrentDeviceProperties()->sharedMemPerBlockOptin;
  TORCH_CHECK(shared <= shared_limit, "init_from_cost_volume: needs ", shared, " bytes of shared memory per block, ",
              "the device allows ", shared_limit);
  check_launch(cuda::launch_init_from_cost_volume(
                   shape, element_type(cost_hires.scalar_type(), "init_from_cost_volume"), cost_lowres.data_ptr(),
                   cost_hires.data_ptr(), conv_weight.data_ptr<float>(), conv_bias.data_ptr<float>(),
                   query_frames.data_ptr<float>(), query_xy.data_ptr<float>(), points.data_ptr<float>(),
                   stats.data_ptr<float>(), current_stream(cost_hires)),
               "init_from_cost_volume");
}

void query_supports_cuda(const at::Tensor& grid, const at::Tensor& queries_tyx, at::Tensor& supports) {
  const c10::cuda::CUDAGuard guard(grid.device());
  TORCH_CHECK(grid.stride(3) == 1 && queries_tyx.is_contiguous() && supports.is_contiguous(),
              "sample_query_supports: internal layout error");
  cuda::SupportShape shape;
  shape.queries = queries_tyx.size(0);
  shape.frames = grid.size(0);
  shape.height = grid.size(1);
  shape.width = grid.size(2);
  shape.channels = grid.size(3);
  shape.stride_frame = grid.stride(0);
  shape.stride_row = grid.stride(1);
  shape.stride_column = grid.stride(2);
  shape.vector_elements =
      cuda::support_vector_elements(shape, static_cast<int>(grid.element_size()), grid.data_ptr(), supports.data_ptr());
  check_launch(
      cuda::launch_query_supports(shape, element_type(grid.scalar_type(), "sample_query_supports"), grid.data_ptr(),
                                  queries_tyx.data_ptr<float>(), supports.data_ptr(), current_stream(grid)),
      "sample_query_supports");
}

void mixer_input_cuda(const at::Tensor& occlusion, const at::Tensor& expected, const at::Tensor& encoded,
                      const at::Tensor& tracks, at::Tensor& out) {
  const c10::cuda::CUDAGuard guard(out.device());
  TORCH_CHECK(occlusion.is_contiguous() && expected.is_contiguous() && tracks.is_contiguous() && out.is_contiguous() &&
                  encoded.stride(2) == 1,
              "mixer_input_rows: internal layout error");
  cuda::MixerInputShape shape;
  shape.queries = out.size(0);
  shape.frames = out.size(1);
  shape.row = out.size(2);
  shape.encoded_stride_query = encoded.stride(0);
  shape.encoded_stride_frame = encoded.stride(1);
  check_launch(cuda::launch_mixer_input(shape, element_type(out.scalar_type(), "mixer_input_rows"),
                                        occlusion.data_ptr<float>(), expected.data_ptr<float>(), encoded.data_ptr(),
                                        tracks.data_ptr<float>(), out.data_ptr(), current_stream(out)),
               "mixer_input_rows");
}

bool layer_norm_cuda(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight, const at::Tensor& bias,
                     double eps, at::Tensor& sum, at::Tensor& norm) {
  const c10::cuda::CUDAGuard guard(x.device());
  const bool with_residual = residual.defined();
  TORCH_CHECK(x.is_contiguous() && weight.is_contiguous() && bias.is_contiguous() && norm.is_contiguous() &&
                  (!with_residual || (residual.is_contiguous() && sum.is_contiguous())),
              "layer_norm: internal layout error");
  const cuda::ElementType type = element_type(x.scalar_type(), "layer_norm");
  const int64_t width = x.size(-1);
  const void* residual_data = with_residual ? residual.data_ptr() : nullptr;
  void* sum_data = with_residual ? sum.data_ptr() : nullptr;
  if (!cuda::layer_norm_eligible(width, type, x.data_ptr(), residual_data, weight.data_ptr(), bias.data_ptr(), sum_data,
                                 norm.data_ptr())) {
    return false;
  }
  check_launch(
      cuda::launch_layer_norm(x.numel() / width, width, static_cast<float>(eps), type, x.data_ptr(), residual_data,
                              weight.data_ptr(), bias.data_ptr(), sum_data, norm.data_ptr(), current_stream(x)),
      "layer_norm");
  return true;
}

bool layer_norm_head_cuda(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                          const at::Tensor& bias, double eps, const at::Tensor& head_weight,
                          const at::Tensor& head_bias, const at::Tensor& tracks, const at::Tensor& occlusion,
                          const at::Tensor& expected_dist, at::Tensor& next_tracks, at::Tensor& next_occlusion,
                          at::Tensor& next_expected_dist) {
  const c10::cuda::CUDAGuard guard(x.device());
  for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{
           &x, &residual, &weight, &bias, &head_weight, &head_bias, &tracks, &occlusion, &expected_dist, &next_tracks,
           &next_occlusion, &next_expected_dist}) {
    TORCH_CHECK(t->is_contiguous(), "layer_norm_head: internal layout error");
  }
  const cuda::ElementType type = element_type(x.scalar_type(), "layer_norm_head");
  const int64_t width = x.size(-1);
  if (!cuda::layer_norm_head_eligible(width, type, x.data_ptr(), residual.data_ptr(), weight.data_ptr(),
                                      bias.data_ptr(), head_weight.data_ptr())) {
    return false;
  }
  check_launch(cuda::launch_layer_norm_head(x.numel() / width, width, static_cast<float>(eps), type, x.data_ptr(),
                                            residual.data_ptr(), weight.data_ptr(), bias.data_ptr(),
                                            head_weight.data_ptr(), head_bias.data_ptr(), tracks.data_ptr<float>(),
                                            occlusion.data_ptr<float>(), expected_dist.data_ptr<float>(),
                                            next_tracks.data_ptr<float>(), next_occlusion.data_ptr<float>(),
                                            next_expected_dist.data_ptr<float>(), current_stream(x)),
               "layer_norm_head");
  return true;
}

bool l2_normalise_channels_cuda(const at::Tensor& x, at::Tensor& out) {
  const c10::cuda::CUDAGuard guard(x.device());
  TORCH_CHECK(x.is_contiguous() && out.is_contiguous() && x.sizes() == out.sizes(),
              "l2_normalise_channels: internal layout error");
  if (x.scalar_type() != at::kFloat && x.scalar_type() != at::kBFloat16 && x.scalar_type() != at::kHalf) return false;
  const cuda::ElementType type = element_type(x.scalar_type(), "l2_normalise_channels");
  const int64_t channels = x.size(-1);
  if (!cuda::l2_normalise_eligible(channels, type, x.data_ptr(), out.data_ptr())) return false;
  check_launch(
      cuda::launch_l2_normalise(x.numel() / channels, channels, type, x.data_ptr(), out.data_ptr(), current_stream(x)),
      "l2_normalise_channels");
  return true;
}

void gather_columns_cuda(const at::Tensor& input, const at::Tensor& index, at::Tensor& output) {
  const c10::cuda::CUDAGuard guard(input.device());
  TORCH_CHECK(input.dim() == 2 && input.stride(1) == 1 && output.is_contiguous() && index.scalar_type() == at::kInt &&
                  index.is_contiguous() && index.device() == input.device() && output.device() == input.device(),
              "cmdtop_fast: internal layout error in gather_columns");
  check_launch(
      cuda::launch_gather_columns(input.data_ptr(), element_type(input.scalar_type(), "cmdtop_fast"), input.size(0),
                                  input.stride(0), index.data_ptr<int32_t>(), index.size(0), output.data_ptr(),
                                  element_type(output.scalar_type(), "cmdtop_fast"), current_stream(input)),
      "cmdtop_fast (gather_columns)");
}

void bias_group_norm_relu_cuda(at::Tensor& x, const at::Tensor& bias, const at::Tensor& gamma, const at::Tensor& beta,
                               int64_t groups, double eps) {
  const c10::cuda::CUDAGuard guard(x.device());
  TORCH_CHECK(x.dim() == 3 && x.is_contiguous() && x.size(2) % groups == 0 && bias.is_contiguous() &&
                  gamma.is_contiguous() && beta.is_contiguous() && bias.scalar_type() == at::kFloat &&
                  gamma.scalar_type() == at::kFloat && beta.scalar_type() == at::kFloat,
              "cmdtop_fast: internal layout error in bias_group_norm_relu");
  TORCH_CHECK(x.size(1) * x.size(2) < std::numeric_limits<int32_t>::max(),
              "cmdtop_fast: group-norm row too large: ", x.sizes());
  check_launch(
      cuda::launch_bias_group_norm_relu(x.data_ptr(), element_type(x.scalar_type(), "cmdtop_fast"), x.size(0),
                                        x.size(1), x.size(2), groups, bias.data_ptr<float>(), gamma.data_ptr<float>(),
                                        beta.data_ptr<float>(), static_cast<float>(eps), current_stream(x)),
      "cmdtop_fast (bias_group_norm_relu)");
}

bool cmdtop_fused_eligible_cuda(c10::Device device, bool base) {
  if (!device.is_cuda()) return false;
  const cudaDeviceProp* properties =
      at::cuda::getDeviceProperties(device.index() < 0 ? c10::cuda::current_device() : device.index());
  const auto shape = base ? cuda::CmdTopFusedShape::base : cuda::CmdTopFusedShape::small;
  return static_cast<int64_t>(properties->sharedMemPerBlockOptin) >= cuda::cmdtop_fused_shared_bytes(shape);
}

at::Tensor cmdtop_fused_weight_cuda(const at::Tensor& conv_weight, c10::Device device) {
  // [C_out, C_in, ky, kx] -> [ky, kx, C_in, C_out] -> [K, C_out], zero rows up to a whole K chunk.
  const at::Tensor matrix =
      conv_weight.to(at::kCPU, at::kFloat).permute({2, 3, 1, 0}).reshape({-1, conv_weight.size(0)});
  const int64_t chunk = cuda::kCmdTopFusedKChunk;
  const int64_t padded = (matrix.size(0) + chunk - 1) / chunk * chunk;
  return at::constant_pad_nd(matrix, {0, 0, 0, padded - matrix.size(0)}, 0.0).contiguous().to(device);
}

void cmdtop_fused_cuda(const at::Tensor& corr, const std::vector<CmdTopFast::Layer>& layers, double eps,
                       at::Tensor& out) {
  const c10::cuda::CUDAGuard guard(corr.device());
  const size_t count = layers.size();
  TORCH_CHECK((count == 2 || count == 3) && corr.dim() == 2 && corr.stride(1) == 1 &&
                  corr.size(1) >= core::locotrack::kCorrPerSample && corr.scalar_type() == at::kFloat &&
                  out.scalar_type() == at::kFloat && out.is_contiguous() && out.dim() == 2 &&
                  out.size(0) == corr.size(0) && out.size(1) == 256,
              "cmdtop_fast: internal layout error in the fused kernel");
  cuda::CmdTopFusedLayer parameters[3];
  for (size_t i = 0; i < count; ++i) {
    const CmdTopFast::Layer& l = layers[i];
    for (const at::Tensor* t : {&l.fused_weight, &l.conv_bias, &l.norm_weight, &l.norm_bias}) {
      TORCH_CHECK(t->defined() && t->is_contiguous() && t->scalar_type() == at::kFloat && t->device() == corr.device(),
                  "cmdtop_fast: internal layout error in the fused kernel's parameters");
    }
    parameters[i] = {l.fused_weight.data_ptr<float>(), l.conv_bias.data_ptr<float>(), l.norm_weight.data_ptr<float>(),
                     l.norm_bias.data_ptr<float>()};
  }
  check_launch(cuda::launch_cmdtop_fused(count == 3 ? cuda::CmdTopFusedShape::base : cuda::CmdTopFusedShape::small,
                                         corr.data_ptr<float>(), corr.size(0), corr.stride(0), parameters,
                                         static_cast<int>(count), static_cast<float>(eps), out.data_ptr<float>(),
                                         current_stream(corr)),
               "cmdtop_fast (fused)");
}

int cmdtop_mma_tile_cuda(c10::Device device, bool base, at::ScalarType dtype) {
  if (!device.is_cuda() || (dtype != at::kBFloat16 && dtype != at::kHalf && dtype != at::kFloat)) return 0;
  const cudaDeviceProp* properties =
      at::cuda::getDeviceProperties(device.index() < 0 ? c10::cuda::current_device() : device.index());
  if (properties->major < 8) return 0;  // mma.sync.m16n8k16 (bf16/fp16) and m16n8k8 (tf32)
  const auto shape = base ? cuda::CmdTopFusedShape::base : cuda::CmdTopFusedShape::small;
  const cuda::ElementType type = element_type(dtype, "cmdtop_fast");
  const auto fits = [&](int tile) {
    const int64_t bytes = cuda::cmdtop_mma_shared_bytes(shape, type, tile);
    return bytes > 0 && static_cast<int64_t>(properties->sharedMemPerBlockOptin) >= bytes;
  };
  if (dtype == at::kFloat) return fits(8) ? 8 : 0;
  if (const char* forced = std::getenv("TRACKSCOPE_CMDTOP_MMA_TILE")) {
    const int tile = std::atoi(forced);
    if ((tile == 8 || tile == 16) && fits(tile)) return tile;
  }
  // 8 samples per block (two blocks per SM) beat one block of 16 in every official case on the H200 (base N=1024
  // fp16: CMDTop 10.2 vs 12.0 ms); 16 stays for tuning through the environment.
  if (fits(8)) return 8;
  return fits(16) ? 16 : 0;
}

at::Tensor cmdtop_mma_weight_cuda(const at::Tensor& conv_weight, int64_t in_side, int64_t stride, at::ScalarType dtype,
                                  c10::Device device) {
  const at::Tensor weight = conv_weight.to(at::kCPU, at::kFloat).contiguous();
  const auto out_channels = static_cast<int>(weight.size(0));
  const auto in_channels = static_cast<int>(weight.size(1));
  const auto kernel = static_cast<int>(weight.size(2));
  const auto side = static_cast<int>(in_side);
  const auto step = static_cast<int>(stride);
  TORCH_CHECK(weight.dim() == 4 && weight.size(3) == kernel && out_channels % 16 == 0 && side > 0 && step > 0,
              "cmdtop_fast: internal layout error in the tensor-core weight");
  if (dtype == at::kFloat) {  // 3xTF32: TF32 parts and remainders
    at::Tensor packed = at::empty({cuda::cmdtop_tf32_packed_floats(out_channels, in_channels, kernel, side, step)},
                                  at::TensorOptions().dtype(at::kFloat));
    cuda::pack_cmdtop_tf32_weight(weight.data_ptr<float>(), out_channels, in_channels, kernel, side, step,
                                  packed.data_ptr<float>());
    return packed.to(device);
  }
  at::Tensor packed = at::empty({cuda::cmdtop_mma_packed_floats(out_channels, in_channels, kernel, side, step)},
                                at::TensorOptions().dtype(at::kFloat));
  cuda::pack_cmdtop_mma_weight(weight.data_ptr<float>(), out_channels, in_channels, kernel, side, step,
                               packed.data_ptr<float>());
  return packed.to(dtype).to(device);
}

void cmdtop_mma_cuda(const at::Tensor& corr, const std::vector<CmdTopFast::Layer>& layers, int tile, double eps,
                     at::Tensor& out, bool overlap_previous) {
  const c10::cuda::CUDAGuard guard(corr.device());
  const size_t count = layers.size();
  TORCH_CHECK((count == 2 || count == 3) && corr.dim() == 2 && corr.stride(1) == 1 &&
                  corr.size(1) >= core::locotrack::kCorrPerSample &&
                  (corr.scalar_type() == at::kBFloat16 || corr.scalar_type() == at::kHalf ||
                   corr.scalar_type() == at::kFloat) &&
                  out.scalar_type() == corr.scalar_type() && out.dim() == 2 && out.stride(1) == 1 &&
                  out.stride(0) >= 256 && out.stride(0) % 2 == 0 && out.size(0) == corr.size(0) && out.size(1) == 256 &&
                  (tile == 8 || tile == 16),
              "cmdtop_fast: internal layout error in the tensor-core kernel");
  cuda::CmdTopMmaLayer parameters[3];
  for (size_t i = 0; i < count; ++i) {
    const CmdTopFast::Layer& l = layers[i];
    TORCH_CHECK(l.fused_weight.defined() && l.fused_weight.is_contiguous() &&
                    l.fused_weight.scalar_type() == corr.scalar_type() && l.fused_weight.device() == corr.device(),
                "cmdtop_fast: internal layout error in the tensor-core kernel's weights");
    for (const at::Tensor* t : {&l.conv_bias, &l.norm_weight, &l.norm_bias}) {
      TORCH_CHECK(t->is_contiguous() && t->scalar_type() == at::kFloat && t->device() == corr.device(),
                  "cmdtop_fast: internal layout error in the tensor-core kernel's parameters");
    }
    parameters[i] = {l.fused_weight.data_ptr(), l.conv_bias.data_ptr<float>(), l.norm_weight.data_ptr<float>(),
                     l.norm_bias.data_ptr<float>()};
  }
  check_launch(cuda::launch_cmdtop_mma(
                   count == 3 ? cuda::CmdTopFusedShape::base : cuda::CmdTopFusedShape::small,
                   element_type(corr.scalar_type(), "cmdtop_fast"), tile, corr.data_ptr(), corr.size(0), corr.stride(0),
                   parameters, static_cast<int>(count), static_cast<float>(eps), out.data_ptr(), out.stride(0),
                   overlap_previous && cuda_compute_capability(corr.device()) >= 90, current_stream(corr)),
               "cmdtop_fast (tensor-core fused)");
}

int cuda_compute_capability(c10::Device device) {
  const cudaDeviceProp* properties =
      at::cuda::getDeviceProperties(device.index() < 0 ? c10::cuda::current_device() : device.index());
  return properties->major * 10 + properties->minor;
}

void mixer_rows_cuda(const at::Tensor& x, cuda::MixerRowOp op, const at::Tensor* gamma, const at::Tensor* beta,
                     double eps, bool split3, at::Tensor& y) {
  const c10::cuda::CUDAGuard guard(x.device());
  const int64_t k = x.size(1);
  TORCH_CHECK(k > 0 && k < (1 << 20), "mixer: row width ", k, " out of range");
  const int kp = cuda::mixer_padded_k(static_cast<int>(k));
  TORCH_CHECK(x.dim() == 2 && y.dim() == 2 && x.stride(1) == 1 && y.stride(1) == 1 && y.size(0) == x.size(0) &&
                  y.size(1) == cuda::mixer_blocks(split3) * kp && y.scalar_type() == x.scalar_type() &&
                  y.device() == x.device() && (!split3 || x.scalar_type() == at::kFloat),
              "mixer: internal layout error in the row kernel (x ", x.sizes(), ", y ", y.sizes(), ")");
  const bool norm = op == cuda::MixerRowOp::layer_norm;
  if (norm) {
    TORCH_CHECK(gamma != nullptr && beta != nullptr && gamma->is_contiguous() && beta->is_contiguous() &&
                    gamma->scalar_type() == at::kFloat && beta->scalar_type() == at::kFloat && gamma->numel() == k &&
                    beta->numel() == k && k <= cuda::kMixerMaxNormWidth,
                "mixer: internal layout error in the LayerNorm parameters");
  }
  cuda::MixerRowsParams p;
  p.x = x.data_ptr();
  p.x_stride = x.stride(0);
  p.rows = x.size(0);
  p.k = static_cast<int>(k);
  p.gamma = norm ? gamma->data_ptr<float>() : nullptr;
  p.beta = norm ? beta->data_ptr<float>() : nullptr;
  p.eps = static_cast<float>(eps);
  p.y = y.data_ptr();
  p.y_stride = y.stride(0);
  p.kp = kp;
  check_launch(cuda::launch_mixer_rows(element_type(x.scalar_type(), "mixer"), split3, op, p, current_stream(x)),
               "mixer (rows)");
}

namespace {

// The fields the two attention launches share (MixerAttentionParams, MixerAttentionMmaParams), from tensors whose
// layout the caller checked.
template <class Params>
Params attention_params(const at::Tensor& qkv, int64_t sequences, int64_t frames, int64_t heads,
                        const at::Tensor& slopes, const at::Tensor& out) {
  Params p;
  p.qkv = qkv.data_ptr();
  p.qkv_stride = qkv.stride(0);
  p.sequences = sequences;
  p.frames = static_cast<int>(frames);
  p.heads = static_cast<int>(heads);
  p.slopes = slopes.data_ptr<float>();
  p.scale = 1.0f / 8.0f;  // 1 / sqrt(64)
  p.out = out.data_ptr();
  p.out_stride = out.stride(0);
  return p;
}

}  // namespace

void mixer_attention_cuda(const at::Tensor& qkv, int64_t sequences, int64_t frames, int64_t heads,
                          const at::Tensor& slopes, bool split3, at::Tensor& out) {
  const c10::cuda::CUDAGuard guard(qkv.device());
  const int64_t dim = heads * cuda::kMixerHeadDim;
  const int kp = cuda::mixer_padded_k(static_cast<int>(dim));
  TORCH_CHECK(qkv.dim() == 2 && out.dim() == 2 && qkv.stride(1) == 1 && out.stride(1) == 1 &&
                  qkv.size(0) == sequences * frames && out.size(0) == qkv.size(0) && qkv.size(1) == 3 * dim &&
                  out.size(1) == cuda::mixer_blocks(split3) * kp && out.scalar_type() == qkv.scalar_type() &&
                  slopes.is_contiguous() && slopes.scalar_type() == at::kFloat && slopes.numel() == heads &&
                  frames < (1 << 30) && (!split3 || qkv.scalar_type() == at::kFloat),
              "mixer: internal layout error in the attention (qkv ", qkv.sizes(), ", out ", out.sizes(), ")");
  auto p = attention_params<cuda::MixerAttentionParams>(qkv, sequences, frames, heads, slopes, out);
  p.kp = kp;
  check_launch(cuda::launch_mixer_attention(element_type(qkv.scalar_type(), "mixer"), split3, p, current_stream(qkv)),
               "mixer (attention)");
}

bool mixer_attention_mma_cuda(const at::Tensor& qkv, int64_t sequences, int64_t frames, int64_t heads,
                              const at::Tensor& slopes, at::Tensor& out) {
  if ((qkv.scalar_type() != at::kHalf && qkv.scalar_type() != at::kBFloat16) ||
      cuda_compute_capability(qkv.device()) < 80 || qkv.stride(0) % 8 != 0 || out.stride(0) % 2 != 0 ||
      !cuda::is_aligned(qkv.data_ptr(), 16) || !cuda::is_aligned(out.data_ptr(), 4)) {
    return false;
  }
  const c10::cuda::CUDAGuard guard(qkv.device());
  const int64_t dim = heads * cuda::kMixerHeadDim;
  TORCH_CHECK(qkv.dim() == 2 && out.dim() == 2 && qkv.stride(1) == 1 && out.stride(1) == 1 &&
                  qkv.size(0) == sequences * frames && out.size(0) == qkv.size(0) && qkv.size(1) == 3 * dim &&
                  out.size(1) == dim && out.scalar_type() == qkv.scalar_type() && slopes.is_contiguous() &&
                  slopes.scalar_type() == at::kFloat && slopes.numel() == heads && frames < (1 << 30),
              "mixer: internal layout error in the attention (qkv ", qkv.sizes(), ", out ", out.sizes(), ")");
  const auto p = attention_params<cuda::MixerAttentionMmaParams>(qkv, sequences, frames, heads, slopes, out);
  check_launch(cuda::launch_mixer_attention_mma(element_type(qkv.scalar_type(), "mixer"), p, current_stream(qkv)),
               "mixer (tensor-core attention)");
  return true;
}

void mixer_head_cuda(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, const at::Tensor& weight,
                     const at::Tensor& bias, double eps, at::Tensor& out) {
  const c10::cuda::CUDAGuard guard(x.device());
  const int64_t k = x.size(1);
  TORCH_CHECK(x.dim() == 2 && x.stride(1) == 1 && out.is_contiguous() && out.scalar_type() == at::kFloat &&
                  out.dim() == 2 && out.size(0) == x.size(0) && out.size(1) == 4 && k <= cuda::kMixerMaxNormWidth &&
                  gamma.numel() == k && beta.numel() == k && weight.is_contiguous() && weight.size(0) == 4 &&
                  weight.size(1) == k && bias.numel() == 4,
              "mixer: internal layout error in the head");
  for (const at::Tensor* t : {&gamma, &beta, &weight, &bias}) {
    TORCH_CHECK(t->is_contiguous() && t->scalar_type() == at::kFloat, "mixer: head parameters must be float32");
  }
  cuda::MixerHeadParams p;
  p.x = x.data_ptr();
  p.x_stride = x.stride(0);
  p.rows = x.size(0);
  p.k = static_cast<int>(k);
  p.gamma = gamma.data_ptr<float>();
  p.beta = beta.data_ptr<float>();
  p.eps = static_cast<float>(eps);
  p.weight = weight.data_ptr<float>();
  p.bias = bias.data_ptr<float>();
  p.out = out.data_ptr<float>();
  check_launch(cuda::launch_mixer_head(element_type(x.scalar_type(), "mixer"), p, current_stream(x)), "mixer (head)");
}

void mixer_gemm_tf32x3_cuda(const at::Tensor& a, const at::Tensor& w, at::Tensor& c, bool accumulate) {
  const c10::cuda::CUDAGuard guard(a.device());
  TORCH_CHECK(
      a.dim() == 2 && w.dim() == 2 && c.dim() == 2 && a.scalar_type() == at::kFloat && w.scalar_type() == at::kFloat &&
          c.scalar_type() == at::kFloat && a.stride(1) == 1 && w.stride(1) == 1 && c.stride(1) == 1 &&
          a.size(1) == w.size(1) && c.size(0) == a.size(0) && c.size(1) == w.size(0),
      "mixer: internal layout error in the 3xTF32 GEMM (a ", a.sizes(), ", w ", w.sizes(), ", c ", c.sizes(), ")");
  constexpr int64_t kLimit = std::numeric_limits<int>::max();
  TORCH_CHECK(a.size(0) < kLimit && a.size(1) < kLimit && w.size(0) < kLimit && a.stride(0) < kLimit &&
                  w.stride(0) < kLimit && c.stride(0) < kLimit,
              "mixer: GEMM too large for cuBLAS's 32-bit sizes: ", a.sizes());
  if (a.size(0) == 0) return;
  // Row-major C [R, N] = A [R, K] W [N, K]^T is column-major C^T [N, R] = op_T(W^T [K, N]) (A^T [K, R]), as
  // at::linear calls cuBLAS. The compute type asks for TF32 tensor cores whatever the global TF32 switches say: the
  // operands are exact TF32 values (the split), so nothing is rounded, and the products are summed in float32.
  cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();  // bound to the current stream, with a workspace
  const float alpha = 1.0f;
  const float beta = accumulate ? 1.0f : 0.0f;
  const cublasStatus_t status =
      cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.size(0)), static_cast<int>(a.size(0)),
                   static_cast<int>(a.size(1)), &alpha, w.data_ptr<float>(), CUDA_R_32F, static_cast<int>(w.stride(0)),
                   a.data_ptr<float>(), CUDA_R_32F, static_cast<int>(a.stride(0)), &beta, c.data_ptr<float>(),
                   CUDA_R_32F, static_cast<int>(c.stride(0)), CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
  TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "mixer: cublasGemmEx (3xTF32) failed with status ",
              static_cast<int>(status));
}

bool instance_norm_relu_cuda(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                             const at::Tensor& bias, double eps, at::Tensor& sum, at::Tensor& y) {
  const c10::cuda::CUDAGuard guard(x.device());
  const bool with_residual = residual.defined();
  const auto same_layout = [&x](const at::Tensor& t) {
    return t.is_contiguous(at::MemoryFormat::ChannelsLast) && t.sizes() == x.sizes();
  };
  TORCH_CHECK(x.dim() == 4 && x.is_contiguous(at::MemoryFormat::ChannelsLast) && same_layout(y) &&
                  (!with_residual || (same_layout(residual) && same_layout(sum))) && weight.is_contiguous() &&
                  bias.is_contiguous() && weight.scalar_type() == bias.scalar_type(),
              "instance_norm_relu: internal layout error");
  cuda::InstanceNormShape shape;
  shape.samples = x.size(0);
  shape.channels = x.size(1);
  shape.positions = x.size(2) * x.size(3);
  const cuda::ElementType type = element_type(x.scalar_type(), "instance_norm_relu");
  const void* residual_data = with_residual ? residual.data_ptr() : nullptr;
  void* sum_data = with_residual ? sum.data_ptr() : nullptr;
  if (!cuda::instance_norm_eligible(shape, type, x.data_ptr(), residual_data, sum_data, y.data_ptr())) return false;
  // The workspace comes from the caching allocator: no cudaMalloc in the hot path, and stream-ordered reuse.
  const at::Tensor workspace =
      at::empty({(cuda::instance_norm_workspace_bytes(shape, type) + 7) / 8}, x.options().dtype(at::kDouble));
  check_launch(cuda::launch_instance_norm_relu(shape, type, x.data_ptr(), residual_data,
                                               element_type(weight.scalar_type(), "instance_norm_relu"),
                                               weight.data_ptr(), bias.data_ptr(), static_cast<float>(eps),
                                               workspace.data_ptr(), sum_data, y.data_ptr(), current_stream(x)),
               "instance_norm_relu");
  return true;
}

}  // namespace trackscope::gpu::ops::detail
