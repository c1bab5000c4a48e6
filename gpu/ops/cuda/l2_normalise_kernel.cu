// The launcher of the one-pass L2 normalisation (l2_normalise_kernel.cuh has the kernel and its contract; the CPU
// emulation test runs the same source).

#include "gpu/ops/cuda/l2_normalise_kernel.cuh"
#include "gpu/ops/cuda/launchers.h"

namespace trackscope::gpu::ops::cuda {
namespace {

template <class Element, int Group>
cudaError_t launch_group(const l2_normalise::L2Shape& s, const void* x, void* y, cudaStream_t stream) {
  const int64_t blocks = l2_normalise::block_count(s, Group);
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  l2_normalise::l2_normalise_kernel<Element, Group>
      <<<static_cast<unsigned>(blocks), l2_normalise::kThreads, 0, stream>>>(s, x, y);
  return cudaGetLastError();
}

template <class Element>
cudaError_t launch_typed(const l2_normalise::L2Shape& s, const void* x, void* y, cudaStream_t stream) {
  switch (l2_normalise::group_lanes<Element>(s.channels)) {
    case 1: return launch_group<Element, 1>(s, x, y, stream);
    case 2: return launch_group<Element, 2>(s, x, y, stream);
    case 4: return launch_group<Element, 4>(s, x, y, stream);
    case 8: return launch_group<Element, 8>(s, x, y, stream);
    case 16: return launch_group<Element, 16>(s, x, y, stream);
    case 32: return launch_group<Element, 32>(s, x, y, stream);
    default: return cudaErrorInvalidValue;
  }
}

int group_of(ElementType type, int channels) {
  switch (type) {
    case ElementType::float32: return l2_normalise::group_lanes<float>(channels);
    case ElementType::bfloat16: return l2_normalise::group_lanes<Bf16Tag>(channels);
    case ElementType::float16: return l2_normalise::group_lanes<Fp16Tag>(channels);
  }
  return 0;
}

}  // namespace

bool l2_normalise_eligible(int64_t channels, ElementType element_type, const void* x, const void* y) {
  return channels <= 0x7fffffff && group_of(element_type, static_cast<int>(channels)) > 0 && is_aligned(x, 16) &&
         is_aligned(y, 16);
}

cudaError_t launch_l2_normalise(int64_t pixels, int64_t channels, ElementType element_type, const void* x, void* y,
                                cudaStream_t stream) {
  if (pixels == 0) return cudaSuccess;
  if (!l2_normalise_eligible(channels, element_type, x, y)) return cudaErrorInvalidValue;
  const l2_normalise::L2Shape shape{pixels, static_cast<int>(channels)};
  switch (element_type) {
    case ElementType::float32: return launch_typed<float>(shape, x, y, stream);
    case ElementType::bfloat16: return launch_typed<Bf16Tag>(shape, x, y, stream);
    case ElementType::float16: return launch_typed<Fp16Tag>(shape, x, y, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace trackscope::gpu::ops::cuda
