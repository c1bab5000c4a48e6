// Library work that left app/ (issue 16.3): the progress bar's plan line and throttled lines, track_clip passing
// the plan on, the file-name rule, the BADJA loader by name, the panning clip of trackscope-long-video with its
// error measure, its queries and its report.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <array>
#include <fstream>
#include <string>

#include "core/batch/batch_printer.h"
#include "core/io/file_names.h"
#include "core/io/project.h"
#include "core/io/safetensors.h"
#include "core/io/sha256.h"
#include "core/io/track_formats.h"
#include "core/perf/gpu_specs.h"
#include "core/tracking/evaluation.h"
#include "core/tracking/long_video_measurement.h"
#include "core/tracking/panning_clip.h"
#include "core/tracking/progress_bar.h"
#include "core/tracking/track_clip.h"
#include "core/video/video_report.h"

namespace trackscope::core {
namespace {

namespace fs = std::filesystem;

const fs::path kShared = TRACKSCOPE_SHARED_DIR;

// Everything written to a stream, read back after `write` ran.
template <typename Write>
std::string captured(Write write) {
  std::FILE* stream = std::tmpfile();
  write(stream);
  std::fflush(stream);
  std::rewind(stream);
  std::string text;
  for (int c; (c = std::fgetc(stream)) != EOF;) text.push_back(static_cast<char>(c));
  std::fclose(stream);
  return text;
}

RunPlan windowed_plan() {
  RunPlan plan;
  plan.mode = LongVideoMode::windowed;
  plan.reason = "the whole clip does not fit (test)";
  plan.windows.count = 3;
  plan.windows.frames = 100;
  plan.windows.overlap = 8;
  return plan;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// ---- progress -------------------------------------------------------------------------------------------------

TEST(ProgressBarPlan, PrintedWhenAskedEvenWithTheBarOff) {
  const RunPlan plan = windowed_plan();
  const std::string quiet = captured([&](std::FILE* stream) {
    ProgressBar bar({.enabled = false, .stream = stream, .print_plan = true});
    bar.on_plan(plan);
    bar.on_progress({0.5, 0, 1, "tracking"});
  });
  EXPECT_EQ(quiet, "memory plan: " + plan.summary() + "\n");
  const std::string without = captured([&](std::FILE* stream) {
    ProgressBar bar({.enabled = false, .stream = stream});
    bar.on_plan(plan);
  });
  EXPECT_EQ(without, "");
  // On a terminal a half-drawn bar is ended before the plan's line.
  const std::string redrawn = captured([&](std::FILE* stream) {
    ProgressBar bar({.stream = stream, .mode = ProgressBarOptions::Mode::redraw, .print_plan = true});
    bar.on_progress({0.25, 0, 1, "a"});
    bar.on_plan(plan);
  });
  EXPECT_NE(redrawn.find("25% a"), std::string::npos) << redrawn;
  EXPECT_NE(redrawn.find("\nmemory plan: windowed"), std::string::npos) << redrawn;
}

TEST(ProgressBarPlan, LinesAtMostOncePerIntervalWithTheDetail) {
  int details = 0;
  const std::string text = captured([&](std::FILE* stream) {
    ProgressBar bar({.stream = stream,
                     .mode = ProgressBarOptions::Mode::lines,
                     .log_step_percent = 0,
                     .min_interval_s = 3600.0,
                     .detail = [&details] { return "resident " + std::to_string(++details) + " MiB"; }});
    for (int i = 1; i <= 10; ++i) bar.on_progress({i / 10.0, 0, 1, "step"});
  });
  // The first line, then nothing for an hour but the 100% line.
  EXPECT_EQ(count_of(text, "\n"), 2u) << text;
  EXPECT_NE(text.find(" 10% step"), std::string::npos) << text;
  EXPECT_NE(text.find("100% step"), std::string::npos) << text;
  EXPECT_NE(text.find("(resident 1 MiB)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("(resident 2 MiB)\n"), std::string::npos) << text;
  EXPECT_EQ(details, 2);  // measured only for the lines printed
  const std::string every = captured([&](std::FILE* stream) {
    ProgressBar bar({.stream = stream, .mode = ProgressBarOptions::Mode::lines, .log_step_percent = 0});
    for (int i = 1; i <= 10; ++i) bar.on_progress({i / 10.0, 0, 1, "step"});
  });
  EXPECT_EQ(count_of(every, "\n"), 10u) << every;
}

// Reports a plan, two stage samples and tracks every query standing still.
class PlanningTracker final : public PointTracker {
 public:
  const TrackerDescription& description() const override { return description_; }
  Expected<TrackSet> track(VideoSource& video, const TrackRequest& request, TrackObserver& observer,
                           std::stop_token) override {
    observer.on_plan(windowed_plan());
    observer.on_stage({.stage = Stage::backbone, .elapsed_ms = 2.0});
    observer.on_stage({.stage = Stage::backbone, .elapsed_ms = 3.0});
    observer.on_stage({.stage = Stage::decode, .elapsed_ms = 1.5});
    TrackSet set;
    set.frame_count = video.info().frame_count;
    for (const Query& q : request.queries) {
      Track track;
      track.query = q;
      track.points.assign(static_cast<size_t>(set.frame_count),
                          {static_cast<float>(q.x_px), static_cast<float>(q.y_px), true, 0.f, 0.f});
      set.tracks.push_back(std::move(track));
    }
    return set;
  }

 private:
  TrackerDescription description_;
};

class PlanRecorder final : public TrackObserver {
 public:
  void on_plan(const RunPlan& plan) override { summaries.push_back(plan.summary()); }
  std::vector<std::string> summaries;
};

TEST(TrackClip, PassesThePlanOnAndKeepsItWithTheStageTotals) {
  PlanningTracker tracker;
  const std::unique_ptr<VideoSource> video = make_panning_clip({64, 64, 3});
  TrackClipRequest request;
  request.queries = {{0, 10.5, 10.5}};
  PlanRecorder observer;
  Expected<TrackClipResult> result = track_clip_queries(tracker, *video, request, observer);
  ASSERT_TRUE(result) << result.status().message();
  ASSERT_EQ(observer.summaries.size(), 1u);  // trackscope-cli track printed no plan when this was dropped
  EXPECT_EQ(observer.summaries[0], windowed_plan().summary());
  ASSERT_TRUE(result->plan);
  EXPECT_EQ(result->plan->mode, LongVideoMode::windowed);
  const std::map<std::string, double> stage_ms = result->stage_ms();
  EXPECT_EQ(stage_ms.size(), 2u);
  EXPECT_DOUBLE_EQ(stage_ms.at(std::string(stage_name(Stage::backbone))), 5.0);
  EXPECT_DOUBLE_EQ(stage_ms.at(std::string(stage_name(Stage::decode))), 1.5);
}

// ---- file names -----------------------------------------------------------------------------------------------

TEST(FileNames, OneRuleForEveryFormat) {
  EXPECT_TRUE(io::file_name_ends_with("out/Bees_DLC.CSV", "_dlc.csv"));
  EXPECT_FALSE(io::file_name_ends_with("_dlc.csv", "_dlc.csv"));                // the ending alone names no file
  EXPECT_FALSE(io::file_name_ends_with("x.trackscope/tracks", ".trackscope"));  // folders do not count
  EXPECT_TRUE(io::is_project_path("a/b.trackscope"));
  EXPECT_TRUE(io::is_project_path("B.TrackScope"));  // as the track formats: case-insensitive
  EXPECT_FALSE(io::is_project_path("b.trackscope.csv"));
  EXPECT_FALSE(io::is_project_path(".trackscope"));
  Expected<ClipOutput> project = ClipOutput::from_path("run/Bees.TRACKSCOPE");
  ASSERT_TRUE(project) << project.status().message();
  EXPECT_FALSE(project->format);
  EXPECT_EQ(ClipOutput::from_path("run/bees.CSV")->format, io::TrackFormat::csv);
  Expected<ClipOutput> unknown = ClipOutput::from_path("run/bees.txt");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.status().message().find(".trackscope (project)"), std::string::npos);
}

// Folders by the same rule: only regular files with one of the endings, any case, in file-name order.
TEST(FileNames, FolderListingByEnding) {
  const fs::path dir = fs::path(TRACKSCOPE_TEST_OUTPUT_DIR) / "app_library" / "listing";
  fs::remove_all(dir);
  fs::create_directories(dir / "d.jpg");  // a folder, not a file
  for (const char* name : {"b.png", "a.JPG", "c.txt", ".jpg", "e.jpeg"}) std::ofstream(dir / name) << "x";
  static constexpr std::array<std::string_view, 2> kEndings = {".jpg", ".png"};
  Expected<std::vector<fs::path>> files = io::list_files_ending_with(dir, kEndings);
  ASSERT_TRUE(files) << files.status().message();
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].filename(), "a.JPG");
  EXPECT_EQ((*files)[1].filename(), "b.png");
  static constexpr std::array<std::string_view, 1> kNone = {".webp"};
  Expected<std::vector<fs::path>> none = io::list_files_ending_with(dir, kNone);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(io::list_files_ending_with(dir / "missing", kEndings).status().code(), StatusCode::io_error);
}

TEST(FileNames, BadjaAnnotationsByTheirName) {
  const fs::path dir = fs::path(TRACKSCOPE_TEST_OUTPUT_DIR) / "app_library" / "badja";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kShared / "testdata/badja_horsejump-high.json", dir / "joints.JSON");
  fs::copy_file(kShared / "testdata/derived_badja_horsejump-high_854x480.csv", dir / "joints.csv");
  Expected<BadjaAnnotations> json = load_badja_annotations(dir / "joints.JSON");
  ASSERT_TRUE(json) << json.status().message();
  ASSERT_FALSE(json->frames.empty());
  EXPECT_EQ(json->width, 1920);  // read as BADJA JSON: full-resolution pixels, no thresholds
  EXPECT_TRUE(std::isnan(json->frames[0].pck_threshold_px));
  Expected<BadjaAnnotations> csv = load_badja_annotations(dir / "joints.csv");
  ASSERT_TRUE(csv) << csv.status().message();
  EXPECT_EQ(csv->width, 854);
  EXPECT_FALSE(std::isnan(csv->frames[0].pck_threshold_px));
  Expected<BadjaAnnotations> masked =
      load_badja_annotations(dir / "joints.JSON", kShared / "testdata/horsejump-high_480p/masks");
  ASSERT_TRUE(masked) << masked.status().message();
  EXPECT_FALSE(std::isnan(masked->frames[0].pck_threshold_px));
  EXPECT_EQ(load_badja_annotations(dir / "missing.csv").status().code(), StatusCode::not_found);
}

// ---- the panning clip -----------------------------------------------------------------------------------------

TEST(PanningClip, ParsesAndChecksItsSize) {
  Expected<PanningClipOptions> options = parse_panning_clip("1920x1080x18000", "--synthetic");
  ASSERT_TRUE(options) << options.status().message();
  EXPECT_EQ(options->width, 1920);
  EXPECT_EQ(options->height, 1080);
  EXPECT_EQ(options->frames, 18000);
  for (const char* bad : {"1920x1080", "-1920x1080x5", "1921x1080x5", "3618x1080x5", "32x32x5", "64x64x0",
                          "99999999999999999999x64x5", "4294967360x64x5", "64x64x99999999999999999999", "big"}) {
    Expected<PanningClipOptions> refused = parse_panning_clip(bad, "--synthetic");
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.status().code(), StatusCode::invalid_argument) << bad;
  }
  EXPECT_NE(parse_panning_clip("1921x1080x5", "--synthetic").status().message().find("must be even"),
            std::string::npos);
  EXPECT_NE(parse_panning_clip("64x64x-5", "--synthetic").status().message().find("--synthetic '64x64x-5'"),
            std::string::npos);
}

