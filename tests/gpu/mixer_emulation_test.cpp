// The fused temporal mixer's kernels (gpu/ops/cuda/mixer_kernels.cuh), their exact source, run on the CPU through
// tests/gpu/cuda_emulation.h (a thread per CUDA thread, warp shuffles and barriers emulated, shared-memory race and
// bounds checks) against double-precision references: the row producers (copy, LayerNorm, GELU; plain rows and the
// 3xTF32 split), the ALiBi attention (several query and key tiles, forward and backward heads) and the head. Then the
// whole mixer as gpu/ops/mixer_fast.cpp composes it (operand rows with a ones column, weights packed by
// pack_mixer_linear, GEMMs over the packed operands computed here in double as the tensor cores compute them on
// exact TF32 / fp16 values) against a plain double implementation of docs/locotrack-spec.md's transformer: this checks
// the layout, the packing and the split without a GPU. cuBLAS itself is checked on the GPU (gpu/ops_cuda, MixerCuda).
// Torch-free: it builds in the CPU-only CI. Fresh random values each run (seed printed; TRACKSCOPE_TEST_SEED repeats).
#include "cuda_emulation.h"  // first: the kernel header takes its primitives from it

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "alibi_attention_reference.h"
#include "gpu/ops/cuda/mixer_kernels.cuh"
#include "gpu/ops/cuda/mixer_layout.h"

