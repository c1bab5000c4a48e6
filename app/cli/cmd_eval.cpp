// trackscope-cli eval: accuracy of a tracker model next to baselines, scored by core/tracking/evaluation.h and
// reported by core/tracking/evaluation_report.h.
//   --badja ANNOTATIONS --video FRAMES_DIR_OR_FILE [--masks DIR] [--end-frame N]   BADJA PCK on a real clip
//   --synthetic SEED [--clips N] [--frames T] [--points N]                         TAP-Vid metrics, query-first
//   --stability [--brightness L] [--jpeg-quality Q] [--stability-precisions P,P]   track change under small changes
//   --video V --queries Q.csv|grid:16x16@frame0                                    stability only, on any clip
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
#include "core/tracking/evaluation_stability.h"
#include "core/tracking/point_tracker.h"
#include "core/tracking/progress_bar.h"
#include "core/tracking/query_spec.h"
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
  bool stability = false;
  std::string queries;
  int brightness = 2;
  int jpeg_quality = 90;
  std::vector<std::string> stability_precisions = {"fp16", "bf16"};
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
  std::optional<core::StabilityOptions> stability;
  std::optional<core::QuerySpec> stability_queries;  // --queries: stability on a clip without annotations
  std::string stability_queries_text;
};

core::Expected<EvalPlan> make_plan(const EvalArguments& args) {
  EvalPlan plan;
  if (args.badja.empty() && !args.synthetic && args.queries.empty()) {
    return core::invalid_argument(
        "nothing to evaluate: give --badja ANNOTATIONS --video VIDEO, --synthetic SEED and/or --video VIDEO "
        "--queries Q --stability");
  }
  if (!args.queries.empty()) {
    if (!args.badja.empty()) {
      return core::invalid_argument(
          "--queries is for a clip without annotations: with --badja the queries are the "
          "joints of the first annotated frame");
    }
    if (args.video.empty()) return core::invalid_argument("--queries needs --video (the clip to track)");
    core::Expected<core::QuerySpec> spec = core::parse_query_spec(args.queries);
    if (!spec) return spec.status();
    plan.stability_queries = *spec;
    plan.stability_queries_text = args.queries;
    plan.video = args.video;
    plan.badja_options.end_frame = args.end_frame;
    TRACKSCOPE_RETURN_IF_ERROR(plan.badja_options.check());
  }
  if (args.stability || !args.queries.empty()) {
    if (args.badja.empty() && args.queries.empty()) {
      return core::invalid_argument(
          "--stability needs a clip: --badja ANNOTATIONS --video V, or --video V --queries Q");
    }
    core::StabilityOptions stability;
    stability.brightness_levels.clear();
    if (args.brightness != 0) stability.brightness_levels = {+args.brightness, -args.brightness};
    stability.jpeg_qualities.clear();
    if (args.jpeg_quality != 0) stability.jpeg_qualities = {args.jpeg_quality};
    stability.precisions.clear();
    for (const std::string& name : args.stability_precisions) {
      if (name == "none") continue;
      core::Expected<core::Precision> precision = core::parse_precision(name);
      if (!precision) return precision.status();
      stability.precisions.push_back(*precision);
    }
    TRACKSCOPE_RETURN_IF_ERROR(stability.check());
    plan.stability = stability;
  }
  if (!args.badja.empty()) {
    if (args.video.empty()) return core::invalid_argument("--badja needs --video (the clip's frames folder or file)");
    plan.badja = args.badja;
    plan.video = args.video;
    plan.masks = args.masks;
    plan.badja_options.end_frame = args.end_frame;
    TRACKSCOPE_RETURN_IF_ERROR(plan.badja_options.check());
  } else if ((!args.video.empty() && args.queries.empty()) || !args.masks.empty()) {
    return core::invalid_argument("--video and --masks belong to --badja (or --video to --queries)");
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
  std::optional<core::StabilityEvaluation> stability;
};

// Inputs loaded once and shared by the model and the baseline.
struct EvalInputs {
  core::BadjaAnnotations annotations;
  std::unique_ptr<core::VideoSource> video;
  std::vector<core::TapVidClip> clips;
  std::vector<core::Query> stability_queries;  // --queries, resolved on the video
};

// The stability rows of the model's tracks: on the BADJA run's queries and frames, or on --queries (tracked here
// first, as the reference).
core::Expected<core::StabilityEvaluation> run_stability(core::TrackerFactory& factory,
                                                        const core::TrackerOptions& options, const EvalPlan& plan,
                                                        EvalInputs& inputs, core::PointTracker& tracker,
                                                        const RunResult& result) {
  core::TrackRequest request;
  core::TrackSet reference;
  if (result.badja) {
    for (const core::BadjaQuery& q : result.badja->queries) request.queries.push_back(q.query);
    request.first_frame = result.badja->first_frame;
    request.end_frame = result.badja->end_frame;
    reference = result.badja->tracks;
  } else {
    request.queries = inputs.stability_queries;
    request.end_frame = plan.badja_options.end_frame;
    core::ProgressBar progress(!plan.quiet, "model reference");
    core::Expected<core::TrackSet> tracks = tracker.track(*inputs.video, request, progress, {});
    if (!tracks) return tracks.status().with_context("tracking the stability reference");
    reference = std::move(*tracks);
  }
  core::ProgressBar progress(!plan.quiet, "model stability");
  return core::evaluate_stability(factory, options, tracker, *inputs.video, request, reference, *plan.stability,
                                  progress);
}

core::Expected<RunResult> run_tracker(core::TrackerFactory& factory, const core::TrackerOptions& options,
                                      const EvalPlan& plan, EvalInputs& inputs, const std::string& label,
                                      bool with_stability) {
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
  if (with_stability && plan.stability) {
    core::Expected<core::StabilityEvaluation> stability =
        run_stability(factory, options, plan, inputs, **tracker, result);
    if (!stability) return stability.status().with_context(fmt::format("stability of {}", label));
    result.stability = std::move(*stability);
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
  if (model.stability) {
    report.stability = core::EvaluationReport::Stability{
        plan.video, plan.badja ? std::string("badja") : plan.stability_queries_text, std::move(*model.stability)};
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
    core::Expected<core::BadjaAnnotations> annotations = core::load_badja_annotations(*plan->badja, plan->masks);
    if (!annotations) return fail(annotations.status(), 1);
    inputs.annotations = std::move(*annotations);
  }
  if (plan->badja || plan->stability_queries) {
    core::Expected<std::unique_ptr<core::VideoSource>> video = core::VideoSource::open(plan->video);
    if (!video) return fail(video.status(), 1);
    inputs.video = std::move(*video);
  }
  if (plan->stability_queries) {
    core::Expected<std::vector<core::Query>> queries =
        core::resolve_queries(*plan->stability_queries, inputs.video->info());
    if (!queries) return fail(queries.status(), 1);
    inputs.stability_queries = std::move(*queries);
  }
  gpu::keep_freed_host_memory();
  if (plan->threads > 0) gpu::set_cpu_threads(plan->threads);
  std::unique_ptr<core::TrackerFactory> factory = gpu::make_tracker_factory({});
  core::Expected<RunResult> model = run_tracker(*factory, plan->tracker, *plan, inputs, "model", true);
  if (!model) return fail(model.status(), 1);
  std::optional<RunResult> baseline;
  if (!plan->baseline_weights.empty()) {
    core::TrackerOptions options = plan->tracker;
    options.model = plan->baseline_weights;
    options.device = model->description.device.id;  // the same device as the model, also for "auto"
    core::Expected<RunResult> random = run_tracker(*factory, options, *plan, inputs, "random weights", false);
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
      "next to the 'does not move' and random-weights baselines, with the calibration of p_occluded and p_far; "
      "--stability: how far the tracks move under a +-2 grey-level shift, JPEG re-encoding and fp16/bf16");
  auto args = std::make_shared<EvalArguments>();
  command->add_option("--badja", args->badja,
                      "BADJA joint annotations: derived CSV (with thresholds) or BADJA JSON (needs --masks)");
  command->add_option("--video", args->video, "the annotated clip: frames folder, image pattern or video file");
  command->add_option("--masks", args->masks,
                      "folder of per-frame foreground masks (00026.png ...): PCK thresholds 0.2 sqrt(area)");
  command
      ->add_option("--end-frame", args->end_frame,
                   "BADJA and --queries: track frames [0, N) only (BADJA: score the annotated frames inside; -1 = all)")
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
      ->add_option(
          "--threads", args->threads,
          "CPU threads for LibTorch (0 = automatic: OMP_NUM_THREADS if set, else every CPU this process may use)")
      ->capture_default_str();
  command->add_flag("--stability", args->stability,
                    "also track the clip's queries again under small input and precision changes and report the "
                    "track change (the BADJA clip, or --video with --queries)");
  command->add_option("--queries", args->queries,
                      "stability on a clip without annotations: Q.csv (frame,x,y) or grid:COLSxROWS[@frameN]");
  command->add_option("--brightness", args->brightness, "stability: grey-level shift, applied up and down (0 = none)")
      ->check(CLI::Range(0, 255))
      ->capture_default_str();
  command->add_option("--jpeg-quality", args->jpeg_quality, "stability: JPEG re-encoding quality (0 = none)")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  command
      ->add_option("--stability-precisions", args->stability_precisions,
                   "stability: the same model at these precisions (fp16, bf16, tf32; none)")
      ->delimiter(',')
      ->capture_default_str();
  command->add_flag("-q,--quiet", args->quiet, "no progress bars");
  command->callback([&context, args, seed] {
    args->synthetic = seed->count() > 0;
    context.exit_code = run_eval(*args);
  });
}

}  // namespace trackscope::app
