// The launcher of the mixer-input kernel (mixer_input_kernel.cuh has the kernel and its contract; the CPU emulation
// test runs the same source).

#include "gpu/ops/cuda/launchers.h"
#include "gpu/ops/cuda/mixer_input_kernel.cuh"

namespace trackscope::gpu::ops::cuda {
namespace {

template <class Element>
cudaError_t launch_typed(MixerInputShape s, const float* occlusion, const float* expected, const void* encoded,
                         const float* tracks, void* out, cudaStream_t stream) {
  if (s.row < kMixerInputColumns) return cudaErrorInvalidValue;
  s.paired = !std::is_same_v<Element, float> && s.row % 2 == 0 && s.encoded_stride_query % 2 == 0 &&
             s.encoded_stride_frame % 2 == 0 && is_aligned(encoded, 4) && is_aligned(out, 4);
  const int64_t blocks = mixer_input::block_count(s);
  if (blocks == 0) return cudaSuccess;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  mixer_input::mixer_input_kernel<Element>
      <<<static_cast<unsigned>(blocks), kMixerInputThreads, 0, stream>>>(s, occlusion, expected, encoded, tracks, out);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_mixer_input(const MixerInputShape& shape, ElementType element_type, const float* occlusion,
                               const float* expected, const void* encoded, const float* tracks, void* out,
                               cudaStream_t stream) {
  switch (element_type) {
    case ElementType::float32: return launch_typed<float>(shape, occlusion, expected, encoded, tracks, out, stream);
    case ElementType::bfloat16: return launch_typed<Bf16Tag>(shape, occlusion, expected, encoded, tracks, out, stream);
    case ElementType::float16: return launch_typed<Fp16Tag>(shape, occlusion, expected, encoded, tracks, out, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace trackscope::gpu::ops::cuda
