// trackscope-soak: long-running checks of memory and stability (issue 18, item 8). tools/soak/run_soak.sh runs
// them on generated media; each prints one JSON object with its figures and "verdict": "pass" or "fail".
//
//   trackscope-soak scrub VIDEO [--seconds 300] [--cache-mb 512] [--seed 1]
//       Random seeks and short drags through VIDEO with core::FrameServer (the GUI's frame source), waiting for
//       each frame. Resident memory is sampled every second; pass when the peak stays within the frame-cache
//       budget plus a fixed allowance for the decoder (kDecoderAllowanceMiB) over the resident memory before
//       the video was opened, and memory does not grow once the cache is full (no sample after the first one
//       with the cache 95 % full exceeds that one by kGrowthAllowanceMiB or more).
//   trackscope-soak open-close --video V1 [--video V2 ...] --project P1 [--project P2 ...] [--count 50]
//       In one process (an offscreen workbench: the real frame server and project controller), opens a video,
//       then a project of it, steps through a few frames, COUNT times over the given files. Pass when resident
//       memory after the 10th round and after the last differ by less than kGrowthAllowanceMiB.
//   trackscope-soak make-project VIDEO OUT --points N [--tracked-frames T]
//       Writes a project of N points (tracks of T frames on every point) for VIDEO, for open-close.
#include <QApplication>
#include <QEventLoop>
#include <QTemporaryDir>
#include <QTimer>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/io/project.h"
#include "core/io/video_fingerprint.h"
#include "core/video/frame_server.h"
#include "core/video/video_source.h"
#include "ui/main_window.h"
#include "ui/project/project_controller.h"
#include "ui/video_session.h"

namespace {

using namespace trackscope;
using Clock = std::chrono::steady_clock;

constexpr double kDecoderAllowanceMiB = 256.0;  // decoder threads' frame pools, demuxer index, allocator slack
constexpr double kGrowthAllowanceMiB = 48.0;

// VmRSS or VmHWM of this process in MiB.
double status_mib(const char* field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field, 0) == 0) return std::stod(line.substr(std::string(field).size())) / 1024.0;
  }
  return 0.0;
}
double rss_mib() { return status_mib("VmRSS:"); }
double peak_rss_mib() { return status_mib("VmHWM:"); }

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(q * static_cast<double>(values.size() - 1))];
}

