// LocoTrackTracker::track: frames in, tracks out (contract in locotrack_tracker.h and core/tracking/point_tracker.h).
#include "gpu/tracker/locotrack_tracker.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include "core/io/scratch_file.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/perf/memory_model.h"
#include "core/tracking/windowed_tracking.h"
#include "core/video/frame_prefetcher.h"
#include "core/video/image_resize.h"
#include "gpu/engine/cuda_support.h"
#include "gpu/torch_compat.h"
#include "gpu/tracker_factory.h"

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

// Bilinear resize of one native uint8 frame [H, W, 3] to [256, 256, 3] float in [-1, 1] without converting the
// whole frame: the two source rows and columns each output pixel reads are gathered first (uint8), normalised as
// normalize_video_u8 does, and weighted with upsample_bilinear2d's coefficients (align_corners = false). The
// result equals the batched path's to the last bits of float rounding (the order of the weighted sums differs).
at::Tensor resize_frame_low_memory(const at::Tensor& frame_u8) {
  const int64_t height = frame_u8.size(0), width = frame_u8.size(1), out = model::kModelResolution;
  auto axis = [&](int64_t in) {
    const float scale = static_cast<float>(in) / static_cast<float>(out);
    std::vector<int64_t> first(static_cast<size_t>(out)), second(static_cast<size_t>(out));
    std::vector<float> lambda(static_cast<size_t>(out));
    for (int64_t i = 0; i < out; ++i) {
      const float source = std::max(scale * (static_cast<float>(i) + 0.5f) - 0.5f, 0.0f);
      const auto index = static_cast<int64_t>(source);
      first[static_cast<size_t>(i)] = index;
      second[static_cast<size_t>(i)] = index + (index < in - 1 ? 1 : 0);
      lambda[static_cast<size_t>(i)] = source - static_cast<float>(index);
    }
    const auto long_options = at::TensorOptions().dtype(at::kLong);
    return std::make_tuple(at::tensor(first, long_options), at::tensor(second, long_options),
                           at::tensor(lambda, at::TensorOptions().dtype(at::kFloat)));
  };
  const auto [y0, y1, ly] = axis(height);
  const auto [x0, x1, lx] = axis(width);
  auto normalised_rows = [&](const at::Tensor& rows) {
    return frame_u8.index_select(0, rows).to(at::kFloat).div(255.0).mul(2).sub(1);  // [256, W, 3]
  };
  const at::Tensor top = normalised_rows(y0), bottom = normalised_rows(y1);
  const at::Tensor wx1 = lx.view({1, -1, 1}), wx0 = 1 - wx1, wy1 = ly.view({-1, 1, 1}), wy0 = 1 - wy1;
  auto across = [&](const at::Tensor& rows) { return rows.index_select(1, x0) * wx0 + rows.index_select(1, x1) * wx1; };
  return across(top) * wy0 + across(bottom) * wy1;
}

}  // namespace

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

core::TrackerMemoryInput LocoTrackTracker::memory_input(const core::VideoInfo& info, int64_t frames, int points) const {
  const bool on_cuda = engine_.device().is_cuda();
  core::TrackerMemoryInput memory;
  memory.model_size = engine_.cost_config().model_size;
  memory.frames = static_cast<int>(std::min<int64_t>(frames, 1'000'000));
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
  // Lanczos frames are resized to the model's size on the host as they are decoded.
  memory.low_memory_prepare = options_.resize == core::InputResize::lanczos;
  // CMDTop's passes (EngineOptions::cmdtop_samples_per_pass), cuDNN and cuBLAS workspaces, allocator slack.
  memory.reserve_bytes = on_cuda ? int64_t{1} << 30 : int64_t{128} << 20;
  return memory;
}

std::filesystem::path LocoTrackTracker::cache_directory() const {
  return options_.cache_dir.empty() ? core::io::default_scratch_directory() : std::filesystem::path(options_.cache_dir);
}

