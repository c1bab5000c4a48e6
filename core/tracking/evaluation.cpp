#include "core/tracking/evaluation.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>

#include "core/io/file_names.h"
#include "core/video/image_io.h"
#include "core/video/memory_video.h"

namespace trackscope::core {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The mask files of a folder by frame number: every image whose stem is a decimal number.
Expected<std::map<int64_t, std::filesystem::path>> mask_files(const std::filesystem::path& dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    return not_found(fmt::format("mask folder '{}' does not exist (give the folder of the per-frame foreground masks)",
                                 dir.string()));
  }
  std::map<int64_t, std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (!entry.is_regular_file()) continue;
    const std::string stem = entry.path().stem().string();
    int64_t frame = 0;
    const auto [end, parse_error] = std::from_chars(stem.data(), stem.data() + stem.size(), frame);
    if (parse_error != std::errc() || end != stem.data() + stem.size() || stem.empty()) continue;
    files[frame] = entry.path();
  }
  if (error) return io_error(fmt::format("cannot list mask folder '{}': {}", dir.string(), error.message()));
  return files;
}

// Track of query q checked against the range and the query itself.
Status check_tracks(const TrackSet& tracks, const std::vector<Query>& queries, int64_t first_frame, int64_t end_frame) {
  if (tracks.tracks.size() != queries.size()) {
    return invalid_argument(
        fmt::format("the tracker returned {} tracks for {} queries", tracks.tracks.size(), queries.size()));
  }
  for (size_t q = 0; q < queries.size(); ++q) {
    const Track& track = tracks.tracks[q];
    if (!track.covers(first_frame) || !track.covers(end_frame - 1)) {
      return invalid_argument(
          fmt::format("track {} covers frames [{}, {}), the evaluation needs [{}, {})", q, track.first_frame,
                      track.first_frame + static_cast<int64_t>(track.points.size()), first_frame, end_frame));
    }
  }
  return {};
}

std::vector<Query> plain_queries(const std::vector<BadjaQuery>& queries) {
  std::vector<Query> plain;
  plain.reserve(queries.size());
  for (const BadjaQuery& q : queries) plain.push_back(q.query);
  return plain;
}

// Maps the progress of clip `index` of `count` onto the whole evaluation.
class ClipProgress final : public TrackObserver {
 public:
  ClipProgress(TrackObserver& outer, size_t index, size_t count) : outer_(outer), index_(index), count_(count) {}
  void on_progress(const TrackProgress& progress) override {
    TrackProgress mapped = progress;
    mapped.fraction = (static_cast<double>(index_) + progress.fraction) / static_cast<double>(count_);
    mapped.phase = fmt::format("clip {}/{}: {}", index_ + 1, count_, progress.phase);
    outer_.on_progress(mapped);
  }
  void on_stage(const StageSample& sample) override { outer_.on_stage(sample); }
  void on_partial(const TrackSet& partial, size_t first_query) override { outer_.on_partial(partial, first_query); }

 private:
  TrackObserver& outer_;
  size_t index_;
  size_t count_;
};

// Error of an estimate against a ground-truth position, in px of the frame scaled to 256x256.
double error_px256(double dx_px, double dy_px, double width, double height) {
  return std::hypot(dx_px * 256.0 / width, dy_px * 256.0 / height);
}

// The calibration pairs of the BADJA protocol: every started joint on every later annotated frame.
void add_badja_calibration(BadjaEvaluation& result) {
  const BadjaAnnotations& annotations = result.annotations;
  const auto width = static_cast<double>(annotations.width), height = static_cast<double>(annotations.height);
  for (size_t f = 1; f < annotations.frames.size(); ++f) {
    const BadjaFrame& frame = annotations.frames[f];
    for (size_t q = 0; q < result.queries.size(); ++q) {
      const Track& track = result.tracks.tracks[q];
      if (!track.covers(frame.frame)) continue;
      const TrackPoint& estimate = track.at(frame.frame);
      const auto joint = std::find_if(frame.joints.begin(), frame.joints.end(),
                                      [&](const BadjaJoint& j) { return j.joint_id == result.queries[q].joint_id; });
      const bool visible = joint != frame.joints.end() && joint->visible;
      result.calibration.occluded.add(estimate.p_occluded, !visible);
      if (!visible) continue;
      const double error = error_px256(estimate.x_px - joint->x_px, estimate.y_px - joint->y_px, width, height);
      result.calibration.far.add(estimate.p_far, error > kFarThresholdPx256);
    }
  }
}

}  // namespace

