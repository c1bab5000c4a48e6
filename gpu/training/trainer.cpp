#include "gpu/training/trainer.h"

#include <ATen/Context.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/serialize.h>
#include <torch/version.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>

#include "core/io/atomic_file.h"
#include "core/log.h"
#include "core/tracking/metrics.h"
#include "core/video/image_io.h"
#include "gpu/devices.h"
#include "gpu/torch_compat_autocast.h"
#include "gpu/training/augmentation.h"
#include "gpu/training/checkpoint.h"
#include "gpu/training/loss.h"
#include "gpu/training/trainer_internal.h"

namespace trackscope::gpu {

namespace training {

namespace {

// Salt of the augmentation seeds (derive_seed(batch seed ^ salt, copy)).
constexpr uint64_t kAugmentationSalt = 0xA5C3'9E1D'4B27'F00DULL;

Json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  try {
    return Json::parse(in);
  } catch (const Json::exception&) {
    return nullptr;
  }
}

core::Status write_json(const std::filesystem::path& path, const Json& value) {
  return core::io::write_file_atomically(path, value.dump(2) + "\n");
}

}  // namespace

Trainer::Trainer(const TrainingOptions& options, TrainableTracker& model, const at::Device& device)
    : options_(options), model_(model), device_(device) {}

Trainer::~Trainer() = default;

core::Expected<std::unique_ptr<Trainer>> Trainer::create(const TrainingOptions& options, TrainableTracker& model,
                                                         const at::Device& device) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  std::unique_ptr<Trainer> trainer(new Trainer(options, model, device));
  trainer->autocast_ = device.is_cuda() && options.precision == core::Precision::bf16;
  auto validation_data = SyntheticVideoGenerator::create(options.validation_data, device);
  if (!validation_data) return validation_data.status();
  trainer->validation_data_ = std::move(*validation_data);
  if (!options.validate_only) {
    auto train_data = SyntheticVideoGenerator::create(options.data, device);
    if (!train_data) return train_data.status();
    trainer->train_data_ = std::move(*train_data);
    const OptimizerOptions& o = options.optimizer;
    trainer->optimizer_ =
        std::make_unique<torch::optim::AdamW>(model.module().parameters(), torch::optim::AdamWOptions(o.learning_rate)
                                                                               .betas(std::make_tuple(o.beta1, o.beta2))
                                                                               .weight_decay(o.weight_decay)
                                                                               .eps(o.epsilon));
  }
  std::error_code error;
  std::filesystem::create_directories(options.output_dir, error);
  if (error) return core::io_error(fmt::format("cannot create '{}': {}", options.output_dir.string(), error.message()));
  trainer->log_.open(options.output_dir / "train_log.jsonl", std::ios::app);
  if (!trainer->log_)
    return core::io_error(fmt::format("cannot write '{}'", (options.output_dir / "train_log.jsonl").string()));
  return trainer;
}

core::Status Trainer::require_training(const char* what) const {
  if (optimizer_) return core::Status();
  return core::invalid_argument(fmt::format("{} needs a training run: this trainer was made for validate-only", what));
}

void Trainer::disable_autocast() {
  autocast_ = false;
  options_.precision = core::Precision::tf32;
  at::globalContext().setAllowTF32CuBLAS(true);
  at::globalContext().setAllowTF32CuDNN(true);
}

void Trainer::log_json(const std::string& line) {
  log_ << line << '\n';
  log_.flush();
}

void Trainer::apply_schedule() {
  const ScheduleOptions::Point point =
      options_.schedule.at(step_, options_.optimizer.learning_rate, options_.optimizer.beta1);
  for (auto& group : optimizer_->param_groups()) {
    auto& adamw = static_cast<torch::optim::AdamWOptions&>(group.options());
    adamw.lr(point.learning_rate);
    adamw.betas(std::make_tuple(point.beta1, options_.optimizer.beta2));
  }
}

