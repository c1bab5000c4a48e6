// generate_synthetic_evaluation_clips() of gpu/training.h: the trainer's synthetic generator, copied out of
// torch into core::TapVidClip (plain vectors) for core::evaluate_tapvid.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "gpu/devices.h"
#include "gpu/training.h"
#include "gpu/training/synthetic.h"

namespace trackscope::gpu {

SyntheticEvaluationOptions::SyntheticEvaluationOptions() : data(TrainingOptions().validation_data) {}

core::Status SyntheticEvaluationOptions::check() const {
  TRACKSCOPE_RETURN_IF_ERROR(data.check().with_context("synthetic evaluation data"));
  if (clips < 1 || clips > 4096) return core::invalid_argument(fmt::format("clips {} not in [1, 4096]", clips));
  if (data.query_first_fraction != 1.0) {
    return core::invalid_argument(fmt::format(
        "synthetic evaluation needs every query on frame 0 (query-first protocol), got query_first_fraction {}",
        data.query_first_fraction));
  }
  return {};
}

namespace {

// Clip b of `batch` as plain data (the tensors are on any device).
core::TapVidClip to_clip(const training::SyntheticBatch& batch, int64_t b, std::string name) {
  const at::Tensor video = batch.video[b].to(at::kCPU).contiguous();                            // [T,H,W,3] uint8
  const at::Tensor queries = batch.query_points_tyx[b].to(at::kCPU, at::kDouble).contiguous();  // [N,3]
  const at::Tensor tracks = batch.target_points_xy[b].to(at::kCPU, at::kFloat).contiguous();    // [N,T,2]
  const at::Tensor occluded = batch.occluded[b].to(at::kCPU, at::kByte).contiguous();           // [N,T]
  core::TapVidClip clip;
  clip.name = std::move(name);
  clip.height = static_cast<int>(video.size(1));
  clip.width = static_cast<int>(video.size(2));
  clip.frame_rate = {24, 1};
  const int64_t t_count = video.size(0);
  const auto frame_bytes = static_cast<size_t>(clip.width) * static_cast<size_t>(clip.height) * 3;
  const uint8_t* pixels = video.data_ptr<uint8_t>();
  for (int64_t t = 0; t < t_count; ++t) {
    const uint8_t* begin = pixels + static_cast<size_t>(t) * frame_bytes;
    clip.frames_rgb.emplace_back(begin, begin + frame_bytes);
  }
  const double* q = queries.data_ptr<double>();
  for (int64_t n = 0; n < queries.size(0); ++n) {
    clip.queries.push_back({static_cast<int64_t>(q[3 * n]), q[3 * n + 2], q[3 * n + 1]});  // (t, y, x) -> (t, x, y)
  }
  clip.gt_tracks_xy.assign(tracks.data_ptr<float>(), tracks.data_ptr<float>() + tracks.numel());
  clip.gt_occluded.assign(occluded.data_ptr<uint8_t>(), occluded.data_ptr<uint8_t>() + occluded.numel());
  return clip;
}

}  // namespace

core::Expected<std::vector<core::TapVidClip>> generate_synthetic_evaluation_clips(
    const SyntheticEvaluationOptions& options) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  core::Expected<core::DeviceInfo> device = resolve_device(options.device);
  if (!device) return device.status();
  SyntheticOptions data = options.data;
  data.format = SyntheticVideoFormat::uint8;
  data.render_layer_ids = false;
  try {
    auto generator = training::SyntheticVideoGenerator::create(data, at::Device(device->id));
    if (!generator) return generator.status();
    std::vector<core::TapVidClip> clips;
    clips.reserve(static_cast<size_t>(options.clips));
    for (uint64_t batch_index = 0; static_cast<int64_t>(clips.size()) < options.clips; ++batch_index) {
      const training::SyntheticBatch batch = (*generator)->generate(training::derive_seed(options.seed, batch_index));
      const int64_t used = std::min<int64_t>(data.batch_size, options.clips - static_cast<int64_t>(clips.size()));
      for (int64_t b = 0; b < used; ++b) {
        clips.push_back(to_clip(batch, b, fmt::format("synthetic-{}-{}", options.seed, clips.size())));
      }
    }
    return clips;
  } catch (const std::exception& error) {
    std::string what = error.what();
    what = what.substr(0, what.find('\n'));
    if (what.find("out of memory") != std::string::npos) {
      return core::out_of_memory(
          fmt::format("generating synthetic clips on {}: out of memory ({}); use fewer points or "
                      "frames",
                      device->id, what));
    }
    return core::internal_error(fmt::format("generating synthetic clips on {}: {}", device->id, what));
  }
}

}  // namespace trackscope::gpu
