#include "core/tracking/track_quality.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

namespace trackscope::core {

Status QualityOptions::check() const {
  if (!(uncertain_p_far > 0.0f && uncertain_p_far <= 1.0f))
    return invalid_argument("uncertain_p_far must be in (0, 1]");
  if (!(uncertain_p_occluded > 0.0f && uncertain_p_occluded <= 1.0f))
    return invalid_argument("uncertain_p_occluded must be in (0, 1]");
  if (!(outlier_factor > 0.0) || !(outlier_min_px >= 0.0))
    return invalid_argument("outlier thresholds must be positive");
  if (!(consistency_threshold_px > 0.0)) return invalid_argument("consistency_threshold_px must be positive");
  return {};
}

int64_t TrackQuality::flagged_count() const {
  return std::count_if(flags.begin(), flags.end(), [](uint8_t f) { return f != 0; });
}

TrackQuality assess_track(const PointTrack& point_track, const QualityOptions& options,
                          const std::vector<float>& consistency_error_px) {
  const Track& track = point_track.track;
  TrackQuality quality;
  quality.first_frame = track.first_frame;
  quality.flags.assign(track.points.size(), 0);
  const size_t n = track.points.size();

  // Second differences on runs of three visible frames.
  std::vector<double> second(n, -1.0);
  std::vector<double> known;
  for (size_t i = 1; i + 1 < n; ++i) {
    const TrackPoint& a = track.points[i - 1];
    const TrackPoint& b = track.points[i];
    const TrackPoint& c = track.points[i + 1];
    if (!a.visible || !b.visible || !c.visible) continue;
    const double dx = static_cast<double>(c.x_px) - 2.0 * b.x_px + a.x_px;
    const double dy = static_cast<double>(c.y_px) - 2.0 * b.y_px + a.y_px;
    second[i] = std::hypot(dx, dy);
    known.push_back(second[i]);
  }
  double median = 0.0;
  if (!known.empty()) {
    std::nth_element(known.begin(), known.begin() + static_cast<std::ptrdiff_t>(known.size() / 2), known.end());
    median = known[known.size() / 2];
  }
  const double outlier_px = std::max(options.outlier_min_px, options.outlier_factor * median);

  for (size_t i = 0; i < n; ++i) {
    const int64_t frame = track.first_frame + static_cast<int64_t>(i);
    if (point_track.is_keyframe(frame)) continue;
    const TrackPoint& point = track.points[i];
    uint8_t flags = 0;
    if (point.visible && (point.p_far >= options.uncertain_p_far ||
                          (options.uncertain_p_occluded < 1.0f && point.p_occluded >= options.uncertain_p_occluded))) {
      flags |= quality_uncertain;
    }
    if (second[i] > outlier_px) flags |= quality_velocity_outlier;
    if (i < consistency_error_px.size() && std::isfinite(consistency_error_px[i]) &&
        consistency_error_px[i] > options.consistency_threshold_px) {
      flags |= quality_inconsistent;
    }
    quality.flags[i] = flags;
  }
  if (consistency_error_px.size() == n) quality.consistency_error_px = consistency_error_px;
  return quality;
}

CalibratedQualityOptions quality_options_for_weights(const std::filesystem::path& weights_path,
                                                     std::string_view weights_sha256, const QualityOptions& fallback) {
  CalibratedQualityOptions result{fallback, "defaults (no manifest with calibrated thresholds beside the weights)",
                                  false};
  std::vector<std::filesystem::path> candidates = {std::filesystem::path(weights_path).replace_extension(".json")};
  const std::string stem = weights_path.stem().string();
  if (stem.size() > 2 && stem.compare(stem.size() - 2, 2, "-0") == 0) {
    candidates.push_back(weights_path.parent_path() / (stem.substr(0, stem.size() - 2) + ".json"));
  }
  for (const std::filesystem::path& path : candidates) {
    std::ifstream in(path);
    if (!in) continue;
    const nlohmann::json manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!manifest.is_object() || manifest.value("format", "") != "trackscope.model-manifest") continue;
    const std::string sha256 = manifest.value("sha256", "");
    if (!sha256.empty() && !weights_sha256.empty() && sha256 != weights_sha256) {
      result.source = fmt::format("defaults ({} describes other weights: sha256 {:.12})", path.string(), sha256);
      return result;
    }
    const nlohmann::json thresholds =
        manifest.value("calibration", nlohmann::json::object()).value("suspicious_thresholds", nlohmann::json());
    if (!thresholds.is_object()) continue;
    QualityOptions options = fallback;
    bool any = false;
    auto read = [&](const char* key, float& value) {
      const auto found = thresholds.find(key);
      if (found == thresholds.end() || !found->is_number()) return;
      const double x = found->get<double>();
      if (!(x > 0.0 && x <= 1.0)) return;
      value = static_cast<float>(x);
      any = true;
    };
    read("p_far", options.uncertain_p_far);
    read("p_occluded", options.uncertain_p_occluded);
    if (!any || !options.check()) continue;
    return {options, path.string(), true};
  }
  return result;
}

std::optional<Query> consistency_anchor(const Track& track) {
  std::optional<Query> best;
  int64_t best_distance = 0;
  for (size_t i = 0; i < track.points.size(); ++i) {
    const TrackPoint& point = track.points[i];
    const int64_t frame = track.first_frame + static_cast<int64_t>(i);
    const int64_t distance = std::abs(frame - track.query.frame);
    if (!point.visible || distance <= best_distance) continue;
    best_distance = distance;
    best = Query{frame, point.x_px, point.y_px};
  }
  return best;
}

std::vector<float> consistency_error(const Track& track, const Track& reverse) {
  std::vector<float> errors(track.points.size(), std::numeric_limits<float>::quiet_NaN());
  for (size_t i = 0; i < track.points.size(); ++i) {
    const int64_t frame = track.first_frame + static_cast<int64_t>(i);
    if (!reverse.covers(frame)) continue;
    const TrackPoint& a = track.points[i];
    const TrackPoint& b = reverse.at(frame);
    if (!a.visible || !b.visible) continue;
    errors[i] =
        static_cast<float>(std::hypot(static_cast<double>(a.x_px) - b.x_px, static_cast<double>(a.y_px) - b.y_px));
  }
  return errors;
}

std::optional<int64_t> next_flagged_frame(const TrackQuality& quality, int64_t frame, bool backward) {
  const int64_t first = quality.first_frame;
  const int64_t end = first + static_cast<int64_t>(quality.flags.size());
  if (backward) {
    for (int64_t f = std::min(frame - 1, end - 1); f >= first; --f) {
      if (quality.flagged(f)) return f;
    }
  } else {
    for (int64_t f = std::max(frame + 1, first); f < end; ++f) {
      if (quality.flagged(f)) return f;
    }
  }
  return std::nullopt;
}

std::optional<int64_t> next_keyframe(const PointTrack& track, int64_t frame, bool backward) {
  std::vector<int64_t> frames = track.keyframes;
  frames.push_back(track.track.query.frame);
  std::sort(frames.begin(), frames.end());
  if (backward) {
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
      if (*it < frame) return *it;
    }
  } else {
    for (int64_t keyframe : frames) {
      if (keyframe > frame) return keyframe;
    }
  }
  return std::nullopt;
}

}  // namespace trackscope::core