namespace trackscope::test {
namespace {

namespace cuda = gpu::ops::cuda;
namespace mixer = gpu::ops::cuda::mixer;
namespace emu = cuda_emulation;

uint64_t test_seed() { return cuda_emulation::test_seed("mixer emulation"); }

// Storage of a tag on the host: float, or 16-bit patterns.
template <class Tag>
using Raw = std::conditional_t<std::is_same_v<Tag, cuda::F32Tag>, float, uint16_t>;
template <class Tag>
float to_float(Raw<Tag> v) {
  if constexpr (std::is_same_v<Tag, cuda::F32Tag>) {
    return v;
  } else {
    return emu::element_to_float<Tag>(v);
  }
}
template <class Tag>
Raw<Tag> from_float(float v) {
  if constexpr (std::is_same_v<Tag, cuda::F32Tag>) {
    return v;
  } else {
    return emu::float_to_element<Tag>(v);
  }
}
template <class Tag>
float round_to(float v) {
  return to_float<Tag>(from_float<Tag>(v));
}
template <class Tag>
const char* tag_name() {
  return std::is_same_v<Tag, cuda::F32Tag> ? "fp32" : std::is_same_v<Tag, cuda::Fp16Tag> ? "fp16" : "bf16";
}
template <class Tag>
Raw<Tag> poison() {
  if constexpr (std::is_same_v<Tag, cuda::F32Tag>) {
    return std::nanf("");
  } else {
    return std::is_same_v<Tag, cuda::Fp16Tag> ? uint16_t{0x7e01} : uint16_t{0x7fc1};
  }
}
template <class Tag>
bool is_poison(Raw<Tag> v) {
  if constexpr (std::is_same_v<Tag, cuda::F32Tag>) {
    return std::isnan(v);
  } else {
    return v == poison<Tag>();
  }
}
bool is_tf32(float v) { return (emu::float_bits(v) & 0x1fffu) == 0u; }

// Relative tolerance of one stored value of a tag (one rounding, plus fp32 arithmetic).
template <class Tag>
double storage_tolerance() {
  return std::is_same_v<Tag, cuda::F32Tag> ? 2e-6 : std::is_same_v<Tag, cuda::Fp16Tag> ? 2e-3 : 1.6e-2;
}

struct Figures {
  double max_abs_diff = 0.0;
  double max_abs_expected = 0.0;
  int bad = 0;  // layout violations (tail, TF32 operands, blocks that differ, poison where a value belongs)
  void add(double actual, double expected) {
    const double d = std::fabs(actual - expected);
    max_abs_diff = std::max(max_abs_diff, std::isnan(d) ? INFINITY : d);
    max_abs_expected = std::max(max_abs_expected, std::fabs(expected));
  }
  double relative() const { return max_abs_diff / std::max(max_abs_expected, 1e-30); }
};

// Reads column c of an operand row (plain: the value; split3: small + big, checking the form) and the tail.
template <class Tag, bool Split>
double operand_value(const Raw<Tag>* row, int kp, int c, Figures& f) {
  if constexpr (Split) {
    const float small = row[c], big = row[kp + c], again = row[2 * kp + c];
    if (!is_tf32(small) || !is_tf32(big) || emu::float_bits(big) != emu::float_bits(again)) ++f.bad;
    return static_cast<double>(small) + static_cast<double>(big);
  } else {
    if (is_poison<Tag>(row[c])) ++f.bad;
    return to_float<Tag>(row[c]);
  }
}
template <class Tag, bool Split>
void check_tail(const Raw<Tag>* row, int k, int kp, Figures& f) {
  for (int c = k; c < kp; ++c) {
    const float one = c == k ? 1.0f : 0.0f;
    if constexpr (Split) {
      if (row[c] != 0.0f || row[kp + c] != one || row[2 * kp + c] != one) ++f.bad;
    } else {
      if (to_float<Tag>(row[c]) != one) ++f.bad;
    }
  }
}

std::vector<float> random_vector(size_t n, std::mt19937_64& rng, float scale, float offset = 0.0f) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = offset + scale * normal(rng);
  return v;
}

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

void layer_norm(const double* x, int k, const float* gamma, const float* beta, double* y) {
  double mean = 0.0, variance = 0.0;
  for (int c = 0; c < k; ++c) mean += x[c];
  mean /= k;
  for (int c = 0; c < k; ++c) variance += (x[c] - mean) * (x[c] - mean);
  variance /= k;
  for (int c = 0; c < k; ++c) y[c] = (x[c] - mean) / std::sqrt(variance + 1e-5) * gamma[c] + beta[c];
}

void expect_clean(const std::vector<std::string>& errors, const std::string& label) {
  for (const std::string& e : errors) ADD_FAILURE() << label << ": " << e;
  EXPECT_TRUE(errors.empty()) << label;
}

// -- rows ------------------------------------------------------------------------------------------------------
template <class Tag, cuda::MixerRowOp Op, bool Split>
void check_rows(int k, int64_t rows) {
  std::mt19937_64 rng(test_seed() + static_cast<uint64_t>(k) * 7 + static_cast<uint64_t>(Op) * 131 + (Split ? 3 : 0));
  const float offset = Op == cuda::MixerRowOp::layer_norm ? 0.7f : 0.0f;  // LayerNorm must remove a mean
  const std::vector<float> values = random_vector(static_cast<size_t>(rows * k), rng, 1.5f, offset);
  const std::vector<float> gamma = random_vector(static_cast<size_t>(k), rng, 0.2f, 1.0f);
  const std::vector<float> beta = random_vector(static_cast<size_t>(k), rng, 0.2f);
  const int64_t x_stride = k + 5;  // rows with a gap: the stride is honoured
  std::vector<Raw<Tag>> x(static_cast<size_t>(rows * x_stride), from_float<Tag>(1e4f));
  for (int64_t r = 0; r < rows; ++r) {
    for (int c = 0; c < k; ++c) x[static_cast<size_t>(r * x_stride + c)] = from_float<Tag>(values[r * k + c]);
  }
  const int kp = cuda::mixer_padded_k(k);
  const int blocks = cuda::mixer_blocks(Split);
  const int64_t y_stride = blocks * kp;
  std::vector<Raw<Tag>> y(static_cast<size_t>((rows + 1) * y_stride), poison<Tag>());  // + a row that must stay

  cuda::MixerRowsParams p;
  p.x = x.data();
  p.x_stride = x_stride;
  p.rows = rows;
  p.k = k;
  p.gamma = gamma.data();
  p.beta = beta.data();
  p.y = y.data();
  p.y_stride = y_stride;
  p.kp = kp;
  const int64_t grid = (rows + mixer::kRowWarps - 1) / mixer::kRowWarps;
  const auto errors =
      emu::run_blocks(0, grid, cuda::kMixerRowThreads, 0, [&] { mixer::mixer_rows_kernel<Tag, Tag, Split>(p, Op); });

  Figures f;
  std::vector<double> in(static_cast<size_t>(k)), expected(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    for (int c = 0; c < k; ++c) in[c] = to_float<Tag>(x[static_cast<size_t>(r * x_stride + c)]);
    if (Op == cuda::MixerRowOp::layer_norm) {
      layer_norm(in.data(), k, gamma.data(), beta.data(), expected.data());
    } else {
      for (int c = 0; c < k; ++c) expected[c] = Op == cuda::MixerRowOp::gelu ? gelu(in[c]) : in[c];
    }
    const Raw<Tag>* row = &y[static_cast<size_t>(r * y_stride)];
    for (int c = 0; c < k; ++c) f.add(operand_value<Tag, Split>(row, kp, c, f), expected[c]);
    check_tail<Tag, Split>(row, k, kp, f);
  }
  for (int64_t c = 0; c < y_stride; ++c) f.bad += is_poison<Tag>(y[static_cast<size_t>(rows * y_stride + c)]) ? 0 : 1;
  const char* op = Op == cuda::MixerRowOp::copy ? "copy" : Op == cuda::MixerRowOp::gelu ? "gelu" : "layer_norm";
  const std::string label = std::string("rows ") + op + " " + tag_name<Tag>() + (Split ? " split3" : " plain") +
                            " k=" + std::to_string(k) + " rows=" + std::to_string(rows);
  // split3: the split keeps ~2^-22 of each value; otherwise one rounding to the storage type.
  const double tolerance = Split ? 2e-6 : storage_tolerance<Tag>();
  std::printf("[mixer emulation] %s: max|diff| %.3g max|ref| %.3g rel %.3g (tolerance %.3g), layout errors %d\n",
              label.c_str(), f.max_abs_diff, f.max_abs_expected, f.relative(), tolerance, f.bad);
  expect_clean(errors, label);
  EXPECT_EQ(f.bad, 0) << label;
  EXPECT_LE(f.relative(), tolerance) << label;
  EXPECT_GT(f.max_abs_expected, 0.5) << label;
}

TEST(MixerEmulation, RowsLayerNormMatchesTheReference) {
  check_rows<cuda::F32Tag, cuda::MixerRowOp::layer_norm, true>(384, 11);
  check_rows<cuda::F32Tag, cuda::MixerRowOp::layer_norm, false>(256, 9);
  check_rows<cuda::Fp16Tag, cuda::MixerRowOp::layer_norm, false>(384, 9);
  check_rows<cuda::Bf16Tag, cuda::MixerRowOp::layer_norm, false>(256, 9);
}
TEST(MixerEmulation, RowsGeluAndCopyMatchTheReference) {
  check_rows<cuda::F32Tag, cuda::MixerRowOp::gelu, true>(1536, 9);
  check_rows<cuda::Fp16Tag, cuda::MixerRowOp::gelu, false>(1024, 9);
  check_rows<cuda::F32Tag, cuda::MixerRowOp::copy, true>(864, 9);
  check_rows<cuda::Bf16Tag, cuda::MixerRowOp::copy, false>(854, 9);
}

// -- attention -------------------------------------------------------------------------------------------------

template <class Tag, bool Split>
void check_attention(int64_t sequences, int frames, int heads) {
  std::mt19937_64 rng(test_seed() + static_cast<uint64_t>(frames) * 17 + static_cast<uint64_t>(heads));
  const int dim = heads * 64;
  const int64_t rows = sequences * frames;
  const int64_t qkv_stride = 3 * dim + 8;
  std::vector<Raw<Tag>> qkv(static_cast<size_t>(rows * qkv_stride), from_float<Tag>(1e4f));
  const std::vector<float> values = random_vector(static_cast<size_t>(rows * 3 * dim), rng, 1.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int c = 0; c < 3 * dim; ++c) {
      qkv[static_cast<size_t>(r * qkv_stride + c)] = from_float<Tag>(values[static_cast<size_t>(r * 3 * dim + c)]);
    }
  }
  const std::vector<float> slopes = alibi_slopes_reference(heads);
  const int kp = cuda::mixer_padded_k(dim);
  const int64_t out_stride = cuda::mixer_blocks(Split) * kp;
  std::vector<Raw<Tag>> out(static_cast<size_t>((rows + 1) * out_stride), poison<Tag>());
  cuda::MixerAttentionParams p;
  p.qkv = qkv.data();
  p.qkv_stride = qkv_stride;
  p.sequences = sequences;
  p.frames = frames;
  p.heads = heads;
  p.slopes = slopes.data();
  p.scale = 0.125f;
  p.out = out.data();
  p.out_stride = out_stride;
  p.kp = kp;
  const int64_t tiles = (frames + cuda::kMixerAttentionRows - 1) / cuda::kMixerAttentionRows;
  const auto errors =
      emu::run_blocks(0, sequences * heads * tiles, cuda::kMixerAttentionRows, mixer::kAttentionSharedBytes,
                      [&] { mixer::mixer_attention_kernel<Tag, Tag, Split>(p); });
  Figures f;
  for (int64_t s = 0; s < sequences; ++s) {
    std::vector<double> sequence_qkv(static_cast<size_t>(frames * 3 * dim));
    for (int i = 0; i < frames; ++i) {
      for (int c = 0; c < 3 * dim; ++c) {
        sequence_qkv[i * 3 * dim + c] = to_float<Tag>(qkv[static_cast<size_t>((s * frames + i) * qkv_stride + c)]);
      }
    }
    const std::vector<double> expected = reference_alibi_attention(sequence_qkv, frames, heads, slopes);
    for (int i = 0; i < frames; ++i) {
      const Raw<Tag>* row = &out[static_cast<size_t>((s * frames + i) * out_stride)];
      for (int c = 0; c < dim; ++c) f.add(operand_value<Tag, Split>(row, kp, c, f), expected[i * dim + c]);
      check_tail<Tag, Split>(row, dim, kp, f);
    }
  }
  for (int64_t c = 0; c < out_stride; ++c)
    f.bad += is_poison<Tag>(out[static_cast<size_t>(rows * out_stride + c)]) ? 0 : 1;
  const std::string label = std::string("attention ") + tag_name<Tag>() + (Split ? " split3" : " plain") +
                            " sequences=" + std::to_string(sequences) + " T=" + std::to_string(frames) +
                            " heads=" + std::to_string(heads);
  const double tolerance = Split ? 5e-6 : storage_tolerance<Tag>();
  std::printf("[mixer emulation] %s: max|diff| %.3g max|ref| %.3g rel %.3g (tolerance %.3g), layout errors %d\n",
              label.c_str(), f.max_abs_diff, f.max_abs_expected, f.relative(), tolerance, f.bad);
  expect_clean(errors, label);
  EXPECT_EQ(f.bad, 0) << label;
  EXPECT_LE(f.relative(), tolerance) << label;
  EXPECT_GT(f.max_abs_expected, 0.3) << label;
}