TEST(PanningClip, FramesAreTheTextureMovedByThePan) {
  const std::unique_ptr<VideoSource> video = make_panning_clip({128, 96, 400});
  EXPECT_EQ(video->info().path.string(), "synthetic:128x96x400");
  EXPECT_EQ(video->info().frame_count, 400);
  const int64_t later = 30;  // one second: the window moved by (31, -3) px
  Expected<FramePtr> first = video->read_frame(0, {});
  Expected<FramePtr> second = video->read_frame(later, {});
  ASSERT_TRUE(first && second);
  const PanOffset a = pan_offset_at(0), b = pan_offset_at(later);
  ASSERT_NE(a.x_px, b.x_px);
  ASSERT_NE(a.y_px, b.y_px);
  // A pixel of frame 0 is where panning_true_position says on the later frame, whenever it stays inside.
  int compared = 0;
  for (int y = 0; y < 96; y += 5) {
    for (int x = 0; x < 128; x += 5) {
      const PointPx moved = panning_true_position({0, x + 0.5, y + 0.5}, later);
      const int mx = static_cast<int>(std::floor(moved.x_px)), my = static_cast<int>(std::floor(moved.y_px));
      if (mx < 0 || my < 0 || mx >= 128 || my >= 96) continue;
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ((*first)->rgb[(static_cast<size_t>(y) * 128 + x) * 3 + c],
                  (*second)->rgb[(static_cast<size_t>(my) * 128 + mx) * 3 + c])
            << x << "," << y;
      }
      ++compared;
    }
  }
  EXPECT_GT(compared, 50);
  EXPECT_FALSE(video->read_frame(400, {}));
  EXPECT_FALSE(video->read_frame(0, {64, 48}));
  EXPECT_THROW(make_panning_clip({63, 64, 1}), InvariantError);
}

