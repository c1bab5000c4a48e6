#pragma once
// The training loop (torch side): synthetic batches -> optional augmentation (one copy, or two perturbed copies
// with a consistency loss) -> model -> TAPIR loss -> AdamW with the schedule, gradient clipping and optional bf16
// autocast; JSON-lines logs, periodic validation on a fixed seeded synthetic set,
// checkpoints that resume to the same state. run_training() (gpu/training.h) wires it to a model by name.
//
//   auto trainer = Trainer::create(options, model, at::Device(at::kCUDA, 0));
//   if ((*trainer)->resume(dir)) ...;                         // or a fresh start
//   TRACKSCOPE_RETURN_IF_ERROR((*trainer)->self_check());
//   core::Expected<TrainingSummary> summary = (*trainer)->train();   // until max_steps / max_minutes
//
// Batch `s` of the run is generated from derive_seed(options.data_seed, s), so a resumed run sees the same data
// as an uninterrupted one. Threads: one thread owns a Trainer and every torch call it makes. Torch errors
// (out of memory, shape mismatches in the model) come back as Status.

#include <ATen/ATen.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>

#include "core/status.h"
#include "gpu/training.h"
#include "gpu/training/synthetic.h"
#include "gpu/training/trainable_tracker.h"

namespace torch::optim {
class AdamW;
}

namespace trackscope::gpu::training {

/// What one optimiser step did.
struct StepRecord {
  int64_t step = 0;  // global step index of this update (0-based)
  double loss = 0.0;
  double position_loss = 0.0;  // summed over iterations, weighted
  double occlusion_loss = 0.0;
  double expected_dist_loss = 0.0;
  double consistency_loss = 0.0;  // summed over iterations, unweighted (0 without --consistency)
  double learning_rate = 0.0;
  double beta1 = 0.0;
  double gradient_norm = 0.0;       // before clipping (non-finite gradients zeroed first)
  int64_t nonfinite_gradients = 0;  // parameters whose gradient had NaN/inf and was zeroed (as the reference does)
  // Stage times, measured with device synchronisation (timed steps only; 0 otherwise).
  double data_ms = 0.0;
  double forward_ms = 0.0;
  double backward_ms = 0.0;
  double optimizer_ms = 0.0;
};

class Trainer {
 public:
  /// `model` must outlive the trainer and already live on `device`. With options.validate_only there is no
  /// training data and no optimizer: self_check, train_step, train and save_checkpoint return invalid_argument.
  static core::Expected<std::unique_ptr<Trainer>> create(const TrainingOptions& options, TrainableTracker& model,
                                                         const at::Device& device);
  ~Trainer();

  /// Continues from a checkpoint folder: weights (required), optimizer.pt (optional: moments start afresh
  /// without it, with a warning; not read for validate-only) and trainer_state.json (the global step).
  core::Status resume(const std::filesystem::path& dir);
  /// Fresh run from given weights (a .safetensors file or shard set).
  core::Status load_initial_weights(const std::filesystem::path& weights);

  /// Generator determinism, ground-truth sanity and one forward/backward with finite loss and gradients. Leaves
  /// the model and optimizer as they were.
  core::Status self_check();
  /// One optimiser step on batch step(); advances step().
  core::Expected<StepRecord> train_step(bool timed);
  /// Query-first TAP-Vid metrics and loss of the model (and of the "does not move" baseline) on the fixed set,
  /// the calibration of p_occluded and p_far there, and the stability check (options.validation_stability).
  core::Expected<ValidationSummary> validate();
  /// Trains until options.max_steps / max_minutes, validating and checkpointing as configured; always writes
  /// a final checkpoint and validation.json.
  core::Expected<TrainingSummary> train();
  /// The validation of the weights as they are (options.validate_only): validation.json and a log line, no
  /// step and no checkpoint; the summary's first and last step are step().
  core::Expected<TrainingSummary> validate_weights();
  /// weights*.safetensors, optimizer.pt and trainer_state.json into `dir`.
  core::Status save_checkpoint(const std::filesystem::path& dir);

  int64_t step() const { return step_; }
  bool uses_autocast() const { return autocast_; }
  /// Runs the model in fp32 (TF32 allowed) from now on instead of bf16 autocast.
  void disable_autocast();
  /// The optimizer of a training run (not of a validate-only trainer).
  torch::optim::AdamW& optimizer() { return *optimizer_; }

 private:
  Trainer(const TrainingOptions& options, TrainableTracker& model, const at::Device& device);
  void log_json(const std::string& line);
  /// OK for a training run; invalid_argument naming `what` for a validate-only trainer.
  core::Status require_training(const char* what) const;
  void apply_schedule();
  TrackerOutputs run_model(const at::Tensor& video, const at::Tensor& queries);
  /// The model under CUDA autocast to `dtype`, or in float32 with TF32 off when dtype is kFloat.
  TrackerOutputs run_model_as(const at::Tensor& video, const at::Tensor& queries, at::ScalarType dtype);
  /// validate(), its log line and validation.json: the validation a call ends with.
  core::Expected<ValidationSummary> final_validation();
  /// The stability rows of the validation (trainer_validation.cpp).
  core::Expected<std::vector<ValidationStabilityRow>> validation_stability();

  TrainingOptions options_;
  TrainableTracker& model_;
  at::Device device_;
  bool autocast_ = false;
  std::unique_ptr<SyntheticVideoGenerator> train_data_;
  std::unique_ptr<SyntheticVideoGenerator> validation_data_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  int64_t step_ = 0;
  double previous_train_seconds_ = 0.0;  // from earlier calls of a resumed run
  std::ofstream log_;
};

/// run_training() with the model made by `factory` instead of make_trainable_tracker (tests, other models).
core::Expected<TrainingSummary> run_training(const TrainingOptions& options, const TrainableTrackerFactory& factory);

}  // namespace trackscope::gpu::training
