#include "core/tracking/metrics.h"

#include "core/io/atomic_file.h"
#include "core/io/input_checks.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

namespace trackscope::core {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double ratio(int64_t numerator, int64_t denominator) {
  return denominator == 0 ? kNaN : static_cast<double>(numerator) / static_cast<double>(denominator);
}

// numpy.round rounds half to even; std::nearbyint does too under the default rounding mode.
int64_t round_half_even(double value) { return static_cast<int64_t>(std::nearbyint(value)); }

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream stream(line);
  while (std::getline(stream, field, separator)) fields.push_back(field);
  if (!line.empty() && line.back() == separator) fields.emplace_back();
  return fields;
}

template <typename T>
bool parse_number(std::string text, T& value) {
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.pop_back();
  while (!text.empty() && text.front() == ' ') text.erase(text.begin());
  if constexpr (std::is_floating_point_v<T>) {
    try {
      size_t used = 0;
      value = static_cast<T>(std::stod(text, &used));
      return used == text.size() && !text.empty();
    } catch (const std::exception&) {
      return false;
    }
  } else {
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    return error == std::errc() && end == text.data() + text.size() && !text.empty();
  }
}

void sort_frames(BadjaAnnotations& annotations) {
  std::sort(annotations.frames.begin(), annotations.frames.end(),
            [](const BadjaFrame& a, const BadjaFrame& b) { return a.frame < b.frame; });
  for (BadjaFrame& frame : annotations.frames) {
    std::sort(frame.joints.begin(), frame.joints.end(),
              [](const BadjaJoint& a, const BadjaJoint& b) { return a.joint_id < b.joint_id; });
  }
}

}  // namespace

const char* to_string(QueryMode mode) { return mode == QueryMode::first ? "first" : "strided"; }

Status TapVidVideo::check() const {
  if (track_count < 0 || frame_count <= 0) {
    return invalid_argument(
        fmt::format("TAP-Vid video needs tracks >= 0 and frames > 0, got {} x {}", track_count, frame_count));
  }
  const auto n = static_cast<size_t>(track_count);
  const auto nt = n * static_cast<size_t>(frame_count);
  if (query_frames.size() != n || gt_occluded.size() != nt || pred_occluded.size() != nt ||
      gt_tracks_xy.size() != 2 * nt || pred_tracks_xy.size() != 2 * nt) {
    return invalid_argument(
        fmt::format("TAP-Vid arrays do not match {} tracks x {} frames: queries {}, gt_occluded {}, pred_occluded {}, "
                    "gt_tracks {}, pred_tracks {} values",
                    track_count, frame_count, query_frames.size(), gt_occluded.size(), pred_occluded.size(),
                    gt_tracks_xy.size(), pred_tracks_xy.size()));
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t t = round_half_even(query_frames[i]);
    if (!std::isfinite(query_frames[i]) || t < 0 || t >= frame_count) {
      return invalid_argument(fmt::format("query {} is on frame {}, outside [0, {})", i, query_frames[i], frame_count));
    }
  }
  return {};
}