TEST(PanningClip, ErrorAgainstTheTruth) {
  const PanningClipOptions options{256, 128, 40};
  TrackSet tracks;
  tracks.frame_count = 40;
  VideoInfo info;
  info.width = 256;
  info.height = 128;
  info.frame_count = 40;
  for (const Query& q : spread_queries(4, info, -1, -1)) {
    Track track;
    track.query = q;
    for (int64_t t = 0; t < 40; ++t) {
      const PointPx truth = panning_true_position(q, t);
      // 3-4-5: every estimate 5 px off; called visible on even frames.
      track.points.push_back(
          {static_cast<float>(truth.x_px + 3.0), static_cast<float>(truth.y_px + 4.0), t % 2 == 0, 0.f, 0.f});
    }
    tracks.tracks.push_back(std::move(track));
  }
  const PanningTrackError error = measure_panning_error(tracks, options);
  EXPECT_EQ(error.samples, 160);  // the pan moves less than the margin in 40 frames: every point stays inside
  EXPECT_NEAR(error.mean_px, 5.0, 1e-4);
  EXPECT_NEAR(error.median_px, 5.0, 1e-4);
  EXPECT_NEAR(error.p99_px, 5.0, 1e-4);
  EXPECT_DOUBLE_EQ(error.within_8px, 1.0);
  EXPECT_DOUBLE_EQ(error.called_visible, 0.5);
  tracks.tracks[0].points[0].x_px += 100.0f;  // one far estimate
  const PanningTrackError one_off = measure_panning_error(tracks, options);
  EXPECT_DOUBLE_EQ(one_off.within_8px, 159.0 / 160.0);
  EXPECT_GT(one_off.mean_px, 5.0);
  EXPECT_EQ(measure_panning_error({}, options).samples, 0);
}

