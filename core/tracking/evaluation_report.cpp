#include "core/tracking/evaluation_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "core/io/atomic_file.h"

namespace trackscope::core {
namespace {

using Json = nlohmann::json;

// Bins with fewer predictions than this are left out of the suspicious threshold (BADJA has 147 p_far pairs in
// 10 bins: 20 would leave one bin).
constexpr int64_t kThresholdMinBinCount = 10;

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
  Json joints = Json::array();
  for (const PckJoint& j : pck.per_joint) {
    joints.push_back({{"joint_id", j.joint_id},
                      {"correct", j.correct},
                      {"evaluated", j.evaluated},
                      {"mean_error_px", number(j.mean_error_px)},
                      {"first_miss_frame", j.first_miss_frame}});
  }
  return {{"pck", number(pck.pck)},
          {"correct", pck.correct},
          {"evaluated", pck.evaluated},
          {"per_frame", frames},
          {"per_joint", joints}};
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

Json optional_number(const std::optional<double>& value) { return value ? number(*value) : Json(nullptr); }

Json calibration_object(const Calibration& c, std::string_view outcome) {
  Json bins = Json::array();
  for (const ReliabilityBin& b : c.bins) {
    bins.push_back({{"lower", b.lower},
                    {"upper", b.upper},
                    {"count", b.count},
                    {"mean_predicted", number(b.mean_predicted)},
                    {"observed_frequency", number(b.observed_frequency)}});
  }
  return {
      {"outcome", std::string(outcome)},
      {"count", c.count},
      {"expected_calibration_error", number(c.expected_calibration_error)},
      {"max_calibration_error", number(c.max_calibration_error)},
      {"brier_score", number(c.brier_score)},
      {"mean_predicted", number(c.mean_predicted)},
      {"base_rate", number(c.base_rate)},
      {"suspicious_threshold", optional_number(calibrated_threshold(c, kSuspiciousErrorRate, kThresholdMinBinCount))},
      {"bins", bins}};
}

Json track_calibration_json(const TrackCalibration& calibration) {
  return {{"bins", kCalibrationBins},
          {"suspicious_error_rate", kSuspiciousErrorRate},
          {"p_occluded", calibration_object(calibration.occluded.result(), "occluded in the ground truth")},
          {"p_far", calibration_object(calibration.far.result(),
                                       "farther than 6 px (at 256x256) from a point visible in the ground truth")}};
}

std::string format_calibration(const TrackCalibration& calibration) {
  auto part = [](const char* name, const Calibration& c) {
    const std::optional<double> threshold = calibrated_threshold(c, kSuspiciousErrorRate, kThresholdMinBinCount);
    return fmt::format("{} ECE {:.3f} (n {}, predicted {:.3f}, observed {:.3f}, suspicious from {})", name,
                       c.expected_calibration_error, c.count, c.mean_predicted, c.base_rate,
                       threshold ? fmt::format("{:.2f}", *threshold) : std::string("-"));
  };
  return fmt::format("  calibration, {:2} bins: {}\n                         {}\n", kCalibrationBins,
                     part("p_occluded", calibration.occluded.result()), part("p_far", calibration.far.result()));
}

Json change_object(const TrackChange& c) {
  return {{"pairs", c.pairs},
          {"mean_px", number(c.mean_px)},
          {"p99_px", number(c.p99_px)},
          {"max_px", number(c.max_px)},
          {"visible_pairs", c.visible_pairs},
          {"visible_mean_px", number(c.visible_mean_px)},
          {"visible_p99_px", number(c.visible_p99_px)},
          {"visible_max_px", number(c.visible_max_px)},
          {"visibility_agreement", number(c.visibility_agreement)}};
}

Json stability_json(const EvaluationReport::Stability& section) {
  const StabilityEvaluation& s = section.model;
  Json rows = Json::array();
  for (const StabilityRow& row : s.rows) {
    Json r = {{"name", row.name}, {"kind", row.kind}, {"track_seconds", row.track_seconds}};
    if (row.change) r["change"] = change_object(*row.change);
    if (!row.skipped.empty()) r["skipped"] = row.skipped;
    rows.push_back(r);
  }
  return {{"video", section.video.string()},
          {"queries", section.queries},
          {"reference", s.reference},
          {"tracks", s.tracks},
          {"frames", {s.first_frame, s.end_frame}},
          {"protocol",
           "distance in video px between the tracks of the changed run and the reference, over every (track, "
           "frame) pair except the query frames; visible pairs: visible in the reference; p99 by linear "
           "interpolation"},
          {"rows", rows}};
}

std::string format_stability(const EvaluationReport::Stability& section) {
  const StabilityEvaluation& s = section.model;
  std::string out = fmt::format(
      "stability on {} ({} tracks from {}, frames [{}, {})): track change against {}, video px\n",
      section.video.filename().string(), s.tracks, section.queries, s.first_frame, s.end_frame, s.reference);
  out += fmt::format("  {:<16} {:>8} {:>8} {:>8}   {:>8} {:>8} {:>8}  {:>9}\n", "change", "mean", "p99", "max",
                     "vis mean", "vis p99", "vis max", "same vis");
  for (const StabilityRow& row : s.rows) {
    if (!row.change) {
      out += fmt::format("  {:<16} not run: {}\n", row.name, row.skipped);
      continue;
    }
    const TrackChange& c = *row.change;
    out +=
        fmt::format("  {:<16} {:8.2f} {:8.2f} {:8.2f}   {:8.2f} {:8.2f} {:8.2f}  {:9.3f}\n", row.name, c.mean_px,
                    c.p99_px, c.max_px, c.visible_mean_px, c.visible_p99_px, c.visible_max_px, c.visibility_agreement);
  }
  return out;
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
  // Which joints the model loses, and from which annotated frame on (the stationary baseline for scale).
  out += fmt::format("  {:>5} {:>4} {:>7} {:>13} {:>10} {:>13}\n", "joint", "n", "model", "mean err px", "lost at",
                     "stationary px");
  for (size_t q = 0; q < b.pck.per_joint.size(); ++q) {
    const PckJoint& j = b.pck.per_joint[q];
    if (j.evaluated == 0) continue;
    const std::string lost = j.first_miss_frame < 0 ? "-" : fmt::format("frame {}", j.first_miss_frame);
    out += fmt::format("  {:5} {:4} {:7.3f} {:13.1f} {:>10} {:13.1f}\n", j.joint_id, j.evaluated,
                       static_cast<double>(j.correct) / static_cast<double>(j.evaluated), j.mean_error_px, lost,
                       q < b.stationary.per_joint.size() ? b.stationary.per_joint[q].mean_error_px : NAN);
  }
  out += format_calibration(b.calibration);
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
  out += format_calibration(section.model.calibration);
  return out;
}

}  // namespace

std::string calibration_json(const Calibration& calibration, std::string_view outcome) {
  return calibration_object(calibration, outcome).dump();
}

std::string track_change_json(const TrackChange& change) { return change_object(change).dump(); }

std::string evaluation_report_json(const EvaluationReport& report) {
  Json doc;
  doc["format"] = "trackscope.eval";
  doc["version"] = "1.1";
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
    section["calibration"] = track_calibration_json(b.calibration);
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
    section["calibration"] = track_calibration_json(s.model.calibration);
    doc["synthetic"] = section;
  }
  if (report.stability) doc["stability"] = stability_json(*report.stability);
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
  if (report.stability) out += format_stability(*report.stability);
  return out;
}

}  // namespace trackscope::core
