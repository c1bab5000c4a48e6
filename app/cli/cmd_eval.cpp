// trackscope-cli eval: accuracy of a tracker model next to baselines, scored by core/tracking/evaluation.h.
//   --badja ANNOTATIONS --video FRAMES_DIR_OR_FILE [--masks DIR] [--end-frame N]   BADJA PCK on a real clip
//   --synthetic SEED [--clips N] [--frames T] [--points N]                         TAP-Vid metrics, query-first
// Prints a short table on stdout (progress on stderr) and writes --json OUT. Baselines: "the point does not move"
// (always) and the same model architecture with random weights (--baseline-weights FILE).
// Exit codes: 0 ok, 2 bad arguments (before anything is loaded), 1 any other error (one line on stderr).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/io/atomic_file.h"
#include "core/limits.h"
#include "core/tracking/evaluation.h"
#include "core/tracking/point_tracker.h"
#include "gpu/cpu_runtime.h"
#include "gpu/tracker_factory.h"
#include "gpu/training.h"

namespace trackscope::app {
namespace {

using Json = nlohmann::json;

// Numbers are taken as text and parsed here, so that a malformed value is a bad argument (exit 2) like the rest.
struct EvalArguments {
  std::string badja;
  std::string video;
  std::string masks;
  std::string end_frame = "-1";
  std::string synthetic_seed;
  std::string clips = "32";
  std::string frames = "24";
  std::string points = "256";
  std::string model = "default";
  std::string device = "auto";
  std::string precision = "fp32";
  std::string resize = "lanczos";
  std::string baseline_weights;
  std::string json;
  std::string threads = "0";
  bool quiet = false;
};

// Everything the command does, checked and parsed.
struct EvalPlan {
  std::optional<std::filesystem::path> badja;
  std::filesystem::path video;
  std::filesystem::path masks;
  core::BadjaEvaluationOptions badja_options;
  std::optional<gpu::SyntheticEvaluationOptions> synthetic;
  core::TrackerOptions tracker;
  std::string baseline_weights;
  std::string json;
  int threads = 0;
  bool quiet = false;
};

template <typename T>
core::Status parse_integer(const std::string& text, const char* option, T low, T high, T& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty() || value < low || value > high) {
    return core::invalid_argument(fmt::format("{} '{}': expected an integer in [{}, {}]", option, text, low, high));
  }
  return {};
}

core::Expected<EvalPlan> make_plan(const EvalArguments& args, const std::vector<std::string>& extras) {
  if (!extras.empty()) return core::invalid_argument(fmt::format("unknown argument '{}' (see --help)", extras.front()));
  EvalPlan plan;
  if (args.badja.empty() && args.synthetic_seed.empty()) {
    return core::invalid_argument(
        "nothing to evaluate: give --badja ANNOTATIONS --video VIDEO and/or --synthetic SEED");
  }
  if (!args.badja.empty()) {
    if (args.video.empty()) return core::invalid_argument("--badja needs --video (the clip's frames folder or file)");
    plan.badja = args.badja;
    plan.video = args.video;
    plan.masks = args.masks;
    TRACKSCOPE_RETURN_IF_ERROR(
        parse_integer<int64_t>(args.end_frame, "--end-frame", -1, int64_t{1} << 40, plan.badja_options.end_frame));
    TRACKSCOPE_RETURN_IF_ERROR(plan.badja_options.check());
  } else if (!args.video.empty() || !args.masks.empty()) {
    return core::invalid_argument("--video and --masks belong to --badja");
  }
  if (!args.synthetic_seed.empty()) {
    gpu::SyntheticEvaluationOptions synthetic;
    TRACKSCOPE_RETURN_IF_ERROR(
        parse_integer<uint64_t>(args.synthetic_seed, "--synthetic", 0, ~uint64_t{0}, synthetic.seed));
    TRACKSCOPE_RETURN_IF_ERROR(parse_integer<int64_t>(args.clips, "--clips", 1, 4096, synthetic.clips));
    TRACKSCOPE_RETURN_IF_ERROR(parse_integer<int64_t>(args.frames, "--frames", 2, 4096, synthetic.data.frames));
    TRACKSCOPE_RETURN_IF_ERROR(parse_integer<int64_t>(args.points, "--points", 1, 1 << 20, synthetic.data.points));
    TRACKSCOPE_RETURN_IF_ERROR(synthetic.check());
    plan.synthetic = synthetic;
  }
  plan.tracker.model = args.model;
  plan.tracker.device = args.device;
  core::Expected<core::Precision> precision = core::parse_precision(args.precision);
  if (!precision) return precision.status();
  plan.tracker.precision = *precision;
  core::Expected<core::InputResize> resize = core::parse_input_resize(args.resize);
  if (!resize) return resize.status();
  plan.tracker.resize = *resize;
  TRACKSCOPE_RETURN_IF_ERROR(plan.tracker.check());
  TRACKSCOPE_RETURN_IF_ERROR(parse_integer<int>(args.threads, "--threads", 0, 1024, plan.threads));
  core::Expected<core::ThreadCount> threads = core::cap_thread_count(plan.threads, "--threads");
  if (!threads) return threads.status();
  if (!threads->notice.empty()) std::fprintf(stderr, "trackscope-cli eval: %s\n", threads->notice.c_str());
  plan.threads = threads->threads;
  plan.baseline_weights = args.baseline_weights;
  plan.json = args.json;
  // Checked before the evaluation runs (minutes), not after it.
  if (!plan.json.empty()) TRACKSCOPE_RETURN_IF_ERROR(core::io::check_writable(plan.json));
  plan.quiet = args.quiet;
  return plan;
}

class ProgressBar final : public core::TrackObserver {
 public:
  ProgressBar(bool enabled, std::string label) : enabled_(enabled), label_(std::move(label)) {}
  void on_progress(const core::TrackProgress& p) override {
    if (!enabled_) return;
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(p.fraction * kWidth + 0.5);
    std::fprintf(stderr, "\r%-16s [%s%s] %3d%% %-36.36s", label_.c_str(),
                 std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(kWidth - filled), '.').c_str(),
                 static_cast<int>(p.fraction * 100 + 0.5), p.phase.c_str());
    if (p.fraction >= 1.0) std::fputc('\n', stderr);
  }

