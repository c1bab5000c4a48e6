#pragma once
// Point-tracking accuracy metrics: the TAP-Vid metrics (occlusion accuracy, <δ^x_avg, average Jaccard) exactly as
// tapnet's evaluation_datasets.compute_tapvid_metrics computes them, and BADJA PCK as in ../shared/testdata/SOURCES.md.
// Pure C++ (no torch): the trainer, `trackscope-cli eval` and tests share it.
//
//   TapVidVideo video{.track_count = n, .frame_count = t, ...};          // ground truth + prediction, 256x256 px
//   Expected<TapVidMetrics> m = compute_tapvid_metrics(video, QueryMode::first);
//   TapVidMetrics benchmark = average_over_videos({*m, ...});              // the number a paper reports
//
//   Expected<BadjaAnnotations> gt = load_badja_csv(path);
//   std::vector<BadjaQuery> queries = badja_queries(*gt);                   // one per visible joint of the first frame
//   TrackSet tracks = ...track queries[i].query...;                          // in the annotation's pixel coordinates
//   Expected<PckResult> pck = compute_badja_pck(*gt, tracks);
//
// Coordinates are raster pixels (pixel (i, j) covers [j, j+1) x [i, i+1)). TAP-Vid thresholds {1, 2, 4, 8, 16} px
// are meant for tracks scaled to 256x256. Threads: free functions without shared state.

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <optional>
#include <vector>

#include "core/status.h"
#include "core/tracking/tracks.h"

namespace trackscope::core {

// ---- TAP-Vid -------------------------------------------------------------------------------------------------

/// Which frames are scored. first: the frames strictly after the query frame (the query is the first visible
/// point of the track, everything before is known to be occluded). strided: every frame except the query frame.
enum class QueryMode { first, strided };
const char* to_string(QueryMode mode);

inline constexpr std::array<double, 5> kTapVidThresholdsPx = {1.0, 2.0, 4.0, 8.0, 16.0};

/// Ground truth and prediction of one video. Arrays are row-major over [track][frame] ( [track][frame][xy] ).
struct TapVidVideo {
  int64_t track_count = 0;
  int64_t frame_count = 0;
  std::vector<double> query_frames;    // [N]: t of each query (rounded half-to-even, like numpy.round)
  std::vector<uint8_t> gt_occluded;    // [N*T]: 1 = occluded
  std::vector<float> gt_tracks_xy;     // [N*T*2]: (x, y) px
  std::vector<uint8_t> pred_occluded;  // [N*T]: 1 = predicted occluded
  std::vector<float> pred_tracks_xy;   // [N*T*2]: (x, y) px

  /// invalid_argument when a size does not match track_count x frame_count or a query frame is out of range.
  Status check() const;
};

/// The integer tallies behind the metrics of one video (over its evaluated points).
struct TapVidCounts {
  int64_t evaluated_points = 0;               // (track, frame) pairs the query mode scores
  int64_t occlusion_correct = 0;              // predicted occlusion == ground truth
  int64_t gt_visible = 0;                     // visible in the ground truth
  std::array<int64_t, 5> within_threshold{};  // visible in the ground truth and closer than the threshold
  std::array<int64_t, 5> true_positives{};    // ... and predicted visible
  std::array<int64_t, 5> false_positives{};   // predicted visible but occluded in the ground truth or too far
};

/// Metrics in [0, 1] (papers multiply by 100). A ratio whose denominator is 0 is NaN, as in numpy.
struct TapVidMetrics {
  double occlusion_accuracy = 0.0;
  std::array<double, 5> pts_within{};  // fraction of ground-truth-visible points within 1, 2, 4, 8, 16 px
  std::array<double, 5> jaccard{};
  double average_pts_within = 0.0;  // δ_avg
  double average_jaccard = 0.0;     // AJ
  TapVidCounts counts;
  int64_t videos = 1;  // how many videos an average_over_videos() result covers
};

Expected<TapVidMetrics> compute_tapvid_metrics(const TapVidVideo& video, QueryMode mode);

/// The benchmark number: the plain mean over videos of each metric. Videos where a metric is NaN (nothing to
/// score) are left out of that metric's mean (numpy would give NaN); counts are summed. Empty input -> all NaN.
TapVidMetrics average_over_videos(const std::vector<TapVidMetrics>& videos);

// ---- BADJA ---------------------------------------------------------------------------------------------------

struct BadjaJoint {
  int joint_id = 0;  // index into BADJA's 37-joint list
  double x_px = 0.0;
  double y_px = 0.0;
  bool visible = false;
};

struct BadjaFrame {
  int64_t frame = 0;               // video frame index (0-based)
  double pck_threshold_px = 0.0;   // 0.2 * sqrt(foreground area); NaN when unknown (JSON without masks)
  std::vector<BadjaJoint> joints;  // ascending joint_id
};

/// Sparse joint annotations of one clip, in the pixel coordinates of a width x height image.
struct BadjaAnnotations {
  int width = 0;
  int height = 0;
  std::vector<BadjaFrame> frames;  // ascending frame

