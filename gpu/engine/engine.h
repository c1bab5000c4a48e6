#pragma once
// Engine: LocoTrack's forward pass as the tracker runs it (torch-side header: include only from gpu/ .cpp
// files). It owns what a model needs on one device at one precision (a copy of the weights in the compute
// dtype, the prepared CMDTop encoders, fp32 copies of the small heads) and runs the pipeline in the
// canonical stages of core/perf/stage_timing.h, timing each one through a StageRecorder and attaching the
// stage's FLOP and byte counts (core/perf/cost_model.h).
//
//   Engine engine(model, at::Device("cuda:0"), {.precision = core::Precision::bf16});
//   engine.set_cost_config(cost);                       // N, T, chunk of this run, for the stage costs
//   engine.apply_precision_flags();                     // TF32 switches (process-global in LibTorch)
//   model::FeatureGrids grids = engine.allocate_grids(T);
//   engine.compute_features(frames, grids, 0, recorder);              // per frame chunk, frames [F,256,256,3]
//   model::QueryFeatures q = engine.query_features(grids, queries_tyx, recorder);   // [1, N, 3] in 256 space
//   model::TrackState state = engine.track_chunk(grids, q.slice(b, e), queries_tyx.narrow(1, b, e - b), c, recorder);
//
// Paths. `fused` runs Trackscope's kernels (gpu/ops: local_corr4d, init_from_cost_volume, CmdTopFast); `eager`
// runs the reference stage functions of gpu/model (the official op sequence). Precision:
//   fp32  float32 everywhere, TF32 off (exact mode: parity with the official implementation);
//   tf32  float32 storage, TF32 tensor cores allowed for convolutions and matrix products;
//   bf16 / fp16  backbone, feature grids, correlations, CMDTop and transformer in that dtype (fp32
//         accumulation in the kernels); track positions, logits, soft-argmax and sampling coordinates stay fp32.
// Reduced precisions need the fused path (the eager functions would round sampling coordinates).
//
// Coordinates: queries (t, y, x) and tracks (x, y) in 256-space raster pixels (pixel i covers [i, i+1)).
// Threads: an Engine is used by one thread at a time (the tracking thread); it holds no thread affinity.
// Errors: c10::Error from LibTorch / the ops propagate; the tracker converts them at the gpu/ boundary.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "core/perf/cost_model.h"
#include "core/tracking/point_tracker.h"
#include "gpu/engine/stage_recorder.h"
#include "gpu/model/locotrack.h"
#include "gpu/ops/mixer_fast.h"
#include "gpu/ops/ops.h"