Expected<TapVidMetrics> compute_tapvid_metrics(const TapVidVideo& video, QueryMode mode) {
  TRACKSCOPE_RETURN_IF_ERROR(video.check());
  TapVidMetrics metrics;
  TapVidCounts& c = metrics.counts;
  const int64_t frames = video.frame_count;
  for (int64_t n = 0; n < video.track_count; ++n) {
    const int64_t query_frame = round_half_even(video.query_frames[static_cast<size_t>(n)]);
    for (int64_t t = 0; t < frames; ++t) {
      const bool evaluated = mode == QueryMode::first ? t > query_frame : t != query_frame;
      if (!evaluated) continue;
      const auto i = static_cast<size_t>(n * frames + t);
      const bool gt_visible = video.gt_occluded[i] == 0;
      const bool pred_visible = video.pred_occluded[i] == 0;
      ++c.evaluated_points;
      if ((video.gt_occluded[i] != 0) == (video.pred_occluded[i] != 0)) ++c.occlusion_correct;
      if (gt_visible) ++c.gt_visible;
      // float arithmetic, like numpy on the float32 arrays of the reference.
      const float dx = video.pred_tracks_xy[2 * i] - video.gt_tracks_xy[2 * i];
      const float dy = video.pred_tracks_xy[2 * i + 1] - video.gt_tracks_xy[2 * i + 1];
      const float distance_sq = dx * dx + dy * dy;
      for (size_t k = 0; k < kTapVidThresholdsPx.size(); ++k) {
        const auto threshold = static_cast<float>(kTapVidThresholdsPx[k]);
        const bool within = distance_sq < threshold * threshold;
        if (within && gt_visible) {
          ++c.within_threshold[k];
          if (pred_visible) ++c.true_positives[k];
        }
        if (pred_visible && (!gt_visible || !within)) ++c.false_positives[k];
      }
    }
  }
  metrics.occlusion_accuracy = ratio(c.occlusion_correct, c.evaluated_points);
  double sum_within = 0.0;
  double sum_jaccard = 0.0;
  for (size_t k = 0; k < kTapVidThresholdsPx.size(); ++k) {
    metrics.pts_within[k] = ratio(c.within_threshold[k], c.gt_visible);
    metrics.jaccard[k] = ratio(c.true_positives[k], c.gt_visible + c.false_positives[k]);
    sum_within += metrics.pts_within[k];
    sum_jaccard += metrics.jaccard[k];
  }
  metrics.average_pts_within = sum_within / static_cast<double>(kTapVidThresholdsPx.size());
  metrics.average_jaccard = sum_jaccard / static_cast<double>(kTapVidThresholdsPx.size());
  return metrics;
}

TapVidMetrics average_over_videos(const std::vector<TapVidMetrics>& videos) {
  TapVidMetrics mean;
  mean.videos = static_cast<int64_t>(videos.size());
  auto average = [&videos](auto get) {
    double sum = 0.0;
    int64_t count = 0;
    for (const TapVidMetrics& m : videos) {
      const double value = get(m);
      if (std::isnan(value)) continue;
      sum += value;
      ++count;
    }
    return count == 0 ? kNaN : sum / static_cast<double>(count);
  };
  mean.occlusion_accuracy = average([](const TapVidMetrics& m) { return m.occlusion_accuracy; });
  mean.average_pts_within = average([](const TapVidMetrics& m) { return m.average_pts_within; });
  mean.average_jaccard = average([](const TapVidMetrics& m) { return m.average_jaccard; });
  for (size_t k = 0; k < kTapVidThresholdsPx.size(); ++k) {
    mean.pts_within[k] = average([k](const TapVidMetrics& m) { return m.pts_within[k]; });
    mean.jaccard[k] = average([k](const TapVidMetrics& m) { return m.jaccard[k]; });
  }
  for (const TapVidMetrics& m : videos) {
    mean.counts.evaluated_points += m.counts.evaluated_points;
    mean.counts.occlusion_correct += m.counts.occlusion_correct;
    mean.counts.gt_visible += m.counts.gt_visible;
    for (size_t k = 0; k < kTapVidThresholdsPx.size(); ++k) {
      mean.counts.within_threshold[k] += m.counts.within_threshold[k];
      mean.counts.true_positives[k] += m.counts.true_positives[k];
      mean.counts.false_positives[k] += m.counts.false_positives[k];
    }
  }
  return mean;
}

// ---- BADJA ---------------------------------------------------------------------------------------------------

BadjaAnnotations BadjaAnnotations::scaled_to(int new_width, int new_height) const {
  BadjaAnnotations scaled = *this;
  const double sx = static_cast<double>(new_width) / width;
  const double sy = static_cast<double>(new_height) / height;
  scaled.width = new_width;
  scaled.height = new_height;
  for (BadjaFrame& frame : scaled.frames) {
    frame.pck_threshold_px *= std::sqrt(sx * sy);
    for (BadjaJoint& joint : frame.joints) {
      if (!joint.visible) continue;
      joint.x_px *= sx;
      joint.y_px *= sy;
    }
  }
  return scaled;
}