TrackerOutputs Trainer::run_model(const at::Tensor& video, const at::Tensor& queries) {
  if (!autocast_) return model_.forward(video, queries);
  compat::CudaAutocast autocast(at::kBFloat16);
  return model_.forward(video, queries);
}

TrackerOutputs Trainer::run_model_as(const at::Tensor& video, const at::Tensor& queries, at::ScalarType dtype) {
  if (dtype != at::kFloat) {
    compat::CudaAutocast autocast(dtype);
    return model_.forward(video, queries);
  }
  if (!device_.is_cuda()) return model_.forward(video, queries);
  // Exact float32: TF32 off for this call, the trainer's setting restored afterwards.
  auto& context = at::globalContext();
  const bool cublas = context.allowTF32CuBLAS(), cudnn = context.allowTF32CuDNN();
  context.setAllowTF32CuBLAS(false);
  context.setAllowTF32CuDNN(false);
  TrackerOutputs outputs;
  try {
    outputs = model_.forward(video, queries);
  } catch (...) {
    context.setAllowTF32CuBLAS(cublas);
    context.setAllowTF32CuDNN(cudnn);
    throw;
  }
  context.setAllowTF32CuBLAS(cublas);
  context.setAllowTF32CuDNN(cudnn);
  return outputs;
}

core::Status Trainer::load_initial_weights(const std::filesystem::path& weights) {
  return guarded("loading weights", [&]() -> core::Status { return load_weights(model_.module(), weights); });
}

core::Status Trainer::resume(const std::filesystem::path& dir) {
  return guarded("resuming", [&]() -> core::Status {
    const Json state = read_json(dir / "trainer_state.json");
    if (state.is_null()) return core::not_found(fmt::format("no readable trainer_state.json in '{}'", dir.string()));
    if (state.value("model", options_.model) != options_.model) {
      return core::invalid_argument(
          fmt::format("'{}' holds a {} checkpoint, not {}", dir.string(), state.value("model", ""), options_.model));
    }
    TRACKSCOPE_RETURN_IF_ERROR(load_weights(model_.module(), dir / "weights.safetensors"));
    if (!optimizer_) {
      // Validate-only: the moments are never used, so a missing or damaged optimizer.pt does not matter.
    } else if (std::filesystem::exists(dir / "optimizer.pt")) {
      torch::load(*optimizer_, (dir / "optimizer.pt").string(), device_);
    } else {
      core::log::warn("'{}' has no optimizer.pt: AdamW moments start afresh at step {}", dir.string(),
                      state.value("step", 0));
    }
    step_ = state.value("step", int64_t{0});
    previous_train_seconds_ = state.value("train_seconds", 0.0);
    if (state.value("data_seed", options_.data_seed) != options_.data_seed) {
      core::log::warn("resuming with data seed {} (the checkpoint used {})", options_.data_seed,
                      state.value("data_seed", uint64_t{0}));
    }
    log_json(Json{{"type", "resume"}, {"step", step_}, {"from", dir.string()}}.dump());
    return core::Status();
  });
}

core::Status Trainer::save_checkpoint(const std::filesystem::path& dir) {
  TRACKSCOPE_RETURN_IF_ERROR(require_training("saving a checkpoint"));
  return guarded("saving the checkpoint", [&]() -> core::Status {
    const std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                         {"model", options_.model},
                                                         {"step", std::to_string(step_)},
                                                         {"data_seed", std::to_string(options_.data_seed)}};
    auto files = save_weights(model_.module(), dir, "weights", options_.checkpoint_weights_dtype,
                              options_.max_shard_bytes, metadata);
    if (!files) return files.status();
    const std::filesystem::path optimizer_path = dir / "optimizer.pt";
    std::ostringstream optimizer_bytes;
    torch::save(*optimizer_, optimizer_bytes);
    TRACKSCOPE_RETURN_IF_ERROR(core::io::write_file_atomically(optimizer_path, optimizer_bytes.str()));
    Json names = Json::array();
    for (const auto& f : *files) names.push_back(f.filename().string());
    const Json state = {{"step", step_},
                        {"model", options_.model},
                        {"data_seed", options_.data_seed},
                        {"validation_seed", options_.validation_seed},
                        {"schedule", to_string(options_.schedule.kind)},
                        {"schedule_total_steps", options_.schedule.total_steps},
                        {"learning_rate", options_.optimizer.learning_rate},
                        {"batch_size", options_.data.batch_size},
                        {"train_seconds", previous_train_seconds_},
                        {"weights", names},
                        {"weights_dtype", to_string(options_.checkpoint_weights_dtype)},
                        {"libtorch", TORCH_VERSION}};
    return write_json(dir / "trainer_state.json", state);
  });
}