int scrub(const std::string& video, double seconds, int cache_mb, unsigned seed) {
  const double before_open_mib = rss_mib();
  core::FrameServerOptions options;
  options.cache_bytes = static_cast<int64_t>(cache_mb) << 20;
  core::Expected<std::unique_ptr<core::FrameServer>> server = core::FrameServer::open(video, options);
  if (!server) {
    std::fprintf(stderr, "trackscope-soak: %s\n", server.status().message().c_str());
    return 1;
  }
  const core::VideoInfo& info = (*server)->info();
  const double after_open_mib = rss_mib();
  std::mt19937 random(seed);
  std::uniform_int_distribution<int64_t> any_frame(0, info.frame_count - 1);
  std::uniform_int_distribution<int> drag_length(5, 40), percent(0, 99);
  std::vector<double> latency_ms, rss_series;
  // The sample at which the cache first was 95 % full (-1: never); growth is measured from there.
  long full_sample = -1;
  double full_after_s = -1.0;
  int64_t requests = 0, errors = 0;
  const auto start = Clock::now();
  auto next_sample = start;
  int64_t position = 0;
  while (std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
    // 60 %: a jump anywhere; 40 %: a drag of 5..40 frames forward or back from the playhead.
    std::vector<int64_t> targets;
    if (percent(random) < 60) {
      targets.push_back(any_frame(random));
    } else {
      const int length = drag_length(random);
      const int step = percent(random) < 70 ? 1 : -1;
      for (int i = 1; i <= length; ++i) {
        targets.push_back(std::clamp<int64_t>(position + step * i, 0, info.frame_count - 1));
      }
    }
    for (const int64_t index : targets) {
      const auto asked = Clock::now();
      const core::Expected<core::FramePtr> frame = (*server)->wait_for(index, std::chrono::seconds(30));
      latency_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - asked).count());
      ++requests;
      if (!frame) ++errors;
      position = index;
      if (Clock::now() >= next_sample) {
        rss_series.push_back(rss_mib());
        if (full_sample < 0 && static_cast<double>((*server)->stats().cached_bytes) >= 0.95 * options.cache_bytes) {
          full_sample = static_cast<long>(rss_series.size()) - 1;
          full_after_s = std::chrono::duration<double>(Clock::now() - start).count();
        }
        next_sample += std::chrono::seconds(1);
      }
    }
  }
  const core::FrameServerStats stats = (*server)->stats();
  const double peak_mib = peak_rss_mib();
  const double budget_mib = cache_mb + kDecoderAllowanceMiB;
  // Growth once the cache is full: the highest sample after it against the sample at which it filled. (The
  // cache filling up is growth by design; the peak check bounds it.)
  double at_full_mib = 0.0, max_after_full_mib = 0.0;
  if (full_sample >= 0) {
    at_full_mib = rss_series[static_cast<size_t>(full_sample)];
    max_after_full_mib = *std::max_element(rss_series.begin() + full_sample, rss_series.end());
  }
  const bool within = peak_mib - before_open_mib <= budget_mib;
  const bool flat = full_sample < 0 || max_after_full_mib - at_full_mib < kGrowthAllowanceMiB;
  std::printf(
      "{\"mode\": \"scrub\", \"video\": \"%s\", \"size\": \"%dx%d\", \"frames\": %lld, \"seconds\": %.0f, "
      "\"cache_mb\": %d, \"requests\": %lld, \"errors\": %lld, \"decoded_frames\": %lld, \"hits\": %lld, "
      "\"misses\": %lld, \"cached_mib_at_end\": %.1f, \"latency_ms\": {\"p50\": %.1f, \"p95\": %.1f, \"max\": %.1f}, "
      "\"rss_mib\": {\"before_open\": %.1f, \"after_open\": %.1f, \"peak\": %.1f, \"end\": %.1f, "
      "\"at_cache_full\": %.1f, \"max_after_cache_full\": %.1f}, \"cache_full_after_s\": %.1f, "
      "\"allowed_peak_over_start_mib\": %.0f, \"allowed_growth_after_full_mib\": %.0f, \"verdict\": \"%s\"}\n",
      video.c_str(), info.width, info.height, static_cast<long long>(info.frame_count), seconds, cache_mb,
      static_cast<long long>(requests), static_cast<long long>(errors), static_cast<long long>(stats.decoded_frames),
      static_cast<long long>(stats.hits), static_cast<long long>(stats.misses),
      static_cast<double>(stats.cached_bytes) / (1 << 20), percentile(latency_ms, 0.5), percentile(latency_ms, 0.95),
      percentile(latency_ms, 1.0), before_open_mib, after_open_mib, peak_mib, rss_mib(), at_full_mib,
      max_after_full_mib, full_after_s, budget_mib, kGrowthAllowanceMiB,
      within && flat && errors == 0 ? "pass" : "fail");
  return within && flat && errors == 0 ? 0 : 1;
}