namespace {

// BADJA has 37 joints; ids far beyond are damage.
constexpr int kMaxBadjaJoints = 1024;
// Annotation files are kilobytes; a far larger file is not one.
constexpr size_t kMaxBadjaFileBytes = size_t{64} << 20;

// The digits of "x_854x480" -> {854, 480}; nullopt unless both are image sizes.
std::optional<std::pair<int, int>> size_from_column(std::string_view name) {
  if (name.substr(0, 2) != "x_") return std::nullopt;
  name.remove_prefix(2);
  const size_t cross = name.find('x');
  if (cross == std::string_view::npos) return std::nullopt;
  const std::optional<int64_t> width = io::parse_int64(name.substr(0, cross));
  const std::optional<int64_t> height = io::parse_int64(name.substr(cross + 1));
  if (!width || !height || *width < 1 || *height < 1 || *width > io::kMaxImageSidePx || *height > io::kMaxImageSidePx)
    return std::nullopt;
  return std::pair{static_cast<int>(*width), static_cast<int>(*height)};
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  return text;
}

Expected<std::string> read_annotation_file(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    return not_found(fmt::format("cannot open BADJA annotations '{}'", path.string()));
  return io::read_file(path, kMaxBadjaFileBytes);
}

// The frame number of an image path: the digits right before the extension (".../00026.jpg" -> 26).
std::optional<int64_t> frame_of_image_path(std::string_view path) {
  const size_t dot = path.rfind('.');
  if (dot == std::string_view::npos || dot + 1 == path.size()) return std::nullopt;
  for (char c : path.substr(dot + 1)) {
    if (!std::isalpha(static_cast<unsigned char>(c))) return std::nullopt;
  }
  size_t begin = dot;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(path[begin - 1]))) --begin;
  const std::optional<int64_t> frame = io::parse_int64(path.substr(begin, dot - begin));
  if (!frame || *frame >= io::kMaxFrameIndex) return std::nullopt;
  return frame;
}

}  // namespace

Expected<BadjaAnnotations> load_badja_csv(const std::filesystem::path& path) {
  Expected<std::string> text = read_annotation_file(path);
  if (!text) return text.status();
  return badja_from_csv(*text, path.string());
}

Expected<BadjaAnnotations> badja_from_csv(std::string_view text, const std::string& source) {
  text = io::strip_utf8_bom(text);
  size_t start = 0;
  auto next_line = [&]() -> std::optional<std::string_view> {
    if (start >= text.size()) return std::nullopt;
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    return line;
  };
  const std::optional<std::string_view> first = next_line();
  if (!first || trimmed(*first).empty()) return corrupt_data(fmt::format("'{}' is empty", source));
  const std::string header_line(trimmed(*first));
  const std::vector<std::string> header = split(header_line, ',');
  const std::optional<std::pair<int, int>> size = header.size() >= 3 ? size_from_column(header[2]) : std::nullopt;
  if (header.size() < 6 || header[0] != "frame" || header[1] != "joint_id" || header[4] != "visible" || !size) {
    return corrupt_data(
        fmt::format("'{}' does not start with the header frame,joint_id,x_WxH,y_WxH,visible,pck_thr... (W and H the "
                    "image size, 1 to {}): '{}'",
                    source, io::kMaxImageSidePx, header_line.substr(0, 200)));
  }
  BadjaAnnotations annotations;
  annotations.width = size->first;
  annotations.height = size->second;
  std::map<int64_t, BadjaFrame> frames;
  int64_t line_number = 1;
  while (const std::optional<std::string_view> raw = next_line()) {
    ++line_number;
    const std::string line(trimmed(*raw));
    if (line.empty()) continue;
    const std::vector<std::string> fields = split(line, ',');
    int64_t frame = 0;
    BadjaJoint joint;
    int visible = 0;
    double threshold = 0.0;
    if (fields.size() != header.size() || !parse_number(fields[0], frame) || !parse_number(fields[1], joint.joint_id) ||
        !parse_number(fields[2], joint.x_px) || !parse_number(fields[3], joint.y_px) ||
        !parse_number(fields[4], visible) || !parse_number(fields[5], threshold) || frame < 0 ||
        (visible != 0 && visible != 1)) {
      return corrupt_data(fmt::format("'{}' line {}: malformed row '{}'", source, line_number, line.substr(0, 200)));
    }
    if (frame >= io::kMaxFrameIndex || joint.joint_id < 0 || joint.joint_id >= kMaxBadjaJoints) {
      return corrupt_data(
          fmt::format("'{}' line {}: frame {} or joint {} is out of range (frames below {}, joints "
                      "below {})",
                      source, line_number, frame, joint.joint_id, io::kMaxFrameIndex, kMaxBadjaJoints));
    }
    if (!std::isfinite(joint.x_px) || !std::isfinite(joint.y_px) || !std::isfinite(threshold) || threshold < 0.0) {
      return corrupt_data(fmt::format("'{}' line {}: positions must be finite and the threshold a finite number >= 0",
                                      source, line_number));
    }
    joint.visible = visible == 1;
    if (joint.visible && !io::plausible_position(joint.x_px, joint.y_px, annotations.width, annotations.height)) {
      return corrupt_data(fmt::format("'{}' line {}: joint {} at ({}, {}) is not plausible: {}", source, line_number,
                                      joint.joint_id, joint.x_px, joint.y_px,
                                      io::position_bounds_text(annotations.width, annotations.height)));
    }
    BadjaFrame& entry = frames[frame];
    if (!entry.joints.empty() && entry.pck_threshold_px != threshold) {
      return corrupt_data(fmt::format("'{}' line {}: frame {} has two thresholds ({} and {})", source, line_number,
                                      frame, entry.pck_threshold_px, threshold));
    }
    for (const BadjaJoint& other : entry.joints) {
      if (other.joint_id == joint.joint_id) {
        return corrupt_data(fmt::format("'{}' line {}: joint {} of frame {} appears twice", source, line_number,
                                        joint.joint_id, frame));
      }
    }
    entry.frame = frame;
    entry.pck_threshold_px = threshold;
    entry.joints.push_back(joint);
  }
  if (frames.empty()) return corrupt_data(fmt::format("'{}' has no annotation rows", source));
  for (auto& [frame, entry] : frames) annotations.frames.push_back(std::move(entry));
  sort_frames(annotations);
  return annotations;
}