// T = 47: one query tile, two key tiles (the second partial); T = 70: two query tiles (the second mostly idle threads)
// and three key tiles, backward-head rows whose first key tile is entirely masked.
TEST(MixerEmulation, AttentionMatchesTheReference) {
  check_attention<cuda::F32Tag, true>(2, 47, 4);
  check_attention<cuda::Fp16Tag, false>(1, 47, 6);
  check_attention<cuda::F32Tag, false>(1, 70, 6);
  check_attention<cuda::Bf16Tag, false>(1, 5, 2);
}

// -- head ------------------------------------------------------------------------------------------------------
template <class Tag>
void check_head(int k, int64_t rows) {
  std::mt19937_64 rng(test_seed() + static_cast<uint64_t>(k) * 29);
  const std::vector<float> values = random_vector(static_cast<size_t>(rows * k), rng, 1.0f, 0.3f);
  const std::vector<float> gamma = random_vector(static_cast<size_t>(k), rng, 0.2f, 1.0f);
  const std::vector<float> beta = random_vector(static_cast<size_t>(k), rng, 0.2f);
  const std::vector<float> weight = random_vector(static_cast<size_t>(int64_t{4} * k), rng, 0.05f);
  const std::vector<float> bias = random_vector(4, rng, 0.5f);
  std::vector<Raw<Tag>> x(static_cast<size_t>(rows * k));
  for (size_t i = 0; i < x.size(); ++i) x[i] = from_float<Tag>(values[i]);
  std::vector<float> out(static_cast<size_t>((rows + 1) * 4), std::nanf(""));
  cuda::MixerHeadParams p;
  p.x = x.data();
  p.x_stride = k;
  p.rows = rows;
  p.k = k;
  p.gamma = gamma.data();
  p.beta = beta.data();
  p.weight = weight.data();
  p.bias = bias.data();
  p.out = out.data();
  const auto errors = emu::run_blocks(0, (rows + mixer::kRowWarps - 1) / mixer::kRowWarps, cuda::kMixerRowThreads, 0,
                                      [&] { mixer::mixer_head_kernel<Tag>(p); });
  Figures f;
  std::vector<double> in(static_cast<size_t>(k)), normalised(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    for (int c = 0; c < k; ++c) in[c] = to_float<Tag>(x[static_cast<size_t>(r * k + c)]);
    layer_norm(in.data(), k, gamma.data(), beta.data(), normalised.data());
    for (int o = 0; o < 4; ++o) {
      double expected = bias[o];
      for (int c = 0; c < k; ++c) expected += normalised[c] * weight[o * k + c];
      f.add(out[static_cast<size_t>(r * 4 + o)], expected);
    }
  }
  for (int o = 0; o < 4; ++o) f.bad += std::isnan(out[static_cast<size_t>(rows * 4 + o)]) ? 0 : 1;
  const std::string label = std::string("head ") + tag_name<Tag>() + " k=" + std::to_string(k);
  std::printf("[mixer emulation] %s: max|diff| %.3g max|ref| %.3g rel %.3g (tolerance 2e-6), layout errors %d\n",
              label.c_str(), f.max_abs_diff, f.max_abs_expected, f.relative(), f.bad);
  expect_clean(errors, label);
  EXPECT_EQ(f.bad, 0) << label;
  EXPECT_LE(f.relative(), 2e-6) << label;  // fp32 arithmetic on the stored inputs
}

