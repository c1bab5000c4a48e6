#pragma once
// The report of `trackscope-cli eval`: a model's accuracy on BADJA and/or seeded synthetic clips next to its
// baselines ("the point does not move", and optionally the same architecture with random weights), as the JSON
// file (format "trackscope.eval", version 1.0) and as the text table the command prints.
//
//   EvaluationReport report;
//   report.model = {tracker->description(), "default"};
//   report.badja = EvaluationReport::Badja{annotations_path, video_path, masks_path, std::move(*badja)};
//   TRACKSCOPE_RETURN_IF_ERROR(write_evaluation_report("eval.json", report));     // atomic
//   std::fputs(format_evaluation_report(report).c_str(), stdout);
//
// Non-finite metrics (nothing to score) are written as JSON null. Threads: pure functions.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "core/status.h"
#include "core/tracking/evaluation.h"
#include "core/tracking/point_tracker.h"

namespace trackscope::core {

struct EvaluationReport {
  struct Model {
    TrackerDescription description;
    std::string requested;  // what the user asked for: "default", "small", a weights path
  };
  struct Badja {
    std::filesystem::path annotations;
    std::filesystem::path video;
    std::filesystem::path masks;  // empty: thresholds came with the annotations
    BadjaEvaluation model;
    std::optional<PckResult> random_weights;  // the baseline model's PCK on the same tracks' queries
  };
  /// What the synthetic clips were (the generator's options), for the record.
  struct SyntheticSet {
    uint64_t seed = 0;
    int64_t clips = 0;
    int64_t frames = 0;
    int64_t points = 0;
    int64_t width = 0;
    int64_t height = 0;
  };
  struct Synthetic {
    SyntheticSet set;
    TapVidEvaluation model;
    std::optional<TapVidMetrics> random_weights;
  };

  Model model;
  InputResize resize = InputResize::lanczos;
  std::optional<Model> random_weights_model;
  std::optional<Badja> badja;
  std::optional<Synthetic> synthetic;
};

/// The JSON document (2-space indented, newline-terminated).
std::string evaluation_report_json(const EvaluationReport& report);
/// Writes evaluation_report_json() to `path` atomically (core/io/atomic_file.h).
Status write_evaluation_report(const std::filesystem::path& path, const EvaluationReport& report);
/// The text the command prints: the model line, then the BADJA per-frame table and/or the synthetic metrics.
std::string format_evaluation_report(const EvaluationReport& report);

}  // namespace trackscope::core
