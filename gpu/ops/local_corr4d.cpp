// local_corr4d: argument checks and CPU/CUDA dispatch (contract in gpu/ops/ops.h).
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include "gpu/ops/kernels.h"
#include "gpu/ops/ops.h"

namespace trackscope::gpu::ops {
namespace {

bool is_feature_dtype(at::ScalarType t) { return t == at::kFloat || t == at::kBFloat16 || t == at::kHalf; }

}  // namespace

void local_corr4d_out(const at::Tensor& features, const at::Tensor& points, const at::Tensor& supports,
                      at::Tensor& corr, CorrKernel kernel, bool overlap_previous) {
  TORCH_CHECK(features.defined() && points.defined() && supports.defined() && corr.defined(),
              "local_corr4d: undefined tensor argument");
  TORCH_CHECK(features.dim() == 4, "local_corr4d: features must be [T,H,W,C], got ", features.sizes());
  const int64_t frames = features.size(0);
  const int64_t height = features.size(1);
  const int64_t width = features.size(2);
  const int64_t channels = features.size(3);
  TORCH_CHECK(height > 0 && width > 0 && channels > 0, "local_corr4d: empty feature grid ", features.sizes());
  TORCH_CHECK(points.dim() == 3 && points.size(1) == frames && points.size(2) == 2,
              "local_corr4d: points must be [n,T,2] with T=", frames, ", got ", points.sizes());
  const int64_t queries = points.size(0);
  TORCH_CHECK(supports.dim() == 4 && supports.size(0) == queries && supports.size(1) == 7 && supports.size(2) == 7 &&
                  supports.size(3) == channels,
              "local_corr4d: supports must be [n,7,7,C] = [", queries, ",7,7,", channels, "], got ", supports.sizes());
  TORCH_CHECK(is_feature_dtype(features.scalar_type()),
              "local_corr4d: features must be float32, bfloat16 or float16, got ", features.scalar_type());
  TORCH_CHECK(supports.scalar_type() == features.scalar_type(), "local_corr4d: supports dtype ", supports.scalar_type(),
              " differs from features dtype ", features.scalar_type());
  TORCH_CHECK(points.scalar_type() == at::kFloat, "local_corr4d: points must be float32, got ", points.scalar_type());
  TORCH_CHECK(points.device() == features.device() && supports.device() == features.device() &&
                  corr.device() == features.device(),
              "local_corr4d: all tensors must be on one device: features ", features.device(), ", points ",
              points.device(), ", supports ", supports.device(), ", corr ", corr.device());
  const bool padded = corr.dim() == 3 && corr.size(2) == kCorrPaddedRow;
  TORCH_CHECK((corr.scalar_type() == at::kFloat || corr.scalar_type() == features.scalar_type()) &&
                  corr.is_contiguous() && corr.size(0) == queries && corr.size(1) == frames &&
                  (padded || (corr.dim() == 6 && corr.size(2) == 7 && corr.size(3) == 7 && corr.size(4) == 7 &&
                              corr.size(5) == 7)),
              "local_corr4d: corr must be a contiguous float32 or ", features.scalar_type(), " [", queries, ",", frames,
              ",7,7,7,7] tensor or a padded [", queries, ",", frames, ",", kCorrPaddedRow, "] buffer, got ",
              corr.scalar_type(), " ", corr.sizes(), corr.is_contiguous() ? "" : " (not contiguous)");
  if (queries == 0 || frames == 0) return;

  const at::Tensor features_c = features.stride(3) == 1 ? features : features.contiguous();
  const at::Tensor points_c = points.contiguous();
  const at::Tensor supports_c = supports.reshape({queries, 49, channels}).contiguous();
  if (detail::use_cuda(features, "local_corr4d")) {
#ifdef TRACKSCOPE_WITH_CUDA_OPS
    // A copy made here is a kernel of its own, which the correlation must then wait for.
    const bool copied = features_c.data_ptr() != features.data_ptr() || points_c.data_ptr() != points.data_ptr() ||
                        supports_c.data_ptr() != supports.data_ptr();
    detail::local_corr4d_cuda(features_c, points_c, supports_c, corr, kernel,
                              overlap_previous && !copied);  // writes the padding too
#endif
  } else {
    detail::local_corr4d_cpu(features_c, points_c, supports_c, corr);  // writes the padding too
  }
}

at::Tensor local_corr4d(const at::Tensor& features, const at::Tensor& points, const at::Tensor& supports,
                        CorrKernel kernel) {
  TORCH_CHECK(points.defined() && points.dim() == 3, "local_corr4d: points must be [n,T,2], got ",
              points.defined() ? points.sizes() : at::IntArrayRef{});
  at::Tensor corr = at::empty({points.size(0), points.size(1), 7, 7, 7, 7}, points.options().dtype(at::kFloat));
  local_corr4d_out(features, points, supports, corr, kernel);
  return corr;
}

}  // namespace trackscope::gpu::ops