 private:
  bool enabled_;
  std::string label_;
};

// ---- results ---------------------------------------------------------------------------------------------------

// One tracker's results (the model or the random-weights baseline).
struct RunResult {
  core::TrackerDescription description;
  std::optional<core::BadjaEvaluation> badja;
  std::optional<core::TapVidEvaluation> synthetic;
};

Json number(double value) { return std::isfinite(value) ? Json(value) : Json(nullptr); }

Json model_json(const core::TrackerDescription& d, const std::string& requested) {
  return {{"requested", requested},    {"name", d.model_name},       {"size", d.model_size},
          {"weights", d.weights_path}, {"sha256", d.weights_sha256}, {"parameters", d.parameter_count}};
}

Json pck_json(const core::PckResult& pck, const core::BadjaAnnotations& annotations) {
  Json frames = Json::array();
  for (const core::PckFrame& f : pck.per_frame) {
    double threshold = 0.0;
    for (const core::BadjaFrame& a : annotations.frames) {
      if (a.frame == f.frame) threshold = a.pck_threshold_px;
    }
    frames.push_back(
        {{"frame", f.frame},
         {"threshold_px", threshold},
         {"correct", f.correct},
         {"evaluated", f.evaluated},
         {"pck", number(f.evaluated > 0 ? static_cast<double>(f.correct) / static_cast<double>(f.evaluated) : NAN)}});
  }
  return {{"pck", number(pck.pck)}, {"correct", pck.correct}, {"evaluated", pck.evaluated}, {"per_frame", frames}};
}

Json tapvid_json(const core::TapVidMetrics& m) {
  std::vector<Json> within, jaccard;
  for (size_t k = 0; k < core::kTapVidThresholdsPx.size(); ++k) {
    within.push_back(number(m.pts_within[k]));
    jaccard.push_back(number(m.jaccard[k]));
  }
  return {{"average_jaccard", number(m.average_jaccard)},
          {"average_pts_within", number(m.average_pts_within)},
          {"occlusion_accuracy", number(m.occlusion_accuracy)},
          {"pts_within", within},
          {"jaccard", jaccard},
          {"videos", m.videos},
          {"evaluated_points", m.counts.evaluated_points}};
}