Expected<BadjaAnnotations> load_badja_json(const std::filesystem::path& path, int source_width, int source_height) {
  Expected<std::string> text = read_annotation_file(path);
  if (!text) return text.status();
  return badja_from_json(*text, path.string(), source_width, source_height);
}

Expected<BadjaAnnotations> badja_from_json(std::string_view text, const std::string& source, int source_width,
                                           int source_height) {
  if (source_width < 1 || source_height < 1 || source_width > io::kMaxImageSidePx ||
      source_height > io::kMaxImageSidePx) {
    return invalid_argument(
        fmt::format("the BADJA source size {}x{} is not an image size", source_width, source_height));
  }
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    return corrupt_data(fmt::format("'{}' is not valid JSON: {}", source, e.what()));
  }
  if (!document.is_array() || document.empty()) {
    return corrupt_data(fmt::format("'{}' is not a non-empty array of BADJA entries", source));
  }
  BadjaAnnotations annotations;
  annotations.width = source_width;
  annotations.height = source_height;
  std::set<int64_t> seen;
  try {
    for (size_t e = 0; e < document.size(); ++e) {
      const nlohmann::json& entry = document[e];
      const std::string image_path = entry.at("image_path").get<std::string>();
      const std::optional<int64_t> frame_number = frame_of_image_path(image_path);
      if (!frame_number) {
        return corrupt_data(
            fmt::format("'{}' entry {}: no frame number in image_path '{}'", source, e, image_path.substr(0, 200)));
      }
      if (!seen.insert(*frame_number).second) {
        return corrupt_data(fmt::format("'{}' entry {}: frame {} is annotated twice", source, e, *frame_number));
      }
      const nlohmann::json& joints = entry.at("joints");
      const nlohmann::json& visibility = entry.at("visibility");
      if (!joints.is_array() || !visibility.is_array() || joints.size() != visibility.size()) {
        return corrupt_data(fmt::format("'{}' entry {}: joints and visibility differ in length", source, e));
      }
      if (joints.size() > static_cast<size_t>(kMaxBadjaJoints)) {
        return corrupt_data(fmt::format("'{}' entry {}: {} joints (BADJA has 37)", source, e, joints.size()));
      }
      BadjaFrame frame;
      frame.frame = *frame_number;
      frame.pck_threshold_px = kNaN;
      for (size_t j = 0; j < joints.size(); ++j) {
        BadjaJoint joint;
        joint.joint_id = static_cast<int>(j);
        joint.visible = visibility[j].get<bool>();
        if (joint.visible) {
          const nlohmann::json& position = joints[j];
          if (!position.is_array() || position.size() < 2 || !position[0].is_number() || !position[1].is_number()) {
            return corrupt_data(fmt::format("'{}' entry {} joint {}: expected [row, col]", source, e, j));
          }
          joint.y_px = position[0].get<double>();  // BADJA stores [row, col]
          joint.x_px = position[1].get<double>();
          if (!io::plausible_position(joint.x_px, joint.y_px, source_width, source_height)) {
            return corrupt_data(fmt::format("'{}' entry {} joint {} at ({}, {}) is not plausible: {}", source, e, j,
                                            joint.x_px, joint.y_px,
                                            io::position_bounds_text(source_width, source_height)));
          }
        } else {
          joint.x_px = joint.y_px = -1.0;
        }
        frame.joints.push_back(joint);
      }
      annotations.frames.push_back(std::move(frame));
    }
  } catch (const nlohmann::json::exception& e) {
    return corrupt_data(fmt::format("'{}' is not in the BADJA layout: {}", source, e.what()));
  }
  sort_frames(annotations);
  return annotations;
}