// ---- trackscope-long-video's queries and report ---------------------------------------------------------------

TEST(LongVideoMeasurement, QueriesSpreadOverTheFrame) {
  VideoInfo info;
  info.width = 200;
  info.height = 100;
  info.frame_count = 50;
  const std::vector<Query> one = spread_queries(1, info, -1, -1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0], (Query{0, 100.5, 50.5}));
  const std::vector<Query> five = spread_queries(5, info, -1, -1);  // the first 5 cells of a 3x3 grid
  ASSERT_EQ(five.size(), 5u);
  EXPECT_EQ(five[0], (Query{0, std::floor(200 * (0.06 + 0.88 * 0.5 / 3)) + 0.5,
                            std::floor(100 * (0.06 + 0.88 * 0.5 / 3)) + 0.5}));
  EXPECT_EQ(five[3].y_px, five[4].y_px);  // the second row
  EXPECT_LT(five[3].x_px, five[4].x_px);
  for (const Query& q : five) EXPECT_EQ(q.frame, 0);
  const std::vector<Query> random = spread_queries(64, info, 20, 7);
  bool moved = false;
  for (const Query& q : random) {
    EXPECT_GE(q.frame, 0);
    EXPECT_LT(q.frame, 20);  // before --end
    moved = moved || q.frame != 0;
  }
  EXPECT_TRUE(moved);
  EXPECT_EQ(random, spread_queries(64, info, 20, 7));  // the seed decides
}

