#pragma once
// The temporal mixer (LocoTrack's transformer, docs/locotrack-spec.md §2.5 steps 5-7) as a few fused CUDA kernels and
// one GEMM per linear layer (torch-side header: include only from gpu/ .cpp files). docs/kernels.md §5 has the design.
//
//   MixerFast mixer(MixerWeights::from_named(lookup, "torch_pips_mixer."), device, {.compute_dtype = at::kHalf});
//   at::Tensor update = mixer.forward(x);   // x [S, T, 864] (854 channels + zero columns) -> [S, T, 4] float32
//
// Per layer: LayerNorm -> one QKV GEMM -> attention (ALiBi, online softmax) -> output projection GEMM accumulated
// into the residual stream -> LayerNorm -> dense.0 GEMM -> GELU -> dense.2 GEMM accumulated into the residual. The
// kernels write each GEMM's A operand directly (gpu/ops/cuda/mixer_layout.h): rows with a ones column, so the bias is
// the weight's extra column, and the residual add is the GEMM's beta = 1. No permute copies, no separate bias, GELU or
// residual passes; the final LayerNorm and the 4 used outputs are one kernel in fp32.
//
// Arithmetic: bf16/fp16 (fast mode) GEMMs through cuBLAS in that dtype with fp32 accumulation, activations stored in
// the dtype (as the reference path), statistics, softmax and GELU in fp32. float32 (exact mode): 3xTF32 on compute
// capability 8.0+ (each operand split into a TF32 value and its TF32 remainder, one TF32 tensor-core GEMM over the
// three blocks: float32-level accuracy, tests against a double reference), else plain fp32 GEMMs (cuBLAS SGEMM; the
// TF32 switches must be off for exact mode, as the engine sets them).
//
// CUDA only (the CPU keeps the reference module path). Errors: c10::Error for shapes, devices, a missing key.
// Threads: immutable after construction; forward() queues work on the current stream without host syncs (graph-safe).

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace trackscope::gpu::ops {

/// The mixer's float32 parameters under the official names (prefix "torch_pips_mixer.").
struct MixerWeights {
  struct Layer {
    at::Tensor ln1_weight, ln1_bias;                                // transformer.layers.L.layer_norm1
    at::Tensor query_weight, query_bias, key_weight, key_bias;      // attn.{query,key}_proj
    at::Tensor value_weight, value_bias, final_weight, final_bias;  // attn.{value,final}_proj
    at::Tensor ln2_weight, ln2_bias;                                // layer_norm2
    at::Tensor dense_in_weight, dense_in_bias;                      // dense.0 [4D, D]
    at::Tensor dense_out_weight, dense_out_bias;                    // dense.2 [D, 4D]
  };
  at::Tensor input_weight, input_bias;  // input_proj [D, 854]
  std::vector<Layer> layers;            // transformer.layers.0..
  at::Tensor ln_out_weight, ln_out_bias;
  at::Tensor output_weight, output_bias;  // output_proj [388, D]: rows 0..3 are used

  using Lookup = std::function<std::optional<at::Tensor>(const std::string& key)>;
  /// Reads every tensor (throws c10::Error naming a missing key or a wrong shape).
  static MixerWeights from_named(const Lookup& lookup, const std::string& prefix);
  int64_t dim() const { return input_weight.size(0); }
};

class MixerFast {
 public:
  /// tf32x3: float32 as 3xTF32 (compute capability 8.0+); plain: one GEMM in the compute dtype (for float32 cuBLAS
  /// SGEMM under the global TF32 switches). automatic: tf32x3 for float32 where available, else plain.
  enum class Arithmetic { automatic, plain, tf32x3 };
  struct Options {
    at::ScalarType compute_dtype = at::kFloat;  // float32, bfloat16 or float16
    Arithmetic arithmetic = Arithmetic::automatic;
    int64_t input_channels = 864;       // width of forward()'s input rows (>= 854; columns past 854 are zero)
    int64_t max_rows_per_pass = 65536;  // rows (sequence x frame) per pass: bounds the activations
    int64_t mlp_rows = 16384;           // rows per MLP sub-pass: bounds the [rows, 4D] temporaries (3xTF32: ~300 MB)
  };

  /// Whether the fused mixer can run on device (a CUDA device and a build with Trackscope's CUDA kernels).
  static bool available(c10::Device device);

  MixerFast(const MixerWeights& weights, c10::Device device, Options options);

  /// x [S, T, input_channels] in the compute dtype on this device -> [S, T, 4] float32 (dx, dy, d_occlusion,
  /// d_expected_dist), as TemporalMixer::forward (which pads nothing: columns past 854 must be zero).
  at::Tensor forward(const at::Tensor& x) const;

  bool tf32x3() const { return tf32x3_; }
  int64_t dim() const { return dim_; }

 private:
  struct Layer {
    at::Tensor ln1_weight, ln1_bias, ln2_weight, ln2_bias;  // float32
    at::Tensor qkv, final_proj, dense_in, dense_out;        // packed W' (mixer_layout.h)
  };
  void run_pass(const at::Tensor& x, int64_t sequences, int64_t frames, at::Tensor& out) const;
  void gemm(const at::Tensor& a, const at::Tensor& w, at::Tensor& c, bool accumulate) const;

  c10::Device device_;
  Options options_;
  bool tf32x3_ = false;
  int64_t dim_ = 0;
  int64_t heads_ = 0;
  at::Tensor input_weight_, input_bias_;  // plain: [D, input_channels] + [D] for at::linear; tf32x3: packed, no bias
  std::vector<Layer> layers_;
  at::Tensor ln_out_weight_, ln_out_bias_, output_weight_, output_bias_;  // float32; output rows 0..3
  at::Tensor slopes_;                                                     // [heads] float32 ALiBi slopes
};

}  // namespace trackscope::gpu::ops