TEST(MixerEmulation, HeadMatchesTheReference) {
  check_head<cuda::F32Tag>(384, 13);
  check_head<cuda::Bf16Tag>(256, 9);
}

// -- the whole mixer, composed as gpu/ops/mixer_fast.cpp does ------------------------------------------------------
struct Linear {
  int n = 0, k = 0;
  std::vector<float> weight, bias;  // [n][k], [n]
};
struct Norm {
  std::vector<float> gamma, beta;
};
struct Layer {
  Norm ln1, ln2;
  Linear q, k, v, f, in, out;  // attention projections, dense.0 (dim -> 4 dim), dense.2 (4 dim -> dim)
};
struct Weights {
  int dim = 0, heads = 0, input = 0;
  Linear input_proj, output_proj;  // output_proj: the 4 used rows
  std::vector<Layer> layers;
  Norm ln_out;
};

Linear random_linear(int n, int k, std::mt19937_64& rng) {
  Linear l;
  l.n = n;
  l.k = k;
  const float bound = 1.0f / std::sqrt(static_cast<float>(k));
  std::uniform_real_distribution<float> uniform(-bound, bound);
  for (int i = 0; i < n * k; ++i) l.weight.push_back(uniform(rng));
  for (int i = 0; i < n; ++i) l.bias.push_back(uniform(rng));
  return l;
}
Norm random_norm(int k, std::mt19937_64& rng) {
  return {random_vector(static_cast<size_t>(k), rng, 0.1f, 1.0f), random_vector(static_cast<size_t>(k), rng, 0.1f)};
}
Weights random_weights(int dim, int input, std::mt19937_64& rng) {
  Weights w;
  w.dim = dim;
  w.heads = dim / 64;
  w.input = input;
  w.input_proj = random_linear(dim, input, rng);
  for (int l = 0; l < 3; ++l) {
    Layer layer;
    layer.ln1 = random_norm(dim, rng);
    layer.ln2 = random_norm(dim, rng);
    layer.q = random_linear(dim, dim, rng);
    layer.k = random_linear(dim, dim, rng);
    layer.v = random_linear(dim, dim, rng);
    layer.f = random_linear(dim, dim, rng);
    layer.in = random_linear(4 * dim, dim, rng);
    layer.out = random_linear(dim, 4 * dim, rng);
    w.layers.push_back(std::move(layer));
  }
  w.ln_out = random_norm(dim, rng);
  w.output_proj = random_linear(4, dim, rng);
  return w;
}

