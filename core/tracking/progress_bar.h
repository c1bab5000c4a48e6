#pragma once
// A one-line text progress bar for terminals (the CLI's track, eval and batch commands):
//
//   ProgressBar progress(!quiet, "model badja");
//   tracker->track(video, request, progress, stop);     // draws "model badja      [#####.......]  42% phase"
//
// On a terminal the line is redrawn in place ('\r') and ends with a newline at 100%; on anything else (a log
// file, a Slurm output) a line is printed only when the percentage moved by `log_step_percent`, so logs stay
// short. format_progress_line() is the pure formatting, for tests and other reporters. With `print_plan` the
// tracker's memory plan is printed as one line too ("memory plan: ..."), also when the bar itself is disabled:
// how a run covers its frames belongs in every log (trackscope-cli track, trackscope-long-video).
// Threads: a ProgressBar is driven by one thread at a time (the tracking thread's observer callbacks).

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

#include "core/tracking/point_tracker.h"

namespace trackscope::core {

struct ProgressBarOptions {
  bool enabled = true;
  std::string label = {};  // printed first, padded to 16 columns (nothing when empty)
  int bar_width = 30;
  std::FILE* stream = stderr;
  /// Terminal or not: decides between redrawing in place and printing lines. Default: isatty(stream).
  enum class Mode { automatic, redraw, lines } mode = Mode::automatic;
  int log_step_percent = 10;
  /// Lines mode: at most one line per this many seconds (the 100% line always; 0 = no limit).
  double min_interval_s = 0.0;
  /// Appended to each line in parentheses when set (trackscope-long-video: the process's memory).
  std::function<std::string()> detail = {};
  /// on_plan prints "memory plan: SUMMARY" on its own line, whether or not the bar is enabled.
  bool print_plan = false;
};

/// "label            [#########.....................]  30% phase" (no trailing newline). `fraction` is clamped
/// to [0, 1]; the phase is cut to 36 characters.
std::string format_progress_line(std::string_view label, double fraction, std::string_view phase, int bar_width);

/// "1:02:03", "4:05" or "0:07" (h:mm:ss above an hour); "--:--" for a negative or non-finite time.
std::string format_duration(double seconds);

class ProgressBar final : public TrackObserver {
 public:
  explicit ProgressBar(ProgressBarOptions options = {});
  /// Default options, enabled or not, with a label.
  explicit ProgressBar(bool enabled, std::string label = {});
  void on_progress(const TrackProgress& progress) override;
  void on_plan(const RunPlan& plan) override;
  /// Draws an arbitrary fraction and phase (the batch command's overall line).
  void show(double fraction, std::string_view phase);

 private:
  ProgressBarOptions options_;
  bool redraw_ = true;
  int last_percent_ = -1;
  std::chrono::steady_clock::time_point last_line_{};
};

}  // namespace trackscope::core