// Runs the event loop until `done` or `timeout_ms`; false on timeout.
bool wait_until(const std::function<bool()>& done, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!done()) {
    if (Clock::now() > deadline) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

int open_close(int argc, char** argv, const std::vector<std::string>& videos, const std::vector<std::string>& projects,
               int count) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication application(argc, argv);
  QTemporaryDir settings;
  ui::MainWindowOptions options;
  options.frame_server_factory = [](const std::filesystem::path& path, const core::FrameServerOptions& o) {
    return core::FrameServer::open(path, o);
  };
  options.settings_file = settings.filePath("soak.ini");
  options.project.recovery_folder = settings.filePath("recovery");
  options.project.autosave_interval_ms = 0;
  options.project.check_recovery_on_start = false;
  options.headless = true;
  ui::MainWindow window(std::move(options));
  window.show();
  std::vector<double> rss;
  int failures = 0;
  const auto start = Clock::now();
  for (int round = 0; round < count; ++round) {
    const QString video = QString::fromStdString(videos[static_cast<size_t>(round) % videos.size()]);
    bool opened = false;
    auto connection = QObject::connect(&window, &ui::MainWindow::video_opened, [&] { opened = true; });
    window.open_video(video);
    if (!wait_until([&] { return opened; }, 60000)) ++failures;
    QObject::disconnect(connection);
    if (!projects.empty()) {
      const QString project = QString::fromStdString(projects[static_cast<size_t>(round) % projects.size()]);
      bool applied = false, failed = false;
      auto ok = QObject::connect(window.projects(), &ui::ProjectController::project_opened, [&] { applied = true; });
      auto bad =
          QObject::connect(window.projects(), &ui::ProjectController::project_open_failed, [&] { failed = true; });
      window.open_project(project);
      if (!wait_until([&] { return applied || failed; }, 120000) || failed) ++failures;
      QObject::disconnect(ok);
      QObject::disconnect(bad);
    }
    for (int64_t frame : {int64_t{0}, int64_t{5}, int64_t{10}}) {
      window.seek(frame);
      wait_until([&] { return !window.session()->frame_pending(); }, 10000);
    }
    rss.push_back(rss_mib());
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double warm = rss[std::min<size_t>(9, rss.size() - 1)];
  const double growth = rss.back() - warm;
  const bool pass = failures == 0 && growth < kGrowthAllowanceMiB;
  std::string series;
  for (size_t i = 0; i < rss.size(); i += std::max<size_t>(1, rss.size() / 10)) {
    series += fmt::format("{}{:.0f}", series.empty() ? "" : ", ", rss[i]);
  }
  std::printf(
      "{\"mode\": \"open-close\", \"rounds\": %d, \"videos\": %zu, \"projects\": %zu, \"seconds\": %.1f, "
      "\"failures\": %d, \"rss_mib\": {\"after_round_10\": %.1f, \"end\": %.1f, \"growth\": %.1f, \"peak\": %.1f, "
      "\"series\": [%s]}, \"allowed_growth_mib\": %.0f, \"verdict\": \"%s\"}\n",
      count, videos.size(), projects.size(), seconds, failures, warm, rss.back(), growth, peak_rss_mib(),
      series.c_str(), kGrowthAllowanceMiB, pass ? "pass" : "fail");
  return pass ? 0 : 1;
}

int make_project(const std::string& video, const std::string& out, int points, int tracked_frames) {
  core::Expected<std::unique_ptr<core::VideoSource>> source = core::VideoSource::open(video);
  if (!source) {
    std::fprintf(stderr, "trackscope-soak: %s\n", source.status().message().c_str());
    return 1;
  }
  const core::VideoInfo& info = (*source)->info();
  std::mt19937 random(points);
  std::uniform_real_distribution<double> x(0.5, info.width - 0.5), y(0.5, info.height - 0.5);
  std::vector<core::QueryPoint> queries;
  std::map<core::PointId, core::PointTrack> tracks;
  const int64_t frames = std::min<int64_t>(tracked_frames, info.frame_count);
  for (int i = 0; i < points; ++i) {
    queries.push_back({i, {0, x(random), y(random)}, i});
    if (frames > 0) {
      core::PointTrack track;
      track.track.query = queries.back().query;
      for (int64_t t = 0; t < frames; ++t) {
        track.track.points.push_back({static_cast<float>(queries.back().query.x_px),
                                      static_cast<float>(queries.back().query.y_px), true, 0.1f, 0.1f});
      }
      tracks.emplace(i, std::move(track));
    }
  }
  core::Annotation annotation;
  annotation.replace_all(std::move(queries), std::move(tracks));
  core::io::ProjectVideo described =
      core::io::describe_video(std::filesystem::absolute(video).lexically_normal().string(), info);
  core::Expected<core::io::VideoFingerprint> fingerprint = core::io::fingerprint_video(video);
  if (fingerprint) described.fingerprint = *fingerprint;
  const core::Status saved = core::io::save_project(out, core::io::make_project(annotation, described, {}));
  if (!saved) {
    std::fprintf(stderr, "trackscope-soak: %s\n", saved.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"trackscope-soak: memory and stability soak checks"};
  app.require_subcommand(1);
  std::string video, out;
  double seconds = 300;
  int cache_mb = 512, count = 50, points = 1000, tracked_frames = 0;
  unsigned seed = 1;
  std::vector<std::string> videos, projects;
  CLI::App* scrub_command = app.add_subcommand("scrub", "random seeks and drags with the frame server");
  scrub_command->add_option("video", video)->required();
  scrub_command->add_option("--seconds", seconds)->check(CLI::PositiveNumber);
  scrub_command->add_option("--cache-mb", cache_mb)->check(CLI::Range(16, 1 << 20));
  scrub_command->add_option("--seed", seed);
  CLI::App* open_close_command = app.add_subcommand("open-close", "open and close videos and projects");
  open_close_command->add_option("--video", videos)->required();
  open_close_command->add_option("--project", projects);
  open_close_command->add_option("--count", count)->check(CLI::Range(10, 100000));
  CLI::App* make_command = app.add_subcommand("make-project", "write a project for open-close");
  make_command->add_option("video", video)->required();
  make_command->add_option("out", out)->required();
  make_command->add_option("--points", points)->check(CLI::Range(0, 1000000));
  make_command->add_option("--tracked-frames", tracked_frames)->check(CLI::Range(0, 1000000));
  CLI11_PARSE(app, argc, argv);
  if (scrub_command->parsed()) return scrub(video, seconds, cache_mb, seed);
  if (open_close_command->parsed()) return open_close(argc, argv, videos, projects, count);
  return make_project(video, out, points, tracked_frames);
}
