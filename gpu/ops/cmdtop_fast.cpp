// CMDTop with both branches in one pass: weights parsing, the prepared plan (GEMM-ready weights and im2col
// index tables on the device), and the forward pass as gather -> GEMM -> bias+GroupNorm+ReLU per layer.
// Contract in gpu/ops/ops.h; design and costs in docs/kernels.md.
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/constant_pad_nd.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <span>

#include "gpu/ops/kernels.h"
#include "gpu/ops/ops.h"

namespace trackscope::gpu::ops {
namespace {

constexpr int64_t kSide = core::locotrack::kSupportSize;  // correlation window side (7x7 target and support offsets)
constexpr int64_t kCorrPerSample = core::locotrack::kCorrPerSample;
constexpr int64_t kChannelsPerGroup = 16;
constexpr double kGroupNormEps = 1e-5;

struct SamePadding {
  int64_t output = 0;
  int64_t before = 0;  // top or left; the extra pixel of an odd total goes after (TensorFlow SAME)
};

SamePadding same_padding(int64_t input, int64_t kernel, int64_t stride) {
  SamePadding p;
  p.output = (input + stride - 1) / stride;
  const int64_t total = std::max((p.output - 1) * stride + kernel - input, int64_t{0});
  p.before = total / 2;
  return p;
}

// Index table of one conv layer: for each output position (oy, ox) and patch column (ci, ky, kx), the flat
// input element it reads, or -1 for padding. element(ci, y, x) maps an input coordinate to its flat index.
template <typename ElementIndex>
std::vector<int32_t> patch_table(int64_t in_height, int64_t in_width, int64_t in_channels, int64_t kernel,
                                 int64_t stride, const ElementIndex& element) {
  const SamePadding rows = same_padding(in_height, kernel, stride);
  const SamePadding columns = same_padding(in_width, kernel, stride);
  std::vector<int32_t> table;
  table.reserve(static_cast<size_t>(rows.output * columns.output * in_channels * kernel * kernel));
  for (int64_t oy = 0; oy < rows.output; ++oy) {
    for (int64_t ox = 0; ox < columns.output; ++ox) {
      for (int64_t ci = 0; ci < in_channels; ++ci) {
        for (int64_t ky = 0; ky < kernel; ++ky) {
          for (int64_t kx = 0; kx < kernel; ++kx) {
            const int64_t y = oy * stride - rows.before + ky;
            const int64_t x = ox * stride - columns.before + kx;
            const bool inside = y >= 0 && y < in_height && x >= 0 && x < in_width;
            table.push_back(inside ? static_cast<int32_t>(element(ci, y, x)) : -1);
          }
        }
      }
    }
  }
  return table;
}

at::Tensor int_tensor(const std::vector<int32_t>& values, c10::Device device) {
  at::Tensor t = at::empty({static_cast<int64_t>(values.size())}, at::TensorOptions().dtype(at::kInt));
  std::copy(values.begin(), values.end(), t.data_ptr<int32_t>());
  return t.to(device);
}

// The convolution of one layer as a dense matrix over the whole input row: row (block, c_out) holds the
// kernel weights at the input elements that block's patch reads (padding taps simply vanish). block =
// (branch, position) for layer 0 and position otherwise, so the GEMM output is already [rows, P, C_out].
// weight: [C_out, K] float32 on the CPU; table: [blocks * K] (-1 = padding).
at::Tensor dense_weight(const at::Tensor& weight, const std::vector<int32_t>& table, int64_t inputs) {
  const int64_t out_channels = weight.size(0);
  const int64_t patch = weight.size(1);
  const auto blocks = static_cast<int64_t>(table.size()) / patch;
  at::Tensor dense = at::zeros({blocks * out_channels, inputs}, at::TensorOptions().dtype(at::kFloat));
  float* d = dense.data_ptr<float>();
  const float* w = weight.data_ptr<float>();
  for (int64_t block = 0; block < blocks; ++block) {
    for (int64_t k = 0; k < patch; ++k) {
      const int32_t source = table[static_cast<size_t>(block * patch + k)];
      if (source < 0) continue;
      for (int64_t co = 0; co < out_channels; ++co)
        d[(block * out_channels + co) * inputs + source] += w[co * patch + k];
    }
  }
  return dense;
}

// The official layer stacks (docs/locotrack-spec.md §2.5 step 3): from_named takes kernels and strides from here,
// and the fused kernel is written for exactly these shapes.
struct StackLayer {
  int64_t out_channels, in_channels, kernel, stride;
};
constexpr std::array<StackLayer, 2> kSmallStack = {{{64, 49, 5, 4}, {128, 64, 2, 2}}};
constexpr std::array<StackLayer, 3> kBaseStack = {{{64, 49, 3, 2}, {128, 64, 3, 2}, {128, 128, 2, 2}}};

std::span<const StackLayer> official_stack(bool base) {
  if (base) return kBaseStack;
  return kSmallStack;
}

bool is_official_stack(const CmdTopWeights& weights) {
  const std::span<const StackLayer> expected = official_stack(weights.layers.size() == 3);
  if (weights.layers.size() != expected.size()) return false;
  for (size_t i = 0; i < expected.size(); ++i) {
    const CmdTopLayerWeights& l = weights.layers[i];
    if (l.conv_weight.size(0) != expected[i].out_channels || l.conv_weight.size(1) != expected[i].in_channels ||
        l.conv_weight.size(2) != expected[i].kernel || l.stride != expected[i].stride) {
      return false;
    }
  }
  return true;
}

bool fused_eligible(c10::Device device, bool base) {
#ifdef TRACKSCOPE_WITH_CUDA_OPS
  return detail::cmdtop_fused_eligible_cuda(device, base);
#else
  (void)device;
  (void)base;
  return false;
#endif
}

// Samples per block of the tensor-core kernel for bf16/fp16 on this device, 0 where it is not eligible.
int fused_mma_tile(c10::Device device, bool base, at::ScalarType dtype) {
#ifdef TRACKSCOPE_WITH_CUDA_OPS
  return detail::cmdtop_mma_tile_cuda(device, base, dtype);
#else
  (void)device;
  (void)base;
  (void)dtype;
  return 0;
#endif
}

bool is_compute_dtype(at::ScalarType t) { return t == at::kFloat || t == at::kBFloat16 || t == at::kHalf; }

// The layer-at-a-time building blocks of the CUDA GEMM paths (the CPU runs detail::cmdtop_forward_cpu).
void gather_columns(const at::Tensor& input, const at::Tensor& index, at::Tensor& output) {
#ifdef TRACKSCOPE_WITH_CUDA_OPS
  detail::gather_columns_cuda(input, index, output);
#else
  (void)input;
  (void)index;
  (void)output;
#endif
}

void bias_group_norm_relu(at::Tensor& x, const CmdTopFast::Layer& layer) {
#ifdef TRACKSCOPE_WITH_CUDA_OPS
  detail::bias_group_norm_relu_cuda(x, layer.conv_bias, layer.norm_weight, layer.norm_bias, layer.groups,
                                    kGroupNormEps);
#else
  (void)x;
  (void)layer;
#endif
}

}  // namespace

CmdTopWeights CmdTopWeights::from_named(const Lookup& lookup, const std::string& prefix) {
  TORCH_CHECK(static_cast<bool>(lookup), "CmdTopWeights::from_named: empty lookup function");
  CmdTopWeights weights;
  for (int layer = 0;; ++layer) {
    const std::string base = prefix + "conv." + std::to_string(layer) + ".";
    std::optional<at::Tensor> conv_weight = lookup(base + "0.weight");
    if (!conv_weight && layer >= 2) break;
    TORCH_CHECK(conv_weight.has_value(), "CmdTopWeights::from_named: missing ", base, "0.weight");
    CmdTopLayerWeights l;
    l.conv_weight = *conv_weight;
    const char* parts[3] = {"0.bias", "1.weight", "1.bias"};
    at::Tensor* targets[3] = {&l.conv_bias, &l.norm_weight, &l.norm_bias};
    for (int i = 0; i < 3; ++i) {
      std::optional<at::Tensor> t = lookup(base + parts[i]);
      TORCH_CHECK(t.has_value(), "CmdTopWeights::from_named: missing ", base, parts[i]);
      *targets[i] = *t;
    }
    weights.layers.push_back(l);
  }
  const bool small = weights.layers.size() == 2;
  TORCH_CHECK(small || weights.layers.size() == 3, "CmdTopWeights::from_named: ", prefix, " has ",
              weights.layers.size(), " conv layers; the official CMDTop has 2 (small) or 3 (base)");
  const std::span<const StackLayer> stack = official_stack(!small);
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    const at::Tensor& w = weights.layers[i].conv_weight;
    const int64_t kernel = stack[i].kernel;
    TORCH_CHECK(w.dim() == 4 && w.size(2) == kernel && w.size(3) == kernel, "CmdTopWeights::from_named: ", prefix,
                "conv.", i, ".0.weight has shape ", w.sizes(), ", expected a ", kernel, "x", kernel, " kernel for the ",
                small ? "small" : "base", " configuration");
    weights.layers[i].stride = stack[i].stride;
  }
  weights.check();
  return weights;
}

