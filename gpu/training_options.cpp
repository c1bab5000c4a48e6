// Option checks and the learning-rate schedule of gpu/training.h (torch-free).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "gpu/training.h"

namespace trackscope::gpu {

namespace {

core::Status require(bool condition, std::string_view what, const std::string& detail) {
  if (condition) return {};
  return core::invalid_argument(fmt::format("{}: {}", what, detail));
}

bool in_range(double value, double low, double high) { return std::isfinite(value) && value >= low && value <= high; }

// PyTorch's OneCycleLR cosine annealing from `start` (pct 0) to `end` (pct 1).
double cosine_anneal(double start, double end, double pct) {
  return end + (start - end) / 2.0 * (std::cos(std::numbers::pi * pct) + 1.0);
}

}  // namespace

core::Status SyntheticOptions::check() const {
  const std::string_view what = "synthetic data options";
  TRACKSCOPE_RETURN_IF_ERROR(
      require(batch_size >= 1 && batch_size <= 4096, what, fmt::format("batch size {} not in [1, 4096]", batch_size)));
  TRACKSCOPE_RETURN_IF_ERROR(
      require(frames >= 2 && frames <= 4096, what, fmt::format("frames {} not in [2, 4096]", frames)));
  TRACKSCOPE_RETURN_IF_ERROR(require(height >= 16 && height <= 4096 && width >= 16 && width <= 4096, what,
                                     fmt::format("size {}x{} not within 16..4096 px", width, height)));
  TRACKSCOPE_RETURN_IF_ERROR(
      require(points >= 1 && points <= 1 << 20, what, fmt::format("points {} not in [1, 2^20]", points)));
  TRACKSCOPE_RETURN_IF_ERROR(
      require(min_objects >= 0 && max_objects >= 1 && min_objects <= max_objects && max_objects <= 32, what,
              fmt::format("objects [{}, {}] not within 0 <= min <= max, 1 <= max <= 32", min_objects, max_objects)));
  TRACKSCOPE_RETURN_IF_ERROR(require(object_texture_size >= 16 && object_texture_size <= 2048 &&
                                         background_texture_size >= 16 && background_texture_size <= 4096,
                                     what,
                                     fmt::format("texture sizes {} / {} not within 16..2048 / 16..4096",
                                                 object_texture_size, background_texture_size)));
  TRACKSCOPE_RETURN_IF_ERROR(require(in_range(query_first_fraction, 0, 1) && in_range(foreground_point_fraction, 0, 1),
                                     what, "query_first_fraction and foreground_point_fraction must lie in [0, 1]"));
  TRACKSCOPE_RETURN_IF_ERROR(require(in_range(max_object_speed, 0, 10) && in_range(max_camera_speed, 0, 10), what,
                                     fmt::format("speeds {} / {} not in [0, 10]", max_object_speed, max_camera_speed)));
  TRACKSCOPE_RETURN_IF_ERROR(
      require(in_range(max_warp, 0, 0.9), what,
              fmt::format("max_warp {} not in [0, 0.9] (the inverse warp must contract)", max_warp)));
  TRACKSCOPE_RETURN_IF_ERROR(require(in_range(max_blur_sigma_px, 0, 1.5), what,
                                     fmt::format("max_blur_sigma_px {} not in [0, 1.5]", max_blur_sigma_px)));
  TRACKSCOPE_RETURN_IF_ERROR(require(in_range(max_noise_std, 0, 0.5) && in_range(max_lighting_change, 0, 0.5), what,
                                     "max_noise_std and max_lighting_change must lie in [0, 0.5]"));
  TRACKSCOPE_RETURN_IF_ERROR(
      require(in_range(limb_fraction, 0, 1), what, fmt::format("limb_fraction {} not in [0, 1]", limb_fraction)));
  TRACKSCOPE_RETURN_IF_ERROR(require(in_range(max_aspect_squeeze, 1, 4), what,
                                     fmt::format("max_aspect_squeeze {} not in [1, 4]", max_aspect_squeeze)));
  TRACKSCOPE_RETURN_IF_ERROR(require(in_range(max_temporal_blur, 0, 0.45), what,
                                     fmt::format("max_temporal_blur {} not in [0, 0.45] (the frame's own weight "
                                                 "1 - 2x must stay above its neighbours')",
                                                 max_temporal_blur)));
  TRACKSCOPE_RETURN_IF_ERROR(require(in_range(articulated_fraction, 0, 1) && in_range(occluder_fraction, 0, 1), what,
                                     fmt::format("articulated_fraction {} and occluder_fraction {} must lie in [0, 1]",
                                                 articulated_fraction, occluder_fraction)));
  TRACKSCOPE_RETURN_IF_ERROR(require(in_range(max_camera_shake, 0, 0.1), what,
                                     fmt::format("max_camera_shake {} not in [0, 0.1] (the camera window must stay on "
                                                 "the background texture)",
                                                 max_camera_shake)));
  TRACKSCOPE_RETURN_IF_ERROR(require(in_range(attached_limb_fraction, 0, 1), what,
                                     fmt::format("attached_limb_fraction {} not in [0, 1]", attached_limb_fraction)));
  TRACKSCOPE_RETURN_IF_ERROR(require(in_range(min_limb_half_width, 0.02, 0.3), what,
                                     fmt::format("min_limb_half_width {} not in [0.02, 0.3]", min_limb_half_width)));
  TRACKSCOPE_RETURN_IF_ERROR(require(in_range(photo_texture_fraction, 0, 1), what,
                                     fmt::format("photo_texture_fraction {} not in [0, 1]", photo_texture_fraction)));
  TRACKSCOPE_RETURN_IF_ERROR(require(photo_texture_side >= 16 && photo_texture_side <= 4096, what,
                                     fmt::format("photo_texture_side {} not in 16..4096", photo_texture_side)));
  const double pixels = static_cast<double>(batch_size) * static_cast<double>(frames) * static_cast<double>(height) *
                        static_cast<double>(width);
  TRACKSCOPE_RETURN_IF_ERROR(require(pixels <= 2147483648.0, what,
                                     fmt::format("{} x {} x {}x{} is {:.2g} pixels per batch, more than 2^31",
                                                 batch_size, frames, width, height, pixels)));
  return {};
}

bool AugmentationOptions::enabled() const {
  return probability > 0.0 && (max_brightness_levels > 0.0 || max_contrast > 0.0 || max_gamma > 0.0 ||
                               max_colour_gain > 0.0 || jpeg_probability > 0.0);
}

core::Status AugmentationOptions::check() const {
  const std::string_view what = "augmentation options";
  TRACKSCOPE_RETURN_IF_ERROR(require(in_range(probability, 0, 1) && in_range(jpeg_probability, 0, 1), what,
                                     "probabilities must lie in [0, 1]"));
  TRACKSCOPE_RETURN_IF_ERROR(require(in_range(max_brightness_levels, 0, 64), what,
                                     fmt::format("brightness {} levels not in [0, 64]", max_brightness_levels)));
  TRACKSCOPE_RETURN_IF_ERROR(
      require(in_range(max_contrast, 0, 0.5) && in_range(max_gamma, 0, 0.7), what,
              fmt::format("contrast {} not in [0, 0.5] or gamma {} not in [0, 0.7]", max_contrast, max_gamma)));
  TRACKSCOPE_RETURN_IF_ERROR(
      require(in_range(max_colour_gain, 0, 0.5), what, fmt::format("colour gain {} not in [0, 0.5]", max_colour_gain)));
  return require(
      jpeg_min_quality >= 1 && jpeg_min_quality <= jpeg_max_quality && jpeg_max_quality <= 100, what,
      fmt::format("JPEG qualities [{}, {}] must satisfy 1 <= min <= max <= 100", jpeg_min_quality, jpeg_max_quality));
}

core::Status ConsistencyOptions::check() const {
  return require(in_range(weight, 0, 1e3) && in_range(hidden_weight, 0, 1e3) && in_range(huber_delta_px, 1e-6, 1e3),
                 "consistency options",
                 fmt::format("weights {} and {} (hidden points) must be >= 0 and the Huber delta {} positive", weight,
                             hidden_weight, huber_delta_px));
}

core::Status ValidationStabilityOptions::check() const {
  return require(
      clips >= 0 && clips <= 4096 && in_range(brightness_levels, 0, 255) && jpeg_quality >= 1 && jpeg_quality <= 100,
      "validation stability options",
      fmt::format("clips {} not in [0, 4096], shift {} levels not in [0, 255] or JPEG quality {} not in "
                  "[1, 100]",
                  clips, brightness_levels, jpeg_quality));
}

core::Status LossOptions::check() const {
  return require(in_range(position_weight, 0, 1e6) && in_range(huber_delta_px, 1e-6, 1e6) &&
                     in_range(expected_dist_threshold_px, 1e-6, 1e6),
                 "loss options", "weights and thresholds must be finite and positive");
}

core::Status OptimizerOptions::check() const {
  const std::string_view what = "optimizer options";
  TRACKSCOPE_RETURN_IF_ERROR(
      require(in_range(learning_rate, 1e-12, 10), what, fmt::format("learning rate {} not in (0, 10]", learning_rate)));
  TRACKSCOPE_RETURN_IF_ERROR(
      require(in_range(weight_decay, 0, 10), what, fmt::format("weight decay {} not in [0, 10]", weight_decay)));
  TRACKSCOPE_RETURN_IF_ERROR(require(in_range(beta1, 0, 0.999999) && in_range(beta2, 0, 0.999999999), what,
                                     fmt::format("betas ({}, {}) must lie in [0, 1)", beta1, beta2)));
  TRACKSCOPE_RETURN_IF_ERROR(
      require(in_range(epsilon, 1e-20, 1), what, fmt::format("epsilon {} not in (0, 1]", epsilon)));
  return require(in_range(gradient_clip_norm, 0, 1e9), what,
                 fmt::format("gradient clip {} must be >= 0", gradient_clip_norm));
}

const char* to_string(LearningRateSchedule schedule) {
  switch (schedule) {
    case LearningRateSchedule::one_cycle: return "one-cycle";
    case LearningRateSchedule::cosine: return "cosine";
    case LearningRateSchedule::constant: return "constant";
  }
  return "?";
}

core::Expected<LearningRateSchedule> parse_learning_rate_schedule(std::string_view text) {
  for (auto s : {LearningRateSchedule::one_cycle, LearningRateSchedule::cosine, LearningRateSchedule::constant}) {
    if (text == to_string(s)) return s;
  }
  return core::invalid_argument(fmt::format("unknown schedule '{}': use one-cycle, cosine or constant", text));
}

core::Status ScheduleOptions::check() const {
  const std::string_view what = "schedule options";
  TRACKSCOPE_RETURN_IF_ERROR(require(total_steps >= 1, what, fmt::format("total steps {} must be >= 1", total_steps)));
  TRACKSCOPE_RETURN_IF_ERROR(require(in_range(warmup_fraction, 0, 1), what,
                                     fmt::format("warm-up fraction {} not in [0, 1]", warmup_fraction)));
  TRACKSCOPE_RETURN_IF_ERROR(
      require(in_range(one_cycle_div_factor, 1, 1e9) && in_range(one_cycle_final_div_factor, 1, 1e12), what,
              "one-cycle division factors must be >= 1"));
  TRACKSCOPE_RETURN_IF_ERROR(
      require(in_range(base_momentum, 0, 0.999999) && in_range(max_momentum, base_momentum, 0.999999), what,
              fmt::format("momenta base {} / max {} need 0 <= base <= max < 1", base_momentum, max_momentum)));
  return require(in_range(cosine_final_fraction, 0, 1), what, "cosine final fraction must lie in [0, 1]");
}

ScheduleOptions::Point ScheduleOptions::at(int64_t step, double peak, double default_beta1) const {
  const double s = static_cast<double>(std::clamp<int64_t>(step, 0, total_steps - 1));
  const double total = static_cast<double>(total_steps);
  switch (kind) {
    case LearningRateSchedule::constant: return {peak, default_beta1};
    case LearningRateSchedule::cosine: {
      const double warmup = std::round(warmup_fraction * total);
      if (s < warmup) return {peak * (s + 1.0) / warmup, default_beta1};
      const double progress = std::clamp((s - warmup) / std::max(1.0, total - 1.0 - warmup), 0.0, 1.0);
      const double final_lr = peak * cosine_final_fraction;
      return {final_lr + (peak - final_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress)), default_beta1};
    }
    case LearningRateSchedule::one_cycle: {
      // torch.optim.lr_scheduler.OneCycleLR (two phases, cosine annealing).
      const double initial = peak / one_cycle_div_factor;
      const double minimum = initial / one_cycle_final_div_factor;
      const double warm_end = warmup_fraction * total - 1.0;
      const double end = total - 1.0;
      Point point{};
      if (s <= warm_end && warm_end > 0.0) {
        const double pct = s / warm_end;
        point = {cosine_anneal(initial, peak, pct), cosine_anneal(max_momentum, base_momentum, pct)};
      } else {
        const double start = std::max(warm_end, 0.0);
        const double pct = end > start ? (s - start) / (end - start) : 1.0;
        point = {cosine_anneal(peak, minimum, pct), cosine_anneal(base_momentum, max_momentum, pct)};
      }
      if (!cycle_momentum) point.beta1 = default_beta1;
      return point;
    }
  }
  return {peak, default_beta1};
}

