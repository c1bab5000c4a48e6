// Batch tracking (core/batch) with fake trackers: the job list, the devices list, a run over real clips on
// several workers (outputs, records, a corrupt video reported without stopping the others), resuming (finished
// clips skipped by checksum, changed ones redone), shards gathered into the same summary as one run, and the
// scheduling between a fast and a slow device (work stealing, the slow worker stepping aside, backup attempts).
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "core/batch/batch_jobs.h"
#include "core/batch/batch_runner.h"
#include "core/batch/batch_summary.h"
#include "core/batch/slurm.h"
#include "core/io/atomic_file.h"
#include "core/io/track_formats.h"
#include "core/tracking/progress_bar.h"
#include "core/tracking/query_spec.h"
#include "core/tracking/track_clip.h"

namespace trackscope::core {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const fs::path kTestdata = fs::path(TRACKSCOPE_SHARED_DIR) / "testdata";

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("trackscope_batch_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// Tracks every query as a point moving right by one pixel a frame; sleeps `seconds_per_frame` per frame (checking
// the stop token), so that devices can be made fast or slow.
class FakeTracker final : public PointTracker {
 public:
  FakeTracker(TrackerDescription description, double seconds_per_frame, std::atomic<int>& tracks)
      : description_(std::move(description)), seconds_per_frame_(seconds_per_frame), tracks_(tracks) {}
  const TrackerDescription& description() const override { return description_; }
  Expected<TrackSet> track(VideoSource& video, const TrackRequest& request, TrackObserver& observer,
                           std::stop_token stop) override {
    ++tracks_;
    const int64_t end = request.end_frame == -1 ? video.info().frame_count : request.end_frame;
    TrackSet set;
    set.first_frame = request.first_frame;
    set.frame_count = end - request.first_frame;
    for (int64_t t = request.first_frame; t < end; ++t) {
      if (stop.stop_requested()) return cancelled("stopped");
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds_per_frame_));
      observer.on_progress(
          {static_cast<double>(t - request.first_frame + 1) / static_cast<double>(set.frame_count), 0, 1, "tracking"});
    }
    for (const Query& q : request.queries) {
      Track track;
      track.query = q;
      track.first_frame = request.first_frame;
      for (int64_t t = request.first_frame; t < end; ++t) {
        track.points.push_back(
            {static_cast<float>(q.x_px + static_cast<double>(t)), static_cast<float>(q.y_px), true, 0.125f, 0.25f});
      }
      set.tracks.push_back(std::move(track));
    }
    return set;
  }

 private:
  TrackerDescription description_;
  double seconds_per_frame_;
  std::atomic<int>& tracks_;
};

// "cuda:*" devices are fast, the CPU slow (per frame, seconds below).
class FakeFactory final : public TrackerFactory {
 public:
  double cpu_seconds_per_frame = 0.0;
  double cuda_seconds_per_frame = 0.0;
  std::atomic<int> creates{0};
  std::atomic<int> tracks{0};
  std::vector<TrackerOptions> created;

  std::vector<DeviceInfo> devices() const override { return {{"cpu", "fake CPU"}}; }
  Expected<std::unique_ptr<PointTracker>> create(const TrackerOptions& options) override {
    if (fs::path(options.model).filename() == "missing") return not_found("no such model");
    ++creates;
    created.push_back(options);
    TrackerDescription d;
    d.model_name = "fake " + options.model;
    d.device.id = options.device;
    d.device.name = "fake " + options.device;
    d.precision = options.precision;
    const bool cuda = options.device.rfind("cuda", 0) == 0;
    return std::unique_ptr<PointTracker>(
        std::make_unique<FakeTracker>(d, cuda ? cuda_seconds_per_frame : cpu_seconds_per_frame, tracks));
  }
};

class Collector final : public BatchObserver {
 public:
  void on_clip_finished(const ClipRecord& record, bool skipped, const BatchProgress& progress) override {
    std::lock_guard lock(mutex);
    finished.push_back(record.id);
    if (skipped) skipped_ids.push_back(record.id);
    last = progress;
  }
  std::mutex mutex;
  std::vector<std::string> finished;
  std::vector<std::string> skipped_ids;
  BatchProgress last;
};