core::Status Trainer::self_check() {
  TRACKSCOPE_RETURN_IF_ERROR(require_training("the self-check"));
  const auto start = Clock::now();
  return guarded("self-check", [&]() -> core::Status {
    const uint64_t seed = derive_seed(options_.data_seed, ~uint64_t{0});
    const SyntheticBatch a = train_data_->generate(seed);
    const SyntheticBatch b = train_data_->generate(seed);
    // Bitwise equality is expected (and tested on the CPU); a GPU library may legitimately differ in the last
    // bit, which must not stop a training call.
    const double video_difference = (a.video.to(at::kFloat) - b.video.to(at::kFloat)).abs().max().item<double>();
    const double track_difference = (a.target_points_xy - b.target_points_xy).abs().max().item<double>();
    const double occlusion_mismatch = a.occluded.ne(b.occluded).to(at::kFloat).mean().item<double>();
    if (video_difference > 1e-4 || track_difference > 1e-3 || occlusion_mismatch > 1e-3) {
      return core::internal_error(fmt::format(
          "self-check: the synthetic generator is not deterministic on {} (video {}, tracks {} px, occlusion {})",
          device_.str(), video_difference, track_difference, occlusion_mismatch));
    }
    at::Tensor frames = a.query_points_tyx.select(-1, 0).to(at::kLong);
    const int64_t bs = frames.size(0), n = frames.size(1);
    at::Tensor at_query = a.target_points_xy.gather(2, frames.view({bs, n, 1, 1}).expand({bs, n, 1, 2})).squeeze(2);
    const double query_error = (at_query - a.query_points_tyx.narrow(-1, 1, 2).flip(-1)).abs().max().item<double>();
    const double visible = 1.0 - a.occluded.to(at::kFloat).mean().item<double>();
    if (query_error > 0.01 || visible < 0.3 || visible > 0.995) {
      return core::internal_error(
          fmt::format("self-check: implausible ground truth (query-frame error {} px, {:.1f}% visible)", query_error,
                      100.0 * visible));
    }
    model_.module().train();
    optimizer_->zero_grad();
    const TrackerOutputs outputs = run_model(model_input(a.video), a.query_points_tyx);
    if (outputs.iterations.empty() || outputs.final_estimate().tracks_xy.sizes() != a.target_points_xy.sizes()) {
      return core::internal_error("self-check: the model's tracks do not have the shape [B,N,T,2] of the targets");
    }
    const LossTerms loss =
        tapir_loss(outputs, a.target_points_xy, a.occluded, a.video.size(2), a.video.size(3), options_.loss);
    loss.total.backward();
    const double total = loss.total.item<double>();
    int64_t with_gradient = 0, nonfinite = 0;
    for (const at::Tensor& p : model_.module().parameters()) {
      if (!p.grad().defined()) continue;
      ++with_gradient;
      if (!at::isfinite(p.grad()).all().item<bool>()) ++nonfinite;
    }
    optimizer_->zero_grad();
    if (!std::isfinite(total) || with_gradient == 0 || nonfinite > 0) {
      return core::internal_error(
          fmt::format("self-check: loss {} with {} gradients, {} of them non-finite", total, with_gradient, nonfinite));
    }
    log_json(Json{{"type", "self_check"},
                  {"ok", true},
                  {"device", device_.str()},
                  {"model", model_.describe()},
                  {"autocast_bf16", autocast_},
                  {"generator_repeat_difference", {video_difference, track_difference, occlusion_mismatch}},
                  {"loss", total},
                  {"iterations", outputs.iterations.size()},
                  {"parameters_with_gradient", with_gradient},
                  {"visible_fraction", visible},
                  {"seconds", seconds_since(start)}}
                 .dump());
    return core::Status();
  });
}

