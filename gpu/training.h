#pragma once
// Training the tracker on synthetic video: the options of the data generator, the loss, the optimiser and the
// schedule, and run_training(), which does a whole training call (self-check, train for a step or wall-clock
// budget, checkpoint, validate). Torch-free: app/ (trackscope-train) includes it; the torch side lives in
// gpu/training/ (synthetic.h, loss.h, trainer.h, trainable_tracker.h). docs/training.md explains the design.
//
//   gpu::TrainingOptions options;
//   options.model = "locotrack-small";
//   options.output_dir = "runs/small";
//   options.max_minutes = 8;
//   if (core::Status s = options.check(); !s) ...
//   core::Expected<gpu::TrainingSummary> summary = gpu::run_training(options);
//
// Threads: run_training() owns every torch/CUDA call it makes and blocks until done; one call at a time per process.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tracking/evaluation.h"
#include "core/tracking/metrics.h"
#include "core/tracking/point_tracker.h"

namespace trackscope::gpu {

/// How the generator stores the video: float in [-1, 1] (the model's input) or uint8 (a quarter of the memory;
/// convert with u8 / 255 * 2 - 1).
enum class SyntheticVideoFormat { float_signed, uint8 };

/// One batch of synthetic clips: a textured background seen by a moving camera and several textured foreground
/// layers with independent smooth motion, occluding each other by depth order (see docs/training.md).
/// Distances are in image half-widths ("normalised units": the image spans [-1, 1]) unless the name says px.
struct SyntheticOptions {
  int64_t batch_size = 1;
  int64_t frames = 24;
  int64_t height = 256;     // px
  int64_t width = 256;      // px
  int64_t points = 256;     // query points per clip
  int64_t min_objects = 3;  // foreground layers per clip, drawn uniformly in [min, max]
  int64_t max_objects = 6;
  int64_t object_texture_size = 128;       // texels per side of a foreground layer's texture and mask
  int64_t background_texture_size = 512;   // texels per side of the background texture
  double query_first_fraction = 0.3;       // share of queries on frame 0 (query-first); the rest on random frames
  double foreground_point_fraction = 0.6;  // share of queries aimed at foreground objects (when one is hit)
  double max_object_speed = 1.2;           // normalised units per clip
  double max_camera_speed = 0.5;           // background texture units per clip, before fitting the pan in view
  double max_warp = 0.3;                   // Lipschitz bound of the non-rigid warp (< 1; 0 = rigid layers)
  double max_blur_sigma_px = 1.0;          // Gaussian blur, per clip in [0, max]
  double max_noise_std = 0.02;             // additive pixel noise, colour units in [0, 1], per clip in [0, max]
  double max_lighting_change = 0.15;       // per-frame gain in [1 - x, 1 + x], bias in +-x/10
  // Closer to real footage (all off by default, so seeded streams of earlier runs stay the same):
  double limb_fraction = 0.0;           // share of foreground objects that are swinging limbs: elongated
                                        // ellipses pivoting about one end (pendulum swing) around a moving pivot
  double max_aspect_squeeze = 1.0;      // half of the clips are stretched along one axis by a factor in
                                        // [1, x] (a 16:9 video resized to 256x256 is stretched 1.78x in y)
  double max_temporal_blur = 0.0;       // half of the clips blend each frame with its neighbours, weight in
                                        // [0, x] each (exposure over the frame interval: motion blur of
                                        // moving layers, ghosting of fast ones); the ground truth stays at
                                        // the frame's centre time
  double min_limb_half_width = 0.12;    // a limb's half-width is uniform in [x, 0.3] of its texture (the length
                                        // is 0.92); lower = thinner legs (0.03: ~3 px at 256 px, a horse's leg)
  double attached_limb_fraction = 0.0;  // share of limbs whose pivot hangs from a point of the plain object drawn
                                        // before them (a leg on a moving body) instead of drifting on its own
  double articulated_fraction = 0.0;    // share of limbs that carry a second segment (a lower leg: its own swing
                                        // about the first segment's far end, drawn in front of it)
  double occluder_fraction = 0.0;       // share of clips whose top-most object is a thin bar (a pole, a fence
                                        // rail) drifting slowly across the scene
  double max_camera_shake = 0.0;        // half of the clips shake: every layer moves by the same random offset
                                        // per frame, each axis uniform in [-x, x] normalised units (<= 0.1)
  // Photographs as textures (off by default): that share of the layers (background and objects alike) shows a
  // crop of a photograph instead of a procedural texture: the background an upright crop of 50-100% of a
  // square, an object a crop of 15-50% at any angle, either mirrored or not. The photographs are
  // `photo_textures` (JPEG/PNG files or folders), cut into squares of photo_texture_side px
  // (gpu/training/texture_bank.h), unless the generator is given a bank. Only the textures change: the scene,
  // queries and ground truth of a seed stay those of the procedural clip.
  double photo_texture_fraction = 0.0;
  std::vector<std::filesystem::path> photo_textures;
  int64_t photo_texture_side = 512;
  SyntheticVideoFormat format = SyntheticVideoFormat::float_signed;
  bool render_layer_ids = false;    // also output the top-most layer index of every pixel (tests, debugging)
  bool skip_temporal_blur = false;  // draw the clips' temporal blur but do not apply it (tests: the same
                                    // clip sharp)