BatchDeviceHooks test_hooks() {
  BatchDeviceHooks hooks;
  hooks.model_sha256 = [](const std::string& model) -> Expected<std::string> {
    if (fs::path(model).filename() == "missing") return not_found("no such model");
    return "sha-of-" + model;
  };
  return hooks;
}

BatchOptions options_for(const fs::path& out, const std::vector<std::string>& devices) {
  BatchOptions options;
  options.out_dir = out;
  for (const std::string& d : devices) options.workers.push_back({d, 0, 0});
  return options;
}

// Four jobs over the shared clips (a few frames each), one corrupt video, one bad line.
BatchJobList sample_jobs(const fs::path& dir) {
  write_text(dir / "corrupt.mp4", std::string(4096, '\x42'));
  write_text(dir / "points.csv", "frame,x,y\n0,10.5,20.5\n1,30,40\n");
  const std::string t = kTestdata.string();
  const std::string text =
      "# clips of the shared test data\n"
      "{\"id\": \"apple\", \"video\": \"" +
      t +
      "/cotracker_apple.mp4\", \"queries\": \"grid:3x2@frame1\", "
      "\"end\": 5, \"outputs\": [\"csv\", \"npz\"]}\n"
      "{\"video\": \"" +
      t +
      "/horsejump-high_480p/video\", \"queries\": \"points.csv\", \"end\": 4, "
      "\"outputs\": \"json,trackscope,dlc,coco\"}\n"
      "\n"
      "{\"id\": \"broken\", \"video\": \"corrupt.mp4\", \"queries\": \"grid:2x2\"}\n"
      "{\"id\": \"bees\", \"video\": \"" +
      t +
      "/sampt_bees.mp4\", \"queries\": \"grid:2x2\", \"first\": 3, "
      "\"end\": 7, \"precision\": \"bf16\"}\n"
      "{\"id\": \"typo\", \"video\": \"x.mp4\", \"querys\": \"grid:2x2\"}\n";
  write_text(dir / "jobs.jsonl", text);
  Expected<BatchJobList> jobs = read_batch_jobs(dir / "jobs.jsonl");
  EXPECT_TRUE(jobs) << jobs.status().message();
  return jobs ? *jobs : BatchJobList{};
}

Json deterministic_summary(const fs::path& out) {
  Expected<std::string> text = io::read_file(out / "summary.json", 1 << 24);
  EXPECT_TRUE(text) << text.status().message();
  Json doc = Json::parse(text ? *text : "{}");
  doc.erase("measurements");
  return doc;
}

