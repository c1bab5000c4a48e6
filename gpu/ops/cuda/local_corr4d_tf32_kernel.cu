// Launcher of the 3xTF32 tensor-core local_corr4d for float32 features (design in local_corr4d_tf32_kernel.cuh).
#include <cstdint>

#include "gpu/ops/cuda/launchers.h"
#include "gpu/ops/cuda/local_corr4d_tf32_kernel.cuh"

namespace trackscope::gpu::ops::cuda {

bool local_corr4d_tf32_eligible(const LocalCorr4dShape& s, ElementType element_type, const void* features,
                                const void* supports, int compute_capability) {
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return element_type == ElementType::float32 && compute_capability >= 80 && s.channels > 0 &&
         s.channels % corr_tf32::kChunk == 0 && s.stride_frame % 4 == 0 && s.stride_row % 4 == 0 &&
         s.stride_column % 4 == 0 && aligned(features) && aligned(supports);
}

cudaError_t launch_local_corr4d_tf32(const LocalCorr4dShape& s, const float* features, const float* points,
                                     const float* supports, float* corr, cudaStream_t stream) {
  const int64_t blocks = s.queries * ((s.frames + corr_tf32::kFrames - 1) / corr_tf32::kFrames);
  if (blocks == 0) return cudaSuccess;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  corr_tf32::Params p;
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
  corr_tf32::local_corr4d_tf32_kernel<<<static_cast<unsigned>(blocks), corr_tf32::kThreads, corr_tf32::kSharedBytes,
                                         stream>>>(p);
  return cudaGetLastError();
}

}  // namespace trackscope::gpu::ops::cuda