void CmdTopWeights::check() const {
  TORCH_CHECK(!layers.empty(), "CmdTopWeights: no layers");
  int64_t in_channels = 49;
  for (size_t i = 0; i < layers.size(); ++i) {
    const CmdTopLayerWeights& l = layers[i];
    TORCH_CHECK(l.conv_weight.defined() && l.conv_bias.defined() && l.norm_weight.defined() && l.norm_bias.defined(),
                "CmdTopWeights: layer ", i, " has an undefined tensor");
    TORCH_CHECK(l.conv_weight.dim() == 4 && l.conv_weight.size(1) == in_channels &&
                    l.conv_weight.size(2) == l.conv_weight.size(3) && l.conv_weight.size(2) > 0,
                "CmdTopWeights: layer ", i, " conv weight must be [C_out, ", in_channels, ", k, k], got ",
                l.conv_weight.sizes());
    const int64_t out_channels = l.conv_weight.size(0);
    TORCH_CHECK(out_channels > 0 && out_channels % kChannelsPerGroup == 0, "CmdTopWeights: layer ", i, " has ",
                out_channels, " output channels, not a positive multiple of ", kChannelsPerGroup,
                " (GroupNorm uses C/16 groups)");
    for (const at::Tensor* t : {&l.conv_bias, &l.norm_weight, &l.norm_bias}) {
      TORCH_CHECK(t->dim() == 1 && t->size(0) == out_channels, "CmdTopWeights: layer ", i,
                  " bias/norm tensors must be [", out_channels, "], got ", t->sizes());
    }
    TORCH_CHECK(l.stride >= 1, "CmdTopWeights: layer ", i, " stride must be >= 1, got ", l.stride);
    in_channels = out_channels;
  }
}

