// The launcher of the query-support gather kernel (query_supports_kernel.cuh has the kernel and its contract; the
// CPU emulation test runs the same source).

#include "gpu/ops/cuda/launchers.h"
#include "gpu/ops/cuda/query_supports_kernel.cuh"

namespace trackscope::gpu::ops::cuda {
namespace {

template <class Element>
cudaError_t launch_typed(const SupportShape& s, const void* grid, const float* queries, void* supports,
                         cudaStream_t stream) {
  constexpr int kVector = query_supports::kVectorElements<Element>;
  if (s.vector_elements != 1 && s.vector_elements != kVector) return cudaErrorInvalidValue;
  if (s.channels % s.vector_elements != 0) return cudaErrorInvalidValue;
  const int64_t blocks = query_supports::block_count(s);
  if (blocks == 0) return cudaSuccess;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  const auto grid_size = static_cast<unsigned>(blocks);
  if (s.vector_elements == 1) {
    query_supports::query_supports_kernel<Element, 1>
        <<<grid_size, kSupportThreads, 0, stream>>>(s, grid, queries, supports);
  } else {
    query_supports::query_supports_kernel<Element, kVector>
        <<<grid_size, kSupportThreads, 0, stream>>>(s, grid, queries, supports);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_query_supports(const SupportShape& shape, ElementType element_type, const void* grid,
                                  const float* queries, void* supports, cudaStream_t stream) {
  switch (element_type) {
    case ElementType::float32: return launch_typed<float>(shape, grid, queries, supports, stream);
    case ElementType::bfloat16: return launch_typed<Bf16Tag>(shape, grid, queries, supports, stream);
    case ElementType::float16: return launch_typed<Fp16Tag>(shape, grid, queries, supports, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace trackscope::gpu::ops::cuda