TEST(BatchJobs, ParsesLinesDefaultsAndErrors) {
  const fs::path dir = fresh_dir("jobs");
  const std::vector<BatchJobEntry> entries = parse_batch_jobs(
      "{\"video\": \"a/b c.mp4\", \"queries\": \"q.csv\"}\n"
      "  # a comment\n"
      "{\"id\": \"x\", \"video\": \"/abs/v.mp4\", \"queries\": \"grid:16x8@frame3\", \"model\": \"small\", "
      "\"precision\": \"fp16\", \"resize\": \"lanczos\", \"first\": 2, \"end\": 9, \"outputs\": [\"npz\", \"dlc\"]}\n"
      "{\"id\": \"x\", \"video\": \"v.mp4\", \"queries\": \"grid:2x2\"}\n"
      "{\"video\": \"v.mp4\", \"queries\": \"grid:0x2\"}\n"
      "{\"video\": \"v.mp4\"}\n"
      "{\"video\": \"v.mp4\", \"queries\": \"grid:2x2\", \"outputs\": [\"csv\", \"pdf\"]}\n"
      "{\"video\": \"v.mp4\", \"queries\": \"grid:2x2\", \"first\": 5, \"end\": 5}\n"
      "not json\n"
      "{\"id\": \"../up\", \"video\": \"v.mp4\", \"queries\": \"grid:2x2\"}\n",
      dir);
  ASSERT_EQ(entries.size(), 9u);
  const BatchJob& a = entries[0].job;
  EXPECT_TRUE(entries[0].error.ok()) << entries[0].error.message();
  EXPECT_EQ(entries[0].line, 1);
  EXPECT_EQ(entries[0].id, "b_c");  // the video's stem, made a safe folder name
  EXPECT_EQ(a.video, dir / "a/b c.mp4");
  EXPECT_EQ(a.queries.csv, dir / "q.csv");
  EXPECT_EQ(a.model, "default");
  EXPECT_EQ(a.precision, Precision::fp32);
  EXPECT_EQ(a.end_frame, -1);
  EXPECT_EQ(a.outputs, std::vector<std::string>{"csv"});
  const BatchJob& x = entries[1].job;
  EXPECT_TRUE(entries[1].error.ok()) << entries[1].error.message();
  EXPECT_EQ(entries[1].line, 3);
  EXPECT_EQ(x.video, "/abs/v.mp4");
  EXPECT_TRUE(x.queries.is_grid());
  EXPECT_EQ(x.queries.to_string(), "grid:16x8@frame3");
  EXPECT_EQ(x.model, "small");
  EXPECT_EQ(x.precision, Precision::fp16);
  EXPECT_EQ(x.resize, InputResize::lanczos);
  EXPECT_EQ(x.first_frame, 2);
  EXPECT_EQ(x.end_frame, 9);
  EXPECT_EQ(x.outputs, (std::vector<std::string>{"npz", "dlc"}));
  auto expect_error = [&](size_t i, const std::string& part) {
    EXPECT_FALSE(entries[i].error.ok()) << i;
    EXPECT_NE(entries[i].error.message().find(part), std::string::npos) << entries[i].error.message();
    EXPECT_EQ(entries[i].id, "line-" + std::to_string(entries[i].line));
  };
  expect_error(2, "already used by line 3");
  expect_error(3, "grid:COLUMNSxROWS");
  expect_error(4, "\"queries\" is missing");
  expect_error(5, "unknown output format 'pdf'");
  expect_error(6, "\"end\" (5) must be after \"first\" (5)");
  expect_error(7, "not a JSON object");
  expect_error(8, "letters, digits");
}

TEST(BatchJobs, DevicesAndQueryGrids) {
  Expected<std::vector<std::string>> three = parse_worker_devices("cpu*3", {"cuda:0", "cpu"});
  ASSERT_TRUE(three);
  EXPECT_EQ(*three, (std::vector<std::string>{"cpu", "cpu", "cpu"}));
  Expected<std::vector<std::string>> all = parse_worker_devices("all,cuda:1*2", {"cuda:0", "cpu"});
  ASSERT_TRUE(all);
  EXPECT_EQ(*all, (std::vector<std::string>{"cuda:0", "cpu", "cuda:1", "cuda:1"}));
  EXPECT_FALSE(parse_worker_devices("cpu*0", {}));
  EXPECT_FALSE(parse_worker_devices("tpu", {}));
  EXPECT_FALSE(parse_worker_devices("cuda:x", {}));  // DeviceId::parse, not a prefix test
  EXPECT_FALSE(parse_worker_devices(",", {}));

  Expected<QuerySpec> grid = parse_query_spec("grid:4x2@frame7");
  ASSERT_TRUE(grid);
  VideoInfo info;
  info.width = 80;
  info.height = 20;
  info.frame_count = 8;
  Expected<std::vector<Query>> queries = resolve_queries(*grid, info);
  ASSERT_TRUE(queries) << queries.status().message();
  ASSERT_EQ(queries->size(), 8u);
  EXPECT_EQ((*queries)[0], (Query{7, 10.0, 5.0}));   // centre of the first 20x10 cell
  EXPECT_EQ((*queries)[7], (Query{7, 70.0, 15.0}));  // and of the last
  info.frame_count = 7;
  EXPECT_FALSE(resolve_queries(*grid, info));  // frame 7 is not in a 7-frame video
  for (const char* bad : {"grid:", "grid:4", "grid:4x", "grid:x4", "grid:4x4@7", "grid:4x4@frame", "grid:2000x1", ""}) {
    EXPECT_FALSE(parse_query_spec(bad)) << bad;
  }
}