  core::Status check() const;
};

/// Photometric and compression augmentation of the training clips (gpu/training/augmentation.h), drawn per clip
/// from the batch's seed and applied to the rendered frames (the ground truth does not move). Off by default,
/// so the data of earlier runs stays the same. When any part is on, every augmented frame is also rounded to
/// 8-bit levels, as real video is.
struct AugmentationOptions {
  double probability = 1.0;            // share of clips augmented (when any part below is on)
  double max_brightness_levels = 0.0;  // offset uniform in [-x, x] grey levels (of 255)
  double max_contrast = 0.0;           // gain about mid-grey uniform in [1 - x, 1 + x]
  double max_gamma = 0.0;              // exponent exp(u), u uniform in [-x, x]
  double max_colour_gain = 0.0;        // per-channel gain (white balance) uniform in [1 - x, 1 + x], each channel
  double jpeg_probability = 0.0;       // share of augmented clips passed through a JPEG-like round trip
  int jpeg_min_quality = 50;           // its quality, uniform in [min, max] (IJG scale, as PIL's `quality`)
  int jpeg_max_quality = 95;

  bool enabled() const;
  core::Status check() const;
};

/// Consistency between two perturbed copies of each clip (both supervised): the tracks and occlusion probabilities
/// of copy A are pulled towards copy B's. Off when weight is 0.
struct ConsistencyOptions {
  double weight = 0.0;     // weight of the consistency term in the loss
  bool symmetric = false;  // gradients through both copies; default: copy B is a fixed target (stop-gradient)
  /// Copy B is copy A passed through the JPEG-like round trip (quality uniform in the augmentation's JPEG range, per
  /// clip), so that the copies differ by compression alone; default: two independent augmentations of the clip.
  bool jpeg_pair = false;
  /// Weight of the points hidden in the ground truth in the position term, against 1 for the visible ones (0: visible
  /// points only, as the supervised loss, which leaves a hidden point's position free; but the stability figures over
  /// all pairs are mostly such points moving: docs/training.md).
  double hidden_weight = 0.0;
  double huber_delta_px = 4.0;

  core::Status check() const;
};

/// The stability check of the trainer's validation: the first `clips` validation clips tracked again with
/// their frames shifted by +-brightness_levels grey levels, passed through the JPEG-like round trip at
/// jpeg_quality, and (on CUDA) under bf16 and fp16 autocast, against the model in fp32 on the plain frames.
struct ValidationStabilityOptions {
  int64_t clips = 4;  // 0 = off
  double brightness_levels = 2.0;
  int jpeg_quality = 90;

  core::Status check() const;
};

/// TAPIR/LocoTrack loss weights (tapnet `tapir_loss`), summed over every refinement iteration.
struct LossOptions {
  double position_weight = 0.05;            // weight of the Huber position loss
  double huber_delta_px = 4.0;              // Huber delta, px at 256x256
  double expected_dist_threshold_px = 6.0;  // the expected-distance head predicts P(error > this)

  core::Status check() const;
};

/// AdamW with gradient clipping (docs/locotrack-spec.md §7.1).
struct OptimizerOptions {
  double learning_rate = 1e-3;  // peak learning rate
  double weight_decay = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double epsilon = 1e-8;
  double gradient_clip_norm = 1.0;  // global L2 norm; 0 = no clipping

