// trackscope-cli batch JOBS.jsonl --out DIR: every clip of a job list on one worker per device
// (core/batch/batch_runner.h), resumable, with a summary; or as a Slurm job array (--slurm), gathered by
// `batch --collect DIR`. docs/batch.md.
// Exit codes: 0 every clip ok, 1 a clip failed or was not run (the others are done; see the summary), 2 bad
// arguments.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/batch/batch_jobs.h"
#include "core/batch/batch_printer.h"
#include "core/batch/batch_runner.h"
#include "core/batch/batch_summary.h"
#include "core/batch/slurm.h"
#include "core/io/atomic_file.h"
#include "core/io/safetensors.h"
#include "core/limits.h"
#include "gpu/cpu_runtime.h"
#include "gpu/devices.h"
#include "gpu/tracker_factory.h"

namespace trackscope::app {
namespace {

struct BatchArguments {
  std::string jobs;
  std::string out;
  std::string devices = "auto";
  int threads = 0;
  int64_t memory_budget_mb = 0;
  int max_models = 2;
  bool no_resume = false;
  bool no_backup = false;
  std::vector<int> shard;  // K, N
  bool collect = false;
  bool quiet = false;
  // Slurm
  bool slurm = false;
  bool no_wait = false;
  int tasks = 0;
  std::string partition;
  int gpus_per_task = 0;
  int cpus_per_task = 0;
  std::string time_limit;
  std::string memory;
  std::vector<std::string> slurm_options;
  std::string slurm_setup;
};

int fail(const core::Status& status) {
  std::fprintf(stderr, "trackscope-cli batch: %s\n", status.message().c_str());
  return status.code() == core::StatusCode::invalid_argument ? 2 : 1;
}

// The workers of --devices with their threads and memory budgets.
core::Expected<std::vector<core::BatchWorkerSpec>> make_workers(const BatchArguments& args) {
  std::vector<std::string> all;
  for (const core::DeviceInfo& d : gpu::list_devices()) {
    if (d.is_cuda()) all.push_back(d.id);
  }
  all.push_back("cpu");  // "all": every GPU, then the CPU
  core::Expected<std::vector<std::string>> names = core::parse_worker_devices(args.devices, all);
  if (!names) return names.status();
  std::vector<core::DeviceInfo> devices;
  for (const std::string& name : *names) {
    core::Expected<core::DeviceInfo> device = gpu::resolve_device(name);
    if (!device) return device.status().with_context("--devices");
    devices.push_back(*device);
  }
  return core::plan_batch_workers(devices, {.threads = args.threads,
                                            .memory_budget_mb = args.memory_budget_mb,
                                            .available_cpus = core::available_cpu_threads(),
                                            .default_budget_bytes = gpu::default_memory_budget_bytes});
}

core::BatchDeviceHooks make_hooks() {
  core::BatchDeviceHooks hooks;
  hooks.start_worker = [](const core::BatchWorkerSpec& worker) {
    if (worker.cpu_threads > 0) gpu::set_cpu_threads(worker.cpu_threads);
  };
  hooks.model_sha256 = [](const std::string& model) -> core::Expected<std::string> {
    core::Expected<std::filesystem::path> path = gpu::resolve_model_path(model, {});
    if (!path) return path.status();
    return core::io::weights_sha256(*path);
  };
  hooks.reset_peak_memory = [](const std::string& device) { gpu::reset_peak_device_memory(device); };
  hooks.peak_memory_bytes = [](const std::string& device) { return gpu::peak_device_memory_bytes(device); };
  return hooks;
}

int collect_and_report(const std::filesystem::path& out_dir) {
  core::Expected<core::BatchSummary> summary = core::collect_batch(out_dir);
  if (!summary) return fail(summary.status());
  if (core::Status s = core::write_batch_summary(out_dir, *summary); !s) return fail(s);
  std::fputs(core::format_batch_summary(*summary).c_str(), stdout);
  std::printf("summary: %s, %s\n", (out_dir / "summary.json").string().c_str(),
              (out_dir / "summary.csv").string().c_str());
  return summary->failed > 0 || summary->not_run > 0 ? 1 : 0;
}

// The arguments every Slurm task passes on to its own `batch` run.
std::vector<std::string> task_arguments(const BatchArguments& args) {
  std::vector<std::string> out = {"--devices", args.devices, "--max-models", std::to_string(args.max_models), "-q"};
  if (args.threads > 0) out.insert(out.end(), {"--threads", std::to_string(args.threads)});
  if (args.memory_budget_mb > 0) out.insert(out.end(), {"--memory-budget-mb", std::to_string(args.memory_budget_mb)});
  if (args.no_resume) out.push_back("--no-resume");
  if (args.no_backup) out.push_back("--no-backup");
  return out;
}

int run_slurm(const BatchArguments& args, const core::BatchJobList& jobs, const std::filesystem::path& out_dir) {
  core::SlurmOptions slurm;
  std::error_code error;
  slurm.cli = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return fail(core::io_error("cannot find this program's own path for the Slurm tasks"));
  slurm.jobs_file = jobs.path;
  slurm.out_dir = out_dir;
  slurm.tasks = args.tasks > 0 ? args.tasks : static_cast<int>(jobs.entries.size());
  slurm.partition = args.partition;
  slurm.gpus_per_task = args.gpus_per_task;
  slurm.cpus_per_task = args.cpus_per_task;
  slurm.time_limit = args.time_limit;
  slurm.memory = args.memory;
  slurm.extra_options = args.slurm_options;
  if (!args.slurm_setup.empty()) {
    core::Expected<std::string> setup = core::io::read_file(args.slurm_setup, 1 << 20);
    if (!setup) return fail(setup.status().with_context("--slurm-setup"));
    std::istringstream lines(*setup);
    for (std::string line; std::getline(lines, line);) slurm.setup_lines.push_back(line);
  }
  slurm.batch_arguments = task_arguments(args);
  if (core::Status s = slurm.check(); !s) return fail(s);
  if (core::Status s = core::write_batch_plan(out_dir, jobs); !s) return fail(s);
  std::filesystem::create_directories(out_dir / "slurm", error);
  if (error) return fail(core::io_error(fmt::format("cannot create {}/slurm: {}", out_dir.string(), error.message())));
  const std::filesystem::path script = core::slurm_script_path(out_dir);
  if (core::Status s = core::io::write_file_atomically(script, core::slurm_script(slurm)); !s) return fail(s);
  core::Expected<std::string> job = core::submit_slurm_job(script);
  if (!job) return fail(job.status());
  std::fprintf(stderr, "submitted Slurm job %s: %d tasks over %zu clips (script %s, logs %s/slurm/shard-*.log)\n",
               job->c_str(), slurm.tasks, jobs.entries.size(), script.string().c_str(), out_dir.string().c_str());
  if (args.no_wait) {
    std::printf("%s\n", job->c_str());
    std::fprintf(stderr, "when it is done: trackscope-cli batch --collect %s\n", out_dir.string().c_str());
    return 0;
  }
  int last = -1;
  core::Status waited = core::wait_for_slurm_job(*job, 2.0, [&last, &args](int queued) {
    if (queued != last && !args.quiet) std::fprintf(stderr, "Slurm job: %d task(s) pending or running\n", queued);
    last = queued;
  });
  if (!waited) return fail(waited);
  return collect_and_report(out_dir);
}

int run_batch_command(const BatchArguments& args) {
  if (args.out.empty()) return fail(core::invalid_argument("give the output folder: --out DIR"));
  const std::filesystem::path out_dir = std::filesystem::absolute(args.out).lexically_normal();
  if (args.collect) {
    if (!args.jobs.empty() || args.slurm) {
      return fail(core::invalid_argument("--collect DIR gathers a finished batch: no job file, no --slurm"));
    }
    return collect_and_report(out_dir);
  }
  if (args.jobs.empty()) return fail(core::invalid_argument("give the job file: batch JOBS.jsonl --out DIR"));
  core::Expected<core::BatchJobList> jobs = core::read_batch_jobs(args.jobs);
  if (!jobs) return fail(jobs.status());
  if (args.slurm) {
    if (!args.shard.empty()) return fail(core::invalid_argument("--slurm makes the shards itself: no --shard"));
    return run_slurm(args, *jobs, out_dir);
  }

  core::BatchOptions options;
  options.out_dir = out_dir;
  options.max_cached_trackers = args.max_models;
  options.resume = !args.no_resume;
  options.backup_attempts = !args.no_backup;
  if (!args.shard.empty()) {
    options.shard_index = args.shard[0];
    options.shard_count = args.shard[1];
  }
  gpu::keep_freed_host_memory();
  core::Expected<std::vector<core::BatchWorkerSpec>> workers = make_workers(args);
  if (!workers) return fail(workers.status());
  options.workers = std::move(*workers);
  if (core::Status s = options.check(); !s) return fail(s);
  if (!args.quiet) {
    std::string list;
    for (const core::BatchWorkerSpec& w : options.workers) {
      list += fmt::format("{}{} ({} MiB{})", list.empty() ? "" : ", ", w.device, w.memory_budget_mb,
                          w.cpu_threads > 0 ? fmt::format(", {} threads", w.cpu_threads) : "");
    }
    std::fprintf(
        stderr, "batch: %zu clips%s on %zu workers: %s\n", jobs->entries.size(),
        options.shard_count > 1 ? fmt::format(" (shard {}/{})", options.shard_index, options.shard_count).c_str() : "",
        options.workers.size(), list.c_str());
  }

  std::unique_ptr<core::TrackerFactory> factory = gpu::make_tracker_factory({});
  const core::BatchDeviceHooks hooks = make_hooks();
  core::BatchPrinter printer({.quiet = args.quiet});
  core::Expected<core::BatchRun> run = core::run_batch(*jobs, *factory, options, hooks, printer);
  if (!run) return fail(run.status());
  if (options.shard_count > 1) {
    // A shard of a Slurm array: the submitter (or `--collect`) writes the summary of all shards.
    for (const core::ClipRecord& r : run->clips) {
      if (r.status != "ok") return 1;
    }
    return 0;
  }
  return collect_and_report(out_dir);
}

}  // namespace

void add_batch_command(CLI::App& app, CliContext& context) {
  CLI::App* command = app.add_subcommand(
      "batch", "track every clip of a JSON Lines job list on several devices, resumably; or on Slurm (docs/batch.md)");
  auto args = std::make_shared<BatchArguments>();
  command->add_option("jobs", args->jobs, "JSON Lines job list: one clip per line (docs/batch.md)");
  command->add_option("--out", args->out, "output folder (outputs, records, summary.json, summary.csv)")->required();
  command
      ->add_option("--devices", args->devices,
                   "workers, one per device: cuda:0,cuda:1,cpu; all (every GPU and the CPU); auto; DEVICE*N for N "
                   "workers on one device (cpu*3)")
      ->capture_default_str();
  command
      ->add_option("--threads", args->threads,
                   "LibTorch threads per CPU worker (0 = the free cores shared among the CPU workers)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  command
      ->add_option("--memory-budget-mb", args->memory_budget_mb,
                   "working-memory budget per worker (0 = the device's default shared among its workers)")
      ->check(CLI::Range(int64_t{0}, std::numeric_limits<int64_t>::max() >> 20))
      ->capture_default_str();
  command->add_option("--max-models", args->max_models, "trackers each worker keeps loaded")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command->add_flag("--no-resume", args->no_resume, "track every clip again, even those finished before");
  command->add_flag("--no-backup", args->no_backup, "never run a slow clip on an idle worker too");
  command->add_option("--shard", args->shard, "run only shard K of N (K/N; Slurm array tasks use it)")
      ->delimiter('/')
      ->expected(2)
      ->type_name("K/N")
      ->check(CLI::Range(0, 100000));
  command->add_flag("--collect", args->collect, "gather the records in --out DIR into summary.json and summary.csv");
  command->add_flag("-q,--quiet", args->quiet, "no progress bar (the per-clip lines stay)");
  command->add_flag("--slurm", args->slurm, "submit a Slurm job array (one task per shard) instead of running here");
  command->add_flag("--no-wait", args->no_wait, "Slurm: return once submitted (then: batch --collect DIR)");
  command->add_option("--tasks", args->tasks, "Slurm: array tasks, i.e. shards (default: one per clip)")
      ->check(CLI::Range(1, 100000));
  command->add_option("--partition", args->partition, "Slurm: partition");
  command->add_option("--gpus-per-task", args->gpus_per_task, "Slurm: GPUs per task")->check(CLI::Range(0, 64));
  command->add_option("--cpus-per-task", args->cpus_per_task, "Slurm: CPUs per task")->check(CLI::Range(0, 4096));
  command->add_option("--time", args->time_limit, "Slurm: time limit per task (HH:MM:SS)");
  command->add_option("--mem", args->memory, "Slurm: memory per task (e.g. 32G)");
  command->add_option("--slurm-option", args->slurm_options,
                      "Slurm: another #SBATCH option (repeatable), e.g. --account=lab");
  command->add_option("--slurm-setup", args->slurm_setup,
                      "Slurm: a file of shell lines run before each task (module load ..., export ...)");
  command->callback([&context, args] { context.exit_code = run_batch_command(*args); });
}

}  // namespace trackscope::app