TEST(BatchRun, TracksEveryClipReportsTheCorruptOneAndResumes) {
  const fs::path dir = fresh_dir("run");
  const BatchJobList jobs = sample_jobs(dir);
  ASSERT_EQ(jobs.entries.size(), 5u);
  const fs::path out = dir / "out";
  FakeFactory factory;
  Collector collector;
  BatchOptions options = options_for(out, {"cpu", "cpu", "cpu"});
  Expected<BatchRun> run = run_batch(jobs, factory, options, test_hooks(), collector);
  ASSERT_TRUE(run) << run.status().message();
  ASSERT_EQ(run->clips.size(), 5u);
  EXPECT_EQ(collector.finished.size(), 5u);
  EXPECT_EQ(collector.last.done, 5);
  EXPECT_EQ(collector.last.failed, 2);
  EXPECT_DOUBLE_EQ(collector.last.fraction, 1.0);
  // A worker loads a model once per (model, precision, resize) it needs.
  EXPECT_LE(factory.creates.load(), 3 * 2);

  Expected<BatchSummary> summary = collect_batch(out);
  ASSERT_TRUE(summary) << summary.status().message();
  ASSERT_EQ(summary->clips.size(), 5u);
  EXPECT_EQ(summary->ok, 3);
  EXPECT_EQ(summary->failed, 2);
  const std::vector<std::string> order = {"apple", "video", "broken", "bees", "line-7"};
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(summary->clips[i].id, order[i]);
  const ClipRecord& broken = summary->clips[2];
  EXPECT_EQ(broken.status, "failed");
  EXPECT_NE(broken.error.find("corrupt.mp4"), std::string::npos) << broken.error;
  EXPECT_EQ(summary->clips[4].status, "failed");
  EXPECT_NE(summary->clips[4].error.find("unknown key \"querys\""), std::string::npos);

  const ClipRecord& apple = summary->clips[0];
  EXPECT_EQ(apple.status, "ok");
  EXPECT_EQ(apple.points, 6);
  EXPECT_EQ(apple.frames, 5);
  ASSERT_EQ(apple.outputs.size(), 2u);
  EXPECT_EQ(apple.outputs[0].file, "apple/apple.csv");
  EXPECT_EQ(apple.outputs[1].file, "apple/apple.npz");
  ASSERT_TRUE(apple.measurements.has_value());
  EXPECT_EQ(apple.measurements->device, "cpu");
  Expected<io::TrackTable> table = io::read_tracks(out / "apple/apple.csv", io::TrackFormat::csv);
  ASSERT_TRUE(table) << table.status().message();
  ASSERT_EQ(table->tracks.size(), 6u);
  EXPECT_EQ(table->tracks[0].query.frame, 1);
  EXPECT_FLOAT_EQ(table->tracks[0].track.track.at(4).x_px, static_cast<float>(table->tracks[0].query.x_px + 4));
  const ClipRecord& horse = summary->clips[1];
  EXPECT_EQ(horse.points, 2);  // from points.csv
  for (const char* file :
       {"video/video.json", "video/video.trackscope", "video/video_dlc.csv", "video/video_coco.json"}) {
    EXPECT_TRUE(fs::exists(out / file)) << file;
  }
  EXPECT_EQ(summary->clips[3].precision, "bf16");
  EXPECT_EQ(summary->clips[3].frames, 4);
  ASSERT_TRUE(write_batch_summary(out, *summary));
  const Json before = deterministic_summary(out);
  EXPECT_EQ(before["counts"]["ok"], 3);

  // Again: the finished clips are skipped (nothing tracked), the failed one is tried again.
  const int tracked_first = factory.tracks.load();
  Collector again;
  ASSERT_TRUE(run_batch(jobs, factory, options, test_hooks(), again));
  EXPECT_EQ(factory.tracks.load(), tracked_first);
  EXPECT_EQ(again.skipped_ids.size(), 3u);
  ASSERT_TRUE(write_batch_summary(out, *collect_batch(out)));
  EXPECT_EQ(deterministic_summary(out), before);

  // A damaged output and a partial clip (no record) are redone; the rest stays skipped.
  write_text(out / "apple/apple.npz", "damaged");
  fs::remove(out / "bees/result.json");
  Collector third;
  ASSERT_TRUE(run_batch(jobs, factory, options, test_hooks(), third));
  EXPECT_EQ(factory.tracks.load(), tracked_first + 2);
  EXPECT_EQ(third.skipped_ids, std::vector<std::string>{"video"});
  ASSERT_TRUE(write_batch_summary(out, *collect_batch(out)));
  EXPECT_EQ(deterministic_summary(out), before);  // the same outputs, bit for bit

  // Another option is another checksum: the clip is tracked again.
  const std::string changed = jobs.text.substr(0, jobs.text.find("\"end\": 5")) + "\"end\": 4" +
                              jobs.text.substr(jobs.text.find("\"end\": 5") + 8);
  write_text(dir / "jobs.jsonl", changed);
  Expected<BatchJobList> changed_jobs = read_batch_jobs(dir / "jobs.jsonl");
  ASSERT_TRUE(changed_jobs);
  Collector fourth;
  ASSERT_TRUE(run_batch(*changed_jobs, factory, options, test_hooks(), fourth));
  EXPECT_EQ(fourth.skipped_ids.size(), 2u);
  Expected<ClipRecord> apple_again = read_clip_record(out, "apple");
  ASSERT_TRUE(apple_again);
  EXPECT_EQ(apple_again->frames, 4);
  EXPECT_NE(apple_again->checksum, apple.checksum);
}