  core::Status check() const;
};

enum class LearningRateSchedule {
  one_cycle,  // PyTorch OneCycleLR (cosine annealing, optional beta1 cycling), as the official training
  cosine,     // linear warm-up, then cosine decay to final_fraction x peak
  constant,
};
const char* to_string(LearningRateSchedule schedule);
core::Expected<LearningRateSchedule> parse_learning_rate_schedule(std::string_view text);

/// The schedule spans a whole training run (possibly many calls), so total_steps is fixed up front.
struct ScheduleOptions {
  LearningRateSchedule kind = LearningRateSchedule::one_cycle;
  int64_t total_steps = 20000;
  double warmup_fraction = 0.05;            // one_cycle pct_start / cosine warm-up share of total_steps
  double one_cycle_div_factor = 25.0;       // initial lr = peak / div_factor
  double one_cycle_final_div_factor = 1e4;  // final lr = initial lr / final_div_factor
  bool cycle_momentum = true;               // one_cycle: beta1 goes max_momentum -> base_momentum -> max_momentum
  double base_momentum = 0.85;
  double max_momentum = 0.95;
  double cosine_final_fraction = 0.01;  // cosine: final lr = peak x this

  core::Status check() const;
  /// Learning rate and beta1 at `step` (0-based); steps past the end keep the final values.
  struct Point {
    double learning_rate;
    double beta1;
  };
  Point at(int64_t step, double peak_learning_rate, double default_beta1) const;
};

enum class WeightsDtype { fp32, bf16, fp16 };
const char* to_string(WeightsDtype dtype);
core::Expected<WeightsDtype> parse_weights_dtype(std::string_view text);

struct TrainingOptions {
  std::string model = "locotrack-small";              // a name make_trainable_tracker() knows
  std::string device = "auto";                        // "auto", "cpu", "cuda", "cuda:N"
  core::Precision precision = core::Precision::bf16;  // bf16 = autocast on CUDA (fp32 on the CPU); tf32; fp32
  std::filesystem::path output_dir;                   // checkpoint, logs and metrics go here (created)
  std::filesystem::path resume_from;                  // a checkpoint folder to continue from ("" = fresh start)
  bool continue_in_output = false;     // resume from output_dir when it holds a checkpoint, else start fresh
  std::filesystem::path init_weights;  // weights (.safetensors) to start a fresh run from ("" = model init)
  uint64_t model_seed = 0;             // seeds the model's initialisation (fresh runs)

  SyntheticOptions data;             // training batches; data.batch_size is the batch size
  uint64_t data_seed = 1;            // batch `step` is generated from (data_seed, step): resumable
  AugmentationOptions augmentation;  // applied to the training clips (never to the validation set)
  ConsistencyOptions consistency;    // needs augmentation (two identical copies would agree trivially)
  SyntheticOptions validation_data;  // defaults: query-first protocol (query_first_fraction 1)
  int64_t validation_clips = 32;
  uint64_t validation_seed = 1'000'000;  // the fixed validation set
  int64_t validation_every_steps = 500;  // 0 = only at the end of the call
  ValidationStabilityOptions validation_stability;

  LossOptions loss;
  OptimizerOptions optimizer;
  ScheduleOptions schedule;

  int64_t max_steps = 0;     // optimiser steps in this call; 0 = no limit
  double max_minutes = 0.0;  // wall-clock budget of the training loop in this call; 0 = no limit
  int64_t log_every_steps = 10;
  int64_t checkpoint_every_steps = 0;     // 0 = off
  double checkpoint_every_minutes = 5.0;  // 0 = off; a checkpoint is always written at the end
  WeightsDtype checkpoint_weights_dtype = WeightsDtype::fp32;
  int64_t max_shard_bytes = 15 * 1024 * 1024;  // weights files are split to stay under this (GPU-machine $OUT limit)
  bool self_check = true;                      // generator determinism + one forward/backward before training
  /// Measure the starting weights (init_weights or the checkpoint resumed from) and stop: the validation only,
  /// into validation.json and the log; no self-check, no optimiser step, no checkpoint, no budget needed. Needs
  /// validation_clips > 0.
  bool validate_only = false;

