#include "gpu/training/checkpoint.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>

#include "core/io/atomic_file.h"

namespace trackscope::gpu::training {

namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

struct DtypeName {
  at::ScalarType type;
  const char* name;
};
constexpr DtypeName kDtypes[] = {
    {at::kFloat, "F32"}, {at::kBFloat16, "BF16"}, {at::kHalf, "F16"}, {at::kDouble, "F64"}};

at::ScalarType scalar_type(WeightsDtype dtype) {
  switch (dtype) {
    case WeightsDtype::fp32: return at::kFloat;
    case WeightsDtype::bf16: return at::kBFloat16;
    case WeightsDtype::fp16: return at::kHalf;
  }
  return at::kFloat;
}

std::string shape_text(at::IntArrayRef shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

const char* dtype_name(at::ScalarType type) {
  for (const DtypeName& d : kDtypes) {
    if (d.type == type) return d.name;
  }
  return nullptr;
}

// Every parameter and buffer by state_dict name, sorted (std::map).
std::map<std::string, at::Tensor> named_tensors(const torch::nn::Module& module) {
  std::map<std::string, at::Tensor> tensors;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) tensors[item.key()] = item.value();
  for (const auto& item : module.named_buffers(/*recurse=*/true)) tensors[item.key()] = item.value();
  return tensors;
}

core::Status write_file(const std::filesystem::path& path,
                        const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    const auto bytes = static_cast<uint64_t>(tensor.numel()) * tensor.element_size();
    header[name] = {{"dtype", dtype_name(tensor.scalar_type())},
                    {"shape", tensor.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  core::Expected<core::io::AtomicFile> out = core::io::AtomicFile::create(path);
  if (!out) return out.status();
  const uint64_t length = text.size();
  TRACKSCOPE_RETURN_IF_ERROR(out->write({reinterpret_cast<const char*>(&length), sizeof(length)}));
  TRACKSCOPE_RETURN_IF_ERROR(out->write(text));
  for (const auto& item : tensors) {
    TRACKSCOPE_RETURN_IF_ERROR(out->write({static_cast<const char*>(item.second.data_ptr()),
                                           static_cast<size_t>(item.second.numel() * item.second.element_size())}));
  }
  return out->commit();
}

struct FileTensor {
  at::ScalarType type;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

struct ParsedFile {
  std::vector<char> bytes;
  size_t data_offset = 0;
  std::map<std::string, FileTensor> tensors;
  std::map<std::string, std::string> metadata;
};

core::Expected<ParsedFile> parse_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::not_found(fmt::format("cannot open weights '{}'", path.string()));
  ParsedFile file;
  file.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  const std::string where = path.string();
  if (file.bytes.size() < 8)
    return core::corrupt_data(fmt::format("'{}' is truncated ({} bytes)", where, file.bytes.size()));
  uint64_t length = 0;
  std::memcpy(&length, file.bytes.data(), 8);
  if (length > file.bytes.size() - 8) {
    return core::corrupt_data(fmt::format("'{}': header of {} bytes runs past the end of the file", where, length));
  }
  file.data_offset = 8 + length;
  const uint64_t data_size = file.bytes.size() - file.data_offset;
  try {
    const nlohmann::json header = nlohmann::json::parse(
        file.bytes.begin() + 8, file.bytes.begin() + static_cast<std::ptrdiff_t>(file.data_offset));
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        for (const auto& [key, value] : entry.items()) file.metadata[key] = value.get<std::string>();
        continue;
      }
      FileTensor t{};
      const std::string dtype = entry.at("dtype").get<std::string>();
      const DtypeName* known =
          std::find_if(std::begin(kDtypes), std::end(kDtypes), [&](const DtypeName& d) { return dtype == d.name; });
      if (known == std::end(kDtypes))
        return core::unsupported(
            fmt::format("'{}': tensor '{}' has dtype {} (F32, BF16, F16, F64 are read)", where, name, dtype));
      t.type = known->type;
      t.shape = entry.at("shape").get<std::vector<int64_t>>();
      const auto offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
      if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data_size) {
        return core::corrupt_data(
            fmt::format("'{}': tensor '{}' has byte range outside the {} data bytes", where, name, data_size));
      }
      t.begin = offsets[0];
      t.end = offsets[1];
      uint64_t elements = 1;
      for (int64_t d : t.shape) {
        if (d < 0) return core::corrupt_data(fmt::format("'{}': tensor '{}' has a negative dimension", where, name));
        elements *= static_cast<uint64_t>(d);
      }
      if (elements * at::elementSize(t.type) != t.end - t.begin) {
        return core::corrupt_data(fmt::format("'{}': tensor '{}' has {} bytes for {} elements of {}", where, name,
                                              t.end - t.begin, elements, dtype));
      }
      file.tensors[name] = t;
    }
  } catch (const nlohmann::json::exception& e) {
    return core::corrupt_data(fmt::format("'{}': bad safetensors header: {}", where, e.what()));
  }
  return file;
}

}  // namespace