// ---- BADJA ---------------------------------------------------------------------------------------------------

Expected<BadjaAnnotations> load_badja_annotations(const std::filesystem::path& path,
                                                  const std::filesystem::path& masks_dir) {
  Expected<BadjaAnnotations> annotations =
      io::file_name_ends_with(path, ".json") ? load_badja_json(path) : load_badja_csv(path);
  if (!annotations) return annotations.status();
  if (!masks_dir.empty()) TRACKSCOPE_RETURN_IF_ERROR(set_badja_thresholds_from_masks(*annotations, masks_dir));
  return annotations;
}

Status set_badja_thresholds_from_masks(BadjaAnnotations& annotations, const std::filesystem::path& masks_dir) {
  Expected<std::map<int64_t, std::filesystem::path>> files = mask_files(masks_dir);
  if (!files) return files.status();
  for (BadjaFrame& frame : annotations.frames) {
    const auto found = files->find(frame.frame);
    if (found == files->end()) {
      return not_found(fmt::format("no mask for annotated frame {} in '{}' (expected an image named like {:05d}.png)",
                                   frame.frame, masks_dir.string(), frame.frame));
    }
    Expected<Frame> mask = read_png(found->second);
    if (!mask) return mask.status().with_context(fmt::format("mask of frame {}", frame.frame));
    int64_t area_px = 0;
    for (size_t i = 0; i + 2 < mask->rgb.size(); i += 3) {
      if (mask->rgb[i] != 0 || mask->rgb[i + 1] != 0 || mask->rgb[i + 2] != 0) ++area_px;
    }
    // 0.2 sqrt(area) in mask pixels, then to annotation pixels (lengths scale with sqrt of the area scale).
    const double area_scale =
        static_cast<double>(annotations.width) / mask->width * (static_cast<double>(annotations.height) / mask->height);
    frame.pck_threshold_px = 0.2 * std::sqrt(static_cast<double>(area_px)) * std::sqrt(area_scale);
  }
  return {};
}

Status BadjaEvaluationOptions::check() const {
  if (end_frame == -1 || end_frame >= 1) return {};
  return invalid_argument(fmt::format("end frame {} must be >= 1 (or -1 for the whole clip)", end_frame));
}

Expected<BadjaEvaluation> evaluate_badja(PointTracker& tracker, VideoSource& video, const BadjaAnnotations& annotations,
                                         const BadjaEvaluationOptions& options, TrackObserver& observer,
                                         std::stop_token stop) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  const VideoInfo& info = video.info();
  if (annotations.frames.empty()) return invalid_argument("the BADJA annotations hold no frame");
  if (annotations.width <= 0 || annotations.height <= 0) {
    return invalid_argument(
        fmt::format("the BADJA annotations have no image size ({}x{})", annotations.width, annotations.height));
  }
  BadjaEvaluation result;
  result.first_frame = 0;
  result.end_frame = options.end_frame == -1 ? info.frame_count : std::min(options.end_frame, info.frame_count);
  if (options.end_frame == -1 && annotations.frames.back().frame >= info.frame_count) {
    return invalid_argument(
        fmt::format("frame {} is annotated but the video has {} frames: wrong video for these "
                    "annotations?",
                    annotations.frames.back().frame, info.frame_count));
  }
  result.annotations = annotations.scaled_to(info.width, info.height);
  std::vector<BadjaFrame>& frames = result.annotations.frames;
  frames.erase(
      std::remove_if(frames.begin(), frames.end(), [&](const BadjaFrame& f) { return f.frame >= result.end_frame; }),
      frames.end());
  if (frames.size() < 2) {
    return invalid_argument(
        fmt::format("no annotated frame after the first inside the tracked frames [0, {}): track "
                    "more frames",
                    result.end_frame));
  }
  for (const BadjaFrame& frame : frames) {
    if (!std::isfinite(frame.pck_threshold_px)) {
      return invalid_argument(
          fmt::format("annotated frame {} has no PCK threshold: use the derived CSV, or give the "
                      "foreground masks (--masks) with the BADJA JSON",
                      frame.frame));
    }
  }
  result.queries = badja_queries(result.annotations);
  if (result.queries.empty()) {
    return invalid_argument(fmt::format("no joint is visible on the first annotated frame {}", frames.front().frame));
  }

  TrackRequest request;
  request.queries = plain_queries(result.queries);
  request.first_frame = result.first_frame;
  request.end_frame = result.end_frame;
  const auto start = Clock::now();
  Expected<TrackSet> tracks = tracker.track(video, request, observer, stop);
  result.track_seconds = seconds_since(start);
  if (!tracks) return tracks.status();
  TRACKSCOPE_RETURN_IF_ERROR(check_tracks(*tracks, request.queries, result.first_frame, result.end_frame));
  result.tracks = std::move(*tracks);

  Expected<PckResult> pck = compute_badja_pck(result.annotations, result.tracks);
  if (!pck) return pck.status();
  result.pck = std::move(*pck);
  add_badja_calibration(result);
  const TrackSet still =
      make_stationary_tracks(request.queries, result.first_frame, result.end_frame - result.first_frame);
  Expected<PckResult> stationary = compute_badja_pck(result.annotations, still);
  if (!stationary) return stationary.status();
  result.stationary = std::move(*stationary);
  return result;
}

