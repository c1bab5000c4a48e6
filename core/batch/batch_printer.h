#pragma once
// The batch command's terminal output: one line per finished clip and the overall progress bar with the ETA.
//
//   BatchPrinter printer({.quiet = false});
//   run_batch(jobs, factory, options, hooks, printer);
//   // [3/12] bees: ok on cuda:0 (worker 1), 64 points x 277 frames in 4.2 s, 15.2 points/s
//   // batch            [#######.......................]  25% 3/12 clips, 0 failed, ETA 1:05
//
// Threads: the batch runner calls the observer from its workers one at a time (under its lock).

#include <cstdio>
#include <string>

#include "core/batch/batch_runner.h"
#include "core/tracking/progress_bar.h"

namespace trackscope::core {

/// "bees: ok on cuda:0 (worker 1), 64 points x 277 frames in 4.2 s, 15.2 points/s[, 2 attempts]",
/// "bees: done before, outputs kept" (skipped) or "bees: FAILED (line 3): the error".
std::string format_clip_line(const ClipRecord& record, bool skipped);
/// "3/12 clips, 0 failed, ETA 1:05".
std::string format_batch_phase(const BatchProgress& progress);

struct BatchPrinterOptions {
  bool quiet = false;  // no progress bar (the per-clip lines stay)
  std::FILE* stream = stderr;
  /// On a terminal each clip's line replaces the bar, which is drawn again below it. Default: isatty(stream).
  ProgressBarOptions::Mode mode = ProgressBarOptions::Mode::automatic;
};

class BatchPrinter final : public BatchObserver {
 public:
  explicit BatchPrinter(BatchPrinterOptions options);
  void on_progress(const BatchProgress& progress) override;
  /// "[done/clips] " + format_clip_line(...).
  void on_clip_finished(const ClipRecord& record, bool skipped, const BatchProgress& progress) override;

 private:
  BatchPrinterOptions options_;
  bool terminal_;
  ProgressBar bar_;
};

}  // namespace trackscope::core