Json report_json(const EvalPlan& plan, const RunResult& model, const std::optional<RunResult>& baseline) {
  Json doc;
  doc["format"] = "trackscope.eval";
  doc["version"] = "1.0";
  doc["model"] = model_json(model.description, plan.tracker.model);
  doc["device"] = model.description.device.id;
  doc["device_name"] = model.description.device.name;
  doc["precision"] = core::to_string(model.description.precision);
  doc["resize"] = core::to_string(plan.tracker.resize);
  if (baseline) doc["random_weights_model"] = model_json(baseline->description, plan.baseline_weights);
  if (model.badja) {
    const core::BadjaEvaluation& b = *model.badja;
    Json section = pck_json(b.pck, b.annotations);
    section["annotations"] = plan.badja->string();
    section["video"] = plan.video.string();
    section["masks"] = plan.masks.empty() ? Json(nullptr) : Json(plan.masks.string());
    section["protocol"] =
        "one track per visible joint of the first annotated frame; correct within 0.2 sqrt(foreground area) px";
    section["video_size"] = {b.annotations.width, b.annotations.height};
    section["frames"] = {b.first_frame, b.end_frame};
    section["tracks"] = b.queries.size();
    section["track_seconds"] = b.track_seconds;
    section["baselines"]["stationary"] = pck_json(b.stationary, b.annotations);
    if (baseline) section["baselines"]["random_weights"] = pck_json(baseline->badja->pck, b.annotations);
    doc["badja"] = section;
  }
  if (model.synthetic) {
    const gpu::SyntheticEvaluationOptions& o = *plan.synthetic;
    Json section = tapvid_json(model.synthetic->model);
    section["seed"] = o.seed;
    section["clips"] = o.clips;
    section["frames"] = o.data.frames;
    section["points"] = o.data.points;
    section["size"] = {o.data.width, o.data.height};
    section["protocol"] = "TAP-Vid query-first (queries on frame 0), metrics at 256x256, thresholds 1, 2, 4, 8, 16 px";
    section["track_seconds"] = model.synthetic->track_seconds;
    section["baselines"]["stationary"] = tapvid_json(model.synthetic->stationary);
    if (baseline) section["baselines"]["random_weights"] = tapvid_json(baseline->synthetic->model);
    doc["synthetic"] = section;
  }
  return doc;
}

void print_badja(const EvalPlan& plan, const RunResult& model, const std::optional<RunResult>& baseline) {
  const core::BadjaEvaluation& b = *model.badja;
  std::printf("BADJA %s on %s (%dx%d): frames [%lld, %lld), %zu tracks, PCK within 0.2 sqrt(area)\n",
              plan.badja->filename().string().c_str(), plan.video.string().c_str(), b.annotations.width,
              b.annotations.height, static_cast<long long>(b.first_frame), static_cast<long long>(b.end_frame),
              b.queries.size());
  auto row = [](const char* name, const core::PckResult& p) {
    std::printf("  %-24s %6.3f  (%lld / %lld)\n", name, p.pck, static_cast<long long>(p.correct),
                static_cast<long long>(p.evaluated));
  };
  row("model", b.pck);
  row("stationary", b.stationary);
  if (baseline) row("random weights", baseline->badja->pck);
  std::printf("  %5s %7s %4s %7s %10s%s\n", "frame", "thr_px", "n", "model", "stationary", baseline ? "  random" : "");
  for (size_t f = 0; f < b.pck.per_frame.size(); ++f) {
    const core::PckFrame& m = b.pck.per_frame[f];
    const double n = static_cast<double>(m.evaluated);
    double threshold = 0.0;
    for (const core::BadjaFrame& a : b.annotations.frames) {
      if (a.frame == m.frame) threshold = a.pck_threshold_px;
    }
    std::printf("  %5lld %7.2f %4lld %7.3f %10.3f", static_cast<long long>(m.frame), threshold,
                static_cast<long long>(m.evaluated), m.correct / n, b.stationary.per_frame[f].correct / n);
    if (baseline) std::printf("  %6.3f", baseline->badja->pck.per_frame[f].correct / n);
    std::printf("\n");
  }
}