std::vector<BadjaQuery> badja_queries(const BadjaAnnotations& annotations) {
  std::vector<BadjaQuery> queries;
  if (annotations.frames.empty()) return queries;
  const BadjaFrame& first = annotations.frames.front();
  for (const BadjaJoint& joint : first.joints) {
    if (!joint.visible) continue;
    queries.push_back({joint.joint_id, Query{first.frame, joint.x_px, joint.y_px}});
  }
  return queries;
}

Expected<PckResult> compute_badja_pck(const BadjaAnnotations& annotations, const TrackSet& tracks) {
  const std::vector<BadjaQuery> queries = badja_queries(annotations);
  if (tracks.tracks.size() != queries.size()) {
    return invalid_argument(
        fmt::format("BADJA PCK needs one track per visible joint of the first frame: {} tracks, {} joints",
                    tracks.tracks.size(), queries.size()));
  }
  PckResult result;
  result.per_joint.resize(queries.size());
  std::vector<double> error_sum_px(queries.size(), 0.0);
  for (size_t q = 0; q < queries.size(); ++q) result.per_joint[q].joint_id = queries[q].joint_id;
  for (size_t f = 1; f < annotations.frames.size(); ++f) {
    const BadjaFrame& frame = annotations.frames[f];
    if (!std::isfinite(frame.pck_threshold_px)) {
      return invalid_argument(
          fmt::format("frame {} has no PCK threshold (load the CSV, or derive it from the masks)", frame.frame));
    }
    PckFrame tally{frame.frame, 0, 0};
    for (size_t q = 0; q < queries.size(); ++q) {
      const auto joint = std::find_if(frame.joints.begin(), frame.joints.end(),
                                      [&](const BadjaJoint& j) { return j.joint_id == queries[q].joint_id; });
      if (joint == frame.joints.end() || !joint->visible) continue;
      const Track& track = tracks.tracks[q];
      if (!track.covers(frame.frame)) {
        return invalid_argument(
            fmt::format("track {} (joint {}) does not cover annotated frame {}", q, queries[q].joint_id, frame.frame));
      }
      const TrackPoint& predicted = track.at(frame.frame);
      const double distance = std::hypot(predicted.x_px - joint->x_px, predicted.y_px - joint->y_px);
      const bool correct = distance < frame.pck_threshold_px;
      ++tally.evaluated;
      if (correct) ++tally.correct;
      PckJoint& per_joint = result.per_joint[q];
      ++per_joint.evaluated;
      error_sum_px[q] += distance;
      if (correct) {
        ++per_joint.correct;
      } else if (per_joint.first_miss_frame < 0) {
        per_joint.first_miss_frame = frame.frame;
      }
    }
    result.correct += tally.correct;
    result.evaluated += tally.evaluated;
    result.per_frame.push_back(tally);
  }
  for (size_t q = 0; q < queries.size(); ++q) {
    PckJoint& joint = result.per_joint[q];
    joint.mean_error_px = joint.evaluated > 0 ? error_sum_px[q] / static_cast<double>(joint.evaluated)
                                              : std::numeric_limits<double>::quiet_NaN();
  }
  result.pck = ratio(result.correct, result.evaluated);
  return result;
}

