#pragma once
// Batch tracking on a Slurm cluster: a job array with one task per shard of the job list. Each task runs
// `trackscope-cli batch JOBS --out DIR --shard K/N ...` on its node, writing its clips' outputs and records into
// DIR (which must be on a filesystem every node sees); collect_batch() (batch_summary.h) then gathers them into
// the same summary a local run writes.
//
//   SlurmOptions slurm;
//   slurm.cli = "/opt/trackscope/bin/trackscope-cli"; slurm.jobs_file = "/shared/jobs.jsonl";
//   slurm.out_dir = "/shared/out"; slurm.tasks = 8; slurm.gpus_per_task = 1;
//   TRACKSCOPE_RETURN_IF_ERROR(io::write_file_atomically(slurm_script_path(slurm.out_dir), slurm_script(slurm)));
//   Expected<std::string> job = submit_slurm_job(slurm_script_path(slurm.out_dir));   // "4242"
//   TRACKSCOPE_RETURN_IF_ERROR(wait_for_slurm_job(*job, 5.0, [](int pending) {}));
//
// The script: #SBATCH lines for the array (0..tasks-1), its log files DIR/slurm/shard-%a.log, partition, GPUs
// and CPUs per task, time and memory limits and any extra options; then the setup lines (module loads,
// environment), the trackscope-cli call, and DIR/slurm/shard-K.exit with the task's exit code.
// Threads: the functions that run sbatch/squeue block; the rest are pure.

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"

namespace trackscope::core {

struct SlurmOptions {
  std::filesystem::path cli;        // trackscope-cli as the nodes see it (absolute)
  std::filesystem::path jobs_file;  // absolute, on the shared filesystem
  std::filesystem::path out_dir;    // absolute, on the shared filesystem
  int tasks = 1;                    // array tasks = shards of the job list
  std::string partition;            // empty: the cluster's default
  int gpus_per_task = 0;            // 0: no GPU requested (CPU workers)
  int cpus_per_task = 0;            // 0: the cluster's default
  std::string time_limit;           // "HH:MM:SS", "D-HH:MM:SS"; empty: the partition's default
  std::string memory;               // --mem per task, e.g. "32G"; empty: the default
  std::string job_name = "trackscope-batch";
  std::vector<std::string> extra_options;    // more #SBATCH options, e.g. "--account=lab", "--gres=gpu:a100:1"
  std::vector<std::string> setup_lines;      // shell lines before the call: "module load cuda/12.4", ...
  std::vector<std::string> batch_arguments;  // passed on to every task's `batch`: --devices, --threads, ...

  Status check() const;
};

/// DIR/slurm/batch.sbatch.
std::filesystem::path slurm_script_path(const std::filesystem::path& out_dir);
/// The sbatch script (see the header comment).
std::string slurm_script(const SlurmOptions& options);

/// `text` quoted for a POSIX shell ('...' with embedded quotes escaped).
std::string shell_quote(const std::string& text);

/// Runs `sbatch --parsable SCRIPT` and returns the job id. not_found when sbatch is not installed; io_error with
/// sbatch's own message when it refuses.
Expected<std::string> submit_slurm_job(const std::filesystem::path& script);
/// Polls `squeue` every `poll_seconds` until no task of the job is pending or running; `on_poll` gets the count
/// still queued or running.
Status wait_for_slurm_job(const std::string& job_id, double poll_seconds, const std::function<void(int)>& on_poll);

}  // namespace trackscope::core