TEST(LongVideoMeasurement, ReportJson) {
  LongVideoReport report;
  report.video = "synthetic:64x64x10";
  report.frames = 10;
  report.points = 4;
  report.device = "cpu";
  report.seconds = 2.0;
  report.stage_ms = {{"backbone", 12.5}};
  nlohmann::json json = nlohmann::json::parse(long_video_report_json(report));
  EXPECT_EQ(json["video"], "synthetic:64x64x10");
  EXPECT_DOUBLE_EQ(json["frames_per_second"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(json["stage_ms"]["backbone"].get<double>(), 12.5);
  EXPECT_FALSE(json.contains("error_px_mean"));
  report.error = PanningTrackError{.samples = 3, .mean_px = 1.5, .within_8px = 1.0};
  json = nlohmann::json::parse(long_video_report_json(report));
  EXPECT_DOUBLE_EQ(json["error_px_mean"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(json["within_8px"].get<double>(), 1.0);
  for (const char* key : {"frames", "points", "device", "model", "precision", "mode", "plan", "seconds", "peak_rss_mib",
                          "peak_device_mib", "error_px_median", "error_px_p99", "called_visible"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
}

// ---- the batch command's workers, hooks and lines ------------------------------------------------------------

DeviceInfo device(const std::string& id) {
  DeviceInfo description;
  description.id = id;
  return description;
}

TEST(BatchWorkers, ThreadsChunksAndBudgetsPerDevice) {
  const auto budget = [](const DeviceInfo& d) -> int64_t { return d.is_cuda() ? int64_t{8} << 30 : int64_t{4} << 30; };
  const std::vector<BatchWorkerSpec> mixed =
      plan_batch_workers({device("cuda:0"), device("cuda:0"), device("cpu"), device("cpu")},
                         {.available_cpus = 10, .default_budget_bytes = budget});
  ASSERT_EQ(mixed.size(), 4u);
  EXPECT_EQ(mixed[0].device, "cuda:0");
  EXPECT_EQ(mixed[0].cpu_threads, 0);
  EXPECT_EQ(mixed[0].query_chunk, 0);
  EXPECT_EQ(mixed[0].memory_budget_mb, 4096);  // 8 GiB shared by the two workers on cuda:0
  EXPECT_EQ(mixed[2].device, "cpu");
  EXPECT_EQ(mixed[2].cpu_threads, 4);  // (10 cores - 2 feeding the GPUs) / 2 CPU workers
  EXPECT_EQ(mixed[2].query_chunk, kCpuQueryChunkBesideGpu);
  EXPECT_EQ(mixed[0].estimated_tflops, 0.0);  // a GPU of no known name or size: no first-clip estimate
  EXPECT_NEAR(mixed[2].estimated_tflops, 4 * kCpuThreadFp32Gflops / 1000.0, 1e-12);  // the worker's 4 threads
  EXPECT_EQ(mixed[3].memory_budget_mb, 2048);
  const std::vector<BatchWorkerSpec> asked =
      plan_batch_workers({device("cuda:1"), device("cpu")},
                         {.threads = 3, .memory_budget_mb = 100, .available_cpus = 10, .default_budget_bytes = budget});
  EXPECT_EQ(asked[1].cpu_threads, 3);
  EXPECT_EQ(asked[0].memory_budget_mb, 100);
  EXPECT_EQ(asked[1].memory_budget_mb, 100);
  const std::vector<BatchWorkerSpec> cpus =
      plan_batch_workers({device("cpu"), device("cpu"), device("cpu")}, {.available_cpus = 2});
  for (const BatchWorkerSpec& w : cpus) {
    EXPECT_EQ(w.cpu_threads, 1);       // never 0 threads, however few cores
    EXPECT_EQ(w.query_chunk, 0);       // no GPU to hand clips to
    EXPECT_EQ(w.memory_budget_mb, 0);  // no default known: the tracker's own
  }
}

TEST(BatchWorkers, WeightsIdentityOfAFileAndOfShards) {
  const fs::path dir = fs::path(TRACKSCOPE_TEST_OUTPUT_DIR) / "app_library" / "weights";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "one.safetensors") << "abc";
  std::ofstream(dir / "set-0.safetensors") << "abc";
  std::ofstream(dir / "set-1.safetensors") << "def";
  Expected<std::string> one = io::weights_sha256(dir / "one.safetensors");
  ASSERT_TRUE(one) << one.status().message();
  EXPECT_EQ(*one, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // SHA-256("abc")
  Expected<std::string> set = io::weights_sha256(dir / "set.safetensors");
  ASSERT_TRUE(set) << set.status().message();
  EXPECT_EQ(*set, io::sha256_hex(*one + io::sha256_hex("def")));
  EXPECT_FALSE(io::weights_sha256(dir / "none.safetensors"));
}

TEST(BatchPrinterLines, OneLinePerClipAndTheBar) {
  ClipRecord ok;
  ok.id = "bees";
  ok.status = "ok";
  ok.points = 64;
  ok.frames = 277;
  ok.measurements = ClipMeasurements{};
  ok.measurements->device = "cuda:0";
  ok.measurements->worker = 1;
  ok.measurements->track_seconds = 4.21;
  ok.measurements->points_per_second = 15.2;
  EXPECT_EQ(format_clip_line(ok, false),
            "bees: ok on cuda:0 (worker 1), 64 points x 277 frames in 4.2 s, 15.2 points/s");
  ok.measurements->attempts = 2;
  EXPECT_EQ(format_clip_line(ok, false).substr(format_clip_line(ok, false).size() - 12), ", 2 attempts");
  EXPECT_EQ(format_clip_line(ok, true), "bees: done before, outputs kept");
  ClipRecord failed;
  failed.id = "camel";
  failed.status = "failed";
  failed.line = 3;
  failed.error = "no such file";
  EXPECT_EQ(format_clip_line(failed, false), "camel: FAILED (line 3): no such file");
  const BatchProgress progress{.clips = 12, .done = 3, .failed = 1, .fraction = 0.25, .eta_seconds = 65.0};
  EXPECT_EQ(format_batch_phase(progress), "3/12 clips, 1 failed, ETA 1:05");
  const std::string text = captured([&](std::FILE* stream) {
    BatchPrinter printer({.stream = stream, .mode = ProgressBarOptions::Mode::lines});
    printer.on_clip_finished(failed, false, progress);
  });
  EXPECT_EQ(text.substr(0, text.find('\n') + 1), "[3/12] camel: FAILED (line 3): no such file\n");
  EXPECT_NE(text.find("batch            ["), std::string::npos) << text;
  const std::string quiet = captured([&](std::FILE* stream) {
    BatchPrinter printer({.quiet = true, .stream = stream, .mode = ProgressBarOptions::Mode::lines});
    printer.on_clip_finished(failed, false, progress);
    printer.on_progress(progress);
  });
  EXPECT_EQ(quiet, "[3/12] camel: FAILED (line 3): no such file\n");
}

// ---- trackscope-cli info's JSON --------------------------------------------------------------------------------

TEST(VideoReport, MetadataAndDamage) {
  VideoInfo info;
  info.path = "clips/bees.mp4";
  info.codec = "h264";
  info.width = 854;
  info.height = 480;
  info.frame_rate = {30000, 1001};
  info.frame_count = 277;
  IntegrityReport integrity;
  integrity.frame_count = 277;
  integrity.checked_frames = 277;
  IntegrityReport::DamagedFrame damaged;
  damaged.index = 12;
  damaged.integrity.decoder_errors = 2;
  damaged.detail = "concealed errors";
  integrity.damaged_frames.push_back(damaged);
  integrity.skipped_images.push_back({"00003.jpg", "truncated"});
  const std::string text = video_report_json(info, integrity, true, 12.5);
  EXPECT_NE(text.find("\n  \"frame_count\": 277,\n"), std::string::npos) << text;  // as app/cli_info greps it
  const nlohmann::json json = nlohmann::json::parse(text);
  EXPECT_EQ(json["path"], "clips/bees.mp4");
  EXPECT_EQ(json["frame_rate"]["num"], 30000);
  EXPECT_NEAR(json["frame_rate"]["fps"].get<double>(), 29.97, 0.01);
  const nlohmann::json& report = json["integrity"];
  EXPECT_EQ(report["scanned"], true);
  EXPECT_EQ(report["clean"], false);
  EXPECT_EQ(report["damaged_frame_count"], 1);
  EXPECT_EQ(report["damaged_frames"][0]["index"], 12);
  EXPECT_EQ(report["damaged_frames"][0]["decoder_errors"], 2);
  EXPECT_EQ(report["skipped_images"][0]["reason"], "truncated");
  EXPECT_DOUBLE_EQ(report["scan_ms"].get<double>(), 12.5);
  EXPECT_EQ(report["summary"], integrity.summary());
  EXPECT_FALSE(nlohmann::json::parse(video_report_json(info, {}, false, 0.0))["integrity"].contains("scan_ms"));
}

}  // namespace
}  // namespace trackscope::core
