// trackscope-cli convert IN OUT [--dtype f32|f16|bf16]: LocoTrack weights (.ckpt / .pt / .safetensors, shards)
// to one strict-checked .safetensors file with the official keys.
// trackscope-cli average IN IN... --out OUT [--weights W,W...] [--dtype ...]: their weighted average, one file.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "gpu/model_weights.h"

namespace trackscope::app {
namespace {

// --dtype of the commands that write one weights file.
void add_weights_dtype_option(CLI::App& command, std::string& dtype) {
  command.add_option("--dtype", dtype, "dtype of the written tensors")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}))
      ->capture_default_str();
}

// A weights command's outcome: its error on stderr (exit code 1), else `report` on stdout (exit code 0).
template <class Report>
void finish_weights_command(const char* name, const core::Expected<gpu::ModelWeightsInfo>& info, CliContext& context,
                            Report report) {
  if (!info) {
    std::fprintf(stderr, "trackscope-cli %s: error: %s\n", name, info.status().message().c_str());
    context.exit_code = 1;
    return;
  }
  report(*info);
  context.exit_code = 0;
}

}  // namespace

void add_convert_command(CLI::App& app, CliContext& context) {
  CLI::App* command = app.add_subcommand(
      "convert", "convert LocoTrack weights (PyTorch .ckpt, .safetensors or shards) to one .safetensors file");
  auto options = std::make_shared<gpu::ConvertOptions>();
  command
      ->add_option("input", options->input,
                   "weights to read: .ckpt/.pt (torch.save zip) or .safetensors, "
                   "a '*' pattern or the stem of shards stem-0/-1/...")
      ->required();
  command->add_option("output", options->output, "the .safetensors file to write")->required();
  add_weights_dtype_option(*command, options->dtype);
  command->callback([options, &context] {
    finish_weights_command(
        "convert", gpu::convert_model_weights(*options), context, [&](const gpu::ModelWeightsInfo& info) {
          std::printf("read    %s\n        %s\nwrote   %s (%s)\n", options->input.string().c_str(),
                      info.summary().c_str(), options->output.string().c_str(), options->dtype.c_str());
        });
  });
}

void add_average_command(CLI::App& app, CliContext& context) {
  CLI::App* command = app.add_subcommand(
      "average", "average the weights of several runs of one LocoTrack model into one .safetensors file");
  auto options = std::make_shared<gpu::AverageOptions>();
  command->add_option("inputs", options->inputs, "two or more weights files (as `convert` reads them)")->required();
  command->add_option("-o,--out", options->output, "the .safetensors file to write")->required();
  command->add_option("--weights", options->weights, "one weight per input, summing to 1 (default: equal)")
      ->delimiter(',');
  add_weights_dtype_option(*command, options->dtype);
  command->callback([options, &context] {
    finish_weights_command(
        "average", gpu::average_model_weights(*options), context, [&](const gpu::ModelWeightsInfo& info) {
          std::printf("wrote   %s\n        %s\n", options->output.string().c_str(), info.summary().c_str());
        });
  });
}

}  // namespace trackscope::app
