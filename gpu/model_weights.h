#pragma once
// LocoTrack weight files, torch-free (app/ and ui/ may include this): describe a weights file, convert between
// formats. The torch-side loader is gpu/weights/weights.h.
//
//   Expected<ModelWeightsInfo> info = gpu::inspect_model_weights("locotrack_small.ckpt");
//   if (info) log::info("{}", info->summary());     // "LocoTrack-S (small, 8,236,133 parameters), official ..."
//
//   gpu::ConvertOptions options{"locotrack_base.ckpt", "locotrack_base.safetensors", "bf16"};
//   Expected<ModelWeightsInfo> written = gpu::convert_model_weights(options);
//
// Accepted inputs: .safetensors (one file, a '*' pattern, or shards stem-0/-1/...; F32/F16/BF16/F64 tensors) and
// PyTorch checkpoints written by torch.save (the zip format): either a state_dict or a dict holding one under
// "state_dict" (Lightning), keys optionally prefixed by "model.", read by the project's restricted unpickler
// (core/io/checkpoint.h: nothing in the file is run; other objects are refused). Validation is strict: every
// missing, unexpected and mis-shaped key is listed in one error; NaN/Inf and truncated files are rejected.
// Threads: the functions are thread-safe and independent.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace trackscope::gpu {

struct ModelWeightsInfo {
  std::string model_name;  // "LocoTrack-S" / "LocoTrack-B"
  std::string model_size;  // "small" / "base"
  std::int64_t parameter_count = 0;
  std::int64_t tensor_count = 0;
  std::string format;         // "safetensors" / "pytorch checkpoint"
  std::string source_dtypes;  // dtypes as stored, e.g. "BF16" or "F32"
  std::vector<std::filesystem::path> files;
  std::vector<std::string> sha256;       // one per file, lower-case hex
  std::string official_checkpoint;       // "locotrack_small.ckpt" when the file (or its conversion source) is official
  bool converted_from_official = false;  // official_checkpoint names the source of a converted file

  /// One line for logs and the CLI.
  std::string summary() const;
};

/// The released checkpoints (docs/locotrack-spec.md §3.2).
struct KnownCheckpoint {
  std::string_view file_name;
  std::string_view model_size;
  std::uint64_t size_bytes;
  std::string_view sha256;
};
std::span<const KnownCheckpoint> known_checkpoints();
/// The official checkpoint with this sha256, or nullptr.
const KnownCheckpoint* find_known_checkpoint(std::string_view sha256_hex);

/// Reads and validates a weights file against the model it implies (size inferred from the shapes).
core::Expected<ModelWeightsInfo> inspect_model_weights(const std::filesystem::path& path);

struct ConvertOptions {
  std::filesystem::path input;   // .ckpt / .pt / .safetensors (or a shard pattern)
  std::filesystem::path output;  // .safetensors
  std::string dtype = "f32";     // f32 | f16 | bf16
  core::Status check() const;
};

/// Validates the input strictly, then writes the official keys (no "model." prefix, official order) as
/// safetensors in the requested dtype, with __metadata__ naming the model and the source file and its sha256.
/// Returns the description of the input.
core::Expected<ModelWeightsInfo> convert_model_weights(const ConvertOptions& options);

struct AverageOptions {
  std::vector<std::filesystem::path> inputs;  // two or more weights files of one model size (any accepted format)
  std::vector<double> weights;                // one per input, each >= 0, summing to 1; empty = equal weights
  std::filesystem::path output;               // .safetensors
  std::string dtype = "f16";                  // f32 | f16 | bf16
  core::Status check() const;
};

/// The weighted average of several weights files of the same model, parameter by parameter (a "weight soup" of
/// fine-tuned runs that share their start: docs/training.md). Every input is validated as by `convert`; the sum is
/// taken in float64 and rounded once to float32, then to `dtype`. Writes the official keys with __metadata__ naming
/// every source (file name, sha256, weight). Mixed model sizes are an error. Returns the description of the
/// written file.
core::Expected<ModelWeightsInfo> average_model_weights(const AverageOptions& options);

}  // namespace trackscope::gpu