void print_synthetic(const EvalPlan& plan, const RunResult& model, const std::optional<RunResult>& baseline) {
  const gpu::SyntheticEvaluationOptions& o = *plan.synthetic;
  std::printf("synthetic seed %llu: %lld clips x %lld frames x %lld points, %lldx%lld, query-first, at 256x256\n",
              static_cast<unsigned long long>(o.seed), static_cast<long long>(o.clips),
              static_cast<long long>(o.data.frames), static_cast<long long>(o.data.points),
              static_cast<long long>(o.data.width), static_cast<long long>(o.data.height));
  std::printf("  %-24s %6s %9s %9s\n", "", "AJ", "delta_avg", "occ_acc");
  auto row = [](const char* name, const core::TapVidMetrics& m) {
    std::printf("  %-24s %6.3f %9.3f %9.3f\n", name, m.average_jaccard, m.average_pts_within, m.occlusion_accuracy);
  };
  row("model", model.synthetic->model);
  row("stationary", model.synthetic->stationary);
  if (baseline) row("random weights", baseline->synthetic->model);
}

core::Status write_report(const std::string& path, const Json& doc) {
  return core::io::write_file_atomically(path, doc.dump(2) + "\n");
}

// ---- running -----------------------------------------------------------------------------------------------------

// Inputs loaded once and shared by the model and the baseline.
struct EvalInputs {
  core::BadjaAnnotations annotations;
  std::unique_ptr<core::VideoSource> video;
  std::vector<core::TapVidClip> clips;
};

core::Expected<core::BadjaAnnotations> load_annotations(const EvalPlan& plan) {
  const std::filesystem::path& path = *plan.badja;
  const bool json = path.extension() == ".json";
  core::Expected<core::BadjaAnnotations> annotations = json ? core::load_badja_json(path) : core::load_badja_csv(path);
  if (!annotations) return annotations.status();
  if (!plan.masks.empty()) TRACKSCOPE_RETURN_IF_ERROR(core::set_badja_thresholds_from_masks(*annotations, plan.masks));
  return annotations;
}

core::Expected<RunResult> run_tracker(core::TrackerFactory& factory, const core::TrackerOptions& options,
                                      const EvalPlan& plan, EvalInputs& inputs, const std::string& label) {
  core::Expected<std::unique_ptr<core::PointTracker>> tracker = factory.create(options);
  if (!tracker) return tracker.status().with_context(fmt::format("loading {} '{}'", label, options.model));
  RunResult result;
  result.description = (*tracker)->description();
  if (plan.badja) {
    ProgressBar progress(!plan.quiet, label + " badja");
    core::Expected<core::BadjaEvaluation> badja =
        core::evaluate_badja(**tracker, *inputs.video, inputs.annotations, plan.badja_options, progress);
    if (!badja) return badja.status().with_context(fmt::format("BADJA with {}", label));
    result.badja = std::move(*badja);
  }
  if (plan.synthetic) {
    if (inputs.clips.empty()) {
      gpu::SyntheticEvaluationOptions data = *plan.synthetic;
      data.device = result.description.device.id;
      core::Expected<std::vector<core::TapVidClip>> clips = gpu::generate_synthetic_evaluation_clips(data);
      if (!clips) return clips.status();
      inputs.clips = std::move(*clips);
    }
    ProgressBar progress(!plan.quiet, label + " synthetic");
    core::Expected<core::TapVidEvaluation> synthetic = core::evaluate_tapvid(**tracker, inputs.clips, progress);
    if (!synthetic) return synthetic.status().with_context(fmt::format("synthetic clips with {}", label));
    result.synthetic = std::move(*synthetic);
  }
  return result;
}