core::Expected<StepRecord> Trainer::train_step(bool timed) {
  TRACKSCOPE_RETURN_IF_ERROR(require_training("a training step"));
  return guarded("training step", [&]() -> core::Expected<StepRecord> {
    StepRecord r;
    r.step = step_;
    if (timed) synchronize(device_);
    auto mark = Clock::now();
    auto lap = [&](double& milliseconds) {
      if (!timed) return;
      synchronize(device_);
      milliseconds = 1000.0 * seconds_since(mark);
      mark = Clock::now();
    };
    const uint64_t seed = derive_seed(options_.data_seed, static_cast<uint64_t>(step_));
    const SyntheticBatch batch = train_data_->generate(seed);
    at::Tensor video = model_input(batch.video);
    at::Tensor queries = batch.query_points_tyx, targets = batch.target_points_xy, occluded = batch.occluded;
    const int64_t clips = video.size(0);
    const bool two_copies = options_.consistency.weight > 0.0;
    // Augmentation seeds of their own: the generator's stream (and so every earlier run's data) is untouched.
    const uint64_t first_seed = derive_seed(seed ^ kAugmentationSalt, 0);
    if (two_copies) {
      ConsistencyCopies copies = consistency_copies(video, options_.augmentation, options_.consistency.jpeg_pair,
                                                    first_seed, derive_seed(seed ^ kAugmentationSalt, 1));
      video = at::cat({copies.first, copies.second}, 0);
      queries = at::cat({queries, queries}, 0);
      targets = at::cat({targets, targets}, 0);
      occluded = at::cat({occluded, occluded}, 0);
    } else if (options_.augmentation.enabled()) {
      video = augment_video(video, options_.augmentation, first_seed);
    }
    lap(r.data_ms);
    apply_schedule();
    const auto& adamw = static_cast<const torch::optim::AdamWOptions&>(optimizer_->param_groups().front().options());
    r.learning_rate = adamw.lr();
    r.beta1 = std::get<0>(adamw.betas());
    optimizer_->zero_grad();
    const TrackerOutputs outputs = run_model(video, queries);
    const LossTerms loss = tapir_loss(outputs, targets, occluded, video.size(2), video.size(3), options_.loss);
    at::Tensor total = loss.total;
    at::Tensor consistency = at::zeros({}, total.options());
    if (two_copies) {
      consistency = consistency_loss(slice_outputs(outputs, 0, clips), slice_outputs(outputs, clips, clips),
                                     batch.occluded, video.size(2), video.size(3), options_.consistency);
      total = total + consistency * options_.consistency.weight;
    }
    lap(r.forward_ms);
    total.backward();
    lap(r.backward_ms);
    // The reference zeroes gradients that contain NaN before clipping; one host sync for all parameters.
    std::vector<at::Tensor> parameters, gradients;
    for (const at::Tensor& p : model_.module().parameters()) {
      if (!p.grad().defined()) continue;
      parameters.push_back(p);
      gradients.push_back(p.grad());
    }
    if (!gradients.empty()) {
      std::vector<at::Tensor> finite;
      for (const at::Tensor& g : gradients) finite.push_back(at::isfinite(g).all());
      const at::Tensor flags = at::stack(finite).cpu();
      for (size_t i = 0; i < gradients.size(); ++i) {
        if (flags[static_cast<int64_t>(i)].item<bool>()) continue;
        gradients[i].zero_();
        ++r.nonfinite_gradients;
      }
    }
    const double clip = options_.optimizer.gradient_clip_norm;
    r.gradient_norm =
        torch::nn::utils::clip_grad_norm_(parameters, clip > 0.0 ? clip : std::numeric_limits<double>::infinity());
    optimizer_->step();
    lap(r.optimizer_ms);
    const at::Tensor values =
        at::stack({total.detach(), at::stack(loss.position).sum().detach(), at::stack(loss.occlusion).sum().detach(),
                   at::stack(loss.expected_dist).sum().detach(), consistency.detach()})
            .to(at::kCPU, at::kDouble);  // one host sync for every logged value
    r.loss = values[0].item<double>();
    r.position_loss = values[1].item<double>();
    r.occlusion_loss = values[2].item<double>();
    r.expected_dist_loss = values[3].item<double>();
    r.consistency_loss = values[4].item<double>();
    ++step_;
    return r;
  });
}

