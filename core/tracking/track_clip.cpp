#include "core/tracking/track_clip.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/io/project.h"
#include "core/io/video_fingerprint.h"
#include "core/tracking/annotation.h"

namespace trackscope::core {
namespace {

// The tracks as a project (points with their tracks, the video with its fingerprint), opened on `view_frame`.
Status write_project(const std::filesystem::path& path, const TrackClipRequest& request, const VideoInfo& info,
                     const TrackSet& tracks, const TrackProvenance& provenance) {
  Annotation annotation;
  for (const Track& track : tracks.tracks) {
    const PointId id = annotation.add(track.query);
    if (!annotation.set_track(id, track, provenance)) {
      return internal_error(fmt::format("track of point {} could not be attached", id));
    }
  }
  Expected<io::VideoFingerprint> fingerprint = io::fingerprint_video(request.video_path);
  if (!fingerprint) return fingerprint.status();
  io::ProjectVideo video =
      io::describe_video(std::filesystem::absolute(request.video_path).lexically_normal().string(), info);
  video.fingerprint = *fingerprint;
  io::ProjectView view;
  view.current_frame = std::clamp<int64_t>(request.view_frame, 0, std::max<int64_t>(0, info.frame_count - 1));
  view.trail_before_frames = 12;
  return io::save_project(path, io::make_project(annotation, std::move(video), view));
}

// Forwards every callback and keeps the stage samples and the plan.
class StageCollector final : public TrackObserver {
 public:
  StageCollector(TrackObserver& inner, TrackClipResult& result) : inner_(inner), result_(result) {}
  void on_progress(const TrackProgress& progress) override { inner_.on_progress(progress); }
  void on_plan(const RunPlan& plan) override {
    result_.plan = plan;
    inner_.on_plan(plan);
  }
  void on_stage(const StageSample& sample) override {
    result_.stages.push_back(sample);
    inner_.on_stage(sample);
  }
  void on_partial(const TrackSet& partial, size_t first_query) override { inner_.on_partial(partial, first_query); }

 private:
  TrackObserver& inner_;
  TrackClipResult& result_;
};

}  // namespace

ClipPhaseTimes ClipPhaseTimes::from_stages(const std::vector<StageSample>& samples) {
  ClipPhaseTimes phases;
  for (const StageSample& s : samples) {
    const double seconds = s.elapsed_ms / 1000.0;
    switch (s.stage) {
      case Stage::decode: phases.decode_s += seconds; break;
      case Stage::resize_normalize: phases.resize_s += seconds; break;
      case Stage::upload: phases.upload_s += seconds; break;
      default: phases.compute_s += seconds; break;
    }
  }
  return phases;
}

std::string ClipPhaseTimes::summary() const {
  return fmt::format("decode {:.2f} s, resize {:.2f} s, upload {:.2f} s, compute {:.2f} s, write {:.2f} s", decode_s,
                     resize_s, upload_s, compute_s, write_s);
}

Expected<ClipOutput> ClipOutput::from_path(const std::filesystem::path& path) {
  ClipOutput output{path, io::track_format_from_path(path)};
  if (!output.format && !io::is_project_path(path)) {
    return invalid_argument(
        fmt::format("{}: name a .csv, .json, .npz (TAP-Vid), _dlc.csv (DeepLabCut), _coco.json or {} (project) file",
                    path.string(), io::kProjectExtension));
  }
  return output;
}

Expected<ClipOutput> ClipOutput::from_format_name(std::string_view name, const std::filesystem::path& folder,
                                                  const std::string& stem) {
  if (name == "trackscope" || name == "project") return ClipOutput{folder / (stem + io::kProjectExtension), {}};
  std::optional<io::TrackFormat> format = io::parse_track_format(name);
  if (!format && name == "dlc") format = io::TrackFormat::deeplabcut_csv;
  if (!format && name == "coco") format = io::TrackFormat::coco_json;
  if (!format) {
    return invalid_argument(
        fmt::format("unknown output format '{}': use csv, json, npz, dlc, coco or trackscope", name));
  }
  return ClipOutput{folder / (stem + io::default_suffix(*format)), format};
}

std::string ClipOutput::format_name() const {
  if (!format) return "trackscope";
  switch (*format) {
    case io::TrackFormat::csv: return "csv";
    case io::TrackFormat::json: return "json";
    case io::TrackFormat::tapvid_npz: return "npz";
    case io::TrackFormat::deeplabcut_csv: return "dlc";
    case io::TrackFormat::coco_json: return "coco";
  }
  return "?";
}

std::map<std::string, double> TrackClipResult::stage_ms() const {
  std::map<std::string, double> totals;
  for (const StageSample& s : stages) totals[std::string(stage_name(s.stage))] += s.elapsed_ms;
  return totals;
}

double TrackClipResult::points_per_second() const {
  return track_seconds > 0 ? static_cast<double>(tracks.tracks.size()) / track_seconds : 0.0;
}

Expected<TrackClipResult> track_clip_queries(PointTracker& tracker, VideoSource& video, const TrackClipRequest& request,
                                             TrackObserver& observer, std::stop_token stop) {
  TrackRequest track_request;
  track_request.queries = request.queries;
  track_request.first_frame = request.first_frame;
  track_request.end_frame = request.end_frame;
  TrackClipResult result;
  StageCollector collector(observer, result);
  const auto start = std::chrono::steady_clock::now();
  Expected<TrackSet> tracks = tracker.track(video, track_request, collector, std::move(stop));
  if (!tracks) return tracks.status();
  result.track_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.tracks = std::move(*tracks);
  result.phases = ClipPhaseTimes::from_stages(result.stages);
  return result;
}

Status write_clip_outputs(const TrackClipRequest& request, const TrackClipResult& result, const VideoInfo& info,
                          const TrackerDescription& description) {
  const TrackProvenance provenance{description.model_name, description.device.id, to_string(description.precision)};
  io::TrackTable table;
  table.video = {request.video_path, info.width, info.height, info.frame_count, info.frame_rate.to_double()};
  for (size_t i = 0; i < result.tracks.tracks.size(); ++i) {
    io::TableTrack row;
    row.id = static_cast<PointId>(i);
    row.query = result.tracks.tracks[i].query;
    row.track.track = result.tracks.tracks[i];
    row.track.provenance = provenance;
    table.tracks.push_back(std::move(row));
  }
  for (const ClipOutput& output : request.outputs) {
    Status written = output.format ? io::write_tracks(output.path, table, *output.format)
                                   : write_project(output.path, request, info, result.tracks, provenance);
    if (!written) return written;
  }
  return {};
}

Expected<TrackClipResult> track_clip(PointTracker& tracker, VideoSource& video, const TrackClipRequest& request,
                                     TrackObserver& observer, std::stop_token stop) {
  Expected<TrackClipResult> result = track_clip_queries(tracker, video, request, observer, std::move(stop));
  if (!result) return result.status();
  const auto start = std::chrono::steady_clock::now();
  TRACKSCOPE_RETURN_IF_ERROR(write_clip_outputs(request, *result, video.info(), tracker.description()));
  result->phases.write_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace trackscope::core
