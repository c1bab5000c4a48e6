// trackscope-cli eval: accuracy of a tracker model next to baselines, scored by core/tracking/evaluation.h and
// reported by core/tracking/evaluation_report.h.
//   --badja ANNOTATIONS --video FRAMES_DIR_OR_FILE [--masks DIR] [--end-frame N]   BADJA PCK on a real clip
//   --synthetic SEED [--clips N] [--frames T] [--points N]                         TAP-Vid metrics, query-first
// Prints a short table on stdout (progress on stderr) and writes --json OUT. Baselines: "the point does not move"
// (always) and the same model architecture with random weights (--baseline-weights FILE).
// Exit codes: 0 ok, 2 bad arguments (before anything is loaded), 1 any other error (one line on stderr).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/io/atomic_file.h"
#include "core/limits.h"
#include "core/tracking/evaluation.h"
#include "core/tracking/evaluation_report.h"
#include "core/tracking/point_tracker.h"
#include "core/tracking/progress_bar.h"
#include "gpu/cpu_runtime.h"
#include "gpu/tracker_factory.h"
#include "gpu/training.h"

namespace trackscope::app {
namespace {

struct EvalArguments {
  std::string badja;
  std::string video;
  std::string masks;
  int64_t end_frame = -1;
  uint64_t synthetic_seed = 0;
  bool synthetic = false;  // --synthetic was given
  int64_t clips = 32;
  int64_t frames = 24;
  int64_t points = 256;
  std::string model = "default";
  std::string device = "auto";
  std::string precision = "fp32";
  std::string resize = "lanczos";
  std::string baseline_weights;
  std::string json;
  int threads = 0;
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

core::Expected<EvalPlan> make_plan(const EvalArguments& args) {
  EvalPlan plan;
  if (args.badja.empty() && !args.synthetic) {
    return core::invalid_argument(
        "nothing to evaluate: give --badja ANNOTATIONS --video VIDEO and/or --synthetic SEED");
  }
  if (!args.badja.empty()) {
    if (args.video.empty()) return core::invalid_argument("--badja needs --video (the clip's frames folder or file)");
    plan.badja = args.badja;
    plan.video = args.video;
    plan.masks = args.masks;
    plan.badja_options.end_frame = args.end_frame;
    TRACKSCOPE_RETURN_IF_ERROR(plan.badja_options.check());
  } else if (!args.video.empty() || !args.masks.empty()) {
    return core::invalid_argument("--video and --masks belong to --badja");
  }
  if (args.synthetic) {
    gpu::SyntheticEvaluationOptions synthetic;
    synthetic.seed = args.synthetic_seed;
    synthetic.clips = args.clips;
    synthetic.data.frames = args.frames;
    synthetic.data.points = args.points;
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
  core::Expected<core::ThreadCount> threads = core::cap_thread_count(args.threads, "--threads");
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

// One tracker's results (the model or the random-weights baseline).
struct RunResult {
  core::TrackerDescription description;
  std::optional<core::BadjaEvaluation> badja;
  std::optional<core::TapVidEvaluation> synthetic;
};

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
    core::ProgressBar progress(!plan.quiet, label + " badja");
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
    core::ProgressBar progress(!plan.quiet, label + " synthetic");
    core::Expected<core::TapVidEvaluation> synthetic = core::evaluate_tapvid(**tracker, inputs.clips, progress);
    if (!synthetic) return synthetic.status().with_context(fmt::format("synthetic clips with {}", label));
    result.synthetic = std::move(*synthetic);
  }
  return result;
}

core::EvaluationReport make_report(const EvalPlan& plan, RunResult model, std::optional<RunResult> baseline) {
  core::EvaluationReport report;
  report.model = {model.description, plan.tracker.model};
  report.resize = plan.tracker.resize;
  if (baseline)
    report.random_weights_model = core::EvaluationReport::Model{baseline->description, plan.baseline_weights};
  if (model.badja) {
    report.badja = core::EvaluationReport::Badja{*plan.badja, plan.video, plan.masks, std::move(*model.badja), {}};
    if (baseline) report.badja->random_weights = baseline->badja->pck;
  }
  if (model.synthetic) {
    const gpu::SyntheticEvaluationOptions& o = *plan.synthetic;
    report.synthetic = core::EvaluationReport::Synthetic{
        {o.seed, o.clips, o.data.frames, o.data.points, o.data.width, o.data.height}, std::move(*model.synthetic), {}};
    if (baseline) report.synthetic->random_weights = baseline->synthetic->model;
  }
  return report;
}

int run_eval(const EvalArguments& args) {
  auto fail = [](const core::Status& status, int code) {
    std::fprintf(stderr, "trackscope-cli eval: %s\n", status.message().c_str());
    return code;
  };
  core::Expected<EvalPlan> plan = make_plan(args);
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

  const core::EvaluationReport report = make_report(*plan, std::move(*model), std::move(baseline));
  std::fputs(core::format_evaluation_report(report).c_str(), stdout);
  if (!plan->json.empty()) {
    if (core::Status s = core::write_evaluation_report(plan->json, report); !s) return fail(s, 1);
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
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 40))
      ->capture_default_str();
  CLI::Option* seed = command->add_option("--synthetic", args->synthetic_seed,
                                          "synthetic clips from this seed (1000000 = the trainer's validation set)");
  seed->type_name("SEED");
  command->add_option("--clips", args->clips, "synthetic clips")->check(CLI::Range(1, 4096))->capture_default_str();
  command->add_option("--frames", args->frames, "frames per synthetic clip")
      ->check(CLI::Range(2, 4096))
      ->capture_default_str();
  command->add_option("--points", args->points, "query points per synthetic clip")
      ->check(CLI::Range(1, 1 << 20))
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
  command
      ->add_option("--threads", args->threads,
                   "CPU threads for LibTorch (0 = leave the default; at most the machine's)")
      ->capture_default_str();
  command->add_flag("-q,--quiet", args->quiet, "no progress bars");
  command->callback([&context, args, seed] {
    args->synthetic = seed->count() > 0;
    context.exit_code = run_eval(*args);
  });
}

}  // namespace trackscope::app
