// trackscope-cli bench: the tracker benchmark (gpu/bench.h). Sweeps comma-separated lists of sizes, points,
// frames, precisions and chunks; prints the system, one line per case and a per-stage table; writes the
// profile JSON (docs/bench-json-schema.md) with --json.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/io/atomic_file.h"
#include "core/limits.h"
#include "core/perf/profile.h"
#include "gpu/bench.h"

namespace trackscope::app {
namespace {

struct BenchArguments {
  std::string device = "auto";
  std::string models = "small";
  std::string weights;
  std::string points = "1024";
  std::string frames = "47";
  std::string precisions = "fp32";
  std::string chunks = "0";
  std::string path = "auto";
  std::string corr_kernel = "auto";
  std::string cmdtop = "auto";
  std::string cudnn_benchmark = "auto";
  std::string norm = "auto";
  std::string cuda_graphs = "off";
  std::string video;
  std::string json;
  int repeats = 5;
  int warmup = 2;
  int threads = 0;
  bool no_peaks = false;
  std::string command;
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

core::Expected<std::vector<int>> int_list(const std::string& text, const char* what) {
  std::vector<int> values;
  for (const std::string& item : split_list(text)) {
    try {
      size_t used = 0;
      values.push_back(std::stoi(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      return core::invalid_argument(fmt::format("--{}: '{}' is not an integer", what, item));
    }
  }
  return values;
}

void print_stage_table(const core::Profile& profile) {
  std::printf("\n%-34s %10s %10s %10s %9s %9s\n", "case / stage", "median ms", "p90 ms", "share", "TFLOP/s", "GB/s");
  for (const core::ProfileCase& c : profile.cases) {
    const double total = c.end_to_end.median_ms;
    std::printf("%-34s %10.2f %10.2f %9.0f%%\n", c.name.c_str(), total, c.end_to_end.p90_ms, 100.0);
    for (const core::StageStats& s : c.stages) {
      const double ms = s.stats.median_ms;
      std::printf("  %-32s %10.3f %10.3f %9.1f%% %9.2f %9.0f\n", s.name.c_str(), ms, s.stats.p90_ms,
                  total > 0 ? 100.0 * ms / total : 0.0, ms > 0 ? s.flops / (ms * 1e9) : 0.0,
                  ms > 0 ? s.bytes / (ms * 1e6) : 0.0);
    }
  }
}

int run_bench_command(const BenchArguments& args) {
  auto fail = [](const core::Status& status) {
    std::fprintf(stderr, "trackscope-cli bench: %s\n", status.message().c_str());
    return status.code() == core::StatusCode::invalid_argument ? 2 : 1;
  };
  core::Expected<core::ThreadCount> threads = core::cap_thread_count(args.threads, "--threads");
  if (!threads) return fail(threads.status());
  if (!threads->notice.empty()) std::fprintf(stderr, "trackscope-cli bench: %s\n", threads->notice.c_str());
  // Checked before the benchmark runs (minutes), not after it.
  if (!args.json.empty()) {
    if (core::Status writable = core::io::check_writable(args.json); !writable) return fail(writable);
  }
  gpu::BenchOptions options;
  options.device = args.device;
  options.models = split_list(args.models);
  options.weights = args.weights;
  core::Expected<std::vector<int>> points = int_list(args.points, "points");
  core::Expected<std::vector<int>> frames = int_list(args.frames, "frames");
  core::Expected<std::vector<int>> chunks = int_list(args.chunks, "chunk");
  if (!points) return fail(points.status());
  if (!frames) return fail(frames.status());
  if (!chunks) return fail(chunks.status());
  options.points = *points;
  options.frames = *frames;
  options.chunks = *chunks;
  options.precisions.clear();
  for (const std::string& p : split_list(args.precisions)) {
    core::Expected<core::Precision> precision = core::parse_precision(p);
    if (!precision) return fail(precision.status());
    options.precisions.push_back(*precision);
  }
  options.path = args.path;
  options.corr_kernel = args.corr_kernel;
  options.cmdtop = args.cmdtop;
  options.cudnn_benchmark = args.cudnn_benchmark;
  options.norm = args.norm;
  options.cuda_graphs = args.cuda_graphs;
  options.video = args.video;
  options.repeats = args.repeats;
  options.warmup = args.warmup;
  options.cpu_threads = threads->threads;
  options.measure_peaks = !args.no_peaks;
  options.command = args.command;
  core::Expected<core::Profile> profile =
      gpu::run_bench(options, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  if (!profile) return fail(profile.status());
  const core::Profile& p = *profile;
  std::printf("device: %s (%s, %d SMs/threads, %.1f GiB, compute capability %d.%d)\n", p.device.name.c_str(),
              p.device.id.c_str(), p.device.multiprocessors, static_cast<double>(p.device.memory_bytes) / (1 << 30),
              p.device.compute_capability_major, p.device.compute_capability_minor);
  std::printf("host: %s, %d threads; libtorch %s, CUDA %s, cuDNN %s, driver %s, trackscope kernels %s\n",
              p.host.cpu_model.c_str(), p.host.threads, p.runtime.libtorch.c_str(), p.runtime.cuda_runtime.c_str(),
              p.runtime.cudnn.c_str(), p.runtime.driver.c_str(), p.runtime.trackscope_kernels ? "yes" : "no");
  print_stage_table(p);
  if (!args.json.empty()) {
    if (core::Status s = core::write_profile(p, args.json); !s) return fail(s);
    std::fprintf(stderr, "wrote %s (%zu cases)\n", args.json.c_str(), p.cases.size());
  }
  return p.cases.empty() ? 1 : 0;
}

}  // namespace

void add_bench_command(CLI::App& app, CliContext& context, std::string command_line) {
  CLI::App* command = app.add_subcommand("bench", "benchmark the tracker's forward pass per stage (JSON profile)");
  auto args = std::make_shared<BenchArguments>();
  args->command = std::move(command_line);
  command->add_option("--device", args->device, "auto, cpu, cuda, cuda:N")->capture_default_str();
  command->add_option("--model", args->models, "model sizes with random weights: small,base")->capture_default_str();
  command->add_option("--weights", args->weights, "benchmark this weights file instead (or 'default')");
  command->add_option("--points", args->points, "points N, comma-separated")->capture_default_str();
  command->add_option("--frames", args->frames, "frames T, comma-separated")->capture_default_str();
  command->add_option("--precision", args->precisions, "fp32,tf32,bf16,fp16 (comma-separated)")->capture_default_str();
  command->add_option("--chunk", args->chunks, "queries per chunk, comma-separated (0 = all)")->capture_default_str();
  command->add_option("--path", args->path, "auto, fused or eager")->capture_default_str();
  command
      ->add_option("--corr-kernel", args->corr_kernel, "CUDA 4D-correlation kernel: auto, classic, tensor or pipelined")
      ->capture_default_str();
  command
      ->add_option("--cmdtop", args->cmdtop,
                   "CMDTop convolutions: auto, im2col, dense or fused (one CUDA kernel, float32)")
      ->capture_default_str();
  command->add_option("--cudnn-benchmark", args->cudnn_benchmark, "cuDNN autotuning: auto (on), on, off")
      ->capture_default_str();
  command->add_option("--norm", args->norm, "backbone InstanceNorm+ReLU on CUDA: auto (fused), fused, reference")
      ->capture_default_str();
  command->add_option("--cuda-graphs", args->cuda_graphs, "replay the refinement as CUDA graphs: on or off")
      ->capture_default_str();
  command->add_option("--video", args->video, "frames to run on (default: the procedural sample scene)");
  command->add_option("--repeats", args->repeats, "timed repeats per case")->capture_default_str();
  command->add_option("--warmup", args->warmup, "warm-up runs per case")->capture_default_str();
  command->add_option("--threads", args->threads, "CPU threads (0 = LibTorch's default; at most the machine's)")
      ->capture_default_str();
  command->add_flag("--no-peaks", args->no_peaks, "skip measuring the device's GEMM and copy rates");
  command->add_option("--json", args->json, "write the profile JSON here");
  command->callback([&context, args] { context.exit_code = run_bench_command(*args); });
}

}  // namespace trackscope::app
