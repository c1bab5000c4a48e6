#include "core/batch/slurm.h"

#include <sys/wait.h>

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

namespace trackscope::core {
namespace {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

Expected<CommandResult> run_command(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return io_error(fmt::format("cannot run '{}'", command));
  CommandResult result;
  std::array<char, 4096> buffer{};
  size_t read = 0;
  while ((read = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), read);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

Status SlurmOptions::check() const {
  if (!cli.is_absolute() || !jobs_file.is_absolute() || !out_dir.is_absolute()) {
    return invalid_argument("Slurm tasks need absolute paths of trackscope-cli, the job file and the output folder");
  }
  if (tasks < 1 || tasks > 100000) return invalid_argument(fmt::format("--tasks must be 1 to 100000, got {}", tasks));
  if (gpus_per_task < 0 || cpus_per_task < 0) return invalid_argument("GPUs and CPUs per task must be >= 0");
  for (const std::string& option : extra_options) {
    if (option.rfind("--", 0) != 0 || option.find('\n') != std::string::npos) {
      return invalid_argument(fmt::format("extra Slurm option '{}' must be one --option[=value]", option));
    }
  }
  return {};
}

std::filesystem::path slurm_script_path(const std::filesystem::path& out_dir) {
  return out_dir / "slurm" / "batch.sbatch";
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string slurm_script(const SlurmOptions& o) {
  const std::filesystem::path slurm_dir = o.out_dir / "slurm";
  std::string s = "#!/bin/bash\n";
  s += fmt::format("#SBATCH --job-name={}\n", o.job_name);
  s += fmt::format("#SBATCH --array=0-{}\n", o.tasks - 1);
  s += "#SBATCH --ntasks=1\n";
  s += fmt::format("#SBATCH --output={}\n", (slurm_dir / "shard-%a.log").string());
  if (!o.partition.empty()) s += fmt::format("#SBATCH --partition={}\n", o.partition);
  if (o.gpus_per_task > 0) s += fmt::format("#SBATCH --gpus-per-task={}\n", o.gpus_per_task);
  if (o.cpus_per_task > 0) s += fmt::format("#SBATCH --cpus-per-task={}\n", o.cpus_per_task);
  if (!o.time_limit.empty()) s += fmt::format("#SBATCH --time={}\n", o.time_limit);
  if (!o.memory.empty()) s += fmt::format("#SBATCH --mem={}\n", o.memory);
  for (const std::string& option : o.extra_options) s += fmt::format("#SBATCH {}\n", option);
  s += "# Written by trackscope-cli batch --slurm: one array task per shard of the job list; the outputs and\n";
  s += "# records go to the shared output folder, `trackscope-cli batch --collect DIR` gathers them.\n";
  s += "set -u\n";
  for (const std::string& line : o.setup_lines) s += line + "\n";
  std::string call =
      fmt::format("{} batch {} --out {} --shard \"${{SLURM_ARRAY_TASK_ID}}/{}\"", shell_quote(o.cli.string()),
                  shell_quote(o.jobs_file.string()), shell_quote(o.out_dir.string()), o.tasks);
  for (const std::string& argument : o.batch_arguments) call += " " + shell_quote(argument);
  s += call + "\n";
  s += "rc=$?\n";
  s +=
      fmt::format("echo \"$rc\" > {}\"${{SLURM_ARRAY_TASK_ID}}.exit\"\n", shell_quote((slurm_dir / "shard-").string()));
  s += "exit \"$rc\"\n";
  return s;
}

Expected<std::string> submit_slurm_job(const std::filesystem::path& script) {
  Expected<CommandResult> which = run_command("command -v sbatch");
  if (!which || which->exit_code != 0) {
    return not_found("sbatch is not installed here: run on a Slurm login node (or install slurm-wlm)");
  }
  Expected<CommandResult> result = run_command("sbatch --parsable " + shell_quote(script.string()));
  if (!result) return result.status();
  const std::string output = trimmed(result->output);
  if (result->exit_code != 0) return io_error(fmt::format("sbatch refused the job: {}", output));
  // --parsable prints "jobid" or "jobid;cluster"; warnings may come on lines before it.
  const std::string last = output.substr(output.rfind('\n') == std::string::npos ? 0 : output.rfind('\n') + 1);
  const std::string id = last.substr(0, last.find(';'));
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
    return io_error(fmt::format("sbatch answered '{}', not a job id", output));
  }
  return id;
}

Status wait_for_slurm_job(const std::string& job_id, double poll_seconds, const std::function<void(int)>& on_poll) {
  int failures = 0;
  while (true) {
    Expected<CommandResult> result = run_command("squeue -h -j " + shell_quote(job_id) + " -o %i");
    if (!result || result->exit_code != 0) {
      // squeue fails for a job id it no longer knows (finished and purged): that is the end too, but a few
      // failures in a row while the controller is busy are retried.
      if (++failures >= 3) return {};
    } else {
      failures = 0;
      int queued = 0;
      std::istringstream lines(result->output);
      for (std::string line; std::getline(lines, line);) {
        if (!trimmed(line).empty()) ++queued;
      }
      if (on_poll) on_poll(queued);
      if (queued == 0) return {};
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_seconds));
  }
}

}  // namespace trackscope::core