void linear(const Linear& l, const std::vector<double>& x, int64_t rows, std::vector<double>& y) {
  y.assign(static_cast<size_t>(rows * l.n), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int n = 0; n < l.n; ++n) {
      double s = l.bias[n];
      for (int c = 0; c < l.k; ++c) s += x[r * l.k + c] * l.weight[static_cast<size_t>(n) * l.k + c];
      y[r * l.n + n] = s;
    }
  }
}

// docs/locotrack-spec.md's mixer in double: input_proj, 3 pre-LN layers, ln_out, output_proj rows 0..3.
std::vector<double> reference_mixer(const Weights& w, const std::vector<double>& x, int64_t sequences, int frames) {
  const int64_t rows = sequences * frames;
  const int d = w.dim;
  std::vector<double> h, a(static_cast<size_t>(rows * d)), t, qkv(static_cast<size_t>(rows * 3 * d)), u;
  linear(w.input_proj, x, rows, h);
  const std::vector<float> slopes = alibi_slopes_reference(w.heads);
  for (const Layer& layer : w.layers) {
    for (int64_t r = 0; r < rows; ++r) {
      layer_norm(&h[r * d], d, layer.ln1.gamma.data(), layer.ln1.beta.data(), &a[r * d]);
    }
    int part = 0;
    for (const Linear* l : {&layer.q, &layer.k, &layer.v}) {
      linear(*l, a, rows, t);
      for (int64_t r = 0; r < rows; ++r) {
        for (int c = 0; c < d; ++c) qkv[r * 3 * d + part * d + c] = t[r * d + c];
      }
      ++part;
    }
    for (int64_t s = 0; s < sequences; ++s) {
      const std::vector<double> one(qkv.begin() + s * frames * 3 * d, qkv.begin() + (s + 1) * frames * 3 * d);
      const std::vector<double> attended = reference_alibi_attention(one, frames, w.heads, slopes);
      std::copy(attended.begin(), attended.end(), a.begin() + s * frames * d);
    }
    linear(layer.f, a, rows, t);
    for (size_t i = 0; i < h.size(); ++i) h[i] += t[i];
    for (int64_t r = 0; r < rows; ++r) {
      layer_norm(&h[r * d], d, layer.ln2.gamma.data(), layer.ln2.beta.data(), &a[r * d]);
    }
    linear(layer.in, a, rows, u);
    for (double& v : u) v = gelu(v);
    linear(layer.out, u, rows, t);
    for (size_t i = 0; i < h.size(); ++i) h[i] += t[i];
  }
  std::vector<double> out;
  for (int64_t r = 0; r < rows; ++r) {
    layer_norm(&h[r * d], d, w.ln_out.gamma.data(), w.ln_out.beta.data(), &a[r * d]);
  }
  a.resize(static_cast<size_t>(rows * d));
  linear(w.output_proj, a, rows, out);
  return out;
}

