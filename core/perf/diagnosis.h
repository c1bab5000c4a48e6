#pragma once
// Side-by-side comparison of two profiled runs (A and B) and the diagnosis of stages that are slower than the
// two devices' specifications predict, and the traps of a run's settings (the precision selector's gating is
// core::precision_support, core/tracking/device.h, which the traps read too).
//
//   Expected<Comparison> ab = compare_runs({&h200, &h200.cases[0], "H200"}, {&t4, &t4.cases[0], "T4"});
//   for (const StageComparison& s : ab->stages)
//     if (s.highlighted) for (const Cause& c : s.causes) log::info("{}: {}", s.stage, c.text);
//
// Ratios are B / A (> 1: B is slower). The predicted ratio is floor_B / floor_A with each side's FLOPs and bytes
// at the datasheet rate of the precision each side asked for (PeakBasis::nominal); "precision-aware" uses what
// really ran (TF32 flags, bf16 emulation; PeakBasis::effective). A stage is highlighted when measured / predicted
// is above ComparisonOptions::highlight_factor (B unexpectedly slow) or below its inverse (A unexpectedly slow);
// the causes are the rules below that the data of the unexpectedly slow side supports.
// Threads: pure functions.

#include <optional>
#include <string>
#include <vector>

#include "core/perf/profile.h"
#include "core/perf/roofline.h"

namespace trackscope::core {

/// One side of a comparison. The pointers must outlive the call.
struct RunRef {
  const Profile* profile = nullptr;
  const ProfileCase* run = nullptr;
  std::string label;  // "A: NVIDIA H200 small-n1024..." (empty: built from the device and case names)
};

enum class CauseKind {
  precision_emulation,  // bf16 on compute capability < 8.0
  tf32_one_side,        // the fast side used TF32 tensor cores for this stage, the slow side did not
  launch_bound,         // launch/sync-bound: tiny per execution, or far from both floors with many executions
  memory_bound,         // the stage is bandwidth-bound on the slow side (and/or has much less L2)
  clocks_throttled,     // telemetry: SM clock well below the maximum, or power/thermal throttle reasons
  cold_start,           // the statistics include a cold first run
  unexplained,          // highlighted, but no rule matched the data
};
const char* to_string(CauseKind kind);

struct Cause {
  CauseKind kind = CauseKind::unexplained;
  char side = 'B';   // the side the cause is about
  std::string text;  // one sentence with the numbers behind it
};

struct StageComparison {
  std::string stage;
  StageWork work = StageWork::host;
  std::optional<double> a_ms;
  std::optional<double> b_ms;
  std::optional<double> measured_ratio;         // b_ms / a_ms
  std::optional<double> predicted_ratio;        // nominal floors
  std::optional<double> precision_aware_ratio;  // effective floors
  std::optional<double> excess;                 // measured / predicted
  Bound a_bound = Bound::none;                  // effective floors' bound
  Bound b_bound = Bound::none;
  bool highlighted = false;
  char slow_side = 0;  // 'A' or 'B' when highlighted
  std::vector<Cause> causes;
};

struct ComparisonOptions {
  double highlight_factor = 2.0;
  double launch_tiny_execution_ms = 0.05;  // below this per execution a stage is launch-bound
  double launch_far_from_floor = 10.0;     // ... or this far above its floor
  int launch_many_executions = 8;          // ... with at least this many executions per run
  double throttled_clock_fraction = 0.85;  // median SM clock below this fraction of the maximum
  double cold_start_factor = 2.0;          // first repeat above this multiple of the median
};

struct Comparison {
  std::string a_label;
  std::string b_label;
  std::vector<StageComparison> stages;  // stages of A in order, then those only in B
  std::optional<double> end_to_end_measured_ratio;
  std::optional<double> end_to_end_predicted_ratio;
  std::vector<std::string> warnings;  // traps and non-like-for-like settings
  int highlighted_count() const;
};

/// invalid_argument when a side has no profile or case.
Expected<Comparison> compare_runs(const RunRef& a, const RunRef& b, const ComparisonOptions& options = {});

/// Warnings about one run's settings: bf16 below compute capability 8.0, TF32 asked below 8.0 (ignored), fp32
/// with TF32 flags on (not strict FP32).
std::vector<std::string> run_traps(const Profile& profile, const ProfileCase& run);
/// Warnings about comparing two runs: TF32 on one side only (like-for-like), the traps of each side, different
/// workloads, devices without specifications, predicted or transcribed data.
std::vector<std::string> comparison_traps(const RunRef& a, const RunRef& b);

}  // namespace trackscope::core