core::Expected<core::RunPlan> LocoTrackTracker::plan(const core::VideoInfo& info, int64_t frames, int points) const {
  const bool on_cuda = engine_.device().is_cuda();
  core::RunPlanInput input;
  input.tracker = memory_input(info, frames, points);
  input.device_is_host = !on_cuda;
  if (on_cuda) {
    core::DeviceInfo cpu;
    cpu.id = "cpu";
    input.host_budget_bytes =
        options_.host_memory_budget_bytes > 0 ? options_.host_memory_budget_bytes : default_memory_budget_bytes(cpu);
  }
  const std::filesystem::path cache_dir = cache_directory();
  // A named cache directory that is not there would quietly plan host memory instead (a typo is not a choice).
  std::error_code exists_error;
  if (!options_.cache_dir.empty() && !std::filesystem::is_directory(cache_dir, exists_error)) {
    return core::invalid_argument(
        fmt::format("the cache directory {} does not exist or is not a directory (--cache-dir)", cache_dir.string()));
  }
  input.cache_dir = cache_dir.string();
  input.prefer_cache_file = !options_.cache_dir.empty();
  input.disk_free_bytes = core::io::free_disk_bytes(cache_dir);
  // FFmpeg's automatic frame threading uses one thread per core (its pictures in flight are in the plan).
  input.decoder_threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
  input.requested = options_.long_video;
  input.window_frames = options_.window_frames;
  input.window_overlap = options_.window_overlap;
  input.max_stream_block = options_.stream_block_frames > 0 ? options_.stream_block_frames : on_cuda ? 128 : 32;
  input.mixer_block = options_.mixer_block_frames > 0 ? options_.mixer_block_frames : on_cuda ? 256 : 64;
  input.whole_axis_mixer = options_.mixer_block_frames <= 0;  // a block size asked for is kept
  return core::plan_run(input);
}

std::vector<float> LocoTrackTracker::queries_tyx(const core::VideoInfo& info, const core::TrackRequest& request,
                                                 int64_t first_frame) const {
  std::vector<float> tyx;
  tyx.reserve(request.queries.size() * 3);
  const double height = info.height, width = info.width;
  for (const core::Query& q : request.queries) {
    tyx.push_back(static_cast<float>(q.frame - first_frame));
    tyx.push_back(static_cast<float>(q.y_px / height * model::kModelResolution));
    tyx.push_back(static_cast<float>(q.x_px / width * model::kModelResolution));
  }
  return tyx;
}

core::Expected<core::TrackSet> LocoTrackTracker::run(core::VideoSource& video, const core::TrackRequest& request,
                                                     core::TrackObserver& observer, const std::stop_token& stop) {
  const core::VideoInfo& info = video.info();
  int64_t end_frame = 0;
  TRACKSCOPE_RETURN_IF_ERROR(validate(info, request, end_frame));
  const Run run{&request, request.first_frame, end_frame};
  const int points = static_cast<int>(request.queries.size());
  if (points == 0) {
    core::TrackSet result;
    result.first_frame = run.first_frame;
    result.frame_count = run.frames();
    return result;
  }
  core::Expected<core::RunPlan> plan = this->plan(info, run.frames(), points);
  if (!plan) return plan.status();
  last_plan_ = *plan;
  core::log::info("tracking {} points over {} frames on {}: {}", points, run.frames(), description_.device.id,
                  plan->summary());
  observer.on_plan(*plan);

  c10::InferenceMode inference;
  engine_.apply_precision_flags();
  switch (plan->mode) {
    case core::LongVideoMode::exact_streaming: return run_streaming(video, run, *plan, observer, stop);
    case core::LongVideoMode::windowed: return run_windowed(video, run, *plan, observer, stop);
    case core::LongVideoMode::whole_clip:
    case core::LongVideoMode::automatic: break;
  }
  return run_whole(video, run, plan->whole, plan->low_memory_prepare, observer, stop);
}

