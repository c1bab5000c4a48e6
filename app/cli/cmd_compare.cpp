// trackscope-cli compare / gpus: headless side of the performance view. `compare` prints the per-stage
// comparison of two profiles (bench JSON files) with the diagnosis, optionally against a what-if prediction on
// another GPU of the specification table; `gpus` prints that table.
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "core/perf/diagnosis.h"
#include "core/perf/report.h"
#include "core/perf/roofline.h"

namespace trackscope::app {

namespace {

struct CompareArguments {
  std::string a_path;
  std::string b_path;
  std::string a_case = "0";
  std::string b_case = "0";
  std::string what_if;
  std::string precision;
  std::string tf32;             // "", "on", "off"
  std::string prediction_path;  // write the what-if profile here
  bool roofline = false;
};

int fail(const core::Status& status) {
  std::fprintf(stderr, "trackscope-cli compare: %s\n", status.message().c_str());
  return status.code() == core::StatusCode::invalid_argument ? 2 : 1;
}

void print_comparison(const core::RunRef& a, const core::RunRef& b) {
  core::Expected<core::Comparison> comparison = core::compare_runs(a, b);
  if (!comparison) {
    std::cout << comparison.status().message() << "\n";
    return;
  }
  std::cout << core::format_comparison(*comparison);
}

int run_compare(const CompareArguments& args) {
  core::Expected<core::Profile> a = core::read_profile(args.a_path);
  if (!a) return fail(a.status());
  core::Expected<size_t> a_case = core::find_profile_case(*a, args.a_case, args.a_path);
  if (!a_case) return fail(a_case.status());
  std::optional<core::Profile> b;
  size_t b_index = 0;
  if (!args.b_path.empty()) {
    core::Expected<core::Profile> loaded = core::read_profile(args.b_path);
    if (!loaded) return fail(loaded.status());
    core::Expected<size_t> picked = core::find_profile_case(*loaded, args.b_case, args.b_path);
    if (!picked) return fail(picked.status());
    b = std::move(*loaded);
    b_index = *picked;
  }
  std::optional<core::Profile> predicted;
  if (!args.what_if.empty()) {
    core::Expected<const core::GpuSpec*> spec = core::lookup_gpu_spec(args.what_if);
    if (!spec) return fail(spec.status());
    core::WhatIfOptions options;
    if (!args.precision.empty()) {
      core::Expected<core::Precision> precision = core::parse_precision(args.precision);
      if (!precision) return fail(precision.status());
      options.precision = *precision;
    }
    if (args.tf32 == "on" || args.tf32 == "off") options.tf32_cudnn = options.tf32_matmul = args.tf32 == "on";
    core::Expected<core::Profile> prediction = core::predict_profile(*a, *a_case, **spec, options);
    if (!prediction) return fail(prediction.status());
    predicted = std::move(*prediction);
    if (!args.prediction_path.empty()) {
      if (core::Status s = core::write_profile(*predicted, args.prediction_path); !s) return fail(s);
    }
  } else if (!b) {
    return fail(core::invalid_argument("give a second profile B.json, or --what-if GPU to predict A on another GPU"));
  }

  const core::ProfileCase& run_a = a->cases[*a_case];
  std::cout << "A: " << args.a_path << "\n" << core::format_profile_summary(*a);
  if (b) std::cout << "B: " << args.b_path << "\n" << core::format_profile_summary(*b);
  if (args.roofline) {
    std::cout << "\n" << core::format_roofline(core::compute_roofline(*a, run_a));
    if (b) std::cout << "\n" << core::format_roofline(core::compute_roofline(*b, b->cases[b_index]));
    if (predicted) std::cout << "\n" << core::format_roofline(core::compute_roofline(*predicted, predicted->cases[0]));
  }
  const std::string a_label = fmt::format("A: {} {}", a->device.name, run_a.name);
  if (b) {
    std::cout << "\n== A vs B ==\n";
    print_comparison({&*a, &run_a, a_label},
                     {&*b, &b->cases[b_index], fmt::format("B: {} {}", b->device.name, b->cases[b_index].name)});
  }
  if (predicted) {
    const std::string p_label = fmt::format("what-if: {} {}", predicted->device.name, predicted->cases[0].name);
    std::cout << "\n== A vs " << p_label << " ==\n" << predicted->origin_note << "\n";
    print_comparison({&*a, &run_a, a_label}, {&*predicted, &predicted->cases[0], p_label});
    if (b) {
      std::cout << "\n== B (measured) vs " << p_label << " ==\n";
      print_comparison({&*b, &b->cases[b_index], fmt::format("B: {} {}", b->device.name, b->cases[b_index].name)},
                       {&*predicted, &predicted->cases[0], p_label});
    }
  }
  return 0;
}

}  // namespace

void add_compare_command(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<CompareArguments>();
  CLI::App* command = app.add_subcommand(
      "compare",
      "compare two bench profiles per stage (measured vs predicted ratio, diagnosis), or predict one on another GPU");
  command->add_option("A", args->a_path, "profile JSON of side A (trackscope-cli bench --json)")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("B", args->b_path, "profile JSON of side B")->check(CLI::ExistingFile);
  command->add_option("--case-a", args->a_case, "case of A: index or name (default 0)");
  command->add_option("--case-b", args->b_case, "case of B: index or name (default 0)");
  command->add_option("--what-if", args->what_if,
                      "predict A's case on this GPU of the table (see `gpus`): key or CUDA name");
  command->add_option("--precision", args->precision, "what-if precision: fp32, tf32, bf16, fp16 (default: A's)");
  command->add_option("--tf32", args->tf32, "what-if TF32 flags: on or off (default: A's)")
      ->check(CLI::IsMember({"on", "off"}));
  command->add_option("--write-prediction", args->prediction_path, "write the what-if profile to this JSON file");
  command->add_flag("--roofline", args->roofline, "also print the roofline table of each side");
  command->callback([args, &context] { context.exit_code = run_compare(*args); });
}

void add_gpus_command(CLI::App& app, CliContext& context) {
  auto with_sources = std::make_shared<bool>(false);
  CLI::App* command =
      app.add_subcommand("gpus", "list the GPU specification table used by the roofline and the what-if");
  command->add_flag("--sources", *with_sources, "also print the datasheet each row comes from");
  command->callback([with_sources, &context] {
    std::cout << core::format_gpu_spec_table(*with_sources);
    context.exit_code = 0;
  });
}

}  // namespace trackscope::app