namespace trackscope::gpu::engine {

enum class EnginePath {
  automatic,  // fused (the only path for bf16/fp16, and the faster one for fp32 on CUDA and the CPU)
  fused,
  eager,
};

/// EngineOptions::tensor_core_attention_frames's default: on an H100 in fp16 the kernel lost to SDPA up to 128
/// frames and won from 192 on (docs/kernels.md §6c).
inline constexpr int64_t kDefaultTensorCoreAttentionFrames = 160;

struct EngineOptions {
  core::Precision precision = core::Precision::fp32;
  EnginePath path = EnginePath::automatic;
  int64_t init_queries_per_pass = 256;     // bounds init's cost-volume temporaries (ops::init_from_cost_volume)
  int64_t cmdtop_samples_per_pass = 8192;  // bounds CMDTop's temporaries (ops::CmdTopFast; ~0.5 GB fp32 im2col patches)
  ops::CorrKernel corr_kernel = ops::CorrKernel::automatic;
  /// The glue ops (ops::sample_query_supports in bf16/fp16, ops::mixer_input_rows, the backbone's
  /// ops::l2_normalise_channels, and in bf16/fp16 the SAME padding of the backbone's stride-2 convolutions folded into
  /// widened weights, Conv2dSame::add_widened_weight): automatic = one CUDA kernel each on CUDA; composite = their ATen
  /// op sequences (on CUDA, for A/B comparisons; the CPU keeps its own kernels and composites either way).
  ops::GluePath glue_path = ops::GluePath::automatic;
  ops::CmdTopFast::Convolution cmdtop_convolution = ops::CmdTopFast::Convolution::automatic;
  /// cuDNN autotuning of the backbone's convolutions (CUDA): empty = on. Exact mode keeps its parity figures with
  /// the autotuned algorithms (gpu/engine_cuda_autotuned) and gains ~5 ms per 47 frames on an H200.
  std::optional<bool> cudnn_benchmark;
  /// How many of cuDNN's candidate algorithms the autotuning times per convolution shape (CUDA, with
  /// cudnn_benchmark; a process-wide setting, as cudnn_benchmark is): 0 = every one; empty = leave it as it is
  /// (LibTorch's default: 10, in heuristic order).
  std::optional<int> cudnn_benchmark_limit;
  /// The backbone's InstanceNorm+ReLU as one fused op (ops::instance_norm_relu: a CUDA kernel set, or the CPU's
  /// two-pass kernel) on the fused path, each block's residual sum computed with the next block's first norm
  /// (ops::add_instance_norm_relu); false = the written-out reference (the eager op sequence).
  bool fused_instance_norm = true;
  /// CUDA graphs for track_chunk (fused path, CUDA): the first call of a chunk shape captures the initialisation
  /// and every refinement iteration as one graph, later calls copy their inputs into it and replay it, which
  /// removes the host's per-kernel cost (the refinement at small N is launch-bound). Stage times still come
  /// from CUDA events, recorded inside the graph. With graphs on, allocate_grids() hands out the engine's one
  /// set of grids (reused while the frame count stays the same), so the graphs' inputs keep their addresses.
  bool cuda_graphs = false;
  /// The temporal mixer as ops::MixerFast (fused path, CUDA): fused LayerNorm/attention/GELU kernels writing the
  /// GEMM operands, one GEMM per linear layer; for float32 in 3xTF32 on compute capability 8.0+ (mixer_arithmetic).
  /// false = the module path (TemporalMixer's op sequence with the padded input projection). Unset (automatic):
  /// fused for float32 only; in fp16/bf16 the module's cuBLAS tensor-core GEMMs are faster (H200, base N=1024:
  /// mixer 10.2 ms with the module, 16.1 ms fused; docs/kernels.md).
  std::optional<bool> fused_mixer;
  ops::MixerFast::Arithmetic mixer_arithmetic = ops::MixerFast::Arithmetic::automatic;
  /// The GELU after the module mixer's first MLP layer on the automatic glue path, in bf16/fp16 on CUDA
  /// (ops::MlpGelu): exact = the official model's erf GELU as a pass of its own; fused_tanh = in the GEMM's epilogue
  /// (the tanh form). Float32 and the CPU always compute the exact GELU (Engine::mlp_gelu() says which runs).
  ops::MlpGelu mlp_gelu = ops::MlpGelu::fused_tanh;
  /// The module mixer's attention (automatic glue path, bf16/fp16 on CUDA, compute capability 8.0+) runs on
  /// ops::alibi_attention, the tensor-core kernel, for clips of at least this many frames, and as the module's
  /// scaled_dot_product_attention below (0: always the kernel). The default is where the kernel overtook SDPA on
  /// an H100 (docs/kernels.md §6c; `bench --attention-from-frames` measures it).
  int64_t tensor_core_attention_frames = kDefaultTensorCoreAttentionFrames;
};

/// Compute dtype of a precision: float32 for fp32/tf32, bfloat16, float16.
at::ScalarType compute_dtype_of(core::Precision precision);

/// An uninitialised CPU tensor in its own memory mapping (unmapped when the last reference goes), for large
/// long-lived host buffers: the grids of a CPU run, a feature cache, an encoded store. With keep_freed_host_memory()
/// (M_MMAP_MAX = 0) every malloc block lives in one heap, where gigabytes of grids between each batch's temporaries
/// fragment it (measured: 2 GiB more resident memory on a 669-frame window). `page_locked`: also page-lock it in
/// place for fast, asynchronous copies to and from CUDA devices (cuda_support::register_host_memory: exactly its
/// size, where ATen's pinned allocator rounds up to a power of two; pageable if that is refused). Throws
/// std::bad_alloc.
at::Tensor allocate_host_buffer(at::IntArrayRef sizes, at::ScalarType dtype, bool page_locked = false);

class Engine {
 public:
  /// `model` holds float32 weights on `device`. Throws c10::Error when the precision needs what the device
  /// lacks (fp16 on the CPU with LibTorch < 2: no half GEMM) or for eager + reduced precision.
  Engine(std::shared_ptr<const model::LocoTrack> model, c10::Device device, EngineOptions options);

  c10::Device device() const { return device_; }
  const EngineOptions& options() const { return options_; }
  bool fused() const { return fused_; }
  /// Whether the backbone runs ops::instance_norm_relu (fused path, fused_instance_norm).
  bool uses_fused_instance_norm() const { return fused_ && options_.fused_instance_norm; }
  /// The GELU form the module mixer's MLP computes (EngineOptions::mlp_gelu where it applies, else exact).
  ops::MlpGelu mlp_gelu() const;
  /// Whether a chunk of `frames` frames runs the module mixer's attention on ops::alibi_attention
  /// (EngineOptions::tensor_core_attention_frames, where the kernel applies).
  bool uses_tensor_core_attention(int64_t frames) const;
  /// Whether the correlation encoders run as the one-kernel CMDTop (ops::CmdTopFast::fused()).
  bool uses_fused_cmdtop() const { return fused_ && cmdtop_[0].has_value() && cmdtop_[0]->fused(); }
  /// Whether the mixer runs as ops::MixerFast, and in 3xTF32.
  bool uses_fused_mixer() const { return mixer_.has_value(); }
  bool uses_tf32x3_mixer() const { return mixer_.has_value() && mixer_->tf32x3(); }
  at::ScalarType compute_dtype() const { return compute_dtype_; }
  const model::LocoTrack& model() const { return *model_; }
  /// -1 for the CPU, else the CUDA device index (for StageRecorder and cuda_support).
  int cuda_index() const { return device_.is_cuda() ? device_.index() : -1; }

