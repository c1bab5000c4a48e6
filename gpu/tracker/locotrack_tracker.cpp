// LocoTrackTracker::track: frames in, tracks out (contract in locotrack_tracker.h and core/tracking/point_tracker.h).
#include "gpu/tracker/locotrack_tracker.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>

#include "core/limits.h"
#include "core/log.h"
#include "core/perf/memory_model.h"
#include "core/video/frame_prefetcher.h"
#include "core/video/image_resize.h"
#include "gpu/engine/cuda_support.h"
#include "gpu/torch_compat.h"

namespace trackscope::gpu {
namespace {

using core::Stage;

bool is_out_of_memory(const std::exception& e) {
  const std::string_view what = e.what();
  return what.find("out of memory") != std::string_view::npos ||
         what.find("can't allocate memory") != std::string_view::npos;
}

core::Status validate(const core::VideoInfo& info, const core::TrackRequest& request, int64_t& end_frame) {
  if (info.frame_count <= 0) return core::invalid_argument("the video has no frames");
  TRACKSCOPE_RETURN_IF_ERROR(core::check_tracked_point_count(static_cast<int64_t>(request.queries.size())));
  if (request.end_frame < -1) {
    return core::invalid_argument(
        fmt::format("end frame {} is negative: use -1 for the end of the video", request.end_frame));
  }
  end_frame = request.end_frame == -1 ? info.frame_count : request.end_frame;
  if (request.first_frame < 0 || request.first_frame >= end_frame || end_frame > info.frame_count) {
    return core::invalid_argument(fmt::format("frame range [{}, {}) is outside the video's {} frames",
                                              request.first_frame, end_frame, info.frame_count));
  }
  for (size_t i = 0; i < request.queries.size(); ++i) {
    const core::Query& q = request.queries[i];
    if (q.frame < request.first_frame || q.frame >= end_frame) {
      return core::invalid_argument(fmt::format("query {} is on frame {}, outside the tracked frames [{}, {})", i,
                                                q.frame, request.first_frame, end_frame));
    }
    if (!std::isfinite(q.x_px) || !std::isfinite(q.y_px) || q.x_px < 0 || q.y_px < 0 || q.x_px > info.width ||
        q.y_px > info.height) {
      return core::invalid_argument(fmt::format("query {} at ({}, {}) px is outside the {}x{} frame", i, q.x_px, q.y_px,
                                                info.width, info.height));
    }
  }
  return {};
}

// The per-chunk results on the host, in original pixels.
core::Track to_track(const core::Query& query, int64_t first_frame, const float* tracks_256, const float* occlusion,
                     const float* expected, int64_t frames, float scale_x, float scale_y) {
  core::Track track;
  track.query = query;
  track.first_frame = first_frame;
  track.points.resize(static_cast<size_t>(frames));
  for (int64_t t = 0; t < frames; ++t) {
    core::TrackPoint& p = track.points[static_cast<size_t>(t)];
    // Official inference(): tracks * (W/256, H/256) in float32; p = sigmoid of each logit.
    p.x_px = tracks_256[2 * t] * scale_x;
    p.y_px = tracks_256[2 * t + 1] * scale_y;
    p.p_occluded = 1.0f / (1.0f + std::exp(-occlusion[t]));
    p.p_far = 1.0f / (1.0f + std::exp(-expected[t]));
    p.visible = core::visible_from_probabilities(p.p_occluded, p.p_far);
  }
  return track;
}

}  // namespace

LocoTrackTracker::LocoTrackTracker(std::shared_ptr<const model::LocoTrack> model, core::TrackerDescription description,
                                   LocoTrackTrackerOptions options)
    : description_(std::move(description)),
      options_(options),
      engine_(std::move(model), c10::Device(description_.device.id), options.engine) {
  TRACKSCOPE_CHECK(options_.memory_budget_bytes > 0, "the tracker needs a memory budget");
}

core::Expected<core::TrackSet> LocoTrackTracker::track(core::VideoSource& video, const core::TrackRequest& request,
                                                       core::TrackObserver& observer, std::stop_token stop) {
  try {
    return run(video, request, observer, stop);
  } catch (const std::bad_alloc&) {
    if (engine_.device().is_cuda()) cuda_support::empty_cache();
    return core::out_of_memory("host memory ran out while tracking: track fewer points or frames at a time");
  } catch (const std::exception& e) {
    if (engine_.device().is_cuda()) cuda_support::empty_cache();
    if (is_out_of_memory(e)) {
      return core::out_of_memory(
          fmt::format("{} ran out of memory while tracking: {}", description_.device.id, e.what()));
    }
    return core::internal_error(fmt::format("tracking failed on {}: {}", description_.device.id, e.what()));
  }
}

core::Expected<core::TrackSet> LocoTrackTracker::run(core::VideoSource& video, const core::TrackRequest& request,
                                                     core::TrackObserver& observer, const std::stop_token& stop) {
  const core::VideoInfo& info = video.info();
  int64_t end_frame = 0;
  TRACKSCOPE_RETURN_IF_ERROR(validate(info, request, end_frame));
  const int64_t first_frame = request.first_frame;
  const int64_t frames = end_frame - first_frame;
  const int points = static_cast<int>(request.queries.size());
  core::TrackSet result;
  result.first_frame = first_frame;
  result.frame_count = frames;
  if (points == 0) return result;

  const bool on_cuda = engine_.device().is_cuda();
  const int cuda_index = engine_.cuda_index();
  core::TrackerMemoryInput memory;
  memory.model_size = engine_.cost_config().model_size;
  memory.frames = static_cast<int>(frames);
  memory.points = points;
  memory.compute_dtype_bytes = static_cast<int>(c10::elementSize(engine_.compute_dtype()));
  memory.fused = engine_.fused();
  memory.attention_materialised = !on_cuda || !TRACKSCOPE_TORCH_AT_LEAST(2, 1);
  memory.budget_bytes = options_.memory_budget_bytes;
  memory.requested_chunk = options_.query_chunk;
  memory.max_chunk = on_cuda ? 1024 : 128;
  memory.max_backbone_frames = on_cuda ? 32 : 8;
  memory.init_queries_per_pass = static_cast<int>(engine_.options().init_queries_per_pass);
  memory.source_width = info.width;
  memory.source_height = info.height;
  // CMDTop's passes (EngineOptions::cmdtop_samples_per_pass), cuDNN and cuBLAS workspaces, allocator slack.
  memory.reserve_bytes = on_cuda ? int64_t{1} << 30 : int64_t{128} << 20;
  core::Expected<core::TrackerMemoryPlan> plan = plan_tracker_memory(memory);
  if (!plan) return plan.status();
  core::log::info("tracking {} points over {} frames on {}: {}", points, frames, description_.device.id,
                  plan->summary());

  c10::InferenceMode inference;
  engine_.apply_precision_flags();
  core::CostModelConfig cost;
  cost.model_size = memory.model_size;
  cost.frames = static_cast<int>(frames);
  cost.points = points;
  cost.chunk = plan->query_chunk;
  engine_.set_cost_config(cost);
  engine::StageRecorder recorder(cuda_index);
  auto deliver_stages = [&] {
    for (const core::StageSample& sample : recorder.collect()) observer.on_stage(sample);
  };

  // --- frames: decoded in batches on the prefetcher's thread (Lanczos-resized there too) while this thread uploads
  // the previous batch (on a copy stream, from pinned memory, on CUDA) and runs its backbone.
  const bool lanczos = options_.resize == core::InputResize::lanczos;
  const int batch_frames = plan->backbone_frames;
  const int decoded_width = lanczos ? model::kModelResolution : info.width;
  const int decoded_height = lanczos ? model::kModelResolution : info.height;
  std::optional<core::ImageResizer> resizer;
  if (lanczos)
    resizer.emplace(info.width, info.height, model::kModelResolution, model::kModelResolution,
                    core::ResizeFilter::lanczos);
  model::FeatureGrids grids = engine_.allocate_grids(frames);
  const core::WorkCost no_cost{};
  core::FramePrefetchOptions prefetch;
  prefetch.first_frame = first_frame;
  prefetch.end_frame = end_frame;
  prefetch.batch_frames = batch_frames;
  prefetch.frame_width = decoded_width;
  prefetch.frame_height = decoded_height;
  if (lanczos) {
    prefetch.convert = [&resizer, &info](const core::Frame& f, uint8_t* slot) -> core::Status {
      if (f.width != info.width || f.height != info.height) {
        return core::unsupported(
            fmt::format("frame {} is {}x{}, the video {}x{}: size changes inside a clip are not "
                        "supported",
                        f.index, f.width, f.height, info.width, info.height));
      }
      resizer->resize(f.rgb.data(), slot);
      return {};
    };
  }
  prefetch.allocate = [on_cuda](int64_t bytes) {
    auto buffer =
        std::make_shared<at::Tensor>(at::empty({bytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(on_cuda)));
    uint8_t* data = buffer->data_ptr<uint8_t>();
    return core::BatchBuffer{std::move(buffer), data};
  };
  core::FramePrefetcher prefetcher(video, std::move(prefetch));
  for (int64_t begin = 0; begin < frames; begin += batch_frames) {
    if (stop.stop_requested()) return core::cancelled("tracking was cancelled");
    core::Expected<std::optional<core::PrefetchedBatch>> batch = prefetcher.next();
    if (!batch) return batch.status();
    if (!*batch) return core::internal_error("the frame prefetcher ended before the last frame");
    const core::PrefetchedBatch& decoded = **batch;
    const int64_t count = decoded.count;
    recorder.add_host_sample(Stage::decode, 0, 0, no_cost, decoded.started,
                             decoded.decode_ms + (lanczos ? 0.0 : decoded.convert_ms));
    if (lanczos) {
      recorder.add_host_sample(Stage::resize_normalize, 0, 0, no_cost,
                               decoded.started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                     std::chrono::duration<double, std::milli>(decoded.decode_ms)),
                               decoded.convert_ms);
    }
    const at::Tensor host = std::static_pointer_cast<at::Tensor>(decoded.buffer.storage)
                                ->narrow(0, 0, count * decoded_height * decoded_width * 3)
                                .view({count, decoded_height, decoded_width, 3});
    at::Tensor device_frames = host;
    if (on_cuda) {
      {
        const cuda_support::CopyStreamScope copies(cuda_index);
        const auto scope = recorder.time(Stage::upload, 0, 0, {0.0, static_cast<double>(host.numel())});
        device_frames = host.to(engine_.device(), /*non_blocking=*/true);
      }
      cuda_support::used_on_current_stream(device_frames, cuda_index);
    }
    at::Tensor prepared;
    {
      const auto scope = recorder.time(Stage::resize_normalize, 0, 0, no_cost);
      prepared = engine_.prepare_frames(device_frames);
    }
    engine_.compute_features(prepared, grids, begin, recorder);
    core::TrackProgress progress;
    progress.fraction = 0.3 * static_cast<double>(begin + count) / static_cast<double>(frames);
    progress.phase = "features";
    observer.on_progress(progress);
  }
  prefetcher.stop();

  // --- queries in 256 space, as the official inference() scales them (divide first): (t, y, x).
  std::vector<float> queries_tyx;
  queries_tyx.reserve(static_cast<size_t>(points) * 3);
  const double height = info.height, width = info.width;
  for (const core::Query& q : request.queries) {
    queries_tyx.push_back(static_cast<float>(q.frame - first_frame));
    queries_tyx.push_back(static_cast<float>(q.y_px / height * model::kModelResolution));
    queries_tyx.push_back(static_cast<float>(q.x_px / width * model::kModelResolution));
  }
  const at::Tensor queries = at::from_blob(queries_tyx.data(), {1, points, 3}, at::kFloat).to(engine_.device());
  const model::QueryFeatures query_features = engine_.query_features(grids, queries, recorder);
  deliver_stages();

  // --- query chunks; a chunk that runs out of memory is retried at half the size.
  const auto scale_x = static_cast<float>(width / model::kModelResolution);
  const auto scale_y = static_cast<float>(height / model::kModelResolution);
  result.tracks.reserve(static_cast<size_t>(points));
  int chunk_size = plan->query_chunk;
  int chunk_index = 0;
  for (int begin = 0; begin < points;) {
    if (stop.stop_requested()) return core::cancelled("tracking was cancelled");
    const int count = std::min(chunk_size, points - begin);
    const int estimated_chunks = chunk_index + 1 + (points - begin - count + chunk_size - 1) / chunk_size;
    core::TrackProgress progress;
    progress.fraction = 0.3 + 0.7 * static_cast<double>(begin) / points;
    progress.chunks_done = chunk_index;
    progress.chunk_count = estimated_chunks;
    progress.phase = fmt::format("tracking chunk {}/{}", chunk_index + 1, estimated_chunks);
    observer.on_progress(progress);
    at::Tensor tracks_host, occlusion_host, expected_host;
    try {
      const model::TrackState state = engine_.track_chunk(grids, query_features.slice(begin, begin + count),
                                                          queries.narrow(1, begin, count), chunk_index, recorder);
      const auto scope = recorder.time(Stage::download, chunk_index, 0,
                                       {0.0, static_cast<double>(count) * static_cast<double>(frames) * 16.0});
      tracks_host = state.tracks.select(0, 0).to(at::kCPU).contiguous();
      occlusion_host = state.occlusion.select(0, 0).to(at::kCPU).contiguous();
      expected_host = state.expected_dist.select(0, 0).to(at::kCPU).contiguous();
    } catch (const std::exception& e) {
      if (!is_out_of_memory(e) || chunk_size == 1) throw;
      recorder.collect();  // drop the failed chunk's timings
      if (on_cuda) cuda_support::empty_cache();
      chunk_size = std::max(1, count / 2);
      core::log::warn("{} ran out of memory on a chunk of {} queries; retrying with {}", description_.device.id, count,
                      chunk_size);
      continue;
    }
    core::TrackSet partial;
    partial.first_frame = first_frame;
    partial.frame_count = frames;
    {
      const auto scope = recorder.time(Stage::assembly, chunk_index, 0, no_cost, /*host=*/true);
      for (int q = 0; q < count; ++q) {
        partial.tracks.push_back(to_track(request.queries[static_cast<size_t>(begin + q)], first_frame,
                                          tracks_host.data_ptr<float>() + static_cast<int64_t>(q) * frames * 2,
                                          occlusion_host.data_ptr<float>() + static_cast<int64_t>(q) * frames,
                                          expected_host.data_ptr<float>() + static_cast<int64_t>(q) * frames, frames,
                                          scale_x, scale_y));
      }
    }
    deliver_stages();
    observer.on_partial(partial, static_cast<size_t>(begin));
    result.tracks.insert(result.tracks.end(), std::make_move_iterator(partial.tracks.begin()),
                         std::make_move_iterator(partial.tracks.end()));
    begin += count;
    ++chunk_index;
  }
  core::TrackProgress done;
  done.fraction = 1.0;
  done.chunks_done = chunk_index;
  done.chunk_count = chunk_index;
  done.phase = "done";
  observer.on_progress(done);
  return result;
}

}  // namespace trackscope::gpu