CmdTopFast::CmdTopFast(const CmdTopWeights& weights, c10::Device device, Options options)
    : device_(device), options_(options) {
  weights.check();
  TORCH_CHECK(is_compute_dtype(options.compute_dtype), "CmdTopFast: compute dtype must be float32, bfloat16 or ",
              "float16, got ", options.compute_dtype);
  TORCH_CHECK(options.max_samples_per_pass > 0, "CmdTopFast: max_samples_per_pass must be positive, got ",
              options.max_samples_per_pass);
  const auto float_options = at::TensorOptions().device(device).dtype(at::kFloat);
  const bool wants_fused = options.convolution == Convolution::fused || options.convolution == Convolution::automatic;
  if (wants_fused && device.is_cuda() && is_official_stack(weights)) {
    // float32: automatic takes the 3xTF32 tensor-core kernel, fused the FMA kernel (plain fp32 arithmetic);
    // bf16/fp16: the tensor-core kernel either way.
    const bool base = weights.layers.size() == 3;
    if (options.compute_dtype != at::kFloat || options.convolution == Convolution::automatic) {
      fused_tile_ = fused_mma_tile(device, base, options.compute_dtype);
    }
    fused_ = fused_tile_ > 0 || (options.compute_dtype == at::kFloat && fused_eligible(device, base));
  }
  int64_t height = kSide, width = kSide, channels = 49;
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    const CmdTopLayerWeights& w = weights.layers[i];
    const int64_t kernel = w.conv_weight.size(2);
    Layer layer;
    layer.channels = w.conv_weight.size(0);
    layer.groups = layer.channels / kChannelsPerGroup;
    layer.patch_length = channels * kernel * kernel;
    layer.conv_bias = w.conv_bias.to(float_options).contiguous();
    layer.norm_weight = w.norm_weight.to(float_options).contiguous();
    layer.norm_bias = w.norm_bias.to(float_options).contiguous();
    const SamePadding rows = same_padding(height, kernel, w.stride);
    const SamePadding columns = same_padding(width, kernel, w.stride);
    layer.positions = rows.output * columns.output;
    layer.kernel = kernel;
    layer.stride = w.stride;
    layer.in_height = height;
    layer.in_width = width;
    layer.in_channels = channels;
    layer.pad_top = rows.before;
    layer.pad_left = columns.before;
    layer.out_width = columns.output;
    if (device.is_cpu()) {
      // The CPU kernel's own layout (detail::cmdtop_forward_cpu): channels-last patches, columns (ky, kx, ci).
      layer.cpu_weight =
          w.conv_weight.to(at::kCPU, at::kFloat).permute({0, 2, 3, 1}).reshape({layer.channels, -1}).contiguous();
    } else if (fused_) {
#ifdef TRACKSCOPE_WITH_CUDA_OPS
      layer.fused_weight = fused_tile_ > 0 ? detail::cmdtop_mma_weight_cuda(w.conv_weight, height, w.stride,
                                                                            options.compute_dtype, device)
                                           : detail::cmdtop_fused_weight_cuda(w.conv_weight, device);
#endif
    } else {
      // Patch columns ordered (ci, ky, kx): the conv weight reshaped [C_out, C_in*k*k] without a copy.
      // Layer 0 reads both branches from the [h, w, i, j] correlation: branch 1 = channels (i,j) over space
      // (h,w), branch 2 = channels (h,w) over space (i,j); its table is [branch][position][patch column].
      // Later layers read the channels-last activation [positions, C]: element (ci, y, x) at (y*W + x)*C + ci.
      std::vector<int32_t> table;
      int64_t inputs = 0;  // length of one input row
      if (i == 0) {
        table = patch_table(height, width, channels, kernel, w.stride,
                            [](int64_t ci, int64_t y, int64_t x) { return (y * kSide + x) * 49 + ci; });
        const std::vector<int32_t> branch2 =
            patch_table(height, width, channels, kernel, w.stride,
                        [](int64_t ci, int64_t y, int64_t x) { return ci * 49 + y * kSide + x; });
        table.insert(table.end(), branch2.begin(), branch2.end());
        inputs = kCorrPerSample;
      } else {
        const int64_t in_width = width, in_channels = channels;
        table = patch_table(height, width, channels, kernel, w.stride,
                            [in_width, in_channels](int64_t ci, int64_t y, int64_t x) {
                              return (y * in_width + x) * in_channels + ci;
                            });
        inputs = height * width * channels;
      }
      std::vector<int32_t> sorted = table;
      std::sort(sorted.begin(), sorted.end());
      std::vector<int32_t> identity(static_cast<size_t>(inputs));
      std::iota(identity.begin(), identity.end(), 0);
      const bool permutation = sorted == identity;  // one position, no padding: dense costs what im2col costs
      const bool dense = permutation || options.convolution == Convolution::dense ||
                         (options.convolution == Convolution::automatic && device.is_cuda() &&
                          (options.compute_dtype != at::kFloat || weights.layers.size() == 2));
      const at::Tensor weight_cpu =
          w.conv_weight.to(at::kCPU, at::kFloat).reshape({layer.channels, layer.patch_length}).contiguous();
      at::Tensor weight_matrix;
      if (dense) {
        weight_matrix = dense_weight(weight_cpu, table, inputs);
        // Layer 0's matrix gets the padded row length (zero columns): padded correlation rows multiply it
        // directly, plain 2401-element rows multiply a narrowed view of it.
        if (i == 0) weight_matrix = at::constant_pad_nd(weight_matrix, {0, kCorrPaddedRow - kCorrPerSample}, 0.0);
      } else {
        // Patch rows padded to a multiple of 8 elements (zero weights, -1 = zero patch entries): K = 441 (base
        // layer 0) made every row of the GEMM operand misaligned, which kept cuBLAS off its fast kernels.
        const int64_t padded_length = (layer.patch_length + 7) / 8 * 8;
        if (padded_length != layer.patch_length) {
          std::vector<int32_t> padded;
          padded.reserve(table.size() / static_cast<size_t>(layer.patch_length) * static_cast<size_t>(padded_length));
          for (size_t start = 0; start < table.size(); start += static_cast<size_t>(layer.patch_length)) {
            padded.insert(padded.end(), table.begin() + static_cast<std::ptrdiff_t>(start),
                          table.begin() + static_cast<std::ptrdiff_t>(start + static_cast<size_t>(layer.patch_length)));
            padded.insert(padded.end(), static_cast<size_t>(padded_length - layer.patch_length), -1);
          }
          table = std::move(padded);
          layer.patch_length = padded_length;
        }
        weight_matrix = at::constant_pad_nd(weight_cpu, {0, layer.patch_length - weight_cpu.size(1)}, 0.0);
        layer.gather_index = int_tensor(table, device);
      }
      weight_matrix = weight_matrix.to(float_options.dtype(options.compute_dtype)).contiguous();
      layer.weight_matrix = weight_matrix.to(device);
    }
    layers_.push_back(layer);
    height = rows.output;
    width = columns.output;
    channels = layer.channels;
  }
  last_channels_ = channels;
}

