// trackscope-cli: the headless tool (video info, frame export, tracking, benchmarks, conversion).
#include <csignal>
#include <cstdio>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "core/limits.h"
#include "core/log.h"
#include "gpu/cpu_runtime.h"

int main(int argc, char** argv) {
  using namespace trackscope;
  // A write past `ulimit -f` then fails with EFBIG and is reported (the previous file kept) instead of killing
  // the process with SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  bool verbose = false;
  CLI::App app{"trackscope-cli: track points through video with LocoTrack, headless"};
  app.require_subcommand(1);
  app.add_flag("-v,--verbose", verbose, "log debug messages to stderr");
  app.set_version_flag("--version", [] { return app::version_text(); });
  app::CliContext context;
  app::add_devices_command(app, context);
  app::add_convert_command(app, context);
  app::add_average_command(app, context);
  app::add_compare_command(app, context);
  app::add_gpus_command(app, context);
  app::add_info_command(app, context);
  app::add_frames_command(app, context);
  app::add_bench_video_command(app, context);
  app::add_track_command(app, context);
  app::add_eval_command(app, context);
  app::add_batch_command(app, context);
  std::string command_line = "trackscope-cli";
  for (int i = 1; i < argc; ++i) command_line += std::string(" ") + argv[i];
  app::add_bench_command(app, context, command_line);

  core::log::SinkHandle sink;
  app.parse_complete_callback([&] {
    sink = core::log::add_sink(
        [](core::log::Level level, std::string_view text) {
          std::fprintf(stderr, "[%s] %.*s\n", core::log::to_string(level), static_cast<int>(text.size()), text.data());
        },
        verbose ? core::log::Level::debug : core::log::Level::warning);
    // Every core unless OMP_NUM_THREADS says otherwise; a command's --threads overrides it.
    gpu::set_cpu_threads(core::automatic_cpu_threads());
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // Every bad argument is exit 2 with one line naming the command, whether CLI11's validators or a command's
    // own checks found it.
    std::string name = "trackscope-cli";
    for (const CLI::App* command : app.get_subcommands()) name += " " + command->get_name();
    std::fprintf(stderr, "%s: %s\nRun with --help for more information.\n", name.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trackscope-cli: error: %s\n", e.what());
    return 1;
  }
  return context.exit_code;
}