core::Expected<ValidationSummary> Trainer::final_validation() {
  auto v = validate();
  if (!v) return v.status();
  const Json json = validation_json(*v);
  log_json(json.dump());
  TRACKSCOPE_RETURN_IF_ERROR(write_json(options_.output_dir / "validation.json", json));
  return v;
}

core::Expected<TrainingSummary> Trainer::validate_weights() {
  TrainingSummary summary;
  summary.first_step = summary.last_step = step_;
  auto v = final_validation();
  if (!v) return v.status();
  summary.validation = std::move(*v);
  return summary;
}

core::Expected<TrainingSummary> Trainer::train() {
  TRACKSCOPE_RETURN_IF_ERROR(require_training("training"));
  TrainingSummary summary;
  summary.first_step = step_;
  summary.checkpoint_dir = options_.output_dir;
  const int64_t batch_size = options_.data.batch_size;
  const auto start = Clock::now();
  auto last_checkpoint = start;
  auto interval_start = start;
  double last_step_seconds = 0.0;
  StepRecord sums, timed, latest;
  int64_t interval_steps = 0;
  auto validation_line = [](const ValidationSummary& v) { return validation_json(v).dump(); };
  auto flush_interval = [&]() {
    if (interval_steps == 0) return;
    const double seconds = seconds_since(interval_start), n = static_cast<double>(interval_steps);
    log_json(Json{{"type", "train"},
                  {"step", step_},
                  {"loss", sums.loss / n},
                  {"position_loss", sums.position_loss / n},
                  {"occlusion_loss", sums.occlusion_loss / n},
                  {"expected_dist_loss", sums.expected_dist_loss / n},
                  {"consistency_loss", sums.consistency_loss / n},
                  {"learning_rate", latest.learning_rate},
                  {"beta1", latest.beta1},
                  {"gradient_norm", sums.gradient_norm / n},
                  {"nonfinite_gradients", sums.nonfinite_gradients},
                  {"steps_per_second", n / seconds},
                  {"clips_per_second", n * static_cast<double>(batch_size) / seconds},
                  {"elapsed_s", seconds_since(start)},
                  {"timed_step",
                   {{"data_ms", timed.data_ms},
                    {"forward_ms", timed.forward_ms},
                    {"backward_ms", timed.backward_ms},
                    {"optimizer_ms", timed.optimizer_ms}}}}
                 .dump());
    sums = StepRecord{};
    interval_steps = 0;
    interval_start = Clock::now();
  };
  model_.module().train();
  log_json(Json{{"type", "start"},
                {"step", step_},
                {"model", model_.describe()},
                {"device", device_.str()},
                {"precision", core::to_string(options_.precision)},
                {"autocast_bf16", autocast_},
                {"batch_size", batch_size},
                {"frames", options_.data.frames},
                {"points", options_.data.points},
                {"data",
                 {{"max_object_speed", options_.data.max_object_speed},
                  {"limb_fraction", options_.data.limb_fraction},
                  {"max_aspect_squeeze", options_.data.max_aspect_squeeze},
                  {"max_temporal_blur", options_.data.max_temporal_blur},
                  {"articulated_fraction", options_.data.articulated_fraction},
                  {"occluder_fraction", options_.data.occluder_fraction},
                  {"max_camera_shake", options_.data.max_camera_shake}}},
                {"augmentation",
                 {{"probability", options_.augmentation.probability},
                  {"max_brightness_levels", options_.augmentation.max_brightness_levels},
                  {"max_contrast", options_.augmentation.max_contrast},
                  {"max_gamma", options_.augmentation.max_gamma},
                  {"max_colour_gain", options_.augmentation.max_colour_gain},
                  {"jpeg_probability", options_.augmentation.jpeg_probability},
                  {"jpeg_quality", {options_.augmentation.jpeg_min_quality, options_.augmentation.jpeg_max_quality}}}},
                {"consistency",
                 {{"weight", options_.consistency.weight},
                  {"symmetric", options_.consistency.symmetric},
                  {"hidden_weight", options_.consistency.hidden_weight},
                  {"jpeg_pair", options_.consistency.jpeg_pair}}},
                {"max_steps", options_.max_steps},
                {"max_minutes", options_.max_minutes}}
               .dump());
  while (true) {
    const int64_t done = step_ - summary.first_step;
    if (options_.max_steps > 0 && done >= options_.max_steps) break;
    if (options_.max_minutes > 0.0 && seconds_since(start) + last_step_seconds > options_.max_minutes * 60.0) break;
    const auto step_start = Clock::now();
    auto record = train_step(interval_steps == 0);
    if (!record) return record.status();
    last_step_seconds = seconds_since(step_start);
    if (interval_steps == 0) timed = *record;
    latest = *record;
    sums.loss += record->loss;
    sums.position_loss += record->position_loss;
    sums.occlusion_loss += record->occlusion_loss;
    sums.expected_dist_loss += record->expected_dist_loss;
    sums.consistency_loss += record->consistency_loss;
    sums.gradient_norm += record->gradient_norm;
    sums.nonfinite_gradients += record->nonfinite_gradients;
    summary.last_loss = record->loss;
    if (++interval_steps == options_.log_every_steps) flush_interval();
    if (options_.validation_every_steps > 0 && step_ % options_.validation_every_steps == 0 &&
        options_.validation_clips > 0) {
      flush_interval();
      auto v = validate();
      if (!v) return v.status();
      log_json(validation_line(*v));
      interval_start = Clock::now();
    }
    const bool checkpoint_steps = options_.checkpoint_every_steps > 0 && step_ % options_.checkpoint_every_steps == 0;
    const bool checkpoint_time = options_.checkpoint_every_minutes > 0.0 &&
                                 seconds_since(last_checkpoint) >= options_.checkpoint_every_minutes * 60.0;
    if (checkpoint_steps || checkpoint_time) {
      flush_interval();
      previous_train_seconds_ += seconds_since(last_checkpoint);
      last_checkpoint = Clock::now();
      TRACKSCOPE_RETURN_IF_ERROR(save_checkpoint(options_.output_dir));
    }
  }
  flush_interval();
  summary.train_seconds = seconds_since(start);
  summary.last_step = step_;
  const double steps = static_cast<double>(summary.last_step - summary.first_step);
  summary.steps_per_second = summary.train_seconds > 0.0 ? steps / summary.train_seconds : 0.0;
  summary.clips_per_second = summary.steps_per_second * static_cast<double>(batch_size);
  previous_train_seconds_ += seconds_since(last_checkpoint);
  TRACKSCOPE_RETURN_IF_ERROR(save_checkpoint(options_.output_dir));
  if (options_.validation_clips > 0) {
    auto v = final_validation();
    if (!v) return v.status();
    summary.validation = std::move(*v);
  }
  log_json(Json{{"type", "end"},
                {"step", step_},
                {"train_seconds", summary.train_seconds},
                {"steps_per_second", summary.steps_per_second},
                {"clips_per_second", summary.clips_per_second}}
               .dump());
  return summary;
}