namespace {
bool is_padded_rows(const at::Tensor& corr) { return corr.dim() == 2 && corr.size(1) == kCorrPaddedRow; }
}  // namespace

void CmdTopFast::forward_out(const at::Tensor& corr, at::Tensor& out, bool overlap_previous) const {
  TORCH_CHECK(corr.defined() && out.defined(), "cmdtop_fast: undefined tensor argument");
  const bool padded = is_padded_rows(corr);
  TORCH_CHECK(padded || (corr.dim() >= 4 && corr.size(-1) == kSide && corr.size(-2) == kSide &&
                         corr.size(-3) == kSide && corr.size(-4) == kSide),
              "cmdtop_fast: corr must be [..., 7, 7, 7, 7] or padded rows [M, ", kCorrPaddedRow, "], got ",
              corr.sizes());
  TORCH_CHECK(is_compute_dtype(corr.scalar_type()), "cmdtop_fast: corr must be float32, bfloat16 or float16, got ",
              corr.scalar_type());
  TORCH_CHECK(corr.device() == device_ && out.device() == device_, "cmdtop_fast: the encoder lives on ", device_,
              " but corr is on ", corr.device(), " and out on ", out.device());
  const int64_t samples = padded ? corr.size(0) : corr.numel() / kCorrPerSample;
  TORCH_CHECK(out.dim() == 2 && out.size(0) == samples && out.size(1) == output_channels() && out.stride(1) == 1 &&
                  out.stride(0) >= output_channels() && out.scalar_type() == options_.compute_dtype,
              "cmdtop_fast: out must be a ", options_.compute_dtype, " [", samples, ",", output_channels(),
              "] tensor with unit column stride, got ", out.scalar_type(), " ", out.sizes(), " strides ",
              out.strides());
  if (samples == 0) return;
  // Strided output rows: the tensor-core kernel writes them directly (even row strides), the other paths into a
  // contiguous temporary.
  if (!out.is_contiguous() && !(fused_tile_ > 0 && out.stride(0) % 2 == 0)) {
    // Never beside the previous kernel here: the temporary may reuse memory that kernel still reads.
    at::Tensor rows = at::empty(out.sizes(), out.options());
    forward_out(corr, rows);
    out.copy_(rows);
    return;
  }

  const at::Tensor input = padded ? corr.contiguous() : corr.reshape({samples, kCorrPerSample}).contiguous();
#ifdef TRACKSCOPE_WITH_CUDA_OPS
  if (fused_tile_ > 0) {
    const at::ScalarType dtype = options_.compute_dtype;
    // A copy or a conversion here is a kernel of its own, which the encoder must then wait for.
    const bool copied = !input.is_same(corr);
    const bool converted = input.scalar_type() != dtype;
    detail::cmdtop_mma_cuda(converted ? input.to(dtype) : input, layers_, fused_tile_, kGroupNormEps, out,
                            overlap_previous && !copied && !converted);
    return;
  }
  if (fused_) {
    detail::cmdtop_fused_cuda(input.scalar_type() == at::kFloat ? input : input.to(at::kFloat), layers_, kGroupNormEps,
                              out);
    return;
  }
#endif
  if (input.device().is_cpu()) {
    detail::cmdtop_forward_cpu(input, layers_, kGroupNormEps, out);
    return;
  }
  detail::use_cuda(input, "cmdtop_fast");  // throws where this build has no CUDA kernels
  const auto compute = input.options().dtype(options_.compute_dtype);
  const int64_t samples_per_pass = options_.max_samples_per_pass;
  for (int64_t m0 = 0; m0 < samples; m0 += samples_per_pass) {
    const int64_t count = std::min(samples_per_pass, samples - m0);
    const int64_t rows = 2 * count;  // (sample, branch)
    at::Tensor activation;           // [rows, positions, channels] channels-last
    at::Tensor out_rows = out.narrow(0, m0, count).view({rows, last_channels_});
    for (size_t i = 0; i < layers_.size(); ++i) {
      const Layer& layer = layers_[i];
      // Layer 0 reads one correlation row per sample; later layers one activation row per (sample, branch).
      const at::Tensor flat =
          i == 0 ? input.narrow(0, m0, count) : activation.view({rows, activation.size(1) * activation.size(2)});
      at::Tensor product;
      if (layer.gather_index.defined()) {
        at::Tensor patches = at::empty({flat.size(0), layer.gather_index.size(0)}, compute);
        gather_columns(flat, layer.gather_index, patches);
        product = at::matmul(patches.view({rows * layer.positions, layer.patch_length}), layer.weight_matrix.t());
      } else {
        const at::Tensor operand =
            flat.scalar_type() == options_.compute_dtype ? flat : flat.to(options_.compute_dtype);
        const at::Tensor weight =
            i == 0 && !padded ? layer.weight_matrix.narrow(1, 0, kCorrPerSample) : layer.weight_matrix;
        if (i + 1 == layers_.size() && layer.positions == 1) {
          at::mm_out(out_rows, operand, weight.t());  // the last layer writes the output directly
          product = out_rows;
        } else {
          product = at::matmul(operand, weight.t());
        }
      }
      activation = product.view({rows, layer.positions, layer.channels});
      bias_group_norm_relu(activation, layer);
    }
    if (activation.data_ptr() != out_rows.data_ptr()) {
      const at::Tensor pooled =
          activation.size(1) == 1 ? activation.view({rows, last_channels_}) : at::mean(activation, {1});
      out_rows.copy_(pooled);
    }
  }
}

at::Tensor CmdTopFast::forward(const at::Tensor& corr) const {
  TORCH_CHECK(corr.defined() && (corr.dim() >= 4 || is_padded_rows(corr)),
              "cmdtop_fast: corr must be [..., 7, 7, 7, 7] or padded rows, got ",
              corr.defined() ? corr.sizes() : at::IntArrayRef{});
  const int64_t samples = is_padded_rows(corr) ? corr.size(0) : corr.numel() / kCorrPerSample;
  at::Tensor out = at::empty({samples, output_channels()}, corr.options().dtype(options_.compute_dtype));
  forward_out(corr, out);
  if (is_padded_rows(corr)) return out;
  std::vector<int64_t> shape(corr.sizes().begin(), corr.sizes().end() - 4);
  shape.push_back(output_channels());
  return out.view(shape);
}

at::Tensor cmdtop_fast(const at::Tensor& corr, const CmdTopWeights& weights) {
  TORCH_CHECK(corr.defined(), "cmdtop_fast: undefined corr");
  return CmdTopFast(weights, corr.device(), CmdTopFast::Options{}).forward(corr);
}

}  // namespace trackscope::gpu::ops
