#pragma once
// Model weights as safetensors (https://github.com/huggingface/safetensors): the trainer's checkpoints and the
// shipped weights. A small self-contained reader/writer for whole modules (F32, BF16, F16); when core/io's
// general safetensors reader/writer is merged, these two functions can delegate to it without changing callers.
//
//   auto files = save_weights(model.module(), dir, "weights", WeightsDtype::fp32, 15 << 20, {{"step", "1200"}});
//   core::Status s = load_weights(model.module(), dir / "weights.safetensors");   // or its shards
//
// Big sets are split into shards "stem-0.safetensors", "stem-1.safetensors", ... of at most max_shard_bytes of
// tensor data each (one tensor is never split), so that each file fits the GPU machine's 16 MiB return limit.
// Threads: call from the thread that owns the module's device.

#include <torch/nn/module.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "gpu/training.h"

namespace trackscope::gpu::training {

/// Writes every parameter and buffer of `module` (state_dict names, sorted) converted to `dtype`, with
/// `metadata` as __metadata__. Files are written under a temporary name and renamed. Returns the files.
core::Expected<std::vector<std::filesystem::path>> save_weights(
    const torch::nn::Module& module, const std::filesystem::path& dir, const std::string& stem, WeightsDtype dtype,
    int64_t max_shard_bytes, const std::map<std::string, std::string>& metadata = {});

/// The files of a weights set: `path` itself if it exists, else the shards "<stem>-0.safetensors", ... next to it.
core::Expected<std::vector<std::filesystem::path>> weights_files(const std::filesystem::path& path);

/// Copies the tensors of the file (or its shards) into the module's parameters and buffers, converting dtype.
/// Strict: a missing or extra name, or a shape mismatch, is an error naming the tensor; corrupt or truncated
/// files give corrupt_data. The module is unchanged unless everything matched.
core::Status load_weights(torch::nn::Module& module, const std::filesystem::path& path);

/// __metadata__ of the first file of the set.
core::Expected<std::map<std::string, std::string>> read_weights_metadata(const std::filesystem::path& path);

}  // namespace trackscope::gpu::training
