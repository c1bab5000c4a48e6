// trackscope-train: trains a tracker on synthetic video in one call (self-check, train for a budget, checkpoint,
// validate) and prints a JSON summary; resumable from its checkpoint folder. See docs/training.md.
//
//   trackscope-train --model locotrack-small --out runs/s --minutes 8 --batch 4
//   trackscope-train --model locotrack-small --out runs/s --continue --minutes 8   # resumes when runs/s has a
//   checkpoint trackscope-train --data-bench 20 --device cpu --batch 1 --frames 24      # generator throughput only
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include "core/io/atomic_file.h"
#include "core/limits.h"
#include "core/log.h"
#include "gpu/cpu_runtime.h"
#include "gpu/training.h"

namespace {

using namespace trackscope;

nlohmann::json metrics_json(const core::TapVidMetrics& m) {
  return {{"average_jaccard", m.average_jaccard},
          {"average_pts_within", m.average_pts_within},
          {"occlusion_accuracy", m.occlusion_accuracy},
          {"videos", m.videos}};
}

}  // namespace

int main(int argc, char** argv) {
  gpu::TrainingOptions o;
  std::string precision = "bf16", schedule = "one-cycle", weights_dtype = "fp32", summary_path;
  std::filesystem::path preview_folder;
  int64_t size_px = 256, data_bench_batches = 0;
  double max_shard_mib = 15.0;
  std::vector<int> jpeg_qualities = {o.augmentation.jpeg_min_quality, o.augmentation.jpeg_max_quality};
  bool no_self_check = false, no_cycle_momentum = false, verbose = false;

  CLI::App app{
      "trackscope-train: train a tracker on synthetic video (one call: self-check, train, checkpoint, validate)"};
  app.add_option("--model", o.model, "model to train (a name gpu/training/trainable_models.cpp knows)")
      ->capture_default_str();
  app.add_option("--out", o.output_dir, "folder for the checkpoint, train_log.jsonl and validation.json");
  app.add_option("--device", o.device, "auto, cpu, cuda, cuda:N")->capture_default_str();
  app.add_option("--precision", precision, "bf16 (autocast on CUDA), tf32 or fp32")->capture_default_str();
  app.add_option("--minutes", o.max_minutes,
                 "wall-clock budget of the training loop (final checkpoint and validation come on top)");
  app.add_option("--steps", o.max_steps, "optimiser steps in this call (0 = no limit)");
  app.add_option("--resume", o.resume_from,
                 "checkpoint folder to continue from (weights*.safetensors, trainer_state.json, optimizer.pt)");
  app.add_flag("--continue", o.continue_in_output,
               "resume from --out if it holds a checkpoint, else start fresh (same command every call)");
  app.add_option("--init-weights", o.init_weights, "weights (.safetensors) to start a fresh run from");
  app.add_option("--model-seed", o.model_seed, "seed of the model's initialisation")->capture_default_str();
  app.add_option("--batch", o.data.batch_size, "clips per step")->capture_default_str();
  app.add_option("--frames", o.data.frames, "frames per clip")->capture_default_str();
  app.add_option("--points", o.data.points, "query points per clip")->capture_default_str();
  app.add_option("--size", size_px, "clip height and width in px")->capture_default_str();
  app.add_option("--min-objects", o.data.min_objects, "fewest foreground objects per clip")->capture_default_str();
  app.add_option("--max-objects", o.data.max_objects, "most foreground objects per clip")->capture_default_str();
  app.add_option("--query-first", o.data.query_first_fraction, "share of training queries on frame 0")
      ->capture_default_str();
  app.add_option("--object-speed", o.data.max_object_speed, "fastest object motion, image half-widths per clip")
      ->capture_default_str();
  app.add_option("--limbs", o.data.limb_fraction, "share of objects that are swinging limbs")->capture_default_str();
  app.add_option("--squeeze", o.data.max_aspect_squeeze, "largest one-axis stretch of a clip (half the clips)")
      ->capture_default_str();
  app.add_option("--temporal-blur", o.data.max_temporal_blur,
                 "largest weight of each neighbouring frame in a frame (half the clips)")
      ->capture_default_str();
  app.add_option("--limb-width", o.data.min_limb_half_width,
                 "thinnest limb: its half-width is uniform in [x, 0.3] of its texture (lower = thinner legs)")
      ->capture_default_str();
  app.add_option("--attached-limbs", o.data.attached_limb_fraction,
                 "share of limbs hanging from a point of the object drawn before them (legs on a moving body)")
      ->capture_default_str();
  app.add_option("--articulated", o.data.articulated_fraction,
                 "share of limbs with a second segment hanging from their far end (a lower leg)")
      ->capture_default_str();
  app.add_option("--occluders", o.data.occluder_fraction,
                 "share of clips whose top-most object is a thin bar drifting across (a pole, a fence rail)")
      ->capture_default_str();
  app.add_option("--camera-shake", o.data.max_camera_shake,
                 "largest per-frame shake of the whole image, image half-widths (half the clips; <= 0.1)")
      ->capture_default_str();
  app.add_option("--photo-textures", o.data.photo_texture_fraction,
                 "share of layers textured with a crop of a photograph from --texture-images (0 = procedural only)")
      ->capture_default_str();
  app.add_option("--texture-images", o.data.photo_textures,
                 "JPEG/PNG photographs (files or folders) for --photo-textures; mind their licences")
      ->delimiter(',');
  app.add_option("--texture-side", o.data.photo_texture_side, "photographs are cut into squares of this many px")
      ->capture_default_str();
  app.add_option("--aug-brightness", o.augmentation.max_brightness_levels,
                 "augmentation: brightness offset up to +-L grey levels per clip")
      ->capture_default_str();
  app.add_option("--aug-contrast", o.augmentation.max_contrast, "augmentation: contrast gain in [1 - x, 1 + x]")
      ->capture_default_str();
  app.add_option("--aug-gamma", o.augmentation.max_gamma, "augmentation: gamma exp(u), u in [-x, x]")
      ->capture_default_str();
  app.add_option("--aug-colour", o.augmentation.max_colour_gain,
                 "augmentation: per-channel gain (white balance) in [1 - x, 1 + x] per clip")
      ->capture_default_str();
  app.add_option("--aug-jpeg", o.augmentation.jpeg_probability,
                 "augmentation: share of clips passed through a JPEG-like round trip (on the device)")
      ->capture_default_str();
  app.add_option("--aug-jpeg-quality", jpeg_qualities, "augmentation: JPEG quality range MIN,MAX (IJG scale)")
      ->delimiter(',')
      ->expected(2)
      ->capture_default_str();
  app.add_option("--aug-probability", o.augmentation.probability, "augmentation: share of clips augmented")
      ->capture_default_str();
  app.add_option("--consistency", o.consistency.weight,
                 "weight of the consistency loss between two augmented copies of each clip (0 = off; doubles the "
                 "clips per step)")
      ->capture_default_str();
  app.add_flag("--consistency-jpeg-pair", o.consistency.jpeg_pair,
               "the consistency loss's second copy is the first through the JPEG-like round trip (quality uniform in "
               "--aug-jpeg-quality): the copies differ by compression alone (default: two independent augmentations)");
  app.add_flag("--consistency-symmetric", o.consistency.symmetric,
               "consistency gradients through both copies (default: the second copy is a fixed target)");
  CLI::Option* hidden_weight =
      app.add_option("--consistency-hidden-weight", o.consistency.hidden_weight,
                     "weight of the points hidden in the ground truth in the consistency loss's position term, against "
                     "1 for the visible ones (0: visible points only, as the supervised loss)")
          ->check(CLI::Range(0.0, 1e3))
          ->capture_default_str();
  app.add_flag_callback(
         "--consistency-hidden", [&o] { o.consistency.hidden_weight = 1.0; },
         "the consistency loss pulls together the positions of hidden points as of visible ones "
         "(--consistency-hidden-weight 1)")
      ->excludes(hidden_weight);
  app.add_option("--val-stability-clips", o.validation_stability.clips,
                 "validation clips tracked again under +-2 levels, JPEG-like q90 and bf16/fp16 (0 = off)")
      ->capture_default_str();
  app.add_option("--data-seed", o.data_seed, "seed of the training stream (batch s = f(seed, s))")
      ->capture_default_str();
  app.add_option("--val-clips", o.validation_clips, "clips in the fixed validation set (0 = no validation)")
      ->capture_default_str();
  app.add_option("--val-batch", o.validation_data.batch_size, "clips per validation batch")->capture_default_str();
  app.add_option("--val-seed", o.validation_seed, "seed of the validation set")->capture_default_str();
  app.add_option("--val-every", o.validation_every_steps, "validate every N steps (0 = at the end only)")
      ->capture_default_str();
  app.add_option("--lr", o.optimizer.learning_rate, "peak learning rate")->capture_default_str();
  app.add_option("--weight-decay", o.optimizer.weight_decay, "AdamW weight decay")->capture_default_str();
  app.add_option("--beta1", o.optimizer.beta1, "AdamW beta1 (one-cycle with momentum cycling overrides it)")
      ->capture_default_str();
  app.add_option("--beta2", o.optimizer.beta2, "AdamW beta2")->capture_default_str();
  app.add_option("--clip", o.optimizer.gradient_clip_norm, "gradient clipping norm (0 = off)")->capture_default_str();
  app.add_option("--schedule", schedule, "one-cycle, cosine or constant")->capture_default_str();
  app.add_option("--schedule-steps", o.schedule.total_steps, "steps the schedule spans over the whole run (all calls)")
      ->capture_default_str();
  app.add_option("--warmup", o.schedule.warmup_fraction, "warm-up share of the schedule (one-cycle pct_start)")
      ->capture_default_str();
  app.add_flag("--no-cycle-momentum", no_cycle_momentum, "one-cycle: keep beta1 fixed");
  app.add_option("--log-every", o.log_every_steps, "steps per train_log.jsonl line")->capture_default_str();
  app.add_option("--checkpoint-every-steps", o.checkpoint_every_steps, "also checkpoint every N steps (0 = off)")
      ->capture_default_str();
  app.add_option("--checkpoint-every-minutes", o.checkpoint_every_minutes, "also checkpoint every M minutes (0 = off)")
      ->capture_default_str();
  app.add_option("--weights-dtype", weights_dtype, "dtype of the checkpoint weights: fp32, bf16, fp16")
      ->capture_default_str();
  app.add_option("--max-shard-mib", max_shard_mib, "split weights files above this size")->capture_default_str();
  app.add_flag("--no-self-check", no_self_check, "skip the generator/forward/backward self-check");
  app.add_flag("--validate-only", o.validate_only,
               "only validate the starting weights (--init-weights or --resume): no step, no checkpoint, no budget "
               "needed; validation.json and the summary");
  app.add_option("--summary-json", summary_path, "also write the summary JSON here");
  app.add_option("--data-bench", data_bench_batches, "only measure the synthetic generator: N batches, JSON on stdout");
  app.add_option("--data-preview", preview_folder,
                 "only draw the first training batch: clip_<b>.png in this folder (six frames each, with the ground "
                 "truth of 24 points)");
  app.add_flag("-v,--verbose", verbose, "debug logging");
  CLI11_PARSE(app, argc, argv);
  gpu::set_cpu_threads(core::automatic_cpu_threads());  // CPU runs: every core, or OMP_NUM_THREADS (as the CLI)

  core::log::SinkHandle sink = core::log::add_sink(
      [](core::log::Level level, std::string_view text) {
        std::fprintf(stderr, "[%s] %.*s\n", core::log::to_string(level), static_cast<int>(text.size()), text.data());
      },
      verbose ? core::log::Level::debug : core::log::Level::info);

  o.data.height = o.data.width = size_px;
  o.validation_data.height = o.validation_data.width = size_px;
  o.validation_data.frames = o.data.frames;
  o.validation_data.points = o.data.points;
  o.validation_data.min_objects = o.data.min_objects;
  o.validation_data.max_objects = o.data.max_objects;
  o.self_check = !no_self_check;
  o.augmentation.jpeg_min_quality = jpeg_qualities.at(0);
  o.augmentation.jpeg_max_quality = jpeg_qualities.at(1);
  o.schedule.cycle_momentum = !no_cycle_momentum;
  o.max_shard_bytes = static_cast<int64_t>(max_shard_mib * 1024.0 * 1024.0);
  auto parsed_precision = core::parse_precision(precision);
  auto parsed_schedule = gpu::parse_learning_rate_schedule(schedule);
  auto parsed_dtype = gpu::parse_weights_dtype(weights_dtype);
  for (const core::Status& s : {parsed_precision.status(), parsed_schedule.status(), parsed_dtype.status()}) {
    if (!s) {
      std::fprintf(stderr, "trackscope-train: %s\n", s.message().c_str());
      return 2;
    }
  }
  o.precision = *parsed_precision;
  o.schedule.kind = *parsed_schedule;
  o.checkpoint_weights_dtype = *parsed_dtype;

  if (!preview_folder.empty()) {
    auto files = gpu::write_synthetic_preview(o.data, o.device, o.data_seed, preview_folder);
    if (!files) {
      std::fprintf(stderr, "trackscope-train: %s\n", files.status().message().c_str());
      return 1;
    }
    for (const std::filesystem::path& file : *files) std::printf("%s\n", file.string().c_str());
    return 0;
  }
  if (data_bench_batches > 0) {
    auto bench = gpu::benchmark_synthetic_data(o.data, o.device, data_bench_batches, o.data_seed);
    if (!bench) {
      std::fprintf(stderr, "trackscope-train: %s\n", bench.status().message().c_str());
      return 1;
    }
    const nlohmann::json out = {
        {"benchmark", "synthetic_data"}, {"device", bench->device},   {"batch_size", o.data.batch_size},
        {"frames", o.data.frames},       {"size_px", size_px},        {"points", o.data.points},
        {"batches", bench->batches},     {"seconds", bench->seconds}, {"clips_per_second", bench->clips_per_second}};
    std::cout << out.dump(2) << "\n";
    return 0;
  }

  auto summary = gpu::run_training(o);
  if (!summary) {
    std::fprintf(stderr, "trackscope-train: %s\n", summary.status().message().c_str());
    return 1;
  }
  nlohmann::json out = {
      {"first_step", summary->first_step},
      {"last_step", summary->last_step},
      {"train_seconds", summary->train_seconds},
      {"steps_per_second", summary->steps_per_second},
      {"clips_per_second", summary->clips_per_second},
      {"last_loss", summary->last_loss},
      {"checkpoint",
       summary->checkpoint_dir.empty() ? nlohmann::json() : nlohmann::json(summary->checkpoint_dir.string())}};
  if (summary->validation) {
    out["validation"] = {{"step", summary->validation->step},
                         {"loss", summary->validation->loss},
                         {"model", metrics_json(summary->validation->metrics)},
                         {"stationary", metrics_json(summary->validation->stationary_baseline)},
                         {"ece",
                          {{"p_occluded", summary->validation->occluded_calibration.expected_calibration_error},
                           {"p_far", summary->validation->far_calibration.expected_calibration_error}}}};
    for (const gpu::ValidationStabilityRow& row : summary->validation->stability) {
      if (row.change) {
        out["validation"]["stability"][row.name] = {{"mean_px", row.change->mean_px},
                                                    {"p99_px", row.change->p99_px},
                                                    {"visible_mean_px", row.change->visible_mean_px}};
      }
    }
  }
  std::cout << out.dump(2) << "\n";
  if (!summary_path.empty()) {
    if (const core::Status written = core::io::write_file_atomically(summary_path, out.dump(2) + "\n"); !written) {
      std::fprintf(stderr, "trackscope-train: %s\n", written.message().c_str());
      return 1;
    }
  }
  return 0;
}