  TrainingOptions();
  core::Status check() const;
};

/// One row of the validation's stability check: the change of the final tracks at 256x256 px.
struct ValidationStabilityRow {
  std::string name;  // "brightness +2", "brightness -2", "jpeg-like q90", "bf16", "fp16"
  std::optional<core::TrackChange> change;
  std::string skipped;  // why not run (e.g. "autocast needs CUDA")
};

struct ValidationSummary {
  int64_t step = 0;
  double loss = 0.0;
  core::TapVidMetrics metrics;              // query-first TAP-Vid metrics of the model, 256x256
  core::TapVidMetrics stationary_baseline;  // the same for "the point does not move"
  core::Calibration occluded_calibration;   // p_occluded vs ground truth (the query-first scored pairs)
  core::Calibration far_calibration;        // p_far vs "more than 6 px off" (visible pairs)
  std::vector<ValidationStabilityRow> stability;
  double seconds = 0.0;
};

struct TrainingSummary {
  int64_t first_step = 0;      // global step this call started at
  int64_t last_step = 0;       // global step after this call
  double train_seconds = 0.0;  // time in the training loop of this call
  double clips_per_second = 0.0;
  double steps_per_second = 0.0;
  double last_loss = 0.0;
  std::optional<ValidationSummary> validation;  // the final validation
  std::filesystem::path checkpoint_dir;         // empty when no checkpoint was written (validate_only)
};

/// One training call: creates the model named by options.model on the device, resumes or initialises it,
/// runs the self-check, trains until max_steps or max_minutes, writes the checkpoint (weights*.safetensors,
/// optimizer.pt, trainer_state.json) and validation.json into output_dir, and logs every step's loss and
/// throughput as JSON lines in output_dir/train_log.jsonl. Errors (unknown model, no such device, out of
/// memory, unreadable checkpoint) come back as a Status; torch exceptions do not escape.
core::Expected<TrainingSummary> run_training(const TrainingOptions& options);

/// Generation speed of the synthetic data alone (no model): `batches` batches after one warm-up batch.
struct DataBenchmark {
  std::string device;
  int64_t batches = 0;
  double seconds = 0.0;
  double clips_per_second = 0.0;
};
core::Expected<DataBenchmark> benchmark_synthetic_data(const SyntheticOptions& options, const std::string& device,
                                                       int64_t batches, uint64_t seed);

/// A look at the generator's clips: for each clip of the first batch a training run with `data_seed` sees
/// (augmentation aside), clip_<b>.png in `folder` (created) shows six
/// frames spread over the clip side by side, with the ground truth of the first 24 points drawn on them (a filled
/// 3x3 dot where visible, a hollow 5x5 square where occluded, one colour per point). Returns the files written.
/// Errors: those of the generator (options, device, photographs), io_error, unsupported (no PNG encoder).
core::Expected<std::vector<std::filesystem::path>> write_synthetic_preview(const SyntheticOptions& options,
                                                                           const std::string& device,
                                                                           uint64_t data_seed,
                                                                           const std::filesystem::path& folder);

/// A fixed, seeded set of synthetic clips for evaluation (`trackscope-cli eval --synthetic SEED`): the trainer's
/// generator, query-first (every query on frame 0, where it is visible), as plain data for
/// core::evaluate_tapvid. Batch k of data.batch_size clips is generated from derive_seed(seed, k) and the
/// first `clips` clips are kept, exactly as the trainer builds its validation set: with the defaults (the
/// trainer's validation data options and validation_seed) the clips are the trainer's validation clips, stored
/// as uint8 (the trainer feeds the float frames; they differ by the uint8 rounding, <= 1/510 of the range).
struct SyntheticEvaluationOptions {
  SyntheticOptions data;  // defaults: TrainingOptions().validation_data (batch 4, 24 frames, 256 points, 256x256)
  int64_t clips = 32;
  uint64_t seed = 1'000'000;   // TrainingOptions::validation_seed
  std::string device = "cpu";  // where the generator runs: "auto", "cpu", "cuda", "cuda:N"

  SyntheticEvaluationOptions();
  /// invalid_argument when data.check() fails, clips is not in [1, 4096], or data.query_first_fraction is not 1
  /// (queries on later frames are not query-first). data.format is ignored (clips are always uint8).
  core::Status check() const;
};

/// Generates the clips (names "synthetic-<seed>-<index>"), frame rate 24 fps. Deterministic: the same options
/// give the same clips (on every device up to float rounding, see gpu/training/synthetic.h). Errors: bad
/// options, no such device, out of memory; torch exceptions do not escape.
core::Expected<std::vector<core::TapVidClip>> generate_synthetic_evaluation_clips(
    const SyntheticEvaluationOptions& options);

}  // namespace trackscope::gpu
