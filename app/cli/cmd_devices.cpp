// trackscope-cli devices: the devices the tracker can use, as JSON, with a clear line on stderr when this build
// cannot use a GPU and what to install. Also the text of --version.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "gpu/devices.h"

#ifndef TRACKSCOPE_VERSION
#define TRACKSCOPE_VERSION "unknown"
#endif

namespace trackscope::app {
namespace {

// Why this binary cannot track on a GPU, and what to do about it; empty when it can.
std::string cuda_problem(const core::RuntimeInfo& v, size_t cuda_devices) {
  if (!v.torch_cuda) {
    return fmt::format(
        "this build has no CUDA support: it is linked against a CPU-only LibTorch {} (Debian's libtorch-dev is "
        "CPU-only), so it tracks on the CPU only. To use an NVIDIA GPU, build Trackscope against a CUDA LibTorch "
        "(the one inside `pip install torch`, or a LibTorch archive from pytorch.org) with `cmake --preset cuda`: "
        "see docs/building-cuda.md",
        v.libtorch);
  }
  if (cuda_devices == 0) {
    return fmt::format(
        "LibTorch {} has CUDA, but no CUDA device is visible: install or update the NVIDIA driver (driver: {}), "
        "and check CUDA_VISIBLE_DEVICES",
        v.libtorch, v.driver.empty() ? "none found" : v.driver);
  }
  if (!v.trackscope_kernels) {
    return "the CUDA devices work, but Trackscope's own CUDA kernels are not in this build (configure with "
           "-DTRACKSCOPE_WITH_CUDA=ON, e.g. `cmake --preset cuda`): the GPU runs the slower reference ops";
  }
  return {};
}

}  // namespace

std::string version_text() {
  const core::RuntimeInfo v = gpu::runtime_versions();
  return fmt::format("trackscope-cli {} (LibTorch {}, {})", TRACKSCOPE_VERSION, v.libtorch,
                     !v.torch_cuda          ? "CPU only"
                     : v.trackscope_kernels ? fmt::format("CUDA {}, Trackscope CUDA kernels", v.cuda_runtime)
                                            : fmt::format("CUDA {}, no Trackscope CUDA kernels", v.cuda_runtime));
}

void add_devices_command(CLI::App& app, CliContext& context) {
  CLI::App* command =
      app.add_subcommand("devices", "list the CPU and every CUDA device, with runtime versions, as JSON");
  command->callback([&context] {
    nlohmann::json out;
    size_t cuda_devices = 0;
    const core::RuntimeInfo v = gpu::runtime_versions();
    for (const auto& d : gpu::list_devices()) {
      if (d.is_cuda()) ++cuda_devices;
      nlohmann::json precisions;
      for (const core::PrecisionSupport& s : core::precision_support(d, v)) {
        precisions[core::to_string(s.precision)] = core::to_string(s.level);
      }
      out["devices"].push_back({{"id", d.id},
                                {"name", d.name},
                                {"multiprocessors", d.multiprocessors},
                                {"memory_bytes", d.memory_bytes},
                                {"compute_capability", std::to_string(d.compute_capability_major) + "." +
                                                           std::to_string(d.compute_capability_minor)},
                                {"precisions", precisions}});
    }
    out["runtime"] = {{"libtorch", v.libtorch},     {"cuda_runtime", v.cuda_runtime},
                      {"cudnn", v.cudnn},           {"driver", v.driver},
                      {"torch_cuda", v.torch_cuda}, {"trackscope_cuda_kernels", v.trackscope_kernels}};
    const std::string problem = cuda_problem(v, cuda_devices);
    out["gpu_tracking"] = {{"available", v.torch_cuda && cuda_devices > 0},
                           {"problem", problem.empty() ? nlohmann::json(nullptr) : nlohmann::json(problem)}};
    std::cout << out.dump(2) << "\n";
    if (!problem.empty()) std::fprintf(stderr, "trackscope-cli devices: %s\n", problem.c_str());
    context.exit_code = 0;
  });
}

}  // namespace trackscope::app
