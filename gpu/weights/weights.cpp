// Weight files: safetensors and torch.save checkpoints -> strict state dict -> LocoTrack modules; conversion.
#include "gpu/weights/weights.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <ATen/core/ivalue.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>

#include "core/io/checkpoint.h"
#include "core/io/safetensors.h"
#include "core/io/sha256.h"
#include "core/log.h"

namespace trackscope::gpu {
namespace {

constexpr std::array<KnownCheckpoint, 2> kKnownCheckpoints = {{
    {"locotrack_small.ckpt", "small", 33'001'026, "da023594e6d6c05ecad9644efc1467545481cfa899e20730bd9fdce778ffa5ac"},
    {"locotrack_base.ckpt", "base", 46'139'570, "8a5adbaeb610d1f06adfbc7c9076b66f727d674c0fd1d668890201cf3339736c"},
}};

constexpr std::string_view kConverterHint =
    "convert it once with the Python snippet in docs/converting-checkpoints.md, then load the .safetensors file";

std::string shape_text(at::IntArrayRef shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string strip_model_prefix(const std::string& key) {
  constexpr std::string_view prefix = "model.";
  return key.rfind(prefix, 0) == 0 ? key.substr(prefix.size()) : key;
}

std::string thousands(std::int64_t value) {
  std::string digits = std::to_string(value), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::optional<at::ScalarType> scalar_type_of(core::io::TensorDtype dtype) {
  using core::io::TensorDtype;
  switch (dtype) {
    case TensorDtype::f32: return at::kFloat;
    case TensorDtype::f16: return at::kHalf;
    case TensorDtype::bf16: return at::kBFloat16;
    case TensorDtype::f64: return at::kDouble;
    case TensorDtype::u8: return at::kByte;
    case TensorDtype::i8: return at::kChar;
    case TensorDtype::i16: return at::kShort;
    case TensorDtype::i32: return at::kInt;
    case TensorDtype::i64: return at::kLong;
    case TensorDtype::boolean: return at::kBool;
    default: return std::nullopt;
  }
}

std::string_view safetensors_name(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return "F32";
    case at::kHalf: return "F16";
    case at::kBFloat16: return "BF16";
    case at::kDouble: return "F64";
    case at::kByte: return "U8";
    case at::kLong: return "I64";
    case at::kInt: return "I32";
    default: return "other";
  }
}

core::Expected<weights::StateDict> read_safetensors(const std::filesystem::path& path) {
  core::Expected<core::io::SafetensorsSet> set = core::io::SafetensorsSet::open(path);
  if (!set) return set.status();
  weights::StateDict state;
  state.format = "safetensors";
  state.files = set->files();
  state.metadata = set->metadata();
  for (const core::io::TensorEntry& entry : set->tensors()) {
    const std::optional<at::ScalarType> type = scalar_type_of(entry.dtype);
    if (!type) {
      return core::unsupported(
          fmt::format("'{}': tensor {} has a dtype the model cannot use", path.string(), entry.describe()));
    }
    // Copy into an owned, aligned tensor: the file buffer gives no alignment guarantee.
    at::Tensor tensor = at::empty(entry.shape, at::TensorOptions().dtype(*type));
    const std::span<const std::byte> bytes = set->bytes(entry);
    if (!bytes.empty()) std::memcpy(tensor.data_ptr(), bytes.data(), bytes.size());
    state.tensors.emplace_back(strip_model_prefix(entry.name), std::move(tensor));
  }
  return state;
}

// torch.save checkpoints through the project's restricted unpickler (core/io/checkpoint.h), not LibTorch's: it
// reads every layout Python writes (LibTorch 1.13 stops at the SETITEM of a one-item dict) and refuses objects
// instead of constructing them. Both LibTorch versions then see the same plain tensors.
core::Expected<weights::StateDict> read_checkpoint(const std::filesystem::path& path) {
  core::Expected<core::io::Checkpoint> checkpoint = core::io::read_checkpoint(path);
  if (!checkpoint) return checkpoint.status();
  weights::StateDict state;
  state.format = "pytorch checkpoint";
  state.files = {path};
  for (core::io::CheckpointTensor& entry : checkpoint->tensors) {
    const std::optional<at::ScalarType> type = scalar_type_of(entry.dtype);
    if (!type) {
      return core::unsupported(fmt::format("'{}': tensor '{}' has the dtype {}, which the model cannot use",
                                           path.string(), entry.name, core::io::dtype_name(entry.dtype)));
    }
    at::Tensor tensor = at::empty(entry.shape, at::TensorOptions().dtype(*type));
    if (!entry.data.empty()) std::memcpy(tensor.data_ptr(), entry.data.data(), entry.data.size());
    entry.data = {};  // release as we go: the file's tensors are held once, as tensors
    state.tensors.emplace_back(strip_model_prefix(entry.name), std::move(tensor));
  }
  return state;
}

std::string dtype_summary(const weights::StateDict& state) {
  std::set<std::string> names;
  for (const auto& [key, tensor] : state.tensors) names.insert(std::string(safetensors_name(tensor.scalar_type())));
  return fmt::format("{}", fmt::join(names, "+"));
}

// Description of a state dict that load_state_dict() accepted for `size`.
core::Expected<ModelWeightsInfo> describe(const weights::StateDict& state, model::ModelSize size) {
  ModelWeightsInfo info;
  info.model_name = std::string(model::model_display_name(size));
  info.model_size = std::string(model::model_size_name(size));
  info.tensor_count = static_cast<std::int64_t>(state.tensors.size());
  for (const auto& [key, tensor] : state.tensors) info.parameter_count += tensor.numel();
  info.format = state.format;
  info.source_dtypes = dtype_summary(state);
  info.files = state.files;
  for (const auto& file : state.files) {
    core::Expected<std::string> hex = core::io::sha256_file_hex(file);
    if (!hex) return hex.status();
    info.sha256.push_back(*hex);
  }
  if (info.sha256.size() == 1) {
    if (const KnownCheckpoint* known = find_known_checkpoint(info.sha256[0])) {
      info.official_checkpoint = std::string(known->file_name);
    }
  }
  const auto source = state.metadata.find("source_sha256");
  if (info.official_checkpoint.empty() && source != state.metadata.end()) {
    if (const KnownCheckpoint* known = find_known_checkpoint(source->second)) {
      info.official_checkpoint = std::string(known->file_name);
      info.converted_from_official = true;
    }
  }
  return info;
}

core::Expected<at::ScalarType> parse_dtype(const std::string& name) {
  if (name == "f32") return at::kFloat;
  if (name == "f16") return at::kHalf;
  if (name == "bf16") return at::kBFloat16;
  return core::invalid_argument(fmt::format("unknown dtype '{}' (use f32, f16 or bf16)", name));
}

}  // namespace

std::string ModelWeightsInfo::summary() const {
  std::string origin = "custom weights";
  if (!official_checkpoint.empty()) {
    origin = converted_from_official ? fmt::format("converted from the official {}", official_checkpoint)
                                     : fmt::format("official {}", official_checkpoint);
  }
  std::vector<std::string> short_hashes;
  for (const std::string& hex : sha256) short_hashes.push_back(hex.substr(0, 12));
  return fmt::format("{} ({}, {} parameters in {} tensors, {} {}), {}, sha256 {}", model_name, model_size,
                     thousands(parameter_count), tensor_count, format, source_dtypes, origin,
                     fmt::join(short_hashes, "/"));
}

std::span<const KnownCheckpoint> known_checkpoints() { return kKnownCheckpoints; }

const KnownCheckpoint* find_known_checkpoint(std::string_view sha256_hex) {
  for (const KnownCheckpoint& known : kKnownCheckpoints) {
    if (known.sha256 == sha256_hex) return &known;
  }
  return nullptr;
}

namespace {

// The output and dtype of a command that writes one weights file (`what`: the command, for the messages).
core::Status check_weights_output(std::string_view what, const std::filesystem::path& output,
                                  const std::string& dtype) {
  if (output.empty()) return core::invalid_argument(fmt::format("{}: no output file given", what));
  if (output.extension() != ".safetensors") {
    return core::invalid_argument(fmt::format("{}: the output '{}' must end in .safetensors", what, output.string()));
  }
  return parse_dtype(dtype).status();
}

}  // namespace

core::Status ConvertOptions::check() const {
  if (input.empty()) return core::invalid_argument("convert: no input file given");
  return check_weights_output("convert", output, dtype);
}

core::Status AverageOptions::check() const {
  if (inputs.size() < 2) return core::invalid_argument("average: give at least two weights files");
  if (!weights.empty()) {
    if (weights.size() != inputs.size()) {
      return core::invalid_argument(
          fmt::format("average: {} weights for {} files (give one per file, or none for equal weights)", weights.size(),
                      inputs.size()));
    }
    double sum = 0.0;
    for (double w : weights) {
      if (!std::isfinite(w) || w < 0.0) {
        return core::invalid_argument(fmt::format("average: weight {} is not a finite number >= 0", w));
      }
      sum += w;
    }
    if (std::fabs(sum - 1.0) > 1e-6) {
      return core::invalid_argument(fmt::format("average: the weights sum to {}, not 1", sum));
    }
  }
  return check_weights_output("average", output, dtype);
}

namespace weights {

const at::Tensor* StateDict::find(const std::string& key) const {
  for (const auto& [name, tensor] : tensors) {
    if (name == key) return &tensor;
  }
  return nullptr;
}

core::Expected<StateDict> read_state_dict(const std::filesystem::path& path) {
  std::array<std::byte, 16> head{};
  size_t head_size = 0;
  std::error_code error;
  const bool is_file = std::filesystem::is_regular_file(path, error);
  const uint64_t file_size = is_file ? std::filesystem::file_size(path, error) : 0;
  if (is_file) {
    std::ifstream in(path, std::ios::binary);
    if (in) in.read(reinterpret_cast<char*>(head.data()), head.size());
    head_size = static_cast<size_t>(in.gcount());
  }
  const std::span<const std::byte> bytes(head.data(), head_size);
  switch (is_file ? core::io::detect_weights_file(bytes, file_size) : core::io::WeightsFileKind::safetensors) {
    case core::io::WeightsFileKind::torch_zip: return read_checkpoint(path);
    case core::io::WeightsFileKind::torch_legacy:
      return core::unsupported(fmt::format(
          "'{}' is a legacy torch.save file (PyTorch before 1.6, or _use_new_zipfile_serialization=False); {}",
          path.string(), kConverterHint));
    case core::io::WeightsFileKind::safetensors: return read_safetensors(path);  // also shard sets and patterns
    case core::io::WeightsFileKind::unknown:
      if (path.extension() == ".safetensors") return read_safetensors(path);  // its reader explains the damage
      return core::corrupt_data(core::io::describe_unknown_weights_file(path, bytes));
  }
  return read_safetensors(path);
}

core::Expected<model::ModelSize> infer_model_size(const StateDict& state) {
  const at::Tensor* input_proj = state.find("torch_pips_mixer.input_proj.weight");
  if (input_proj == nullptr || input_proj->dim() != 2) {
    return core::invalid_argument("not LocoTrack weights: 'torch_pips_mixer.input_proj.weight' is missing");
  }
  const bool deep_encoder = state.find("cmdtop.0.conv.2.0.weight") != nullptr;
  if (input_proj->size(0) == 256 && !deep_encoder) return model::ModelSize::small;
  if (input_proj->size(0) == 384 && deep_encoder) return model::ModelSize::base;
  return core::invalid_argument(fmt::format(
      "not LocoTrack-S or -B weights: the transformer width is {} (small 256, base 384) and CMDTop has {} layers",
      input_proj->size(0), deep_encoder ? "3" : "2"));
}

core::Status load_state_dict(model::LocoTrack& model, const StateDict& state) {
  std::vector<std::string> missing, unexpected, mismatched, non_finite;
  std::map<std::string, const at::Tensor*> given;
  for (const auto& [key, tensor] : state.tensors) given.emplace(key, &tensor);
  const auto parameters = model.named_parameters(/*recurse=*/true);
  for (const auto& item : parameters) {
    const auto found = given.find(item.key());
    if (found == given.end()) {
      missing.push_back(item.key());
      continue;
    }
    const at::Tensor& source = *found->second;
    if (source.sizes() != item.value().sizes()) {
      mismatched.push_back(fmt::format("{}: file {} vs model {}", item.key(), shape_text(source.sizes()),
                                       shape_text(item.value().sizes())));
    } else if (!c10::isFloatingType(source.scalar_type())) {
      mismatched.push_back(
          fmt::format("{}: dtype {} is not floating point", item.key(), c10::toString(source.scalar_type())));
    } else if (!at::isfinite(source).all().item<bool>()) {
      non_finite.push_back(item.key());
    }
  }
  for (const auto& [key, tensor] : state.tensors) {
    if (parameters.find(key) == nullptr) unexpected.push_back(key);
  }
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    std::string message = fmt::format(
        "the weights do not fit {} ({} tensors expected, {} given):", model::model_display_name(model.config().size),
        parameters.size(), state.tensors.size());
    if (!missing.empty()) message += fmt::format("\n  missing ({}): {}", missing.size(), fmt::join(missing, ", "));
    if (!unexpected.empty())
      message += fmt::format("\n  unexpected ({}): {}", unexpected.size(), fmt::join(unexpected, ", "));
    if (!mismatched.empty())
      message += fmt::format("\n  wrong shape or type ({}): {}", mismatched.size(), fmt::join(mismatched, "; "));
    return core::invalid_argument(message);
  }
  if (!non_finite.empty()) {
    return core::corrupt_data(fmt::format("the weights contain NaN or Inf in {} tensor(s): {}", non_finite.size(),
                                          fmt::join(non_finite, ", ")));
  }
  at::NoGradGuard no_grad;
  for (auto& item : parameters) {
    at::Tensor parameter = item.value();
    parameter.copy_(*given.at(item.key()));  // converts dtype and device
  }
  return {};
}

core::Expected<LoadedModel> load_locotrack(const std::filesystem::path& path, const at::Device& device,
                                           at::ScalarType dtype) {
  try {
    core::Expected<StateDict> state = read_state_dict(path);
    if (!state) return state.status();
    core::Expected<model::ModelSize> size = infer_model_size(*state);
    if (!size) return size.status().with_context(path.string());
    LoadedModel loaded;
    loaded.model = std::make_shared<model::LocoTrack>(model::LocoTrackConfig{*size});
    TRACKSCOPE_RETURN_IF_ERROR(load_state_dict(*loaded.model, *state).with_context(path.string()));
    loaded.model->to(device, dtype);
    loaded.model->eval();
    core::Expected<ModelWeightsInfo> info = describe(*state, *size);
    if (!info) return info.status();
    loaded.info = std::move(*info);
    core::log::info("loaded {} from {}", loaded.info.summary(), path.string());
    return loaded;
  } catch (const c10::Error& e) {
    return core::internal_error(
        fmt::format("loading '{}' failed in LibTorch: {}", path.string(), e.what_without_backtrace()));
  }
}

core::Status save_model_safetensors(const model::LocoTrack& model, const std::filesystem::path& path,
                                    at::ScalarType dtype, std::map<std::string, std::string> metadata) {
  if (dtype != at::kFloat && dtype != at::kHalf && dtype != at::kBFloat16) {
    return core::invalid_argument(fmt::format("cannot save weights as {}", c10::toString(dtype)));
  }
  try {
    std::vector<at::Tensor> owned;
    std::vector<core::io::TensorToWrite> tensors;
    const auto target_dtype = *core::io::dtype_from_name(safetensors_name(dtype));
    for (const auto& item : model.named_parameters(/*recurse=*/true)) {
      at::Tensor converted = item.value().detach().to(at::kCPU, dtype).contiguous();
      if (!at::isfinite(converted).all().item<bool>()) {
        return core::invalid_argument(fmt::format("'{}' does not fit in {} (values overflow to Inf); use bf16 or f32",
                                                  item.key(), safetensors_name(dtype)));
      }
      owned.push_back(converted);
      const auto* bytes = static_cast<const std::byte*>(converted.data_ptr());
      tensors.push_back({item.key(), target_dtype, converted.sizes().vec(),
                         std::span<const std::byte>(bytes, converted.numel() * converted.element_size())});
    }
    metadata.emplace("format", "pt");
    metadata.emplace("model", std::string(model::model_display_name(model.config().size)));
    metadata.emplace("model_size", std::string(model::model_size_name(model.config().size)));
    return core::io::write_safetensors(path, tensors, metadata);
  } catch (const c10::Error& e) {
    return core::internal_error(
        fmt::format("saving '{}' failed in LibTorch: {}", path.string(), e.what_without_backtrace()));
  }
}

}  // namespace weights

core::Expected<ModelWeightsInfo> inspect_model_weights(const std::filesystem::path& path) {
  core::Expected<weights::LoadedModel> loaded = weights::load_locotrack(path);
  if (!loaded) return loaded.status();
  return loaded->info;
}

core::Expected<ModelWeightsInfo> convert_model_weights(const ConvertOptions& options) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  const at::ScalarType dtype = *parse_dtype(options.dtype);
  core::Expected<weights::LoadedModel> loaded = weights::load_locotrack(options.input);
  if (!loaded) return loaded.status();
  const ModelWeightsInfo& info = loaded->info;
  std::map<std::string, std::string> metadata = {
      {"source_file", options.input.filename().string()},
      {"converted_by", "trackscope-cli convert"},
  };
  if (info.sha256.size() == 1) metadata["source_sha256"] = info.sha256[0];
  for (const KnownCheckpoint& known : known_checkpoints()) {
    // A conversion of a conversion still names the official file it came from.
    if (info.converted_from_official && known.file_name == info.official_checkpoint) {
      metadata["source_sha256"] = std::string(known.sha256);
    }
  }
  if (!info.official_checkpoint.empty()) metadata["official_checkpoint"] = info.official_checkpoint;
  TRACKSCOPE_RETURN_IF_ERROR(weights::save_model_safetensors(*loaded->model, options.output, dtype, metadata));
  core::log::info("wrote {} as {} to {}", info.model_name, options.dtype, options.output.string());
  return info;
}

