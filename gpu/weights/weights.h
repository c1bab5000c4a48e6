#pragma once
// Loading LocoTrack weights into the torch modules (torch-side; include only from gpu/ .cpp files).
// The torch-free description and conversion API is gpu/model_weights.h.
//
//   Expected<LoadedModel> loaded = weights::load_locotrack("locotrack_small.ckpt", at::Device("cuda:0"));
//   if (!loaded) return loaded.status();
//   model::forward(*loaded->model, video, queries);
//
// Threads: the functions are thread-safe; the returned model belongs to the caller.

#include <ATen/core/Tensor.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "gpu/model/locotrack.h"
#include "gpu/model_weights.h"

namespace trackscope::gpu::weights {

/// Tensors by key in file order; keys have any leading "model." removed.
struct StateDict {
  std::vector<std::pair<std::string, at::Tensor>> tensors;  // CPU tensors, dtype as stored
  std::map<std::string, std::string> metadata;              // safetensors __metadata__ (empty for checkpoints)
  std::string format;                                       // "safetensors" / "pytorch checkpoint"
  std::vector<std::filesystem::path> files;
  const at::Tensor* find(const std::string& key) const;
};

/// Reads a .safetensors file / shard set or a torch.save zip checkpoint (format detected from the bytes).
/// corrupt_data for damaged files; unsupported for other formats (e.g. the pre-1.6 torch.save format).
core::Expected<StateDict> read_state_dict(const std::filesystem::path& path);

/// small / base from the shapes (transformer width and CMDTop depth); invalid_argument if neither fits.
core::Expected<model::ModelSize> infer_model_size(const StateDict& state);

/// Strict copy into the model's parameters (widened/narrowed to each parameter's dtype and device): one
/// invalid_argument listing every missing, unexpected and mis-shaped key; corrupt_data for NaN/Inf values.
/// The model is unchanged when an error is returned.
core::Status load_state_dict(model::LocoTrack& model, const StateDict& state);

struct LoadedModel {
  std::shared_ptr<model::LocoTrack> model;
  ModelWeightsInfo info;
};

/// Reads the file, infers the size, builds the model, loads it strictly, moves it to `device` and `dtype`, and
/// logs which model was loaded (name, size, parameter count, sha256, whether it is an official checkpoint).
core::Expected<LoadedModel> load_locotrack(const std::filesystem::path& path, const at::Device& device = at::kCPU,
                                           at::ScalarType dtype = at::kFloat);

/// Writes the model's parameters (official keys and order) as safetensors in `dtype` (kFloat, kHalf, kBFloat16).
core::Status save_model_safetensors(const model::LocoTrack& model, const std::filesystem::path& path,
                                    at::ScalarType dtype, std::map<std::string, std::string> metadata = {});

}  // namespace trackscope::gpu::weights