core::Expected<TrainingSummary> run_training(const TrainingOptions& options, const TrainableTrackerFactory& factory) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  auto description = resolve_device(options.device);
  if (!description) return description.status();
  TrainingOptions effective = options;
  return guarded("training", [&]() -> core::Expected<TrainingSummary> {
    const at::Device device(description->id);
    if (!device.is_cuda() && effective.precision == core::Precision::bf16) {
      core::log::info("bf16 autocast is used on CUDA only: training in fp32 on {}", device.str());
      effective.precision = core::Precision::fp32;
    }
    if (device.is_cuda()) {
      const bool tf32 = effective.precision != core::Precision::fp32;
      at::globalContext().setAllowTF32CuBLAS(tf32);
      at::globalContext().setAllowTF32CuDNN(tf32);
    }
    // Model initialisation draws from LibTorch's default generator (torch::nn initialisers); seed it here.
    at::manual_seed(options.model_seed);
    auto model = factory(options.model, device);
    if (!model) return model.status();
    core::log::info("{} {} on {} ({})", options.validate_only ? "validating" : "training", (*model)->describe(),
                    device.str(), core::to_string(effective.precision));
    auto trainer = Trainer::create(effective, **model, device);
    if (!trainer) return trainer.status();
    std::filesystem::path resume_from = options.resume_from;
    if (resume_from.empty() && options.continue_in_output &&
        std::filesystem::exists(options.output_dir / "trainer_state.json")) {
      resume_from = options.output_dir;
    }
    if (!resume_from.empty()) {
      TRACKSCOPE_RETURN_IF_ERROR((*trainer)->resume(resume_from));
    } else if (!options.init_weights.empty()) {
      TRACKSCOPE_RETURN_IF_ERROR((*trainer)->load_initial_weights(options.init_weights));
    }
    if (options.validate_only) return (*trainer)->validate_weights();
    if (options.self_check) {
      core::Status checked = (*trainer)->self_check();
      if (!checked && (*trainer)->uses_autocast()) {
        // A model op without bf16 support should not cost a whole GPU call: retry once without autocast.
        core::log::warn("{}; retrying the self-check without bf16 autocast (TF32)", checked.message());
        (*trainer)->disable_autocast();
        checked = (*trainer)->self_check();
      }
      TRACKSCOPE_RETURN_IF_ERROR(checked);
    }
    return (*trainer)->train();
  });
}

}  // namespace training