core::Expected<ModelWeightsInfo> average_model_weights(const AverageOptions& options) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  const at::ScalarType dtype = *parse_dtype(options.dtype);
  const std::size_t count = options.inputs.size();
  std::vector<double> mix = options.weights;
  if (mix.empty()) mix.assign(count, 1.0 / static_cast<double>(count));
  std::vector<weights::LoadedModel> models;
  std::vector<std::string> sources;
  for (std::size_t i = 0; i < count; ++i) {
    core::Expected<weights::LoadedModel> loaded = weights::load_locotrack(options.inputs[i]);
    if (!loaded) return loaded.status();
    if (!models.empty() && loaded->info.model_size != models.front().info.model_size) {
      return core::invalid_argument(fmt::format("average: '{}' is {} but '{}' is {}: only one model's weights average",
                                                options.inputs[i].string(), loaded->info.model_name,
                                                options.inputs.front().string(), models.front().info.model_name));
    }
    const std::string sha = loaded->info.sha256.size() == 1 ? loaded->info.sha256[0] : "shards";
    sources.push_back(fmt::format("{} (sha256 {}) x {}", options.inputs[i].filename().string(), sha, mix[i]));
    models.push_back(std::move(*loaded));
  }
  try {
    at::NoGradGuard no_grad;
    auto target = models.front().model->named_parameters(/*recurse=*/true);
    std::vector<decltype(target)> others;
    for (std::size_t i = 1; i < count; ++i) others.push_back(models[i].model->named_parameters(/*recurse=*/true));
    for (auto& item : target) {
      at::Tensor sum = item.value().to(at::kDouble) * mix[0];
      for (std::size_t i = 1; i < count; ++i) sum += others[i - 1][item.key()].to(at::kDouble) * mix[i];
      item.value().copy_(sum);
    }
  } catch (const c10::Error& e) {
    return core::internal_error(fmt::format("average: LibTorch failed: {}", e.what_without_backtrace()));
  }
  const std::map<std::string, std::string> metadata = {
      {"averaged_by", "trackscope-cli average"},
      {"averaged_from", fmt::format("{}", fmt::join(sources, "; "))},
  };
  TRACKSCOPE_RETURN_IF_ERROR(weights::save_model_safetensors(*models.front().model, options.output, dtype, metadata));
  core::log::info("wrote the average of {} {} weights files as {} to {}", count, models.front().info.model_name,
                  options.dtype, options.output.string());
  return inspect_model_weights(options.output);
}

}  // namespace trackscope::gpu