TrackSet make_stationary_tracks(const std::vector<Query>& queries, int64_t first_frame, int64_t frame_count) {
  TrackSet set;
  set.first_frame = first_frame;
  set.frame_count = frame_count;
  for (const Query& query : queries) {
    Track track;
    track.query = query;
    track.first_frame = first_frame;
    TrackPoint point;
    point.x_px = static_cast<float>(query.x_px);
    point.y_px = static_cast<float>(query.y_px);
    point.visible = true;
    point.p_occluded = 0.0f;
    point.p_far = 0.0f;
    track.points.assign(static_cast<size_t>(std::max<int64_t>(frame_count, 0)), point);
    set.tracks.push_back(std::move(track));
  }
  return set;
}

// ---- Calibration ---------------------------------------------------------------------------------------------

CalibrationAccumulator::CalibrationAccumulator(int bins)
    : counts_(static_cast<size_t>(std::max(bins, 1)), 0),
      positives_(counts_.size(), 0),
      predicted_sums_(counts_.size(), 0.0) {}

void CalibrationAccumulator::add(double probability, bool outcome) {
  if (!std::isfinite(probability)) return;
  const double p = std::clamp(probability, 0.0, 1.0);
  const auto bins = static_cast<int64_t>(counts_.size());
  const auto bin = static_cast<size_t>(std::min(bins - 1, static_cast<int64_t>(p * static_cast<double>(bins))));
  ++counts_[bin];
  positives_[bin] += outcome ? 1 : 0;
  predicted_sums_[bin] += p;
  ++count_;
  const double error = p - (outcome ? 1.0 : 0.0);
  squared_error_sum_ += error * error;
}

Status CalibrationAccumulator::merge(const CalibrationAccumulator& other) {
  if (other.counts_.size() != counts_.size()) {
    return invalid_argument(
        fmt::format("cannot merge reliability bins: {} bins and {} bins", counts_.size(), other.counts_.size()));
  }
  for (size_t b = 0; b < counts_.size(); ++b) {
    counts_[b] += other.counts_[b];
    positives_[b] += other.positives_[b];
    predicted_sums_[b] += other.predicted_sums_[b];
  }
  count_ += other.count_;
  squared_error_sum_ += other.squared_error_sum_;
  return {};
}

Calibration CalibrationAccumulator::result() const {
  Calibration c;
  c.count = count_;
  const auto bins = static_cast<double>(counts_.size());
  double predicted_sum = 0.0;
  int64_t positives = 0;
  c.expected_calibration_error = count_ > 0 ? 0.0 : kNaN;
  c.max_calibration_error = count_ > 0 ? 0.0 : kNaN;
  for (size_t b = 0; b < counts_.size(); ++b) {
    ReliabilityBin bin;
    bin.lower = static_cast<double>(b) / bins;
    bin.upper = static_cast<double>(b + 1) / bins;
    bin.count = counts_[b];
    bin.mean_predicted = counts_[b] > 0 ? predicted_sums_[b] / static_cast<double>(counts_[b]) : kNaN;
    bin.observed_frequency = ratio(positives_[b], counts_[b]);
    if (counts_[b] > 0) {
      const double gap = std::abs(bin.mean_predicted - bin.observed_frequency);
      c.expected_calibration_error += gap * static_cast<double>(counts_[b]) / static_cast<double>(count_);
      c.max_calibration_error = std::max(c.max_calibration_error, gap);
    }
    predicted_sum += predicted_sums_[b];
    positives += positives_[b];
    c.bins.push_back(bin);
  }
  c.brier_score = count_ > 0 ? squared_error_sum_ / static_cast<double>(count_) : kNaN;
  c.mean_predicted = count_ > 0 ? predicted_sum / static_cast<double>(count_) : kNaN;
  c.base_rate = ratio(positives, count_);
  return c;
}