// W' of one or several stacked linear layers (the QKV projection is q, k, v stacked), in the storage of Tag.
template <class Tag, bool Split>
std::vector<Raw<Tag>> packed(const std::vector<const Linear*>& parts) {
  const int k = parts.front()->k;
  const int width = cuda::mixer_blocks(Split) * cuda::mixer_padded_k(k);
  std::vector<float> all;
  for (const Linear* l : parts) {
    std::vector<float> one(static_cast<size_t>(l->n * width));
    cuda::pack_mixer_linear(l->weight.data(), l->bias.data(), l->n, k, Split, one.data());
    all.insert(all.end(), one.begin(), one.end());
  }
  std::vector<Raw<Tag>> out(all.size());
  for (size_t i = 0; i < all.size(); ++i) out[i] = from_float<Tag>(all[i]);
  return out;
}

// C [rows][n] (+)= A' [rows][width] W'^T: the products of the stored operand values, summed in double, stored once
// (the tensor cores multiply TF32 / fp16 values exactly and accumulate in fp32; double here bounds that by fp32's
// own rounding of the result).
template <class Tag>
void gemm(const std::vector<Raw<Tag>>& a, int64_t rows, int width, const std::vector<Raw<Tag>>& w, int n,
          std::vector<Raw<Tag>>& c, bool accumulate) {
  if (!accumulate) c.assign(static_cast<size_t>(rows * n), from_float<Tag>(0.0f));
  for (int64_t r = 0; r < rows; ++r) {
    for (int j = 0; j < n; ++j) {
      double s = accumulate ? to_float<Tag>(c[static_cast<size_t>(r * n + j)]) : 0.0;
      for (int i = 0; i < width; ++i) {
        s += static_cast<double>(to_float<Tag>(a[static_cast<size_t>(r * width + i)])) *
             to_float<Tag>(w[static_cast<size_t>(j) * width + i]);
      }
      c[static_cast<size_t>(r * n + j)] = from_float<Tag>(static_cast<float>(s));
    }
  }
}