// ---- TAP-Vid ---------------------------------------------------------------------------------------------------

Status TapVidClip::check() const {
  const int64_t t_count = frame_count(), n_count = track_count();
  if (width <= 0 || height <= 0 || t_count < 1) {
    return invalid_argument(fmt::format("clip '{}' is {}x{} with {} frames", name, width, height, t_count));
  }
  const size_t frame_bytes = static_cast<size_t>(width) * static_cast<size_t>(height) * 3;
  for (size_t t = 0; t < frames_rgb.size(); ++t) {
    if (frames_rgb[t].size() != frame_bytes) {
      return invalid_argument(fmt::format("clip '{}' frame {} holds {} bytes, {}x{} RGB24 needs {}", name, t,
                                          frames_rgb[t].size(), width, height, frame_bytes));
    }
  }
  const auto nt = static_cast<size_t>(n_count * t_count);
  if (gt_tracks_xy.size() != 2 * nt || gt_occluded.size() != nt) {
    return invalid_argument(
        fmt::format("clip '{}': {} queries x {} frames need {} track values and {} occlusion flags, "
                    "got {} and {}",
                    name, n_count, t_count, 2 * nt, nt, gt_tracks_xy.size(), gt_occluded.size()));
  }
  for (int64_t n = 0; n < n_count; ++n) {
    const Query& q = queries[static_cast<size_t>(n)];
    if (q.frame < 0 || q.frame >= t_count) {
      return invalid_argument(
          fmt::format("clip '{}' query {} is on frame {}, outside [0, {})", name, n, q.frame, t_count));
    }
    for (int64_t t = 0; t <= q.frame; ++t) {
      const bool occluded = gt_occluded[static_cast<size_t>(n * t_count + t)] != 0;
      if (occluded == (t < q.frame)) continue;
      return invalid_argument(
          fmt::format("clip '{}' query {} on frame {} is not its track's first visible point (frame "
                      "{} is {}): the query-first protocol needs it",
                      name, n, q.frame, t, occluded ? "occluded" : "visible"));
    }
  }
  return {};
}

Expected<TapVidVideo> make_tapvid_video(const TapVidClip& clip, const TrackSet& predicted) {
  TRACKSCOPE_RETURN_IF_ERROR(clip.check());
  const int64_t t_count = clip.frame_count(), n_count = clip.track_count();
  TRACKSCOPE_RETURN_IF_ERROR(check_tracks(predicted, clip.queries, 0, t_count));
  const float scale_x = 256.0f / static_cast<float>(clip.width);
  const float scale_y = 256.0f / static_cast<float>(clip.height);
  TapVidVideo video;
  video.track_count = n_count;
  video.frame_count = t_count;
  video.gt_occluded = clip.gt_occluded;
  video.gt_tracks_xy.resize(clip.gt_tracks_xy.size());
  video.pred_occluded.resize(clip.gt_occluded.size());
  video.pred_tracks_xy.resize(clip.gt_tracks_xy.size());
  for (int64_t n = 0; n < n_count; ++n) {
    const Track& track = predicted.tracks[static_cast<size_t>(n)];
    video.query_frames.push_back(static_cast<double>(clip.queries[static_cast<size_t>(n)].frame));
    for (int64_t t = 0; t < t_count; ++t) {
      const auto i = static_cast<size_t>(n * t_count + t);
      const TrackPoint& p = track.at(t);
      video.gt_tracks_xy[2 * i] = clip.gt_tracks_xy[2 * i] * scale_x;
      video.gt_tracks_xy[2 * i + 1] = clip.gt_tracks_xy[2 * i + 1] * scale_y;
      video.pred_tracks_xy[2 * i] = p.x_px * scale_x;
      video.pred_tracks_xy[2 * i + 1] = p.y_px * scale_y;
      video.pred_occluded[i] = p.visible ? 0 : 1;
    }
  }
  return video;
}