TEST(BatchRun, ShardsGatherIntoTheSameSummary) {
  const fs::path dir = fresh_dir("shards");
  const BatchJobList jobs = sample_jobs(dir);
  FakeFactory factory;
  Collector collector;
  ASSERT_TRUE(run_batch(jobs, factory, options_for(dir / "whole", {"cpu", "cpu"}), test_hooks(), collector));
  ASSERT_TRUE(write_batch_summary(dir / "whole", *collect_batch(dir / "whole")));
  for (int shard = 0; shard < 3; ++shard) {
    BatchOptions options = options_for(dir / "sharded", {"cpu"});
    options.shard_index = shard;
    options.shard_count = 3;
    Collector part;
    Expected<BatchRun> run = run_batch(jobs, factory, options, test_hooks(), part);
    ASSERT_TRUE(run);
    EXPECT_EQ(run->clips.size(), shard < 2 ? 2u : 1u);  // clips i with i % 3 == shard
  }
  Expected<BatchSummary> gathered = collect_batch(dir / "sharded");
  ASSERT_TRUE(gathered);
  ASSERT_TRUE(write_batch_summary(dir / "sharded", *gathered));
  EXPECT_EQ(deterministic_summary(dir / "sharded"), deterministic_summary(dir / "whole"));
  // Before any shard ran, the clips are "not_run".
  ASSERT_TRUE(write_batch_plan(dir / "empty", jobs));
  Expected<BatchSummary> empty = collect_batch(dir / "empty");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->not_run, 4);
  EXPECT_EQ(empty->failed, 1);  // the line that does not parse
}

// Ten clips of 10 frames for the scheduling tests.
BatchJobList ten_clips(const fs::path& dir) {
  std::string text;
  for (int i = 0; i < 10; ++i) {
    text += "{\"id\": \"clip" + std::to_string(i) + "\", \"video\": \"" + kTestdata.string() +
            "/horsejump-high_480p/video\", \"queries\": \"grid:2x2\", \"end\": 10}\n";
  }
  write_text(dir / "jobs.jsonl", text);
  Expected<BatchJobList> jobs = read_batch_jobs(dir / "jobs.jsonl");
  EXPECT_TRUE(jobs) << jobs.status().message();
  return jobs ? *jobs : BatchJobList{};
}

