#include "gpu/training/trainer.h"

#include <ATen/Context.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/serialize.h>
#include <torch/version.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "core/io/atomic_file.h"
#include "core/log.h"
#include "core/tracking/metrics.h"
#include "gpu/devices.h"
#include "gpu/torch_compat_autocast.h"
#include "gpu/training/checkpoint.h"
#include "gpu/training/loss.h"

namespace trackscope::gpu {

namespace training {

namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void synchronize(const at::Device& device) {
  if (device.is_cuda()) c10::impl::VirtualGuardImpl(device.type()).getStream(device).synchronize();
}

// A torch exception as a Status: its first line only (c10 messages carry a backtrace), out of memory recognised.
core::Status torch_error(const std::exception& error, std::string_view during) {
  std::string what = error.what();
  what = what.substr(0, what.find('\n'));
  if (what.find("out of memory") != std::string::npos) {
    return core::out_of_memory(
        fmt::format("{}: out of device memory ({}); lower the batch size, points or frames", during, what));
  }
  return core::internal_error(fmt::format("{}: {}", during, what));
}

template <typename Function>
auto guarded(std::string_view during, Function&& function) -> decltype(function()) {
  try {
    return function();
  } catch (const std::exception& error) {
    return torch_error(error, during);
  }
}

at::Tensor model_input(const at::Tensor& video) {
  return video.scalar_type() == at::kByte ? video.to(at::kFloat).div_(255.0 / 2.0).sub_(1.0) : video;
}

Json metrics_json(const core::TapVidMetrics& m) {
  return {{"average_jaccard", m.average_jaccard},
          {"average_pts_within", m.average_pts_within},
          {"occlusion_accuracy", m.occlusion_accuracy},
          {"jaccard", m.jaccard},
          {"pts_within", m.pts_within},
          {"videos", m.videos},
          {"evaluated_points", m.counts.evaluated_points}};
}

// TAP-Vid inputs of clip b, positions scaled to 256x256 as the benchmark expects.
core::TapVidVideo tapvid_video(const SyntheticBatch& batch, const at::Tensor& pred_tracks,
                               const at::Tensor& pred_occluded, int64_t b) {
  const int64_t n_count = batch.target_points_xy.size(1), t_count = batch.target_points_xy.size(2);
  const int64_t height = batch.video.size(2), width = batch.video.size(3);
  at::Tensor scale = at::tensor({256.0f / static_cast<float>(width), 256.0f / static_cast<float>(height)});
  auto floats = [](const at::Tensor& t) {
    at::Tensor c = t.to(at::kCPU, at::kFloat).contiguous();
    return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  };
  auto bytes = [](const at::Tensor& t) {
    at::Tensor c = t.to(at::kCPU, at::kByte).contiguous();
    return std::vector<uint8_t>(c.data_ptr<uint8_t>(), c.data_ptr<uint8_t>() + c.numel());
  };
  core::TapVidVideo v;
  v.track_count = n_count;
  v.frame_count = t_count;
  at::Tensor frames = batch.query_points_tyx[b].select(-1, 0).to(at::kCPU, at::kDouble).contiguous();
  v.query_frames.assign(frames.data_ptr<double>(), frames.data_ptr<double>() + n_count);
  v.gt_occluded = bytes(batch.occluded[b]);
  v.gt_tracks_xy = floats(batch.target_points_xy[b].cpu() * scale);
  v.pred_occluded = bytes(pred_occluded[b]);
  v.pred_tracks_xy = floats(pred_tracks[b].to(at::kCPU, at::kFloat) * scale);
  return v;
}

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
  auto train_data = SyntheticVideoGenerator::create(options.data, device);
  if (!train_data) return train_data.status();
  auto validation_data = SyntheticVideoGenerator::create(options.validation_data, device);
  if (!validation_data) return validation_data.status();
  trainer->train_data_ = std::move(*train_data);
  trainer->validation_data_ = std::move(*validation_data);
  const OptimizerOptions& o = options.optimizer;
  trainer->optimizer_ =
      std::make_unique<torch::optim::AdamW>(model.module().parameters(), torch::optim::AdamWOptions(o.learning_rate)
                                                                             .betas(std::make_tuple(o.beta1, o.beta2))
                                                                             .weight_decay(o.weight_decay)
                                                                             .eps(o.epsilon));
  std::error_code error;
  std::filesystem::create_directories(options.output_dir, error);
  if (error) return core::io_error(fmt::format("cannot create '{}': {}", options.output_dir.string(), error.message()));
  trainer->log_.open(options.output_dir / "train_log.jsonl", std::ios::app);
  if (!trainer->log_)
    return core::io_error(fmt::format("cannot write '{}'", (options.output_dir / "train_log.jsonl").string()));
  return trainer;
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
    if (std::filesystem::exists(dir / "optimizer.pt")) {
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
    const SyntheticBatch batch = train_data_->generate(derive_seed(options_.data_seed, static_cast<uint64_t>(step_)));
    const at::Tensor video = model_input(batch.video);
    lap(r.data_ms);
    apply_schedule();
    const auto& adamw = static_cast<const torch::optim::AdamWOptions&>(optimizer_->param_groups().front().options());
    r.learning_rate = adamw.lr();
    r.beta1 = std::get<0>(adamw.betas());
    optimizer_->zero_grad();
    const TrackerOutputs outputs = run_model(video, batch.query_points_tyx);
    const LossTerms loss =
        tapir_loss(outputs, batch.target_points_xy, batch.occluded, video.size(2), video.size(3), options_.loss);
    lap(r.forward_ms);
    loss.total.backward();
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
        at::stack({loss.total.detach(), at::stack(loss.position).sum().detach(),
                   at::stack(loss.occlusion).sum().detach(), at::stack(loss.expected_dist).sum().detach()})
            .to(at::kCPU, at::kDouble);  // one host sync for every logged value
    r.loss = values[0].item<double>();
    r.position_loss = values[1].item<double>();
    r.occlusion_loss = values[2].item<double>();
    r.expected_dist_loss = values[3].item<double>();
    ++step_;
    return r;
  });
}

