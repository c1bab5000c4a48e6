// trackscope-cli eval end to end (CPU, the random-weights fixture, a few frames): the JSON report, its baselines
// against what core computes, and the exit codes of bad arguments and failures. Also `track --out X.trackscope`:
// the project the workbench opens.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/io/project.h"
#include "core/tracking/evaluation.h"
#include "gpu/training.h"

namespace trackscope {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const fs::path kShared = TRACKSCOPE_SHARED_DIR;
const fs::path kCsv = kShared / "testdata/derived_badja_horsejump-high_854x480.csv";
const fs::path kVideo = kShared / "testdata/horsejump-high_480p/video";
const fs::path kFixture = kShared / "fixtures/locotrack/locotrack_small_random_bf16.safetensors";
const fs::path kOutput = fs::path(TRACKSCOPE_TEST_OUTPUT_DIR) / "cli_eval";

struct CliRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

CliRun run_command(const std::string& subcommand, const std::string& arguments) {
  const std::string command = std::string("'") + TRACKSCOPE_CLI + "' " + subcommand + " " + arguments + " 2>&1";
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer{};
  size_t read = 0;
  while ((read = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.output.append(buffer.data(), read);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

CliRun run_cli(const std::string& arguments) { return run_command("eval", arguments); }

std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

Json read_json(const fs::path& path) {
  std::ifstream in(path);
  return Json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// A tracker that holds every query still: core's stationary baseline through the same evaluation code.
class StillTracker final : public core::PointTracker {
 public:
  const core::TrackerDescription& description() const override { return description_; }
  core::Expected<core::TrackSet> track(core::VideoSource& video, const core::TrackRequest& request,
                                       core::TrackObserver&, std::stop_token) override {
    const int64_t end = request.end_frame == -1 ? video.info().frame_count : request.end_frame;
    return core::make_stationary_tracks(request.queries, request.first_frame, end - request.first_frame);
  }

 private:
  core::TrackerDescription description_;
};

class NullObserver final : public core::TrackObserver {};

TEST(CliEval, BadjaOnTheFirstFramesWritesTheReport) {
  fs::create_directories(kOutput);
  const fs::path json = kOutput / "badja.json";
  fs::remove(json);
  const CliRun run = run_cli("--badja " + quoted(kCsv) + " --video " + quoted(kVideo) + " --model " + quoted(kFixture) +
                             " --device cpu --threads 1 --end-frame 8 -q --json " + quoted(json));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("stationary"), std::string::npos) << run.output;
  const Json report = read_json(json);
  ASSERT_TRUE(report.is_object()) << "no valid JSON in " << json;
  EXPECT_EQ(report["device"], "cpu");
  EXPECT_EQ(report["precision"], "fp32");
  EXPECT_EQ(report["resize"], "lanczos");
  EXPECT_EQ(report["model"]["size"], "small");
  EXPECT_EQ(report["model"]["sha256"].get<std::string>().size(), 64u);
  const Json& badja = report["badja"];
  EXPECT_EQ(badja["frames"], Json::array({0, 8}));
  const double pck = badja["pck"].get<double>();
  EXPECT_GE(pck, 0.0);
  EXPECT_LE(pck, 1.0);
  EXPECT_FALSE(badja["baselines"].contains("random_weights"));

  // The stationary baseline is exactly what core computes for the same frames.
  core::Expected<core::BadjaAnnotations> annotations = core::load_badja_csv(kCsv);
  ASSERT_TRUE(annotations) << annotations.status().message();
  core::Expected<std::unique_ptr<core::VideoSource>> video = core::VideoSource::open(kVideo);
  ASSERT_TRUE(video) << video.status().message();
  StillTracker still;
  NullObserver observer;
  core::BadjaEvaluationOptions options;
  options.end_frame = 8;
  core::Expected<core::BadjaEvaluation> expected =
      core::evaluate_badja(still, **video, *annotations, options, observer);
  ASSERT_TRUE(expected) << expected.status().message();
  const Json& stationary = badja["baselines"]["stationary"];
  EXPECT_EQ(stationary["correct"], expected->stationary.correct);
  EXPECT_EQ(stationary["evaluated"], expected->stationary.evaluated);
  EXPECT_EQ(badja["evaluated"], expected->stationary.evaluated);
  EXPECT_EQ(badja["tracks"], expected->queries.size());
  ASSERT_EQ(stationary["per_frame"].size(), expected->stationary.per_frame.size());
  for (size_t f = 0; f < expected->stationary.per_frame.size(); ++f) {
    EXPECT_EQ(stationary["per_frame"][f]["frame"], expected->stationary.per_frame[f].frame);
    EXPECT_EQ(stationary["per_frame"][f]["correct"], expected->stationary.per_frame[f].correct);
    EXPECT_EQ(badja["per_frame"][f]["evaluated"], expected->pck.per_frame[f].evaluated);
  }
}

TEST(CliEval, SyntheticClipWithTheRandomWeightsBaseline) {
  fs::create_directories(kOutput);
  const fs::path json = kOutput / "synthetic.json";
  fs::remove(json);
  // The model and the baseline are the same weights here: their metrics must agree exactly.
  const CliRun run =
      run_cli("--synthetic 5 --clips 1 --frames 4 --points 16 --model " + quoted(kFixture) + " --baseline-weights " +
              quoted(kFixture) + " --device cpu --threads 1 -q --json " + quoted(json));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Json report = read_json(json);
  ASSERT_TRUE(report.is_object());
  const Json& synthetic = report["synthetic"];
  EXPECT_EQ(synthetic["seed"], 5);
  EXPECT_EQ(synthetic["clips"], 1);
  EXPECT_EQ(synthetic["evaluated_points"], 16 * 3);  // query-first: the 3 frames after frame 0
  for (const char* key : {"average_jaccard", "average_pts_within", "occlusion_accuracy"}) {
    ASSERT_TRUE(synthetic[key].is_number()) << key;
    EXPECT_EQ(synthetic[key], synthetic["baselines"]["random_weights"][key]) << key;
  }
  EXPECT_EQ(report["random_weights_model"]["sha256"], report["model"]["sha256"]);

  // The stationary baseline of the same seeded clip, computed by core.
  gpu::SyntheticEvaluationOptions options;
  options.seed = 5;
  options.clips = 1;
  options.data.frames = 4;
  options.data.points = 16;
  core::Expected<std::vector<core::TapVidClip>> clips = gpu::generate_synthetic_evaluation_clips(options);
  ASSERT_TRUE(clips) << clips.status().message();
  StillTracker still;
  NullObserver observer;
  core::Expected<core::TapVidEvaluation> expected = core::evaluate_tapvid(still, *clips, observer);
  ASSERT_TRUE(expected) << expected.status().message();
  const Json& stationary = synthetic["baselines"]["stationary"];
  EXPECT_DOUBLE_EQ(stationary["average_jaccard"].get<double>(), expected->stationary.average_jaccard);
  EXPECT_DOUBLE_EQ(stationary["average_pts_within"].get<double>(), expected->stationary.average_pts_within);
  EXPECT_DOUBLE_EQ(stationary["occlusion_accuracy"].get<double>(), expected->stationary.occlusion_accuracy);
}

// --stability on the first BADJA frames: a row per change; fp16 cannot run on the CPU with LibTorch 1.13 and says
// so (with LibTorch 2.x it runs); the calibration is in the report. Then --queries on a clip without annotations.
TEST(CliEval, StabilityRowsAndCalibration) {
  fs::create_directories(kOutput);
  const fs::path json = kOutput / "stability.json";
  fs::remove(json);
  const CliRun run = run_cli("--badja " + quoted(kCsv) + " --video " + quoted(kVideo) + " --model " + quoted(kFixture) +
                             " --device cpu --threads 1 --end-frame 3 --stability -q --json " + quoted(json));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("jpeg q90"), std::string::npos) << run.output;
  const Json report = read_json(json);
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report["version"], "1.1");
  const Json& stability = report["stability"];
  EXPECT_EQ(stability["queries"], "badja");
  EXPECT_EQ(stability["reference"], "fp32 on the original frames");
  const Json& rows = stability["rows"];
  ASSERT_EQ(rows.size(), 5u) << rows.dump();
  const int64_t tracks = stability["tracks"].get<int64_t>();
  EXPECT_EQ(tracks, report["badja"]["tracks"].get<int64_t>());
  for (size_t r : {0u, 1u, 2u, 4u}) {
    ASSERT_TRUE(rows[r].contains("change")) << rows[r].dump();
    EXPECT_EQ(rows[r]["change"]["pairs"].get<int64_t>(), tracks * 2);  // frames 1 and 2 of [0, 3)
    EXPECT_GE(rows[r]["change"]["mean_px"].get<double>(), 0.0);
  }
  EXPECT_EQ(rows[0]["name"], "brightness +2");
  EXPECT_EQ(rows[2]["name"], "jpeg q90");
  EXPECT_EQ(rows[3]["name"], "fp16");
  if (rows[3].contains("skipped")) {  // LibTorch 1.13 (Debian): no fp16 on the CPU
    EXPECT_NE(rows[3]["skipped"].get<std::string>().find("CPU"), std::string::npos) << rows[3].dump();
    EXPECT_NE(run.output.find("fp16             not run"), std::string::npos) << run.output;
  } else {
    EXPECT_TRUE(rows[3].contains("change")) << rows[3].dump();
  }
  EXPECT_EQ(rows[4]["name"], "bf16");
  const Json& calibration = report["badja"]["calibration"];
  EXPECT_EQ(calibration["p_far"]["bins"].size(), 10u);
  EXPECT_GT(calibration["p_occluded"]["count"].get<int64_t>(), 0);

  const fs::path queries_json = kOutput / "stability_queries.json";
  const CliRun queries = run_cli(
      "--video " + quoted(kVideo) + " --queries grid:2x2@frame0 --end-frame 3 --model " + quoted(kFixture) +
      " --device cpu --threads 1 --jpeg-quality 0 --stability-precisions none -q --json " + quoted(queries_json));
  ASSERT_EQ(queries.exit_code, 0) << queries.output;
  const Json grid = read_json(queries_json);
  EXPECT_FALSE(grid.contains("badja"));
  EXPECT_EQ(grid["stability"]["queries"], "grid:2x2@frame0");
  ASSERT_EQ(grid["stability"]["rows"].size(), 2u);
  EXPECT_EQ(grid["stability"]["rows"][1]["name"], "brightness -2");
  EXPECT_EQ(grid["stability"]["rows"][1]["change"]["pairs"], 4 * 2);
}

TEST(CliEval, BadArgumentsExitWith2) {
  for (const std::string& arguments :
       {std::string(""), "--badja " + quoted(kCsv), std::string("--synthetic 1 --clips many"),
        std::string("--synthetic 1 --precision fp8"), std::string("--synthetic 1 --bogus"),
        "--badja " + quoted(kCsv) + " --video " + quoted(kVideo) + " --end-frame 0",
        std::string("--synthetic 1 --stability"), std::string("--queries grid:2x2"),
        "--badja " + quoted(kCsv) + " --video " + quoted(kVideo) + " --queries grid:2x2",
        "--video " + quoted(kVideo) + " --queries grid:2x2 --stability-precisions fp8",
        "--video " + quoted(kVideo) +
            " --queries grid:2x2 --brightness 0 --jpeg-quality 0 --stability-precisions none"}) {
    const CliRun run = run_cli(arguments);
    EXPECT_EQ(run.exit_code, 2) << arguments << "\n" << run.output;
    EXPECT_NE(run.output.find("trackscope-cli eval: "), std::string::npos) << arguments << "\n" << run.output;
  }
}

TEST(CliEval, FailuresExitWith1AndSayWhy) {
  const CliRun missing =
      run_cli("--badja " + quoted(kOutput / "no_such.csv") + " --video " + quoted(kVideo) + " --device cpu");
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_NE(missing.output.find("no_such.csv"), std::string::npos) << missing.output;
  const CliRun weights = run_cli("--synthetic 1 --clips 1 --frames 2 --points 1 --device cpu --model " +
                                 quoted(kOutput / "no_such_weights.safetensors"));
  EXPECT_EQ(weights.exit_code, 1) << weights.output;
  EXPECT_NE(weights.output.find("no_such_weights"), std::string::npos) << weights.output;
}

// `track --out X.trackscope` writes a project with one point per query, each with its track over the tracked
// frames and the tracker's provenance, the video with its fingerprint, opened on --view-frame.
TEST(CliTrack, WritesAProjectTheWorkbenchOpens) {
  fs::create_directories(kOutput);
  const fs::path queries = kOutput / "project_queries.csv";
  std::ofstream(queries) << "frame,x,y\n0,300,250\n0,420,300.5\n2,500,260\n";
  const fs::path project_path = kOutput / "tracked.trackscope";
  fs::remove(project_path);
  const CliRun run =
      run_command("track", quoted(kVideo) + " --queries " + quoted(queries) + " --out " + quoted(project_path) +
                               " --model " + quoted(kFixture) + " --device cpu --end 4 --view-frame 2 -q");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  core::Expected<core::io::Project> project = core::io::load_project(project_path);
  ASSERT_TRUE(project) << project.status().message();
  EXPECT_EQ(project->video.frame_count, 50);
  EXPECT_EQ(project->video.width, 854);
  EXPECT_EQ(project->video.height, 480);
  EXPECT_EQ(fs::path(project->video.path), fs::absolute(kVideo).lexically_normal());
  EXPECT_EQ(project->view.current_frame, 2);
  ASSERT_EQ(project->points.size(), 3u);
  EXPECT_EQ(project->points[1].point.query.x_px, 420.0);
  EXPECT_EQ(project->points[1].point.query.y_px, 300.5);
  EXPECT_EQ(project->points[2].point.query.frame, 2);
  for (const core::io::ProjectPoint& p : project->points) {
    ASSERT_TRUE(p.track.has_value());
    EXPECT_EQ(p.track->track.first_frame, 0);
    EXPECT_EQ(p.track->track.points.size(), 4u);
    EXPECT_EQ(p.track->provenance.device, "cpu");
  }
  // A bad view frame is a usage error, found before anything is loaded.
  const CliRun bad = run_command("track", quoted(kVideo) + " --queries " + quoted(queries) + " --out " +
                                              quoted(kOutput / "bad.trackscope") + " --view-frame -3 -q");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
}

}  // namespace
}  // namespace trackscope