// A fast "GPU" and a slow "CPU": the GPU steals the CPU's queued clips, the CPU steps aside once the GPU would
// finish the rest before it finishes one, and an idle GPU takes over a clip the CPU is still on.
TEST(BatchRun, AFastDeviceDoesMostAndTheSlowOneDoesNotHoldTheEnd) {
  const fs::path dir = fresh_dir("speeds");
  const BatchJobList jobs = ten_clips(dir);
  ASSERT_EQ(jobs.entries.size(), 10u);
  FakeFactory factory;
  factory.cuda_seconds_per_frame = 0.002;  // 20 ms a clip
  factory.cpu_seconds_per_frame = 0.5;     // 5 s a clip
  Collector collector;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(run_batch(jobs, factory, options_for(dir / "out", {"cpu", "cuda:0"}), test_hooks(), collector));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Expected<BatchSummary> summary = collect_batch(dir / "out");
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->ok, 10);
  int on_gpu = 0;
  for (const ClipRecord& r : summary->clips) on_gpu += r.measurements->device == "cuda:0" ? 1 : 0;
  // The CPU's first clip is taken over by the idle GPU (a backup attempt that finishes first), so the batch
  // does not wait for the CPU's second.
  EXPECT_EQ(on_gpu, 10);
  int taken_over = 0;
  for (const ClipRecord& r : summary->clips) taken_over += r.measurements->attempts == 2 ? 1 : 0;
  EXPECT_EQ(taken_over, 1);
  EXPECT_LT(seconds, 4.0) << "the slow device held the end of the batch";
}

struct SchedulingResult {
  double seconds = 0.0;
  int on_cpu = 0;
};

// A "GPU" of 20 ms a clip beside a "CPU" of `cpu_seconds_per_clip`, no backup attempts (so that a clip the CPU
// takes is one the batch waits for), with the given speed estimates.
SchedulingResult run_gpu_beside_cpu(const std::string& name, double cpu_seconds_per_clip, double cpu_tflops,
                                    double gpu_tflops) {
  const fs::path dir = fresh_dir(name);
  const BatchJobList jobs = ten_clips(dir);
  FakeFactory factory;
  factory.cuda_seconds_per_frame = 0.002;
  factory.cpu_seconds_per_frame = cpu_seconds_per_clip / 10.0;
  BatchOptions options = options_for(dir / "out", {"cpu", "cuda:0"});
  options.backup_attempts = false;
  options.workers[0].estimated_tflops = cpu_tflops;
  options.workers[1].estimated_tflops = gpu_tflops;
  Collector collector;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(run_batch(jobs, factory, options, test_hooks(), collector));
  SchedulingResult result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Expected<BatchSummary> summary = collect_batch(dir / "out");
  EXPECT_TRUE(summary);
  if (!summary) return result;
  EXPECT_EQ(summary->ok, 10);
  for (const ClipRecord& r : summary->clips) result.on_cpu += r.measurements->device == "cpu" ? 1 : 0;
  return result;
}

// Before anything is measured, the speed estimates decide: a CPU estimated 100x slower than the GPU does not
// take a first clip the GPU would beat with the whole batch; without estimates it does, and the batch waits for it.
TEST(BatchRun, AnUnmeasuredSlowDeviceStepsAsideOnItsEstimate) {
  const SchedulingResult estimated = run_gpu_beside_cpu("estimated", 1.5, 1.0, 100.0);
  EXPECT_EQ(estimated.on_cpu, 0);
  EXPECT_LT(estimated.seconds, 1.2) << "the CPU took a clip the GPU would have finished sooner";
  const SchedulingResult unknown = run_gpu_beside_cpu("unestimated", 1.5, 0.0, 0.0);
  EXPECT_EQ(unknown.on_cpu, 1);
  EXPECT_GT(unknown.seconds, 1.4);
}