core::Expected<TrainingSummary> run_training(const TrainingOptions& options) {
  return training::run_training(options, training::make_trainable_tracker);
}

core::Expected<DataBenchmark> benchmark_synthetic_data(const SyntheticOptions& options, const std::string& device_id,
                                                       int64_t batches, uint64_t seed) {
  auto description = resolve_device(device_id);
  if (!description) return description.status();
  if (batches < 1) return core::invalid_argument(fmt::format("batches {} must be >= 1", batches));
  return training::guarded("data benchmark", [&]() -> core::Expected<DataBenchmark> {
    const at::Device device(description->id);
    auto generator = training::SyntheticVideoGenerator::create(options, device);
    if (!generator) return generator.status();
    (*generator)->generate(training::derive_seed(seed, ~uint64_t{0}));  // warm-up (allocator, kernels)
    training::synchronize(device);
    const auto start = training::Clock::now();
    for (int64_t i = 0; i < batches; ++i) (*generator)->generate(training::derive_seed(seed, static_cast<uint64_t>(i)));
    training::synchronize(device);
    DataBenchmark result;
    result.device = device.str();
    result.batches = batches;
    result.seconds = training::seconds_since(start);
    result.clips_per_second = static_cast<double>(batches * options.batch_size) / result.seconds;
    return result;
  });
}

