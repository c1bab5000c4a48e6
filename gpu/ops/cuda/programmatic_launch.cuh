#pragma once
// A kernel launch that may overlap the kernel before it on the stream (programmatic dependent launch, PDL).

#include <cuda_runtime.h>

#include <utility>

namespace trackscope::gpu::ops::cuda {

/// kernel<<<grid, block, shared_bytes, stream>>>(args...), or, with overlap_previous, the same launch with
/// programmatic stream serialization: on compute capability 9.0+ its blocks may start once every block of the kernel
/// launched just before it on the stream has started and called primitives::allow_dependent_launch() (or exited),
/// i.e. on the SMs that kernel's last blocks leave idle. Only for a caller that knows that kernel neither writes
/// what this one reads nor touches what it writes: nothing waits for it (no griddepcontrol.wait). Work launched
/// after this one without the attribute waits for both as usual.
template <class... Params, class... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                          bool overlap_previous, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  cudaLaunchAttribute overlap[1] = {};
  overlap[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = overlap;
  config.numAttrs = overlap_previous ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

}  // namespace trackscope::gpu::ops::cuda