// The estimate is a guess: a CPU estimated only 2x slower (within the margin) takes clips and does its share.
TEST(BatchRun, ADeviceEstimatedSlightlySlowerStillWorks) {
  const SchedulingResult close = run_gpu_beside_cpu("close", 0.04, 1.0, 2.0);
  EXPECT_GE(close.on_cpu, 1);
}

TEST(BatchRun, AModelThatDoesNotLoadFailsOnlyItsClips) {
  const fs::path dir = fresh_dir("model");
  const std::string video = (kTestdata / "cotracker_apple.mp4").string();
  write_text(dir / "jobs.jsonl", "{\"id\": \"a\", \"video\": \"" + video +
                                     "\", \"queries\": \"grid:1x1\", \"end\": 2}\n"
                                     "{\"id\": \"b\", \"video\": \"" +
                                     video +
                                     "\", \"queries\": \"grid:1x1\", \"end\": 2, \"model\": \"missing\"}\n"
                                     "{\"id\": \"c\", \"video\": \"" +
                                     video + "\", \"queries\": \"grid:1x1@frame60\", \"end\": 2}\n");
  Expected<BatchJobList> jobs = read_batch_jobs(dir / "jobs.jsonl");
  ASSERT_TRUE(jobs);
  FakeFactory factory;
  Collector collector;
  ASSERT_TRUE(run_batch(*jobs, factory, options_for(dir / "out", {"cpu"}), test_hooks(), collector));
  Expected<BatchSummary> summary = collect_batch(dir / "out");
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->clips[0].status, "ok");
  EXPECT_EQ(summary->clips[1].status, "failed");
  EXPECT_NE(summary->clips[1].error.find("no such model"), std::string::npos) << summary->clips[1].error;
  EXPECT_EQ(summary->clips[2].status, "failed");
  EXPECT_NE(summary->clips[2].error.find("frame 60 is not in the video"), std::string::npos) << summary->clips[2].error;
  const std::string text = format_batch_summary(*summary);
  EXPECT_NE(text.find("3 clips: 1 ok, 2 failed, 0 not run"), std::string::npos) << text;
  const std::string csv = batch_summary_csv(*summary);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4);
}

TEST(BatchSlurm, ScriptRunsOneShardPerArrayTask) {
  SlurmOptions o;
  o.cli = "/opt/track scope/bin/trackscope-cli";
  o.jobs_file = "/shared/jobs.jsonl";
  o.out_dir = "/shared/out";
  o.tasks = 3;
  o.partition = "gpu";
  o.gpus_per_task = 1;
  o.time_limit = "02:00:00";
  o.extra_options = {"--account=lab"};
  o.setup_lines = {"module load cuda/12.4"};
  o.batch_arguments = {"--devices", "cuda:0", "-q"};
  ASSERT_TRUE(o.check());
  const std::string script = slurm_script(o);
  for (const char* line : {"#SBATCH --array=0-2\n", "#SBATCH --partition=gpu\n", "#SBATCH --gpus-per-task=1\n",
                           "#SBATCH --time=02:00:00\n", "#SBATCH --account=lab\n",
                           "#SBATCH --output=/shared/out/slurm/shard-%a.log\n", "module load cuda/12.4\n",
                           // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one line, split for the column limit
                           "'/opt/track scope/bin/trackscope-cli' batch '/shared/jobs.jsonl' --out '/shared/out' "
                           "--shard \"${SLURM_ARRAY_TASK_ID}/3\" '--devices' 'cuda:0' '-q'\n"}) {
    EXPECT_NE(script.find(line), std::string::npos) << line << "\n" << script;
  }
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  o.cli = "relative/trackscope-cli";
  EXPECT_FALSE(o.check());
}

TEST(ProgressBar, LinesAndDurations) {
  EXPECT_EQ(format_progress_line("", 0.5, "half", 10), "[#####.....]  50% half                                ");
  EXPECT_EQ(format_progress_line("model", 2.0, "", 4).substr(0, 28), "model            [####] 100%");
  EXPECT_EQ(format_duration(7.4), "0:07");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(-1), "--:--");
}

}  // namespace
}  // namespace trackscope::core