Status add_tapvid_calibration(const TapVidClip& clip, const TrackSet& predicted, TrackCalibration& calibration) {
  TRACKSCOPE_RETURN_IF_ERROR(clip.check());
  const int64_t t_count = clip.frame_count(), n_count = clip.track_count();
  TRACKSCOPE_RETURN_IF_ERROR(check_tracks(predicted, clip.queries, 0, t_count));
  const auto width = static_cast<double>(clip.width), height = static_cast<double>(clip.height);
  for (int64_t n = 0; n < n_count; ++n) {
    const Track& track = predicted.tracks[static_cast<size_t>(n)];
    for (int64_t t = clip.queries[static_cast<size_t>(n)].frame + 1; t < t_count; ++t) {
      const auto i = static_cast<size_t>(n * t_count + t);
      const TrackPoint& p = track.at(t);
      const bool occluded = clip.gt_occluded[i] != 0;
      calibration.occluded.add(p.p_occluded, occluded);
      if (occluded) continue;
      const double error =
          error_px256(p.x_px - clip.gt_tracks_xy[2 * i], p.y_px - clip.gt_tracks_xy[2 * i + 1], width, height);
      calibration.far.add(p.p_far, error > kFarThresholdPx256);
    }
  }
  return {};
}

Expected<TapVidEvaluation> evaluate_tapvid(PointTracker& tracker, const std::vector<TapVidClip>& clips,
                                           TrackObserver& observer, std::stop_token stop) {
  if (clips.empty()) return invalid_argument("no clip to evaluate");
  TapVidEvaluation result;
  std::vector<TapVidMetrics> model_metrics, stationary_metrics;
  for (size_t c = 0; c < clips.size(); ++c) {
    const TapVidClip& clip = clips[c];
    TRACKSCOPE_RETURN_IF_ERROR(clip.check());
    Expected<std::unique_ptr<MemoryVideoSource>> video =
        MemoryVideoSource::from_rgb(clip.width, clip.height, clip.frames_rgb, clip.frame_rate, clip.name);
    if (!video) return video.status();
    TrackRequest request;
    request.queries = clip.queries;
    request.first_frame = 0;
    request.end_frame = clip.frame_count();
    ClipProgress progress(observer, c, clips.size());
    const auto start = Clock::now();
    Expected<TrackSet> tracks = tracker.track(**video, request, progress, stop);
    TapVidClipResult clip_result;
    clip_result.name = clip.name;
    clip_result.track_seconds = seconds_since(start);
    if (!tracks) return tracks.status().with_context(fmt::format("clip '{}'", clip.name));

    Expected<TapVidVideo> scored = make_tapvid_video(clip, *tracks);
    if (!scored) return scored.status().with_context(fmt::format("clip '{}'", clip.name));
    Expected<TapVidMetrics> model = compute_tapvid_metrics(*scored, QueryMode::first);
    if (!model) return model.status();
    Expected<TapVidVideo> still = make_tapvid_video(clip, make_stationary_tracks(clip.queries, 0, clip.frame_count()));
    if (!still) return still.status();
    Expected<TapVidMetrics> stationary = compute_tapvid_metrics(*still, QueryMode::first);
    if (!stationary) return stationary.status();

    TRACKSCOPE_RETURN_IF_ERROR(add_tapvid_calibration(clip, *tracks, result.calibration));
    clip_result.model = *model;
    clip_result.stationary = *stationary;
    model_metrics.push_back(*model);
    stationary_metrics.push_back(*stationary);
    result.track_seconds += clip_result.track_seconds;
    result.clips.push_back(std::move(clip_result));
  }
  result.model = average_over_videos(model_metrics);
  result.stationary = average_over_videos(stationary_metrics);
  return result;
}

}  // namespace trackscope::core