core::Status LocoTrackTracker::feed_frames(core::VideoSource& video, int64_t first_frame, int64_t frames,
                                           int batch_frames, bool low_memory_prepare, engine::StageRecorder& recorder,
                                           const std::stop_token& stop, const FrameConsumer& consume,
                                           const std::function<void(int64_t done)>& on_batch) {
  const core::VideoInfo& info = video.info();
  const bool on_cuda = engine_.device().is_cuda();
  const int cuda_index = engine_.cuda_index();
  // --- frames: uint8 batches are decoded on the prefetcher's thread (Lanczos-resized there too) while this thread
  // uploads the previous batch (on a copy stream, from pinned memory, on CUDA) and runs its backbone. Frames too
  // large for the budget (low_memory_prepare) are brought to the model's size on the host one at a time as they
  // are decoded, on this thread: their float batches stay out of the prefetcher, whose queued batch the memory plan
  // does not count.
  const bool lanczos = options_.resize == core::InputResize::lanczos;
  const bool host_resized = lanczos || low_memory_prepare;
  const int decoded_width = host_resized ? model::kModelResolution : info.width;
  const int decoded_height = host_resized ? model::kModelResolution : info.height;
  std::optional<core::ImageResizer> resizer;
  if (lanczos)
    resizer.emplace(info.width, info.height, model::kModelResolution, model::kModelResolution,
                    core::ResizeFilter::lanczos);
  const bool float_batch = low_memory_prepare && !lanczos;
  const core::WorkCost no_cost{};
  auto prepare_and_consume = [&](const at::Tensor& host, int64_t begin) -> core::Status {
    at::Tensor device_frames = host;
    if (on_cuda) {
      {
        const cuda_support::CopyStreamScope copies(cuda_index);
        const auto scope = recorder.time(Stage::upload, 0, 0, {0.0, static_cast<double>(host.nbytes())});
        device_frames = host.to(engine_.device(), /*non_blocking=*/true);
      }
      cuda_support::used_on_current_stream(device_frames, cuda_index);
    }
    at::Tensor prepared;
    {
      const auto scope = recorder.time(Stage::resize_normalize, 0, 0, no_cost);
      prepared = float_batch ? engine_.prepare_normalised_frames(device_frames) : engine_.prepare_frames(device_frames);
    }
    TRACKSCOPE_RETURN_IF_ERROR(consume(prepared, begin));
    on_batch(begin + host.size(0));
    return {};
  };

  if (float_batch) {
    for (int64_t begin = 0; begin < frames; begin += batch_frames) {
      if (stop.stop_requested()) return core::cancelled("tracking was cancelled");
      const int64_t count = std::min<int64_t>(batch_frames, frames - begin);
      at::Tensor host = at::empty({count, decoded_height, decoded_width, 3},
                                  at::TensorOptions().dtype(at::kFloat).pinned_memory(on_cuda));
      {
        const auto scope = recorder.time(Stage::decode, 0, 0, no_cost, /*host=*/true);
        for (int64_t i = 0; i < count; ++i) {
          core::Expected<core::FramePtr> frame = video.read_frame(first_frame + begin + i);
          if (!frame) return frame.status().with_context(fmt::format("frame {}", first_frame + begin + i));
          const core::Frame& f = **frame;
          if (f.width != info.width || f.height != info.height) {
            return core::unsupported(
                fmt::format("frame {} is {}x{}, the video {}x{}: size changes inside a clip are not "
                            "supported",
                            f.index, f.width, f.height, info.width, info.height));
          }
          const at::Tensor native =
              at::from_blob(const_cast<uint8_t*>(f.rgb.data()), {f.height, f.width, 3}, at::kByte);
          host[i].copy_(resize_frame_low_memory(native));
        }
      }
      TRACKSCOPE_RETURN_IF_ERROR(prepare_and_consume(host, begin));
    }
    return {};
  }

  core::FramePrefetchOptions prefetch;
  prefetch.first_frame = first_frame;
  prefetch.end_frame = first_frame + frames;
  prefetch.batch_frames = batch_frames;
  // One batch ready ahead (two decoded batches at a time, the one in use included) keeps the host memory near the
  // plan's single upload batch.
  prefetch.queue_batches = 1;
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
  TRACKSCOPE_RETURN_IF_ERROR(prefetch.check());
  // Destroyed on every return (errors and exceptions from `consume` included), which ends the decode thread before
  // the caller uses `video` again.
  core::FramePrefetcher prefetcher(video, std::move(prefetch));
  for (int64_t begin = 0; begin < frames;) {
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
    TRACKSCOPE_RETURN_IF_ERROR(prepare_and_consume(host, begin));
    begin += count;
  }
  return {};
}