std::optional<double> calibrated_threshold(const Calibration& calibration, double target_frequency, int64_t min_count) {
  std::vector<double> predicted, frequency, weight;
  for (const ReliabilityBin& bin : calibration.bins) {
    if (bin.count < std::max<int64_t>(min_count, 1)) continue;
    predicted.push_back(bin.mean_predicted);
    frequency.push_back(bin.observed_frequency);
    weight.push_back(static_cast<double>(bin.count));
  }
  if (predicted.empty()) return std::nullopt;
  // Pool adjacent violators: blocks of consecutive bins share their weighted mean frequency until the curve
  // no longer decreases.
  struct Block {
    double frequency, weight;
    size_t bins;
  };
  std::vector<Block> blocks;
  for (size_t i = 0; i < predicted.size(); ++i) {
    blocks.push_back({frequency[i], weight[i], 1});
    while (blocks.size() >= 2 && blocks[blocks.size() - 2].frequency > blocks.back().frequency) {
      const Block last = blocks.back();
      blocks.pop_back();
      Block& previous = blocks.back();
      const double total = previous.weight + last.weight;
      previous.frequency = (previous.frequency * previous.weight + last.frequency * last.weight) / total;
      previous.weight = total;
      previous.bins += last.bins;
    }
  }
  std::vector<double> fitted;
  for (const Block& block : blocks) fitted.insert(fitted.end(), block.bins, block.frequency);
  if (fitted.front() >= target_frequency) return predicted.front();
  for (size_t i = 1; i < fitted.size(); ++i) {
    if (fitted[i] < target_frequency) continue;
    const double x0 = predicted[i - 1], x1 = predicted[i], y0 = fitted[i - 1], y1 = fitted[i];
    return y1 > y0 ? x0 + (x1 - x0) * (target_frequency - y0) / (y1 - y0) : x1;
  }
  return std::nullopt;
}

// ---- Track change (stability) --------------------------------------------------------------------------------

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  const double rank = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  const auto below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (values[above] - values[below]) * (rank - static_cast<double>(below));
}

Expected<TrackChange> compute_track_change(const TrackSet& reference, const TrackSet& other) {
  if (reference.tracks.size() != other.tracks.size()) {
    return invalid_argument(
        fmt::format("cannot compare {} tracks with {} tracks", reference.tracks.size(), other.tracks.size()));
  }
  std::vector<double> all, visible;
  int64_t agree = 0;
  for (size_t i = 0; i < reference.tracks.size(); ++i) {
    const Track& a = reference.tracks[i];
    const Track& b = other.tracks[i];
    if (!(a.query == b.query)) {
      return invalid_argument(
          fmt::format("track {} answers query (frame {}, {:.2f}, {:.2f}) in one set and (frame {}, "
                      "{:.2f}, {:.2f}) in the other",
                      i, a.query.frame, a.query.x_px, a.query.y_px, b.query.frame, b.query.x_px, b.query.y_px));
    }
    for (int64_t frame = std::max(a.first_frame, b.first_frame); frame < std::min(a.end_frame(), b.end_frame());
         ++frame) {
      if (frame == a.query.frame) continue;
      const TrackPoint& p = a.at(frame);
      const TrackPoint& q = b.at(frame);
      const double distance = std::hypot(static_cast<double>(p.x_px) - q.x_px, static_cast<double>(p.y_px) - q.y_px);
      all.push_back(distance);
      if (p.visible) visible.push_back(distance);
      if (p.visible == q.visible) ++agree;
    }
  }
  auto mean = [](const std::vector<double>& v) {
    double sum = 0.0;
    for (double x : v) sum += x;
    return v.empty() ? kNaN : sum / static_cast<double>(v.size());
  };
  auto maximum = [](const std::vector<double>& v) { return v.empty() ? kNaN : *std::max_element(v.begin(), v.end()); };
  TrackChange change;
  change.pairs = static_cast<int64_t>(all.size());
  change.visible_pairs = static_cast<int64_t>(visible.size());
  change.mean_px = mean(all);
  change.p99_px = percentile(all, 99.0);
  change.max_px = maximum(all);
  change.visible_mean_px = mean(visible);
  change.visible_p99_px = percentile(visible, 99.0);
  change.visible_max_px = maximum(visible);
  change.visibility_agreement = ratio(agree, change.pairs);
  return change;
}

}  // namespace trackscope::core
