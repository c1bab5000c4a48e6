#pragma once
// Each trackscope-cli subcommand registers itself on the CLI11 app. A command's callback sets the process
// exit code through `exit_code`; errors are printed as one clear line on stderr.

#include <CLI/CLI.hpp>

#include <string>

namespace trackscope::app {

struct CliContext {
  int exit_code = 0;
};

/// "trackscope-cli 0.1.0 (LibTorch 1.13.0, CPU only)": what `--version` prints (cmd_devices.cpp).
std::string version_text();

void add_devices_command(CLI::App& app, CliContext& context);
void add_convert_command(CLI::App& app, CliContext& context);
void add_average_command(CLI::App& app, CliContext& context);
void add_compare_command(CLI::App& app, CliContext& context);  // cmd_compare.cpp
void add_gpus_command(CLI::App& app, CliContext& context);     // cmd_compare.cpp
void add_info_command(CLI::App& app, CliContext& context);
void add_frames_command(CLI::App& app, CliContext& context);
void add_bench_video_command(CLI::App& app, CliContext& context);
void add_track_command(CLI::App& app, CliContext& context);
void add_eval_command(CLI::App& app, CliContext& context);   // cmd_eval.cpp
void add_batch_command(CLI::App& app, CliContext& context);  // cmd_batch.cpp
/// `command_line` is recorded in the bench JSON.
void add_bench_command(CLI::App& app, CliContext& context, std::string command_line);

}  // namespace trackscope::app
