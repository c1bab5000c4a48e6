// The trainer's validation (Trainer::validate): query-first TAP-Vid metrics on the fixed synthetic set, the
// calibration of the model's p_occluded and p_far there, and a cheap stability check on the first validation
// clips (+-L grey levels, the JPEG-like round trip, bf16/fp16 autocast on CUDA) against the model in exact fp32.
#include <ATen/Context.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/tracking/evaluation.h"
#include "core/tracking/evaluation_report.h"
#include "core/tracking/metrics.h"
#include "gpu/training/augmentation.h"
#include "gpu/training/loss.h"
#include "gpu/training/trainer.h"
#include "gpu/training/trainer_internal.h"

namespace trackscope::gpu::training {
namespace {

Json metrics_json(const core::TapVidMetrics& m) {
  return {{"average_jaccard", m.average_jaccard},
          {"average_pts_within", m.average_pts_within},
          {"occlusion_accuracy", m.occlusion_accuracy},
          {"jaccard", m.jaccard},
          {"pts_within", m.pts_within},
          {"videos", m.videos},
          {"evaluated_points", m.counts.evaluated_points}};
}

std::vector<float> floats(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU, at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
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

// Adds the query-first pairs (frames after each query) of the first `used` clips to the calibration: p_occluded
// against the ground-truth occlusion, p_far against "farther than 6 px at 256x256" on ground-truth-visible pairs.
void add_calibration(const SyntheticBatch& batch, const TrackEstimate& estimate, int64_t used,
                     core::TrackCalibration& calibration) {
  const int64_t n_count = batch.target_points_xy.size(1), t_count = batch.target_points_xy.size(2);
  const double sx = 256.0 / static_cast<double>(batch.video.size(3));
  const double sy = 256.0 / static_cast<double>(batch.video.size(2));
  const std::vector<float> p_occluded = floats(at::sigmoid(estimate.occlusion_logits.to(at::kFloat)));
  const std::vector<float> p_far = estimate.expected_dist_logits.defined()
                                       ? floats(at::sigmoid(estimate.expected_dist_logits.to(at::kFloat)))
                                       : std::vector<float>();
  const std::vector<float> tracks = floats(estimate.tracks_xy);
  const std::vector<float> targets = floats(batch.target_points_xy);
  const std::vector<float> queries = floats(batch.query_points_tyx);
  at::Tensor occluded_tensor = batch.occluded.to(at::kCPU).contiguous();
  const bool* occluded = occluded_tensor.data_ptr<bool>();
  for (int64_t b = 0; b < used; ++b) {
    for (int64_t n = 0; n < n_count; ++n) {
      const auto query_frame = static_cast<int64_t>(std::lround(queries[static_cast<size_t>((b * n_count + n) * 3)]));
      for (int64_t t = query_frame + 1; t < t_count; ++t) {
        const auto i = static_cast<size_t>((b * n_count + n) * t_count + t);
        calibration.occluded.add(p_occluded[i], occluded[i]);
        if (occluded[i] || p_far.empty()) continue;
        const double dx = (tracks[2 * i] - targets[2 * i]) * sx, dy = (tracks[2 * i + 1] - targets[2 * i + 1]) * sy;
        calibration.far.add(p_far[i], std::hypot(dx, dy) > core::kFarThresholdPx256);
      }
    }
  }
}

// The final estimate of the first `used` clips as tracks at 256x256 px (one Track per (clip, query)), appended.
void append_tracks(core::TrackSet& set, const TrackEstimate& estimate, const at::Tensor& queries_tyx, int64_t used,
                   int64_t height, int64_t width) {
  const int64_t n_count = estimate.tracks_xy.size(1), t_count = estimate.tracks_xy.size(2);
  const double sx = 256.0 / static_cast<double>(width), sy = 256.0 / static_cast<double>(height);
  at::Tensor visible = 1.0 - at::sigmoid(estimate.occlusion_logits.to(at::kFloat));
  if (estimate.expected_dist_logits.defined())
    visible = visible * (1.0 - at::sigmoid(estimate.expected_dist_logits.to(at::kFloat)));
  const std::vector<float> tracks = floats(estimate.tracks_xy);
  const std::vector<float> visibility = floats(visible);
  const std::vector<float> queries = floats(queries_tyx);
  set.frame_count = t_count;
  for (int64_t b = 0; b < used; ++b) {
    for (int64_t n = 0; n < n_count; ++n) {
      const size_t q = static_cast<size_t>((b * n_count + n) * 3);
      core::Track track;
      track.query = {static_cast<int64_t>(std::lround(queries[q])), queries[q + 2] * sx, queries[q + 1] * sy};
      for (int64_t t = 0; t < t_count; ++t) {
        const auto i = static_cast<size_t>((b * n_count + n) * t_count + t);
        core::TrackPoint p;
        p.x_px = static_cast<float>(tracks[2 * i] * sx);
        p.y_px = static_cast<float>(tracks[2 * i + 1] * sy);
        p.visible = visibility[i] >= 0.5f;
        track.points.push_back(p);
      }
      set.tracks.push_back(std::move(track));
    }
  }
}

}  // namespace

Json validation_json(const ValidationSummary& v) {
  Json stability = Json::array();
  for (const ValidationStabilityRow& row : v.stability) {
    Json r = {{"name", row.name}};
    if (row.change) r["change"] = Json::parse(core::track_change_json(*row.change));
    if (!row.skipped.empty()) r["skipped"] = row.skipped;
    stability.push_back(r);
  }
  return {
      {"type", "validation"},
      {"step", v.step},
      {"loss", v.loss},
      {"seconds", v.seconds},
      {"model", metrics_json(v.metrics)},
      {"stationary", metrics_json(v.stationary_baseline)},
      {"calibration",
       {{"bins", core::kCalibrationBins},
        {"suspicious_error_rate", core::kSuspiciousErrorRate},
        {"p_occluded", Json::parse(core::calibration_json(v.occluded_calibration, "occluded in the ground truth"))},
        {"p_far", Json::parse(core::calibration_json(
                      v.far_calibration, "farther than 6 px (at 256x256) from a point visible in the ground truth"))}}},
      {"stability", stability}};
}

core::Expected<ValidationSummary> Trainer::validate() {
  const auto start = Clock::now();
  return guarded("validation", [&]() -> core::Expected<ValidationSummary> {
    torch::NoGradGuard no_grad;
    model_.module().eval();
    std::vector<core::TapVidMetrics> model_metrics, still_metrics;
    core::TrackCalibration calibration;
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
      add_calibration(batch, estimate, used, calibration);
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
    ValidationSummary summary;
    if (options_.validation_stability.clips > 0 && options_.validation_clips > 0) {
      auto stability = validation_stability();
      if (!stability) return stability.status();
      summary.stability = std::move(*stability);
    }
    model_.module().train();
    summary.step = step_;
    summary.loss = options_.validation_clips > 0 ? loss_sum / static_cast<double>(options_.validation_clips) : 0.0;
    summary.metrics = core::average_over_videos(model_metrics);
    summary.stationary_baseline = core::average_over_videos(still_metrics);
    summary.occluded_calibration = calibration.occluded.result();
    summary.far_calibration = calibration.far.result();
    summary.seconds = seconds_since(start);
    return summary;
  });
}

core::Expected<std::vector<ValidationStabilityRow>> Trainer::validation_stability() {
  const ValidationStabilityOptions& o = options_.validation_stability;
  const double levels = o.brightness_levels;
  std::vector<ValidationStabilityRow> rows = {{fmt::format("brightness +{:g}", levels), {}, {}},
                                              {fmt::format("brightness -{:g}", levels), {}, {}},
                                              {fmt::format("jpeg-like q{}", o.jpeg_quality), {}, {}},
                                              {"bf16", {}, {}},
                                              {"fp16", {}, {}}};
  const bool autocast = device_.is_cuda();
  if (!autocast) rows[3].skipped = rows[4].skipped = "CUDA autocast: not run on " + device_.str();
  core::TrackSet reference;
  std::vector<core::TrackSet> changed(rows.size());
  const int64_t batch_size = options_.validation_data.batch_size;
  const int64_t clips = std::min(o.clips, options_.validation_clips);
  for (int64_t done = 0, index = 0; done < clips; ++index) {
    const SyntheticBatch batch =
        validation_data_->generate(derive_seed(options_.validation_seed, static_cast<uint64_t>(index)));
    const int64_t used = std::min(batch_size, clips - done);
    const at::Tensor video = model_input(batch.video).narrow(0, 0, used);
    const at::Tensor queries = batch.query_points_tyx.narrow(0, 0, used);
    const int64_t height = video.size(2), width = video.size(3);
    append_tracks(reference, run_model_as(video, queries, at::kFloat).final_estimate(), queries, used, height, width);
    const at::Tensor video01 = (video + 1.0) * 0.5;
    const std::vector<at::Tensor> inputs = {
        (video01 + levels / 255.0).clamp(0.0, 1.0) * 2.0 - 1.0, (video01 - levels / 255.0).clamp(0.0, 1.0) * 2.0 - 1.0,
        jpeg_like(video01 * 255.0, at::full({used}, static_cast<double>(o.jpeg_quality), at::kDouble)) * (2.0 / 255.0) -
            1.0};
    for (size_t r = 0; r < inputs.size(); ++r) {
      append_tracks(changed[r], run_model_as(inputs[r], queries, at::kFloat).final_estimate(), queries, used, height,
                    width);
    }
    if (autocast) {
      append_tracks(changed[3], run_model_as(video, queries, at::kBFloat16).final_estimate(), queries, used, height,
                    width);
      append_tracks(changed[4], run_model_as(video, queries, at::kHalf).final_estimate(), queries, used, height, width);
    }
    done += used;
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    if (!rows[r].skipped.empty()) continue;
    core::Expected<core::TrackChange> change = core::compute_track_change(reference, changed[r]);
    if (!change) return change.status();
    rows[r].change = *change;
  }
  return rows;
}

}  // namespace trackscope::gpu::training
