// LocoTrackTracker::run_streaming: exact streaming (docs/long-videos.md). The feature grids of every frame go
// to a FeatureCache; the initialisation and each refinement's correlations and CMDTop then run a block of frames
// at a time on grids read back from it, and the temporal transformer runs over the whole time axis in blocks
// (long_sequence_mixer). Every stage but the transformer works frame by frame, and the transformer sees every
// frame it would see in a whole-clip run, so the tracks equal the whole-clip run's up to float rounding.
//
// Order of work: one feature pass (decode, backbone, cache writes, the query features of the queries on each
// batch's frames), then for each group of queries (as many as the host holds encoded correlations of) 1 + 4
// passes over the cache: the initialisation, then per refinement the blocks' correlations into the encoded store
// and the transformer per chunk of queries. The tracks, occlusion and distance logits of every query stay on the
// device (16 bytes per query and frame). Partial results: each transformer chunk of the last refinement.
#include <ATen/ATen.h>

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "core/log.h"
#include "gpu/engine/feature_cache.h"
#include "gpu/engine/long_mixer.h"
#include "gpu/tracker/locotrack_tracker.h"

namespace trackscope::gpu {

core::Expected<core::TrackSet> LocoTrackTracker::run_streaming(core::VideoSource& video, const Run& run,
                                                               const core::RunPlan& plan, core::TrackObserver& observer,
                                                               const std::stop_token& stop) {
  using core::Stage;
  const core::VideoInfo& info = video.info();
  const core::TrackRequest& request = *run.request;
  const core::StreamingPlan& streaming = plan.streaming;
  const int64_t first_frame = run.first_frame, frames = run.frames();
  const int points = static_cast<int>(request.queries.size());
  const c10::Device device = engine_.device();
  const bool on_cuda = device.is_cuda();
  const int iterations = engine_.model().config().refinement_iterations;
  const int block_frames = std::max(1, streaming.frame_block);
  const int block_chunk = std::max(1, streaming.block_query_chunk);
  const int mixer_chunk = std::max(1, streaming.mixer_query_chunk);
  const int per_pass = std::max(1, streaming.queries_per_pass);

  core::CostModelConfig cost;
  cost.model_size = engine_.cost_config().model_size;
  cost.frames = static_cast<int>(frames);
  cost.points = points;
  cost.chunk = block_chunk;
  engine_.set_cost_config(cost);
  engine::StageRecorder recorder(engine_.cuda_index());
  auto deliver_stages = [&] {
    for (const core::StageSample& sample : recorder.collect()) observer.on_stage(sample);
  };

  core::Expected<engine::FeatureCache> cache =
      engine::FeatureCache::create(frames, engine_.compute_dtype(), device, streaming.cache, cache_directory());
  if (!cache) return cache.status();
  const auto stream_cost = [&](int64_t count) {
    return core::WorkCost{0.0, static_cast<double>(count * cache->bytes_per_frame())};
  };

  // Queries (t, y, x) in 256 space, t relative to the run; kept on the host for the per-block frame offsets.
  std::vector<float> tyx = queries_tyx(info, request, first_frame);
  const at::Tensor queries = at::from_blob(tyx.data(), {1, points, 3}, at::kFloat).clone();
  auto queries_relative = [&](int64_t begin, int64_t end, int64_t frame_offset) {
    at::Tensor q = queries.narrow(1, begin, end - begin).clone();
    q.select(-1, 0).sub_(static_cast<double>(frame_offset));
    return q.to(device);
  };

  // --- the feature pass: backbone per batch into the cache; the query features of the batch's queries.
  model::QueryFeatures features;
  auto scatter_features = [&](const model::QueryFeatures& some, const at::Tensor& index) {
    const std::array<const at::Tensor*, 6> from = {&some.lowres,         &some.hires,         &some.highest,
                                                   &some.lowres_support, &some.hires_support, &some.highest_support};
    const std::array<at::Tensor*, 6> into = {&features.lowres,        &features.hires,
                                             &features.highest,       &features.lowres_support,
                                             &features.hires_support, &features.highest_support};
    for (size_t i = 0; i < from.size(); ++i) {
      if (!into[i]->defined()) {
        std::vector<int64_t> shape(from[i]->sizes().begin(), from[i]->sizes().end());
        shape[1] = points;
        *into[i] = at::empty(shape, from[i]->options());
      }
      into[i]->index_copy_(1, index, *from[i]);
    }
  };
  const auto grid_options = at::TensorOptions().device(device).dtype(engine_.compute_dtype());
  TRACKSCOPE_RETURN_IF_ERROR(feed_frames(
      video, first_frame, frames, std::max(1, streaming.backbone_frames), plan.low_memory_prepare, recorder, stop,
      [&](const at::Tensor& prepared, int64_t begin) -> core::Status {
        const int64_t count = prepared.size(0);
        model::FeatureGrids batch;
        batch.lowres = at::empty({1, count, 32, 32, 256}, grid_options);
        batch.hires = at::empty({1, count, 64, 64, 128}, grid_options);
        batch.highest = at::empty({1, count, 128, 128, 64}, grid_options);
        engine_.compute_features(prepared, batch, 0, recorder);
        std::vector<int64_t> on_batch;
        for (int q = 0; q < points; ++q) {
          const int64_t t = request.queries[static_cast<size_t>(q)].frame - first_frame;
          if (t >= begin && t < begin + count) on_batch.push_back(q);
        }
        if (!on_batch.empty()) {
          const at::Tensor index = at::tensor(on_batch, at::TensorOptions().dtype(at::kLong));
          at::Tensor some = queries.index_select(1, index).clone();
          some.select(-1, 0).sub_(static_cast<double>(begin));
          scatter_features(engine_.query_features(batch, some.to(device), recorder), index.to(device));
        }
        const auto scope = recorder.time(Stage::feature_stream, 0, 0, stream_cost(count));
        return cache->write(begin, batch);
      },
      [&](int64_t done) {
        core::TrackProgress progress;
        progress.fraction = 0.35 * static_cast<double>(done) / static_cast<double>(frames);
        progress.phase = "features (to the cache)";
        observer.on_progress(progress);
        if (!on_cuda) deliver_stages();
      }));
  deliver_stages();

  // --- the passes over the cache.
  const auto float_options = at::TensorOptions().device(device).dtype(at::kFloat);
  at::Tensor tracks = at::empty({points, frames, 2}, float_options);
  at::Tensor occlusion = at::empty({points, frames}, float_options),
             expected = at::empty({points, frames}, float_options);
  const at::ScalarType encoded_dtype = engine_.fused() ? engine_.compute_dtype() : at::kFloat;
  const int groups = (points + per_pass - 1) / per_pass;
  const double total_passes = static_cast<double>(groups) * (iterations + 1);
  const auto scale_x = static_cast<float>(static_cast<double>(info.width) / model::kModelResolution);
  const auto scale_y = static_cast<float>(static_cast<double>(info.height) / model::kModelResolution);
  engine::LongMixerStats mixer_stats;
  core::TrackSet result;
  result.first_frame = first_frame;
  result.frame_count = frames;
  result.tracks.reserve(static_cast<size_t>(points));
  int pass = 0;
  for (int group_begin = 0; group_begin < points; group_begin += per_pass) {
    const int group_end = std::min(points, group_begin + per_pass);
    // Host: the group's encodings (pinned for the copies of a CUDA run; a mapping of its own on the CPU).
    const std::vector<int64_t> encoded_shape = {group_end - group_begin, frames, 3 * 256};
    const at::Tensor encoded =
        on_cuda ? at::empty(encoded_shape, at::TensorOptions().dtype(encoded_dtype).pinned_memory(true))
                : engine::allocate_host_buffer(encoded_shape, encoded_dtype);
    for (int iteration = 0; iteration <= iterations; ++iteration, ++pass) {
      // Blocks of frames: the initialisation, or a refinement's correlations and CMDTop.
      cost.frames = block_frames;
      engine_.set_cost_config(cost);
      int block_index = 0;
      for (int64_t block_begin = 0; block_begin < frames; block_begin += block_frames, ++block_index) {
        if (stop.stop_requested()) return core::cancelled("tracking was cancelled");
        const int64_t count = std::min<int64_t>(block_frames, frames - block_begin);
        core::Expected<model::FeatureGrids> block = core::internal_error("not read");
        {
          const auto scope = recorder.time(Stage::feature_stream, 0, iteration, stream_cost(count));
          block = cache->read(block_begin, count);
        }
        if (!block) return block.status();
        for (int chunk_begin = group_begin; chunk_begin < group_end; chunk_begin += block_chunk) {
          const int chunk_end = std::min(group_end, chunk_begin + block_chunk);
          const int chunk_index = chunk_begin / block_chunk;
          const model::QueryFeatures chunk = features.slice(chunk_begin, chunk_end);
          if (iteration == 0) {
            const model::TrackState state = engine_.initialise(
                *block, chunk, queries_relative(chunk_begin, chunk_end, block_begin), chunk_index, recorder);
            tracks.narrow(0, chunk_begin, chunk_end - chunk_begin).narrow(1, block_begin, count).copy_(state.tracks[0]);
            occlusion.narrow(0, chunk_begin, chunk_end - chunk_begin)
                .narrow(1, block_begin, count)
                .copy_(state.occlusion[0]);
            expected.narrow(0, chunk_begin, chunk_end - chunk_begin)
                .narrow(1, block_begin, count)
                .copy_(state.expected_dist[0]);
          } else {
            const at::Tensor block_tracks =
                tracks.narrow(0, chunk_begin, chunk_end - chunk_begin).narrow(1, block_begin, count).unsqueeze(0);
            const at::Tensor codes = engine_.encode(*block, chunk, block_tracks, chunk_index, iteration, recorder);
            const auto scope = recorder.time(Stage::feature_stream, chunk_index, iteration,
                                             {0.0, static_cast<double>(codes.nbytes())});
            encoded.narrow(0, chunk_begin - group_begin, chunk_end - chunk_begin)
                .narrow(1, block_begin, count)
                .copy_(codes, /*non_blocking=*/true);
          }
        }
        core::TrackProgress progress;
        progress.fraction = 0.35 + 0.65 * (pass + static_cast<double>(block_begin + count) / frames) / total_passes;
        progress.chunks_done = pass;
        progress.chunk_count = static_cast<int>(total_passes);
        progress.phase = iteration == 0 ? fmt::format("initialisation, pass {}/{}", pass + 1, total_passes)
                                        : fmt::format("refinement {}, pass {}/{}", iteration, pass + 1, total_passes);
        observer.on_progress(progress);
        if (!on_cuda || block_index % 8 == 7) deliver_stages();
      }
      if (iteration == 0) continue;

      // The transformer over the whole time axis, a chunk of queries at a time.
      cost.frames = static_cast<int>(frames);
      engine_.set_cost_config(cost);
      for (int mix_begin = group_begin; mix_begin < group_end; mix_begin += mixer_chunk) {
        if (stop.stop_requested()) return core::cancelled("tracking was cancelled");
        const int mix_end = std::min(group_end, mix_begin + mixer_chunk), count = mix_end - mix_begin;
        const model::TrackState previous{tracks.narrow(0, mix_begin, count).unsqueeze(0),
                                         occlusion.narrow(0, mix_begin, count).unsqueeze(0),
                                         expected.narrow(0, mix_begin, count).unsqueeze(0)};
        model::TrackState next;
        if (streaming.whole_axis_mixer) {
          // The whole time axis at once, as a whole-clip run does (Engine::mix times the stage itself).
          const at::Tensor codes = encoded.narrow(0, mix_begin - group_begin, count).to(device, /*non_blocking=*/true);
          next = engine_.mix(codes, previous, mix_begin / mixer_chunk, iteration, recorder);
        } else {
          const auto scope = recorder.time(Stage::refine_transformer, mix_begin / mixer_chunk, iteration,
                                           core::chunk_stage_cost(Stage::refine_transformer, cost, count));
          const at::Tensor update = engine::long_sequence_mixer(
              engine_.mixer(), count, frames, std::max(1, streaming.mixer_block),
              [&](int64_t begin, int64_t length) {
                // One frame on each side for the relative motion; dropped after.
                const int64_t low = std::max<int64_t>(0, begin - 1), high = std::min(frames, begin + length + 1);
                model::TrackState around;
                around.tracks = tracks.narrow(0, mix_begin, count).narrow(1, low, high - low).unsqueeze(0);
                around.occlusion = occlusion.narrow(0, mix_begin, count).narrow(1, low, high - low).unsqueeze(0);
                around.expected_dist = expected.narrow(0, mix_begin, count).narrow(1, low, high - low).unsqueeze(0);
                const at::Tensor codes = encoded.narrow(0, mix_begin - group_begin, count)
                                             .narrow(1, low, high - low)
                                             .to(device, /*non_blocking=*/true);
                return engine_.mixer_input(codes, around).narrow(1, begin - low, length);
              },
              &mixer_stats);
          next = engine::Engine::apply_update(update, previous);
        }
        tracks.narrow(0, mix_begin, count).copy_(next.tracks[0]);
        occlusion.narrow(0, mix_begin, count).copy_(next.occlusion[0]);
        expected.narrow(0, mix_begin, count).copy_(next.expected_dist[0]);
        if (iteration < iterations) continue;
        // The last refinement: these tracks are final.
        at::Tensor tracks_host, occlusion_host, expected_host;
        {
          const auto scope = recorder.time(Stage::download, mix_begin / mixer_chunk, 0,
                                           {0.0, static_cast<double>(count) * static_cast<double>(frames) * 16.0});
          tracks_host = tracks.narrow(0, mix_begin, count).to(at::kCPU).contiguous();
          occlusion_host = occlusion.narrow(0, mix_begin, count).to(at::kCPU).contiguous();
          expected_host = expected.narrow(0, mix_begin, count).to(at::kCPU).contiguous();
        }
        core::TrackSet partial;
        partial.first_frame = first_frame;
        partial.frame_count = frames;
        {
          const auto scope = recorder.time(Stage::assembly, mix_begin / mixer_chunk, 0, {}, /*host=*/true);
          for (int q = 0; q < count; ++q) {
            partial.tracks.push_back(to_track(request.queries[static_cast<size_t>(mix_begin + q)], first_frame,
                                              tracks_host.data_ptr<float>() + static_cast<int64_t>(q) * frames * 2,
                                              occlusion_host.data_ptr<float>() + static_cast<int64_t>(q) * frames,
                                              expected_host.data_ptr<float>() + static_cast<int64_t>(q) * frames,
                                              frames, scale_x, scale_y));
          }
        }
        deliver_stages();
        observer.on_partial(partial, static_cast<size_t>(mix_begin));
        result.tracks.insert(result.tracks.end(), std::make_move_iterator(partial.tracks.begin()),
                             std::make_move_iterator(partial.tracks.end()));
      }
    }
  }
  const double key_frames_per_block =
      static_cast<double>(mixer_stats.key_frames) /
      std::max<double>(1.0, static_cast<double>(mixer_stats.blocks) * engine_.mixer().layers.front()->attn->heads);
  core::log::info(
      "exact streaming: {:.2f} GiB written to and {:.2f} GiB read from the {} cache; {}",
      static_cast<double>(cache->bytes_written()) / (1 << 30), static_cast<double>(cache->bytes_read()) / (1 << 30),
      core::to_string(cache->location()),
      streaming.whole_axis_mixer
          ? std::string("the transformer ran over the whole time axis at once")
          : fmt::format("the transformer's attention reached at most {} frames (certified), {:.0f} key frames per "
                        "block and head on average",
                        mixer_stats.max_reach_frames, key_frames_per_block));
  core::TrackProgress done;
  done.fraction = 1.0;
  done.chunks_done = static_cast<int>(total_passes);
  done.chunk_count = static_cast<int>(total_passes);
  done.phase = "done";
  observer.on_progress(done);
  return result;
}

}  // namespace trackscope::gpu
