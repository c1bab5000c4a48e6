// trackscope-cli devices: the devices the tracker can use, as JSON.
#include <nlohmann/json.hpp>

#include <iostream>

#include "cli/commands.h"
#include "gpu/devices.h"

namespace trackscope::app {

void add_devices_command(CLI::App& app, CliContext& context) {
  CLI::App* command =
      app.add_subcommand("devices", "list the CPU and every CUDA device, with runtime versions, as JSON");
  command->callback([&context] {
    nlohmann::json out;
    for (const auto& d : gpu::list_devices()) {
      out["devices"].push_back({{"id", d.id},
                                {"name", d.name},
                                {"multiprocessors", d.multiprocessors},
                                {"memory_bytes", d.memory_bytes},
                                {"compute_capability", std::to_string(d.compute_capability_major) + "." +
                                                           std::to_string(d.compute_capability_minor)}});
    }
    const gpu::RuntimeVersions v = gpu::runtime_versions();
    out["runtime"] = {
        {"libtorch", v.libtorch}, {"cuda_runtime", v.cuda_runtime}, {"cudnn", v.cudnn},
        {"driver", v.driver},     {"torch_cuda", v.cuda_compiled},  {"trackscope_cuda_kernels", v.kernels_compiled}};
    std::cout << out.dump(2) << "\n";
    context.exit_code = 0;
  });
}

}  // namespace trackscope::app