const char* to_string(WeightsDtype dtype) {
  switch (dtype) {
    case WeightsDtype::fp32: return "fp32";
    case WeightsDtype::bf16: return "bf16";
    case WeightsDtype::fp16: return "fp16";
  }
  return "?";
}

core::Expected<WeightsDtype> parse_weights_dtype(std::string_view text) {
  for (auto d : {WeightsDtype::fp32, WeightsDtype::bf16, WeightsDtype::fp16}) {
    if (text == to_string(d)) return d;
  }
  return core::invalid_argument(fmt::format("unknown weights dtype '{}': use fp32, bf16 or fp16", text));
}

TrainingOptions::TrainingOptions() {
  data.batch_size = 4;  // the official configuration
  validation_data.batch_size = 4;
  validation_data.query_first_fraction = 1.0;  // TAP-Vid query-first protocol
}

core::Status TrainingOptions::check() const {
  const std::string_view what = "training options";
  TRACKSCOPE_RETURN_IF_ERROR(require(!model.empty(), what, "no model named"));
  TRACKSCOPE_RETURN_IF_ERROR(require(!output_dir.empty(), what, "no output folder given"));
  TRACKSCOPE_RETURN_IF_ERROR(require(precision != core::Precision::fp16, what,
                                     "fp16 training would need loss scaling; use bf16 (autocast) or fp32/tf32"));
  TRACKSCOPE_RETURN_IF_ERROR(data.check().with_context("training data"));
  TRACKSCOPE_RETURN_IF_ERROR(validation_data.check().with_context("validation data"));
  TRACKSCOPE_RETURN_IF_ERROR(loss.check());
  TRACKSCOPE_RETURN_IF_ERROR(augmentation.check());
  TRACKSCOPE_RETURN_IF_ERROR(consistency.check());
  TRACKSCOPE_RETURN_IF_ERROR(
      require(consistency.weight == 0.0 || augmentation.enabled() || consistency.jpeg_pair, what,
              "the consistency loss compares two perturbed copies of each clip: turn on an augmentation "
              "(brightness, contrast, gamma or JPEG)"));
  TRACKSCOPE_RETURN_IF_ERROR(validation_stability.check());
  TRACKSCOPE_RETURN_IF_ERROR(optimizer.check());
  TRACKSCOPE_RETURN_IF_ERROR(schedule.check());
  TRACKSCOPE_RETURN_IF_ERROR(require(validation_clips >= 0 && validation_every_steps >= 0 && max_steps >= 0 &&
                                         log_every_steps >= 1 && checkpoint_every_steps >= 0,
                                     what, "step counts must be >= 0 (log interval >= 1)"));
  TRACKSCOPE_RETURN_IF_ERROR(require(in_range(max_minutes, 0, 1e6) && in_range(checkpoint_every_minutes, 0, 1e6), what,
                                     "minutes must be >= 0"));
  TRACKSCOPE_RETURN_IF_ERROR(require(!validate_only || validation_clips > 0, what,
                                     "validate-only needs validation clips (validation_clips > 0)"));
  TRACKSCOPE_RETURN_IF_ERROR(
      require(validate_only || max_steps > 0 || max_minutes > 0.0, what, "give a budget: max_steps or max_minutes"));
  return require(max_shard_bytes >= (1 << 20), what,
                 fmt::format("max shard size {} B is below 1 MiB", max_shard_bytes));
}

}  // namespace trackscope::gpu
