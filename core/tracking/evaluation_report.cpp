#include "core/tracking/evaluation_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "core/io/atomic_file.h"

namespace trackscope::core {
namespace {

using Json = nlohmann::json;

Json number(double value) { return std::isfinite(value) ? Json(value) : Json(nullptr); }

Json model_json(const EvaluationReport::Model& model) {
  const TrackerDescription& d = model.description;
  return {{"requested", model.requested}, {"name", d.model_name},       {"size", d.model_size},
          {"weights", d.weights_path},    {"sha256", d.weights_sha256}, {"parameters", d.parameter_count}};
}

double threshold_of(const BadjaAnnotations& annotations, int64_t frame) {
  for (const BadjaFrame& a : annotations.frames) {
    if (a.frame == frame) return a.pck_threshold_px;
  }
  return 0.0;
}

Json pck_json(const PckResult& pck, const BadjaAnnotations& annotations) {
  Json frames = Json::array();
  for (const PckFrame& f : pck.per_frame) {
    frames.push_back(
        {{"frame", f.frame},
         {"threshold_px", threshold_of(annotations, f.frame)},
         {"correct", f.correct},
         {"evaluated", f.evaluated},
         {"pck", number(f.evaluated > 0 ? static_cast<double>(f.correct) / static_cast<double>(f.evaluated) : NAN)}});
  }
  return {{"pck", number(pck.pck)}, {"correct", pck.correct}, {"evaluated", pck.evaluated}, {"per_frame", frames}};
}

Json tapvid_json(const TapVidMetrics& m) {
  std::vector<Json> within, jaccard;
  for (size_t k = 0; k < kTapVidThresholdsPx.size(); ++k) {
    within.push_back(number(m.pts_within[k]));
    jaccard.push_back(number(m.jaccard[k]));
  }
  return {{"average_jaccard", number(m.average_jaccard)},
          {"average_pts_within", number(m.average_pts_within)},
          {"occlusion_accuracy", number(m.occlusion_accuracy)},
          {"pts_within", within},
          {"jaccard", jaccard},
          {"videos", m.videos},
          {"evaluated_points", m.counts.evaluated_points}};
}

std::string format_badja(const EvaluationReport::Badja& section) {
  const BadjaEvaluation& b = section.model;
  std::string out = fmt::format("BADJA {} on {} ({}x{}): frames [{}, {}), {} tracks, PCK within 0.2 sqrt(area)\n",
                                section.annotations.filename().string(), section.video.string(), b.annotations.width,
                                b.annotations.height, b.first_frame, b.end_frame, b.queries.size());
  auto row = [&out](const char* name, const PckResult& p) {
    out += fmt::format("  {:<24} {:6.3f}  ({} / {})\n", name, p.pck, p.correct, p.evaluated);
  };
  row("model", b.pck);
  row("stationary", b.stationary);
  if (section.random_weights) row("random weights", *section.random_weights);
  out += fmt::format("  {:>5} {:>7} {:>4} {:>7} {:>10}{}\n", "frame", "thr_px", "n", "model", "stationary",
                     section.random_weights ? "  random" : "");
  for (size_t f = 0; f < b.pck.per_frame.size(); ++f) {
    const PckFrame& m = b.pck.per_frame[f];
    const double n = static_cast<double>(m.evaluated);
    out +=
        fmt::format("  {:5} {:7.2f} {:4} {:7.3f} {:10.3f}", m.frame, threshold_of(b.annotations, m.frame), m.evaluated,
                    static_cast<double>(m.correct) / n, static_cast<double>(b.stationary.per_frame[f].correct) / n);
    if (section.random_weights) {
      out += fmt::format("  {:6.3f}", static_cast<double>(section.random_weights->per_frame[f].correct) / n);
    }
    out += "\n";
  }
  return out;
}

std::string format_synthetic(const EvaluationReport::Synthetic& section) {
  const EvaluationReport::SyntheticSet& o = section.set;
  std::string out = fmt::format("synthetic seed {}: {} clips x {} frames x {} points, {}x{}, query-first, at 256x256\n",
                                o.seed, o.clips, o.frames, o.points, o.width, o.height);
  out += fmt::format("  {:<24} {:>6} {:>9} {:>9}\n", "", "AJ", "delta_avg", "occ_acc");
  auto row = [&out](const char* name, const TapVidMetrics& m) {
    out += fmt::format("  {:<24} {:6.3f} {:9.3f} {:9.3f}\n", name, m.average_jaccard, m.average_pts_within,
                       m.occlusion_accuracy);
  };
  row("model", section.model.model);
  row("stationary", section.model.stationary);
  if (section.random_weights) row("random weights", *section.random_weights);
  return out;
}

}  // namespace

std::string evaluation_report_json(const EvaluationReport& report) {
  Json doc;
  doc["format"] = "trackscope.eval";
  doc["version"] = "1.0";
  doc["model"] = model_json(report.model);
  doc["device"] = report.model.description.device.id;
  doc["device_name"] = report.model.description.device.name;
  doc["precision"] = to_string(report.model.description.precision);
  doc["resize"] = to_string(report.resize);
  if (report.random_weights_model) doc["random_weights_model"] = model_json(*report.random_weights_model);
  if (report.badja) {
    const EvaluationReport::Badja& s = *report.badja;
    const BadjaEvaluation& b = s.model;
    Json section = pck_json(b.pck, b.annotations);
    section["annotations"] = s.annotations.string();
    section["video"] = s.video.string();
    section["masks"] = s.masks.empty() ? Json(nullptr) : Json(s.masks.string());
    section["protocol"] =
        "one track per visible joint of the first annotated frame; correct within 0.2 sqrt(foreground area) px";
    section["video_size"] = {b.annotations.width, b.annotations.height};
    section["frames"] = {b.first_frame, b.end_frame};
    section["tracks"] = b.queries.size();
    section["track_seconds"] = b.track_seconds;
    section["baselines"]["stationary"] = pck_json(b.stationary, b.annotations);
    if (s.random_weights) section["baselines"]["random_weights"] = pck_json(*s.random_weights, b.annotations);
    doc["badja"] = section;
  }
  if (report.synthetic) {
    const EvaluationReport::Synthetic& s = *report.synthetic;
    Json section = tapvid_json(s.model.model);
    section["seed"] = s.set.seed;
    section["clips"] = s.set.clips;
    section["frames"] = s.set.frames;
    section["points"] = s.set.points;
    section["size"] = {s.set.width, s.set.height};
    section["protocol"] = "TAP-Vid query-first (queries on frame 0), metrics at 256x256, thresholds 1, 2, 4, 8, 16 px";
    section["track_seconds"] = s.model.track_seconds;
    section["baselines"]["stationary"] = tapvid_json(s.model.stationary);
    if (s.random_weights) section["baselines"]["random_weights"] = tapvid_json(*s.random_weights);
    doc["synthetic"] = section;
  }
  return doc.dump(2) + "\n";
}

Status write_evaluation_report(const std::filesystem::path& path, const EvaluationReport& report) {
  return io::write_file_atomically(path, evaluation_report_json(report));
}

std::string format_evaluation_report(const EvaluationReport& report) {
  const TrackerDescription& d = report.model.description;
  std::string out = fmt::format("model {} ({}, sha256 {:.12}) on {}, {}, {} resize\n", d.model_name, d.weights_path,
                                d.weights_sha256, d.device.id, to_string(d.precision), to_string(report.resize));
  if (report.badja) out += format_badja(*report.badja);
  if (report.synthetic) out += format_synthetic(*report.synthetic);
  return out;
}

}  // namespace trackscope::core
