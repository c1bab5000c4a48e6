#include "core/tracking/progress_bar.h"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace trackscope::core {

std::string format_progress_line(std::string_view label, double fraction, std::string_view phase, int bar_width) {
  const double clamped = std::isfinite(fraction) ? std::clamp(fraction, 0.0, 1.0) : 0.0;
  const int width = std::max(1, bar_width);
  const int filled = static_cast<int>(clamped * width + 0.5);
  std::string line;
  if (!label.empty()) line = fmt::format("{:<16} ", label);
  line +=
      fmt::format("[{}{}] {:3d}% {:<36.36}", std::string(static_cast<size_t>(filled), '#'),
                  std::string(static_cast<size_t>(width - filled), '.'), static_cast<int>(clamped * 100 + 0.5), phase);
  return line;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const auto total = static_cast<long long>(seconds + 0.5);
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

void ProgressBar::show(double fraction, std::string_view phase) {
  if (!options_.enabled || options_.stream == nullptr) return;
  const std::string line = format_progress_line(options_.label, fraction, phase, options_.bar_width);
  const int percent = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * 100 + 0.5);
  if (redraw_) {
    std::fprintf(options_.stream, "\r%s", line.c_str());
    if (percent >= 100) std::fputc('\n', options_.stream);
  } else {
    const bool moved = last_percent_ < 0 || percent >= last_percent_ + options_.log_step_percent ||
                       (percent >= 100 && last_percent_ < 100);
    if (!moved) return;
    std::fprintf(options_.stream, "%s\n", line.c_str());
    last_percent_ = percent;
  }
  std::fflush(options_.stream);
}

}  // namespace trackscope::core
