#pragma once
// The autocast part of gpu/torch_compat.h, in a header of its own because <ATen/autocast_mode.h> is heavy
// (it pulls in every native function declaration); only the trainer includes it. Include only from gpu/ .cpp files.
//
//   {
//     compat::CudaAutocast autocast(at::kBFloat16);   // ops on CUDA tensors run in bf16 where autocast says so
//     outputs = model.forward(video, queries);
//   }                                                  // previous state restored, cast cache cleared

#include <ATen/autocast_mode.h>

#include "gpu/torch_compat.h"

namespace trackscope::gpu::compat {

/// Enables CUDA autocast to `dtype` for its lifetime, like Python's `with torch.autocast("cuda", dtype)`.
/// LibTorch 2.4 replaced the CUDA-only calls (set_enabled, set_autocast_gpu_dtype) by per-device ones.
class CudaAutocast {
 public:
  explicit CudaAutocast(at::ScalarType dtype) {
#if TRACKSCOPE_TORCH_AT_LEAST(2, 4)
    previous_enabled_ = at::autocast::is_autocast_enabled(at::kCUDA);
    previous_dtype_ = at::autocast::get_autocast_dtype(at::kCUDA);
    at::autocast::set_autocast_dtype(at::kCUDA, dtype);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
#else
    previous_enabled_ = at::autocast::is_enabled();
    previous_dtype_ = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(true);
#endif
    at::autocast::increment_nesting();
  }
  ~CudaAutocast() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#if TRACKSCOPE_TORCH_AT_LEAST(2, 4)
    at::autocast::set_autocast_enabled(at::kCUDA, previous_enabled_);
    at::autocast::set_autocast_dtype(at::kCUDA, previous_dtype_);
#else
    at::autocast::set_enabled(previous_enabled_);
    at::autocast::set_autocast_gpu_dtype(previous_dtype_);
#endif
  }
  CudaAutocast(const CudaAutocast&) = delete;
  CudaAutocast& operator=(const CudaAutocast&) = delete;

 private:
  bool previous_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kHalf;
};

}  // namespace trackscope::gpu::compat
