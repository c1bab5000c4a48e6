// trackscope-cli bench: the tracker benchmark (gpu/bench.h). Sweeps comma-separated lists of sizes, points,
// frames, precisions and chunks; prints the system, one line per case and a per-stage table; writes the
// profile JSON (docs/bench-json-schema.md) with --json.
#include <fmt/format.h>

#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/io/atomic_file.h"
#include "core/limits.h"
#include "core/perf/profile.h"
#include "core/perf/report.h"
#include "gpu/bench.h"

namespace trackscope::app {
namespace {

struct BenchArguments {
  std::string device = "auto";
  std::vector<std::string> models = {"small"};
  std::string weights;
  std::vector<int> points = {1024};
  std::vector<int> frames = {47};
  std::vector<std::string> precisions = {"fp32"};
  std::vector<int> chunks = {0};
  gpu::BenchPath path = gpu::BenchPath::automatic;
  gpu::BenchCorrKernel corr_kernel = gpu::BenchCorrKernel::automatic;
  gpu::BenchCmdTop cmdtop = gpu::BenchCmdTop::automatic;
  gpu::BenchSwitch cudnn_benchmark = gpu::BenchSwitch::automatic;
  int cudnn_benchmark_limit = -1;
  gpu::BenchNorm norm = gpu::BenchNorm::automatic;
  gpu::BenchSwitch cuda_graphs = gpu::BenchSwitch::off;
  gpu::BenchMixer mixer = gpu::BenchMixer::automatic;
  gpu::BenchGlue glue = gpu::BenchGlue::automatic;
  gpu::BenchGelu mlp_gelu = gpu::BenchGelu::automatic;
  int64_t attention_from_frames = -1;
  std::string video;
  std::string json;
  int repeats = 5;
  int warmup = 2;
  int threads = 0;
  bool no_peaks = false;
  std::string command;
};

// The option's names (gpu/bench.h's table) for CLI11, which parses them into the enum once.
template <class Value, size_t N>
CLI::CheckedTransformer names_of(const gpu::BenchName<Value> (&names)[N]) {
  std::map<std::string, Value> map;
  for (const gpu::BenchName<Value>& n : names) map.emplace(n.name, n.value);
  return CLI::CheckedTransformer(map);
}

// An option taking one of the names of `names`, its default shown by name.
template <class Value, size_t N>
void add_named_option(CLI::App* command, const std::string& option, Value& value,
                      const gpu::BenchName<Value> (&names)[N], const std::string& help) {
  command->add_option(option, value, help)->transform(names_of(names))->default_str(gpu::to_string(value));
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
  options.models = args.models;
  options.weights = args.weights;
  options.points = args.points;
  options.frames = args.frames;
  options.chunks = args.chunks;
  options.precisions.clear();
  for (const std::string& p : args.precisions) {
    core::Expected<core::Precision> precision = core::parse_precision(p);
    if (!precision) return fail(precision.status());
    options.precisions.push_back(*precision);
  }
  options.path = args.path;
  options.corr_kernel = args.corr_kernel;
  options.cmdtop = args.cmdtop;
  options.cudnn_benchmark = args.cudnn_benchmark;
  options.cudnn_benchmark_limit = args.cudnn_benchmark_limit;
  options.norm = args.norm;
  options.cuda_graphs = args.cuda_graphs == gpu::BenchSwitch::on;
  options.mixer = args.mixer;
  options.glue = args.glue;
  options.mlp_gelu = args.mlp_gelu;
  options.attention_from_frames = args.attention_from_frames;
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
  std::fputs(core::format_bench_report(p).c_str(), stdout);
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
  command->add_option("--model", args->models, "model sizes with random weights: small,base")
      ->delimiter(',')
      ->check(CLI::IsMember({"small", "base"}))
      ->capture_default_str();
  command->add_option("--weights", args->weights, "benchmark this weights file instead (or 'default')");
  command->add_option("--points", args->points, "points N, comma-separated")
      ->delimiter(',')
      ->check(CLI::Range(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  command->add_option("--frames", args->frames, "frames T, comma-separated")
      ->delimiter(',')
      ->check(CLI::Range(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  command->add_option("--precision", args->precisions, "fp32,tf32,bf16,fp16 (comma-separated)")
      ->delimiter(',')
      ->check(CLI::IsMember({"fp32", "tf32", "bf16", "fp16"}))
      ->capture_default_str();
  command->add_option("--chunk", args->chunks, "queries per chunk, comma-separated (0 = all)")
      ->delimiter(',')
      ->check(CLI::Range(0, std::numeric_limits<int>::max()))
      ->capture_default_str();
  add_named_option(command, "--path", args->path, gpu::kBenchPathNames, "auto, fused or eager");
  add_named_option(command, "--corr-kernel", args->corr_kernel, gpu::kBenchCorrKernelNames,
                   "CUDA 4D-correlation kernel: auto, classic, tensor, wmma or pipelined");
  add_named_option(command, "--cmdtop", args->cmdtop, gpu::kBenchCmdTopNames,
                   "CMDTop convolutions: auto, im2col, dense or fused (one CUDA kernel, float32)");
  command
      ->add_option("--cudnn-benchmark-limit", args->cudnn_benchmark_limit,
                   "cuDNN algorithms the autotuning times per convolution (0 = all; -1 = LibTorch's default, 10)")
      ->check(CLI::Range(-1, 1000))
      ->capture_default_str();
  add_named_option(command, "--cudnn-benchmark", args->cudnn_benchmark, gpu::kBenchSwitchNames,
                   "cuDNN autotuning: auto (on), on, off");
  add_named_option(command, "--norm", args->norm, gpu::kBenchNormNames,
                   "backbone InstanceNorm+ReLU on CUDA: auto (fused), fused, reference");
  command->add_option("--cuda-graphs", args->cuda_graphs, "replay the refinement as CUDA graphs: on or off")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, gpu::BenchSwitch>{{"on", gpu::BenchSwitch::on}, {"off", gpu::BenchSwitch::off}}))
      ->default_str(gpu::to_string(args->cuda_graphs));
  add_named_option(command, "--mixer", args->mixer, gpu::kBenchMixerNames,
                   "temporal mixer on CUDA: auto (float32: the fused kernels in 3xTF32; fp16/bf16: the module), fused, "
                   "plain (fused, float32 without 3xTF32) or reference (the module path)");
  add_named_option(command, "--glue-kernels", args->glue, gpu::kBenchGlueNames,
                   "glue ops on CUDA (the bf16/fp16 query supports, the mixer's input rows): auto (one kernel each) "
                   "or composite (their ATen op sequences, as on the CPU)");
  add_named_option(command, "--mlp-gelu", args->mlp_gelu, gpu::kBenchGeluNames,
                   "the mixer MLP's GELU in bf16/fp16 on CUDA: auto (fused-tanh), exact (the official erf form, a pass "
                   "of its own) or fused-tanh (the tanh form in the GEMM's epilogue)");
  command
      ->add_option(
          "--attention-from-frames", args->attention_from_frames,
          "the mixer's attention in bf16/fp16 on CUDA (compute capability 8.0+) runs on the tensor-core kernel "
          "for chunks of at least this many frames, below as the module's scaled_dot_product_attention "
          "(0 = always the kernel; default: the engine's, " +
              std::to_string(gpu::default_attention_from_frames()) + ")")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  command->add_option("--video", args->video, "frames to run on (default: the procedural sample scene)");
  command->add_option("--repeats", args->repeats, "timed repeats per case")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  command->add_option("--warmup", args->warmup, "warm-up runs per case")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  command
      ->add_option("--threads", args->threads,
                   "CPU threads (0 = automatic: OMP_NUM_THREADS if set, else every CPU this process may use)")
      ->capture_default_str();
  command->add_flag("--no-peaks", args->no_peaks, "skip measuring the device's GEMM and copy rates");
  command->add_option("--json", args->json, "write the profile JSON here");
  command->callback([&context, args] { context.exit_code = run_bench_command(*args); });
}

}  // namespace trackscope::app
