// Instantiations and launcher of the pipelined mma.sync local_corr4d (3xTF32 for float32, m16n8k16 for bf16/fp16;
// design in local_corr4d_mma_pipelined_kernel.cuh).
#include <cstdint>

#include "gpu/ops/cuda/launchers.h"
#include "gpu/ops/cuda/local_corr4d_mma_pipelined_kernel.cuh"
#include "gpu/ops/cuda/programmatic_launch.cuh"

namespace trackscope::gpu::ops::cuda {
namespace {

template <class A, class Out>
cudaError_t launch_typed(const LocalCorr4dShape& s, const void* features, const float* points, const void* supports,
                         void* corr, bool overlap_previous, cudaStream_t stream) {
  const int64_t blocks = s.queries * ((s.frames + corr_mma::kFrames - 1) / corr_mma::kFrames);
  if (blocks == 0) return cudaSuccess;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  corr_mma::Params p;
  p.queries = s.queries;
  p.frames = s.frames;
  p.height = s.height;
  p.width = s.width;
  p.channels = s.channels;
  p.stride_frame = s.stride_frame;
  p.stride_row = s.stride_row;
  p.stride_column = s.stride_column;
  p.corr_row_pitch = s.corr_row_pitch;
  p.features = features;
  p.points = points;
  p.supports = supports;
  p.corr = corr;
  return launch_kernel(corr_mma::local_corr4d_mma_pipelined_kernel<A, Out>, dim3(static_cast<unsigned>(blocks)),
                       dim3(corr_mma::kThreads), corr_mma::Layout<A>::shared_bytes, stream, overlap_previous, p);
}

template <class Tag>
cudaError_t launch_half(const LocalCorr4dShape& s, const void* features, const float* points, const void* supports,
                        void* corr, bool float_output, bool overlap_previous, cudaStream_t stream) {
  using A = corr_mma::Half<Tag>;
  return float_output
             ? launch_typed<A, corr_mma::FloatOut>(s, features, points, supports, corr, overlap_previous, stream)
             : launch_typed<A, corr_mma::HalfOut<Tag>>(s, features, points, supports, corr, overlap_previous, stream);
}

}  // namespace

bool local_corr4d_mma_pipelined_eligible(const LocalCorr4dShape& s, ElementType element_type, ElementType corr_type,
                                         const void* features, const void* supports, int compute_capability) {
  const bool single = element_type == ElementType::float32;
  const int64_t chunk = single ? corr_mma::Tf32x3::chunk : corr_mma::Half<Fp16Tag>::chunk;
  const int64_t per_vector = single ? 4 : 8;  // elements per 16 bytes
  const bool output_ok = corr_type == ElementType::float32 || (!single && corr_type == element_type);
  // The kernel keeps a cell's offset within its frame in an int32.
  const int64_t frame_span = (s.height - 1) * s.stride_row + (s.width - 1) * s.stride_column + s.channels;
  return compute_capability >= 80 && output_ok && s.channels > 0 && s.channels % chunk == 0 && s.stride_row >= 0 &&
         s.stride_column >= 0 && frame_span < (int64_t{1} << 31) && s.stride_frame % per_vector == 0 &&
         s.stride_row % per_vector == 0 && s.stride_column % per_vector == 0 && is_aligned(features, 16) &&
         is_aligned(supports, 16);
}

cudaError_t launch_local_corr4d_mma_pipelined(const LocalCorr4dShape& shape, ElementType element_type,
                                              const void* features, const float* points, const void* supports,
                                              void* corr, ElementType corr_type, bool overlap_previous,
                                              cudaStream_t stream) {
  const bool float_output = corr_type == ElementType::float32;
  switch (element_type) {
    case ElementType::float32:
      if (!float_output) return cudaErrorInvalidValue;
      return launch_typed<corr_mma::Tf32x3, corr_mma::FloatOut>(shape, features, points, supports, corr,
                                                                overlap_previous, stream);
    case ElementType::bfloat16:
      if (!float_output && corr_type != element_type) return cudaErrorInvalidValue;
      return launch_half<Bf16Tag>(shape, features, points, supports, corr, float_output, overlap_previous, stream);
    case ElementType::float16:
      if (!float_output && corr_type != element_type) return cudaErrorInvalidValue;
      return launch_half<Fp16Tag>(shape, features, points, supports, corr, float_output, overlap_previous, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace trackscope::gpu::ops::cuda