template <class Tag, bool Split>
void run_rows(cuda::MixerRowOp op, const std::vector<Raw<Tag>>& x, int64_t x_stride, int64_t rows, int k,
              const Norm* norm, std::vector<Raw<Tag>>& y, std::vector<std::string>& errors) {
  const int kp = cuda::mixer_padded_k(k);
  y.assign(static_cast<size_t>(rows * cuda::mixer_blocks(Split) * kp), poison<Tag>());
  cuda::MixerRowsParams p;
  p.x = x.data();
  p.x_stride = x_stride;
  p.rows = rows;
  p.k = k;
  p.gamma = norm != nullptr ? norm->gamma.data() : nullptr;
  p.beta = norm != nullptr ? norm->beta.data() : nullptr;
  p.y = y.data();
  p.y_stride = cuda::mixer_blocks(Split) * kp;
  p.kp = kp;
  std::vector<std::string> e =
      emu::run_blocks(0, (rows + mixer::kRowWarps - 1) / mixer::kRowWarps, cuda::kMixerRowThreads, 0,
                      [&] { mixer::mixer_rows_kernel<Tag, Tag, Split>(p, op); });
  errors.insert(errors.end(), e.begin(), e.end());
}

template <class Tag, bool Split>
void check_whole_mixer(int dim, int64_t sequences, int frames, double tolerance) {
  std::mt19937_64 rng(test_seed() + static_cast<uint64_t>(dim) + (Split ? 5 : 0));
  constexpr int kInput = 864;  // the engine's mixer input: 854 channels and 10 zero columns
  const Weights w = random_weights(dim, kInput, rng);
  const int64_t rows = sequences * frames;
  std::vector<double> x(static_cast<size_t>(rows * kInput), 0.0);
  std::vector<Raw<Tag>> x_stored(x.size());
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int c = 0; c < kInput; ++c) {
      const float v = c < 854 ? normal(rng) : 0.0f;
      x_stored[static_cast<size_t>(r * kInput + c)] = from_float<Tag>(v);
      x[static_cast<size_t>(r * kInput + c)] = to_float<Tag>(x_stored[static_cast<size_t>(r * kInput + c)]);
    }
  }
  const std::vector<double> expected = reference_mixer(w, x, sequences, frames);

  std::vector<std::string> errors;
  const int dp = cuda::mixer_padded_k(dim), fp = cuda::mixer_padded_k(4 * dim), ip = cuda::mixer_padded_k(kInput);
  const int blocks = cuda::mixer_blocks(Split);
  // Input projection: operand rows of the input, one GEMM.
  std::vector<Raw<Tag>> a, h, qkv, u;
  run_rows<Tag, Split>(cuda::MixerRowOp::copy, x_stored, kInput, rows, kInput, nullptr, a, errors);
  gemm<Tag>(a, rows, blocks * ip, packed<Tag, Split>({&w.input_proj}), dim, h, false);
  const std::vector<float> slopes = alibi_slopes_reference(w.heads);
  for (const Layer& layer : w.layers) {
    run_rows<Tag, Split>(cuda::MixerRowOp::layer_norm, h, dim, rows, dim, &layer.ln1, a, errors);
    gemm<Tag>(a, rows, blocks * dp, packed<Tag, Split>({&layer.q, &layer.k, &layer.v}), 3 * dim, qkv, false);
    a.assign(static_cast<size_t>(rows * blocks * dp), poison<Tag>());
    cuda::MixerAttentionParams p;
    p.qkv = qkv.data();
    p.qkv_stride = 3 * dim;
    p.sequences = sequences;
    p.frames = frames;
    p.heads = w.heads;
    p.slopes = slopes.data();
    p.out = a.data();
    p.out_stride = blocks * dp;
    p.kp = dp;
    const int64_t tiles = (frames + cuda::kMixerAttentionRows - 1) / cuda::kMixerAttentionRows;
    const auto e =
        emu::run_blocks(0, sequences * w.heads * tiles, cuda::kMixerAttentionRows, mixer::kAttentionSharedBytes,
                        [&] { mixer::mixer_attention_kernel<Tag, Tag, Split>(p); });
    errors.insert(errors.end(), e.begin(), e.end());
    gemm<Tag>(a, rows, blocks * dp, packed<Tag, Split>({&layer.f}), dim, h, true);
    run_rows<Tag, Split>(cuda::MixerRowOp::layer_norm, h, dim, rows, dim, &layer.ln2, a, errors);
    gemm<Tag>(a, rows, blocks * dp, packed<Tag, Split>({&layer.in}), 4 * dim, u, false);
    run_rows<Tag, Split>(cuda::MixerRowOp::gelu, u, 4 * dim, rows, 4 * dim, nullptr, a, errors);
    gemm<Tag>(a, rows, blocks * fp, packed<Tag, Split>({&layer.out}), dim, h, true);
  }
  std::vector<float> out(static_cast<size_t>(rows * 4), std::nanf(""));
  cuda::MixerHeadParams hp;
  hp.x = h.data();
  hp.x_stride = dim;
  hp.rows = rows;
  hp.k = dim;
  hp.gamma = w.ln_out.gamma.data();
  hp.beta = w.ln_out.beta.data();
  hp.weight = w.output_proj.weight.data();
  hp.bias = w.output_proj.bias.data();
  hp.out = out.data();
  const auto e = emu::run_blocks(0, (rows + mixer::kRowWarps - 1) / mixer::kRowWarps, cuda::kMixerRowThreads, 0,
                                 [&] { mixer::mixer_head_kernel<Tag>(hp); });
  errors.insert(errors.end(), e.begin(), e.end());

  Figures f;
  for (size_t i = 0; i < out.size(); ++i) f.add(out[i], expected[i]);
  const std::string label = std::string("whole mixer ") + tag_name<Tag>() + (Split ? " 3xTF32" : " plain") +
                            " dim=" + std::to_string(dim) + " sequences=" + std::to_string(sequences) +
                            " T=" + std::to_string(frames);
  std::printf("[mixer emulation] %s: max|diff| %.3g max|ref| %.3g rel %.3g (tolerance %.3g)\n", label.c_str(),
              f.max_abs_diff, f.max_abs_expected, f.relative(), tolerance);
  expect_clean(errors, label);
  EXPECT_LE(f.relative(), tolerance) << label;
  EXPECT_GT(f.max_abs_expected, 0.1) << label;
}

// 3xTF32: float32-level agreement with the double reference (the split's ~2^-22 per operand, fp32 storage of every
// activation). fp16: every activation rounded to fp16, as the fast mode runs.
TEST(MixerEmulation, WholeMixerIn3xTf32MatchesTheReference) { check_whole_mixer<cuda::F32Tag, true>(256, 1, 47, 2e-5); }
TEST(MixerEmulation, WholeMixerInFp16MatchesTheReference) { check_whole_mixer<cuda::Fp16Tag, false>(256, 1, 23, 2e-2); }

}  // namespace
}  // namespace trackscope::test