  /// Maps every position and threshold to a width x height image (plain scaling; the threshold by sqrt of the
  /// area scale, i.e. sqrt(sx * sy)).
  BadjaAnnotations scaled_to(int new_width, int new_height) const;
};

/// Reads ../shared/testdata/derived_badja_*_WxH.csv: header `frame,joint_id,x_WxH,y_WxH,visible,pck_thr...`,
/// the image size taken from the x column's name. corrupt_data names the line of a malformed row.
Expected<BadjaAnnotations> load_badja_csv(const std::filesystem::path& path);

/// Reads a BADJA joint_annotations JSON (`[{image_path, joints [[row, col]...], visibility [...]}, ...]`) whose
/// coordinates are pixels of a source_width x source_height image (1920x1080 for DAVIS full resolution). The
/// frame index comes from the image file name (".../00026.jpg" -> 26). Thresholds are NaN: they need the masks.
Expected<BadjaAnnotations> load_badja_json(const std::filesystem::path& path, int source_width = 1920,
                                           int source_height = 1080);

/// The same readers on the text of a file (`source` names it in messages). Both check what they read: image
/// sizes 1 to 65536 px, frames below 2^31, joint ids below 1024 and unique per frame, visible joints at plausible
/// positions (core/io/input_checks.h), finite thresholds >= 0; a UTF-8 byte order mark before the CSV header is
/// accepted.
Expected<BadjaAnnotations> badja_from_csv(std::string_view text, const std::string& source);
Expected<BadjaAnnotations> badja_from_json(std::string_view text, const std::string& source, int source_width = 1920,
                                           int source_height = 1080);

/// A track to start for the PCK protocol.
struct BadjaQuery {
  int joint_id = 0;
  Query query;  // on the first annotated frame, at the joint
};

/// One query per visible joint of the first annotated frame, ascending joint id.
std::vector<BadjaQuery> badja_queries(const BadjaAnnotations& annotations);

struct PckFrame {
  int64_t frame = 0;
  int64_t correct = 0;
  int64_t evaluated = 0;
};

/// One started joint over the later annotated frames where it is visible: which joints a tracker loses, and when.
struct PckJoint {
  int joint_id = 0;
  int64_t correct = 0;
  int64_t evaluated = 0;
  double mean_error_px = 0.0;     // mean distance to the annotation over the evaluated frames (NaN if none)
  int64_t first_miss_frame = -1;  // the first evaluated frame where it was not correct (-1: never missed)
};

struct PckResult {
  double pck = 0.0;  // correct / evaluated (NaN if nothing to evaluate)
  int64_t correct = 0;
  int64_t evaluated = 0;  // (later annotated frame, started joint visible there) pairs
  std::vector<PckFrame> per_frame;
  std::vector<PckJoint> per_joint;  // in track (query) order
};

/// BADJA PCK: tracks[i] follows badja_queries(annotations)[i] (same order, same pixel coordinates). On every
/// annotated frame after the first, each started joint that is visible there counts as correct when the
/// prediction lies strictly closer than that frame's threshold (predicted visibility is ignored).
/// invalid_argument when the track count differs, a track does not cover an annotated frame, or a threshold is
/// unknown.
Expected<PckResult> compute_badja_pck(const BadjaAnnotations& annotations, const TrackSet& tracks);

/// The "does not move" baseline: every track stays at its query position on every frame of
/// [first_frame, first_frame + frame_count), visible.
TrackSet make_stationary_tracks(const std::vector<Query>& queries, int64_t first_frame, int64_t frame_count);

// ---- Calibration ---------------------------------------------------------------------------------------------

/// One bin of a reliability diagram: predictions in [lower, upper) (the last bin includes 1).
struct ReliabilityBin {
  double lower = 0.0;
  double upper = 0.0;
  int64_t count = 0;
  double mean_predicted = 0.0;      // mean predicted probability in the bin (NaN when empty)
  double observed_frequency = 0.0;  // share of positive outcomes in the bin (NaN when empty)
};

/// How well predicted probabilities match observed frequencies.
struct Calibration {
  std::vector<ReliabilityBin> bins;         // equal width over [0, 1]
  int64_t count = 0;                        // predictions scored
  double expected_calibration_error = 0.0;  // ECE = sum_b (n_b / N) |mean_predicted_b - observed_frequency_b|
  double max_calibration_error = 0.0;       // the largest |mean_predicted - observed_frequency| of a non-empty bin
  double brier_score = 0.0;                 // mean (p - outcome)^2
  double mean_predicted = 0.0;              // over every prediction
  double base_rate = 0.0;                   // share of positive outcomes
};

/// Collects (probability, outcome) pairs into equal-width bins; NaN-free result once count() > 0 (an empty
/// accumulator gives NaN metrics). Probabilities are clamped to [0, 1]; a non-finite probability is ignored.
///
///   CalibrationAccumulator occluded(10);
///   for (...) occluded.add(point.p_occluded, gt_occluded);
///   Calibration c = occluded.result();   // c.expected_calibration_error, c.bins
class CalibrationAccumulator {
 public:
  explicit CalibrationAccumulator(int bins = 10);
  void add(double probability, bool outcome);
  /// Adds another accumulator's pairs (same bin count; invalid_argument otherwise).
  Status merge(const CalibrationAccumulator& other);
  int64_t count() const { return count_; }
  int bin_count() const { return static_cast<int>(counts_.size()); }
  Calibration result() const;

