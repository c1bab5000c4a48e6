#include "core/tracking/progress_bar.h"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace trackscope::core {

std::string format_progress_line(std::string_view label, double fraction, std::string_view phase, int bar_width) {
  const double clamped = std::isfinite(fraction) ? std::clamp(fraction, 0.0, 1.0) : 0.0;
  const int width = std::max(1, bar_width);
  const int filled = static_cast<int>(std::lround(clamped * width));
  std::string line;
  if (!label.empty()) line = fmt::format("{:<16} ", label);
  line += fmt::format("[{}{}] {:3d}% {:<36.36}", std::string(static_cast<size_t>(filled), '#'),
                      std::string(static_cast<size_t>(width - filled), '.'),
                      static_cast<int>(std::lround(clamped * 100)), phase);
  return line;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const auto total = static_cast<long long>(std::llround(seconds));
  const long long hours = total / 3600, minutes = (total / 60) % 60, rest = total % 60;
  return hours > 0 ? fmt::format("{}:{:02d}:{:02d}", hours, minutes, rest) : fmt::format("{}:{:02d}", minutes, rest);
}

ProgressBar::ProgressBar(ProgressBarOptions options) : options_(std::move(options)) {
  switch (options_.mode) {
    case ProgressBarOptions::Mode::redraw: redraw_ = true; break;
    case ProgressBarOptions::Mode::lines: redraw_ = false; break;
    case ProgressBarOptions::Mode::automatic:
      redraw_ = options_.stream != nullptr && ::isatty(::fileno(options_.stream)) == 1;
      break;
  }
}

ProgressBar::ProgressBar(bool enabled, std::string label)
    : ProgressBar([&] {
        ProgressBarOptions options;
        options.enabled = enabled;
        options.label = std::move(label);
        return options;
      }()) {}

void ProgressBar::on_progress(const TrackProgress& progress) { show(progress.fraction, progress.phase); }

void ProgressBar::on_plan(const RunPlan& plan) {
  if (!options_.print_plan || options_.stream == nullptr) return;
  // On a terminal a half-drawn bar is ended first, so that the plan gets a line of its own.
  std::fprintf(options_.stream, "%smemory plan: %s\n", redraw_ && last_percent_ >= 0 && last_percent_ < 100 ? "\n" : "",
               plan.summary().c_str());
  std::fflush(options_.stream);
}

void ProgressBar::show(double fraction, std::string_view phase) {
  if (!options_.enabled || options_.stream == nullptr) return;
  const int percent = static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * 100));
  const auto now = std::chrono::steady_clock::now();
  if (!redraw_) {
    const bool moved = last_percent_ < 0 || percent >= last_percent_ + options_.log_step_percent ||
                       (percent >= 100 && last_percent_ < 100);
    const bool waited = last_percent_ < 0 || percent >= 100 || options_.min_interval_s <= 0 ||
                        std::chrono::duration<double>(now - last_line_).count() >= options_.min_interval_s;
    if (!moved || !waited) return;
  }
  std::string line = format_progress_line(options_.label, fraction, phase, options_.bar_width);
  if (options_.detail) line += " (" + options_.detail() + ")";
  if (redraw_) {
    std::fprintf(options_.stream, "\r%s", line.c_str());
    if (percent >= 100) std::fputc('\n', options_.stream);
  } else {
    std::fprintf(options_.stream, "%s\n", line.c_str());
    last_line_ = now;
  }
  last_percent_ = percent;
  std::fflush(options_.stream);
}

}  // namespace trackscope::core