core::Expected<core::TrackSet> LocoTrackTracker::run_whole(core::VideoSource& video, const Run& run,
                                                           const core::TrackerMemoryPlan& plan, bool low_memory_prepare,
                                                           core::TrackObserver& observer, const std::stop_token& stop,
                                                           const model::FeatureGrids* reuse) {
  const core::VideoInfo& info = video.info();
  const core::TrackRequest& request = *run.request;
  const int64_t first_frame = run.first_frame;
  const int64_t frames = run.frames();
  const int points = static_cast<int>(request.queries.size());
  core::TrackSet result;
  result.first_frame = first_frame;
  result.frame_count = frames;
  if (points == 0) return result;

  const bool on_cuda = engine_.device().is_cuda();
  core::CostModelConfig cost;
  cost.model_size = engine_.cost_config().model_size;
  cost.frames = static_cast<int>(frames);
  cost.points = points;
  cost.chunk = plan.query_chunk;
  engine_.set_cost_config(cost);
  engine::StageRecorder recorder(engine_.cuda_index());
  auto deliver_stages = [&] {
    for (const core::StageSample& sample : recorder.collect()) observer.on_stage(sample);
  };

  model::FeatureGrids grids;
  if (reuse != nullptr && reuse->frames() >= frames) {
    grids = {reuse->lowres.narrow(1, 0, frames), reuse->hires.narrow(1, 0, frames),
             reuse->highest.narrow(1, 0, frames)};
  } else {
    grids = engine_.allocate_grids(frames);
  }
  TRACKSCOPE_RETURN_IF_ERROR(feed_frames(
      video, first_frame, frames, plan.backbone_frames, low_memory_prepare, recorder, stop,
      [&](const at::Tensor& prepared, int64_t begin) {
        engine_.compute_features(prepared, grids, begin, recorder);
        return core::Status();
      },
      [&](int64_t done) {
        core::TrackProgress progress;
        progress.fraction = 0.3 * static_cast<double>(done) / static_cast<double>(frames);
        progress.phase = "features";
        observer.on_progress(progress);
      }));

  // --- queries in 256 space, as the official inference() scales them (divide first): (t, y, x).
  std::vector<float> tyx = queries_tyx(info, request, first_frame);
  const at::Tensor queries = at::from_blob(tyx.data(), {1, points, 3}, at::kFloat).to(engine_.device());
  const model::QueryFeatures query_features = engine_.query_features(grids, queries, recorder);
  deliver_stages();

  // --- query chunks; a chunk that runs out of memory is retried at half the size.
  const auto scale_x = static_cast<float>(static_cast<double>(info.width) / model::kModelResolution);
  const auto scale_y = static_cast<float>(static_cast<double>(info.height) / model::kModelResolution);
  const core::WorkCost no_cost{};
  result.tracks.reserve(static_cast<size_t>(points));
  int chunk_size = plan.query_chunk;
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

core::Expected<core::TrackSet> LocoTrackTracker::run_windowed(core::VideoSource& video, const Run& run,
                                                              const core::RunPlan& plan, core::TrackObserver& observer,
                                                              const std::stop_token& stop) {
  const core::WindowPlan& windows = plan.windows;
  if (windows.overlap <= 0 || windows.frames >= run.frames()) {
    return run_whole(video, run, windows.window, plan.low_memory_prepare, observer, stop);
  }
  core::WindowOptions options;
  options.frames = windows.frames;
  options.overlap = windows.overlap;
  // The overlap's frames are read again by the next window: keep them rather than seek back and decode again.
  core::RecentFramesVideo recent(video, windows.frame_cache_bytes);
  const model::FeatureGrids grids = engine_.allocate_grids(windows.frames);  // one set for every window
  const core::WindowTracker track_window = [&](const core::TrackRequest& window, core::TrackObserver& window_observer,
                                               std::stop_token window_stop) {
    const Run window_run{&window, window.first_frame, window.end_frame};
    recent.keep_from(window.end_frame - windows.overlap);  // the next window's first frames
    return run_whole(recent, window_run, windows.window, plan.low_memory_prepare, window_observer, window_stop, &grids);
  };
  core::TrackRequest request = *run.request;
  return core::track_windowed(request, run.end_frame, options, track_window, observer, stop);
}

}  // namespace trackscope::gpu