core::Expected<std::vector<std::filesystem::path>> write_synthetic_preview(const SyntheticOptions& options,
                                                                           const std::string& device_id,
                                                                           uint64_t data_seed,
                                                                           const std::filesystem::path& folder) {
  auto description = resolve_device(device_id);
  if (!description) return description.status();
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) return core::io_error(fmt::format("cannot create '{}': {}", folder.string(), error.message()));
  return training::guarded("preview", [&]() -> core::Expected<std::vector<std::filesystem::path>> {
    SyntheticOptions o = options;
    o.format = SyntheticVideoFormat::uint8;
    auto generator = training::SyntheticVideoGenerator::create(o, at::Device(description->id));
    if (!generator) return generator.status();
    const training::SyntheticBatch batch = (*generator)->generate(training::derive_seed(data_seed, 0));
    const int64_t t_count = o.frames, height = o.height, width = o.width;
    const int64_t shown = std::min<int64_t>(6, t_count), points = std::min<int64_t>(24, o.points);
    // The frames shown, spread over the clip, side by side: [B, H, shown * W, 3].
    std::vector<int64_t> shown_frames;
    for (int64_t column = 0; column < shown; ++column)
      shown_frames.push_back(shown == 1 ? 0 : column * (t_count - 1) / (shown - 1));
    const at::Tensor frames = at::tensor(shown_frames, at::kLong);
    const at::Tensor sheets = batch.video.cpu()
                                  .index_select(1, frames)
                                  .permute({0, 2, 1, 3, 4})
                                  .reshape({o.batch_size, height, shown * width, 3})
                                  .contiguous();
    const at::Tensor targets = batch.target_points_xy.cpu().contiguous();
    const at::Tensor occluded = batch.occluded.cpu().contiguous();
    const auto target = targets.accessor<float, 4>();
    const auto hidden_at = occluded.accessor<bool, 3>();
    std::vector<std::filesystem::path> written;
    for (int64_t b = 0; b < o.batch_size; ++b) {
      core::Frame sheet;
      sheet.width = static_cast<int>(width * shown);
      sheet.height = static_cast<int>(height);
      const uint8_t* pixels = sheets[b].data_ptr<uint8_t>();
      sheet.rgb.assign(pixels, pixels + static_cast<size_t>(sheet.width) * sheet.height * 3);
      auto put = [&](int64_t x, int64_t y, int64_t column, const std::array<uint8_t, 3>& colour) {
        if (x < 0 || y < 0 || x >= width || y >= height) return;
        const auto at = (static_cast<size_t>(y) * sheet.width + static_cast<size_t>(column * width + x)) * 3;
        std::copy(colour.begin(), colour.end(), sheet.rgb.begin() + static_cast<std::ptrdiff_t>(at));
      };
      for (int64_t column = 0; column < shown; ++column) {
        const int64_t t = shown_frames[static_cast<size_t>(column)];
        for (int64_t n = 0; n < points; ++n) {
          const std::array<uint8_t, 3> colour = {static_cast<uint8_t>(80 + (n * 97) % 176),
                                                 static_cast<uint8_t>(80 + (n * 57) % 176),
                                                 static_cast<uint8_t>(80 + (n * 151) % 176)};
          const auto x = static_cast<int64_t>(std::floor(target[b][n][t][0]));
          const auto y = static_cast<int64_t>(std::floor(target[b][n][t][1]));
          const bool hidden = hidden_at[b][n][t];
          const int64_t r = hidden ? 2 : 1;
          for (int64_t dy = -r; dy <= r; ++dy) {
            for (int64_t dx = -r; dx <= r; ++dx) {
              if (!hidden || std::max(std::abs(dx), std::abs(dy)) == r) put(x + dx, y + dy, column, colour);
            }
          }
        }
      }
      const std::filesystem::path file = folder / fmt::format("clip_{}.png", b);
      TRACKSCOPE_RETURN_IF_ERROR(core::write_png(file, sheet));
      written.push_back(file);
    }
    return written;
  });
}

}  // namespace trackscope::gpu
