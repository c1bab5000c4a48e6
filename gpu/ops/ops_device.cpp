// Device selection shared by the ops: which implementation a tensor goes to, and whether CUDA kernels exist.
#include <c10/util/Exception.h>

#include "gpu/ops/kernels.h"
#include "gpu/ops/ops.h"

namespace trackscope::gpu::ops {

bool cuda_kernels_available() {
#ifdef TRACKSCOPE_WITH_CUDA_OPS
  std::string status;
  return detail::cuda_device_present(status);
#else
  return false;
#endif
}

std::string cuda_kernels_status() {
#ifdef TRACKSCOPE_WITH_CUDA_OPS
  std::string status;
  detail::cuda_device_present(status);
  return status;
#else
  return "this build has no Trackscope CUDA kernels (configure with -DTRACKSCOPE_WITH_CUDA=ON against a "
         "LibTorch built with CUDA)";
#endif
}

namespace detail {

bool use_cuda(const at::Tensor& t, const char* op) {
  if (t.device().is_cpu()) return false;
#ifdef TRACKSCOPE_WITH_CUDA_OPS
  if (t.is_cuda()) return true;
#endif
  TORCH_CHECK(false, op, ": tensors on ", t.device(), " are not supported: ", cuda_kernels_status());
  return false;
}

}  // namespace detail
}  // namespace trackscope::gpu::ops
