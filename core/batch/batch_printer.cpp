#include "core/batch/batch_printer.h"

#include <unistd.h>

#include <fmt/format.h>

namespace trackscope::core {
namespace {

bool is_terminal(const BatchPrinterOptions& options) {
  switch (options.mode) {
    case ProgressBarOptions::Mode::redraw: return true;
    case ProgressBarOptions::Mode::lines: return false;
    case ProgressBarOptions::Mode::automatic: break;
  }
  return options.stream != nullptr && ::isatty(::fileno(options.stream)) == 1;
}

}  // namespace

std::string format_clip_line(const ClipRecord& r, bool skipped) {
  if (skipped) return fmt::format("{}: done before, outputs kept", r.id);
  if (r.status == "ok" && r.measurements) {
    const ClipMeasurements& m = *r.measurements;
    return fmt::format("{}: ok on {} (worker {}), {} points x {} frames in {:.1f} s, {:.3g} points/s{}", r.id, m.device,
                       m.worker, r.points, r.frames, m.track_seconds, m.points_per_second,
                       m.attempts > 1 ? fmt::format(", {} attempts", m.attempts) : "");
  }
  return fmt::format("{}: FAILED (line {}): {}", r.id, r.line, r.error);
}

std::string format_batch_phase(const BatchProgress& p) {
  return fmt::format("{}/{} clips, {} failed, ETA {}", p.done, p.clips, p.failed, format_duration(p.eta_seconds));
}

BatchPrinter::BatchPrinter(BatchPrinterOptions options)
    : options_(options),
      terminal_(is_terminal(options)),
      bar_(ProgressBarOptions{.enabled = !options.quiet,
                              .label = "batch",
                              .stream = options.stream,
                              .mode = terminal_ ? ProgressBarOptions::Mode::redraw : ProgressBarOptions::Mode::lines}) {
}

void BatchPrinter::on_progress(const BatchProgress& p) { bar_.show(p.fraction, format_batch_phase(p)); }

void BatchPrinter::on_clip_finished(const ClipRecord& r, bool skipped, const BatchProgress& p) {
  if (options_.stream == nullptr) return;
  // On a terminal the line replaces the progress bar, which is drawn again below it.
  std::fprintf(options_.stream, "%s[%lld/%lld] %s%s\n", terminal_ ? "\r" : "", static_cast<long long>(p.done),
               static_cast<long long>(p.clips), format_clip_line(r, skipped).c_str(), terminal_ ? "        " : "");
  bar_.show(p.fraction, format_batch_phase(p));
}

}  // namespace trackscope::core