int run_eval(const EvalArguments& args, const std::vector<std::string>& extras) {
  auto fail = [](const core::Status& status, int code) {
    std::fprintf(stderr, "trackscope-cli eval: %s\n", status.message().c_str());
    return code;
  };
  core::Expected<EvalPlan> plan = make_plan(args, extras);
  if (!plan) return fail(plan.status(), 2);

  EvalInputs inputs;
  if (plan->badja) {
    core::Expected<core::BadjaAnnotations> annotations = load_annotations(*plan);
    if (!annotations) return fail(annotations.status(), 1);
    inputs.annotations = std::move(*annotations);
    core::Expected<std::unique_ptr<core::VideoSource>> video = core::VideoSource::open(plan->video);
    if (!video) return fail(video.status(), 1);
    inputs.video = std::move(*video);
  }
  gpu::keep_freed_host_memory();
  if (plan->threads > 0) gpu::set_cpu_threads(plan->threads);
  std::unique_ptr<core::TrackerFactory> factory = gpu::make_tracker_factory({});
  core::Expected<RunResult> model = run_tracker(*factory, plan->tracker, *plan, inputs, "model");
  if (!model) return fail(model.status(), 1);
  std::optional<RunResult> baseline;
  if (!plan->baseline_weights.empty()) {
    core::TrackerOptions options = plan->tracker;
    options.model = plan->baseline_weights;
    options.device = model->description.device.id;  // the same device as the model, also for "auto"
    core::Expected<RunResult> random = run_tracker(*factory, options, *plan, inputs, "random weights");
    if (!random) return fail(random.status(), 1);
    baseline = std::move(*random);
  }

  std::printf("model %s (%s, sha256 %.12s) on %s, %s, %s resize\n", model->description.model_name.c_str(),
              model->description.weights_path.c_str(), model->description.weights_sha256.c_str(),
              model->description.device.id.c_str(), core::to_string(model->description.precision),
              core::to_string(plan->tracker.resize));
  if (model->badja) print_badja(*plan, *model, baseline);
  if (model->synthetic) print_synthetic(*plan, *model, baseline);
  if (!plan->json.empty()) {
    if (core::Status s = write_report(plan->json, report_json(*plan, *model, baseline)); !s) return fail(s, 1);
    std::printf("wrote %s\n", plan->json.c_str());
  }
  return 0;
}

}  // namespace

void add_eval_command(CLI::App& app, CliContext& context) {
  CLI::App* command = app.add_subcommand(
      "eval",
      "accuracy on BADJA (PCK) and/or seeded synthetic clips (TAP-Vid AJ, delta_avg, occlusion accuracy), "
      "next to the 'does not move' and random-weights baselines");
  auto args = std::make_shared<EvalArguments>();
  command->add_option("--badja", args->badja,
                      "BADJA joint annotations: derived CSV (with thresholds) or BADJA JSON (needs --masks)");
  command->add_option("--video", args->video, "the annotated clip: frames folder, image pattern or video file");
  command->add_option("--masks", args->masks,
                      "folder of per-frame foreground masks (00026.png ...): PCK thresholds 0.2 sqrt(area)");
  command
      ->add_option("--end-frame", args->end_frame,
                   "BADJA: track frames [0, N) only, score the annotated frames inside (-1 = all)")
      ->type_name("INT")
      ->capture_default_str();
  command
      ->add_option("--synthetic", args->synthetic_seed,
                   "synthetic clips from this seed (1000000 = the trainer's validation set)")
      ->type_name("SEED");
  command->add_option("--clips", args->clips, "synthetic clips")->type_name("INT")->capture_default_str();
  command->add_option("--frames", args->frames, "frames per synthetic clip")->type_name("INT")->capture_default_str();
  command->add_option("--points", args->points, "query points per synthetic clip")
      ->type_name("INT")
      ->capture_default_str();
  command->add_option("--model", args->model, "default, small, base (official checkpoints) or a weights file")
      ->capture_default_str();
  command->add_option("--device", args->device, "auto, cpu, cuda, cuda:N")->capture_default_str();
  command->add_option("--precision", args->precision, "fp32 (exact), tf32, bf16, fp16")->capture_default_str();
  command
      ->add_option("--resize", args->resize, "lanczos (PIL Lanczos to 256x256, as the official evaluation) or bilinear")
      ->capture_default_str();
  command->add_option("--baseline-weights", args->baseline_weights,
                      "random weights of the same model: a second, baseline run");
  command->add_option("--json", args->json, "write the results here");
  command->add_option("--threads", args->threads, "CPU threads for LibTorch (0 = leave the default)")
      ->type_name("INT")
      ->capture_default_str();
  command->add_flag("-q,--quiet", args->quiet, "no progress bars");
  command->allow_extras();  // reported by run_eval as a bad argument (exit 2) like every other argument error
  command->callback([&context, args, command] { context.exit_code = run_eval(*args, command->remaining()); });
}

}  // namespace trackscope::app