core::Expected<std::vector<std::filesystem::path>> save_weights(const torch::nn::Module& module,
                                                                const std::filesystem::path& dir,
                                                                const std::string& stem, WeightsDtype dtype,
                                                                int64_t max_shard_bytes,
                                                                const std::map<std::string, std::string>& metadata) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return core::io_error(fmt::format("cannot create '{}': {}", dir.string(), error.message()));
  std::vector<std::vector<std::pair<std::string, at::Tensor>>> shards(1);
  int64_t shard_bytes = 0;
  for (const auto& [name, tensor] : named_tensors(module)) {
    at::Tensor converted = tensor.detach().to(at::kCPU, scalar_type(dtype)).contiguous();
    const int64_t bytes = converted.numel() * static_cast<int64_t>(converted.element_size());
    if (shard_bytes > 0 && shard_bytes + bytes > max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().emplace_back(name, converted);
    shard_bytes += bytes;
  }
  std::vector<std::filesystem::path> files;
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string name = shards.size() == 1 ? stem + ".safetensors" : fmt::format("{}-{}.safetensors", stem, i);
    files.push_back(dir / name);
    TRACKSCOPE_RETURN_IF_ERROR(write_file(files.back(), shards[i], metadata));
  }
  // Remove stale files of the other layout (a set that was sharded before and is not now, or the reverse).
  std::filesystem::remove(
      shards.size() == 1 ? dir / fmt::format("{}-0.safetensors", stem) : dir / (stem + ".safetensors"), error);
  for (size_t i = shards.size() == 1 ? 1 : shards.size();; ++i) {
    if (!std::filesystem::remove(dir / fmt::format("{}-{}.safetensors", stem, i), error)) break;
  }
  return files;
}

core::Expected<std::vector<std::filesystem::path>> weights_files(const std::filesystem::path& path) {
  if (std::filesystem::is_regular_file(path)) return std::vector<std::filesystem::path>{path};
  std::vector<std::filesystem::path> shards;
  const std::string stem = path.stem().string();
  for (int i = 0;; ++i) {
    const std::filesystem::path shard = path.parent_path() / fmt::format("{}-{}.safetensors", stem, i);
    if (!std::filesystem::is_regular_file(shard)) break;
    shards.push_back(shard);
  }
  if (shards.empty())
    return core::not_found(fmt::format("no weights at '{}' (nor shards {}-0.safetensors, ...)", path.string(), stem));
  return shards;
}

core::Status load_weights(torch::nn::Module& module, const std::filesystem::path& path) {
  auto files = weights_files(path);
  if (!files) return files.status();
  std::vector<ParsedFile> parsed;
  std::map<std::string, std::pair<size_t, FileTensor>> found;
  for (const std::filesystem::path& file : *files) {
    auto p = parse_file(file);
    if (!p) return p.status();
    parsed.push_back(std::move(*p));
    for (const auto& [name, tensor] : parsed.back().tensors) {
      if (!found.emplace(name, std::pair{parsed.size() - 1, tensor}).second) {
        return core::corrupt_data(fmt::format("tensor '{}' appears in two shards of '{}'", name, path.string()));
      }
    }
  }
  const std::map<std::string, at::Tensor> targets = named_tensors(module);
  for (const auto& [name, target] : targets) {
    const auto entry = found.find(name);
    if (entry == found.end())
      return core::invalid_argument(fmt::format("'{}' has no tensor '{}' that the model needs", path.string(), name));
    if (entry->second.second.shape != target.sizes().vec()) {
      return core::invalid_argument(fmt::format("'{}': tensor '{}' has shape {} but the model needs {}", path.string(),
                                                name, shape_text(entry->second.second.shape),
                                                shape_text(target.sizes())));
    }
  }
  for (const auto& [name, entry] : found) {
    if (!targets.count(name))
      return core::invalid_argument(
          fmt::format("'{}' has tensor '{}' that the model does not know", path.string(), name));
  }
  torch::NoGradGuard no_grad;
  for (const auto& [name, target] : targets) {
    const auto& [file_index, t] = found.at(name);
    const ParsedFile& file = parsed[file_index];
    at::Tensor source = at::empty(t.shape, at::TensorOptions(t.type));
    std::memcpy(source.data_ptr(), file.bytes.data() + file.data_offset + t.begin, t.end - t.begin);
    at::Tensor destination = target;  // shares storage with the module's tensor
    destination.copy_(source.to(target.scalar_type()));
  }
  return {};
}

core::Expected<std::map<std::string, std::string>> read_weights_metadata(const std::filesystem::path& path) {
  auto files = weights_files(path);
  if (!files) return files.status();
  auto parsed = parse_file(files->front());
  if (!parsed) return parsed.status();
  return parsed->metadata;
}

}  // namespace trackscope::gpu::training