core::Expected<ValidationSummary> Trainer::validate() {
  const auto start = Clock::now();
  return guarded("validation", [&]() -> core::Expected<ValidationSummary> {
    torch::NoGradGuard no_grad;
    model_.module().eval();
    std::vector<core::TapVidMetrics> model_metrics, still_metrics;
    double loss_sum = 0.0;
    const int64_t batch_size = options_.validation_data.batch_size;
    for (int64_t done = 0, index = 0; done < options_.validation_clips; ++index) {
      const SyntheticBatch batch =
          validation_data_->generate(derive_seed(options_.validation_seed, static_cast<uint64_t>(index)));
      const at::Tensor video = model_input(batch.video);
      const TrackerOutputs outputs = run_model(video, batch.query_points_tyx);
      const int64_t used = std::min(batch_size, options_.validation_clips - done);
      loss_sum +=
          tapir_loss(outputs, batch.target_points_xy, batch.occluded, video.size(2), video.size(3), options_.loss)
              .total.item<double>() *
          static_cast<double>(used);
      const TrackEstimate& estimate = outputs.final_estimate();
      // The model's own visibility rule: visible iff (1 - sigmoid(occ)) (1 - sigmoid(expd)) >= 0.5.
      at::Tensor visible = 1.0 - at::sigmoid(estimate.occlusion_logits.to(at::kFloat));
      if (estimate.expected_dist_logits.defined())
        visible = visible * (1.0 - at::sigmoid(estimate.expected_dist_logits.to(at::kFloat)));
      const at::Tensor predicted_occluded = visible < 0.5;
      const int64_t frames = batch.target_points_xy.size(2);
      const at::Tensor still_tracks =
          batch.query_points_tyx.narrow(-1, 1, 2).flip(-1).unsqueeze(2).expand({-1, -1, frames, -1});
      const at::Tensor still_occluded = at::zeros_like(batch.occluded);
      for (int64_t b = 0; b < used; ++b) {
        auto m = core::compute_tapvid_metrics(tapvid_video(batch, estimate.tracks_xy, predicted_occluded, b),
                                              core::QueryMode::first);
        auto s =
            core::compute_tapvid_metrics(tapvid_video(batch, still_tracks, still_occluded, b), core::QueryMode::first);
        if (!m) return m.status();
        if (!s) return s.status();
        model_metrics.push_back(*m);
        still_metrics.push_back(*s);
      }
      done += used;
    }
    model_.module().train();
    ValidationSummary summary;
    summary.step = step_;
    summary.loss = options_.validation_clips > 0 ? loss_sum / static_cast<double>(options_.validation_clips) : 0.0;
    summary.metrics = core::average_over_videos(model_metrics);
    summary.stationary_baseline = core::average_over_videos(still_metrics);
    summary.seconds = seconds_since(start);
    return summary;
  });
}

core::Expected<TrainingSummary> Trainer::train() {
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
  auto validation_line = [](const ValidationSummary& v) {
    return Json{{"type", "validation"},
                {"step", v.step},
                {"loss", v.loss},
                {"seconds", v.seconds},
                {"model", metrics_json(v.metrics)},
                {"stationary", metrics_json(v.stationary_baseline)}}
        .dump();
  };
  auto flush_interval = [&]() {
    if (interval_steps == 0) return;
    const double seconds = seconds_since(interval_start), n = static_cast<double>(interval_steps);
    log_json(Json{{"type", "train"},
                  {"step", step_},
                  {"loss", sums.loss / n},
                  {"position_loss", sums.position_loss / n},
                  {"occlusion_loss", sums.occlusion_loss / n},
                  {"expected_dist_loss", sums.expected_dist_loss / n},
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
                  {"max_temporal_blur", options_.data.max_temporal_blur}}},
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
    auto v = validate();
    if (!v) return v.status();
    log_json(validation_line(*v));
    summary.validation = *v;
    TRACKSCOPE_RETURN_IF_ERROR(write_json(options_.output_dir / "validation.json", Json::parse(validation_line(*v))));
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
    core::log::info("training {} on {} ({})", (*model)->describe(), device.str(), core::to_string(effective.precision));
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

}  // namespace trackscope::gpu