  /// Sets LibTorch's TF32 switches for this precision (fp32: off; otherwise on) and cuDNN autotuning. They are
  /// process-global: call it on the tracking thread before each run.
  void apply_precision_flags() const;

  /// The run's shape, for the stage costs attached to every sample (frames, points, chunk, resolution). The model
  /// size, element size and fused-correlation flag are the engine's own and override the given ones.
  void set_cost_config(const core::CostModelConfig& config);
  const core::CostModelConfig& cost_config() const { return cost_; }

  /// Normalised video frames in the engine's storage dtype (float32 for fp32/tf32, else the compute dtype):
  /// uint8 [F, H, W, 3] (any size, on any device) -> [F, 256, 256, 3] in [-1, 1] on the device, resized
  /// bilinearly as the official inference() does (align_corners=false, no antialias) when not 256x256.
  at::Tensor prepare_frames(const at::Tensor& frames_u8) const;
  /// Frames already resized and normalised (float [F, 256, 256, 3] in [-1, 1], on any device; the tracker's
  /// low-memory preparation of very large frames) in the storage dtype on the device.
  at::Tensor prepare_normalised_frames(const at::Tensor& frames) const;

  /// Uninitialised feature grids for `frames` frames ([1, T, ...], compute dtype, on the device). With
  /// cuda_graphs the same tensors are returned for the same frame count (a caller must be done with the previous
  /// grids before asking again).
  model::FeatureGrids allocate_grids(int64_t frames) const;
  /// Whether track_chunk replays CUDA graphs (cuda_graphs, fused path, CUDA).
  bool uses_cuda_graphs() const { return options_.cuda_graphs && fused_ && device_.is_cuda(); }
  /// Backbone of frames [F, 256, 256, 3] (prepare_frames' output) into grids frames [first, first + F).
  void compute_features(const at::Tensor& frames, model::FeatureGrids& grids, int64_t first,
                        StageRecorder& recorder) const;

  /// Query features and supports of queries [1, N, 3] (t, y, x) in 256 space (integer t) from the grids.
  model::QueryFeatures query_features(const model::FeatureGrids& grids, const at::Tensor& queries_tyx,
                                      StageRecorder& recorder) const;

  /// Initialisation and every refinement iteration of one query chunk: the final estimate, [1, n, T, ...]
  /// float32 in 256 space. `every_iteration`, if given, receives iteration 0 (init) .. 4.
  model::TrackState track_chunk(const model::FeatureGrids& grids, const model::QueryFeatures& chunk,
                                const at::Tensor& chunk_queries_tyx, int chunk_index, StageRecorder& recorder,
                                std::vector<model::TrackState>* every_iteration = nullptr) const;

  // The parts of track_chunk, for runs that stream the grids a block of frames at a time (exact streaming,
  // gpu/tracker/streaming_run.cpp). Every part except the transformer works frame by frame, so it may be given the
  // grids of a block of frames and the queries' frames relative to the block (a query frame outside the block
  // pins nothing there).

  /// Iteration 0 over the grids' frames: [1, n, F, 2] tracks and [1, n, F] logits, float32.
  model::TrackState initialise(const model::FeatureGrids& grids, const model::QueryFeatures& chunk,
                               const at::Tensor& chunk_queries_tyx, int chunk_index, StageRecorder& recorder) const;
  /// A refinement's local correlations and CMDTop for tracks [1, n, F, 2] over the grids' frames: [n, F, 768] in
  /// the compute dtype (float32 on the eager path).
  at::Tensor encode(const model::FeatureGrids& grids, const model::QueryFeatures& chunk, const at::Tensor& tracks,
                    int chunk_index, int iteration, StageRecorder& recorder) const;
  /// The transformer's input [n, T, 854] (occlusion, distance, encoded, relative motion) in its dtype
  /// (ops::mixer_input_rows).
  at::Tensor mixer_input(const at::Tensor& encoded, const model::TrackState& previous) const;
  /// A refinement's transformer over the whole time axis and the update of `previous`.
  model::TrackState mix(const at::Tensor& encoded, const model::TrackState& previous, int chunk_index, int iteration,
                        StageRecorder& recorder) const;
  /// previous + update ([n, T, 4] float32: dx, dy, d occlusion, d distance), as the refinement adds them.
  static model::TrackState apply_update(const at::Tensor& update, const model::TrackState& previous);
  /// The transformer of the compute dtype (the long-sequence path runs it block by block).
  const model::TemporalMixer& mixer() const { return *(fused_ ? compute_model_ : model_)->torch_pips_mixer; }