 private:
  std::vector<int64_t> counts_;
  std::vector<int64_t> positives_;
  std::vector<double> predicted_sums_;
  int64_t count_ = 0;
  double squared_error_sum_ = 0.0;
};

/// The predicted probability from which the outcome is observed at least `target_frequency` of the time: the
/// reliability curve is made non-decreasing (pool-adjacent-violators over the non-empty bins, weighted by their
/// counts), and the threshold is where it crosses the target, linearly interpolated between the bins' mean
/// predictions. nullopt when no bin reaches the target (or there is nothing to go by); the lowest bin's mean
/// prediction when every bin does. Bins with fewer than `min_count` predictions are left out.
std::optional<double> calibrated_threshold(const Calibration& calibration, double target_frequency,
                                           int64_t min_count = 20);

// ---- Track change (stability) --------------------------------------------------------------------------------

/// How far one set of tracks is from a reference set of the same queries (e.g. the same clip tracked after a
/// grey-level shift, a JPEG round trip or at another precision). Distances in the tracks' pixels. Pairs are
/// (track, frame) over every frame both cover except each track's query frame; "visible" pairs are those the
/// reference calls visible. Statistics of an empty set are NaN.
struct TrackChange {
  int64_t pairs = 0;
  int64_t visible_pairs = 0;
  double mean_px = 0.0;  // all pairs
  double p99_px = 0.0;   // 99th percentile (linear interpolation between order statistics, as numpy)
  double max_px = 0.0;
  double visible_mean_px = 0.0;
  double visible_p99_px = 0.0;
  double visible_max_px = 0.0;
  double visibility_agreement = 0.0;  // share of pairs whose visible flag is the same in both sets
};

/// invalid_argument when the sets have different track counts or a track's query differs.
Expected<TrackChange> compute_track_change(const TrackSet& reference, const TrackSet& other);

/// The q-th percentile (0..100) of `values` by linear interpolation (numpy.percentile's default); NaN if empty.
double percentile(std::vector<double> values, double q);

}  // namespace trackscope::core