 private:
  model::TrackState refine(const model::FeatureGrids& grids, const model::QueryFeatures& chunk,
                           const model::TrackState& previous, int chunk_index, int iteration,
                           StageRecorder& recorder) const;
  core::WorkCost cost_of(core::Stage stage, int64_t chunk_points) const;
  /// mixer_input()'s rows with `columns` >= 854 columns (zeros past 854).
  at::Tensor mixer_rows(const at::Tensor& encoded, const model::TrackState& previous, int64_t columns) const;
  /// The backbone's fused operations on this device (CPU: norms and the L2 normalisation; CUDA: norms, and the L2
  /// normalisation on the automatic glue path).
  model::BackboneKernels backbone_kernels() const;
  model::TrackState track_chunk_eager(const model::FeatureGrids& grids, const model::QueryFeatures& chunk,
                                      const at::Tensor& queries, int chunk_index, StageRecorder& recorder,
                                      std::vector<model::TrackState>* every_iteration) const;
  model::TrackState track_chunk_graphed(const model::FeatureGrids& grids, const model::QueryFeatures& chunk,
                                        const at::Tensor& queries, int chunk_index, StageRecorder& recorder) const;

  // One captured track_chunk: its static inputs (copied into before each replay), outputs and stage events.
  struct ChunkGraph {
    std::array<const void*, 3> grids{};  // data pointers of the grids it reads
    int64_t queries = 0;
    int64_t frames = 0;
    int chunk_index = 0;
    model::QueryFeatures chunk;
    at::Tensor queries_tyx;
    model::TrackState out;
    std::unique_ptr<StageRecorder> stages;
    std::unique_ptr<cuda_support::Graph> graph;
  };

  std::shared_ptr<const model::LocoTrack> model_;          // float32 weights
  std::shared_ptr<const model::LocoTrack> compute_model_;  // weights in the compute dtype (== model_ for fp32)
  c10::Device device_;
  EngineOptions options_;
  at::ScalarType compute_dtype_;
  bool fused_ = true;
  std::array<std::optional<ops::CmdTopFast>, 3> cmdtop_;  // level order: hires, lowres, highest
  // The feature grids' sides in encode()'s level order (hires, lowres, highest; allocate_grids), and side / 256 for
  // each as a float32 [3, 1, 1, 1] device tensor (fused path): the correlation's points in grid cells. Powers of
  // two, so that one multiplication is exact.
  static constexpr std::array<int64_t, 3> kLevelSides = {64, 32, 128};
  static_assert(std::ranges::all_of(kLevelSides,
                                    [](int64_t side) { return std::has_single_bit(static_cast<uint64_t>(side)); }));
  at::Tensor level_cell_scales_;
  at::Tensor cost_conv_weight_, cost_conv_bias_;  // float32 (the fused init's operands)
  at::Tensor occ_weight_, occ_bias_;              // float32
  at::Tensor mixer_input_weight_;  // fused path: the mixer's input projection, zero-padded to 864 input channels
  // Fused path, module mixer on CUDA: each layer's query, key and value projections stacked into one [3D, D] weight
  // and [3D] bias (one GEMM instead of three; the compute dtype). Empty where mixer_ or the CPU runs the mixer.
  std::vector<at::Tensor> mixer_qkv_weights_, mixer_qkv_biases_;
  at::Tensor mixer_alibi_slopes_;  // with them in bf16/fp16 on compute capability 8.0+: ops::alibi_attention's slopes
  std::optional<ops::MixerFast> mixer_;  // fused path on CUDA with fused_mixer
  core::CostModelConfig cost_;
  // The graph cache and the reused grids: mutable because an Engine is used by one thread at a time and these
  // only memoise work (track_chunk's results are the same with or without them).
  mutable std::vector<std::unique_ptr<ChunkGraph>> graphs_;
  mutable model::FeatureGrids graph_grids_;
  // The module mixer's ALiBi bias [H, T, T] in the compute dtype per frame count T: a constant that the eager code
  // rebuilt in ~12 small kernels per refinement iteration. Never evicted (a captured CUDA graph may read it; ~35 KB
  // per T).
  mutable std::map<int64_t, at::Tensor> alibi_biases_;
};

}  // namespace trackscope::gpu::engine
