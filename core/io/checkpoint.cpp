#include "core/io/checkpoint.h"

#include <zip.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include "core/io/pickle.h"
#include "core/io/zip_member.h"

namespace trackscope::core::io {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxTensorDims = 64;

struct ZipDiscard {
  void operator()(zip_t* archive) const { zip_discard(archive); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipDiscard>;

std::optional<TensorDtype> dtype_of_storage(std::string_view type_name) {
  static constexpr std::pair<std::string_view, TensorDtype> kTypes[] = {
      {"FloatStorage", TensorDtype::f32},     {"DoubleStorage", TensorDtype::f64}, {"HalfStorage", TensorDtype::f16},
      {"BFloat16Storage", TensorDtype::bf16}, {"LongStorage", TensorDtype::i64},   {"IntStorage", TensorDtype::i32},
      {"ShortStorage", TensorDtype::i16},     {"CharStorage", TensorDtype::i8},    {"ByteStorage", TensorDtype::u8},
      {"BoolStorage", TensorDtype::boolean}};
  for (const auto& [name, dtype] : kTypes) {
    if (name == type_name) return dtype;
  }
  return std::nullopt;
}

class Reader {
 public:
  Reader(zip_t* archive, uint64_t archive_bytes, std::string source)
      : archive_(archive), archive_bytes_(archive_bytes), source_(std::move(source)) {}

  Expected<Checkpoint> read() {
    TRACKSCOPE_RETURN_IF_ERROR(find_prefix());
    Expected<std::string> pickle_bytes = member(prefix_ + "data.pkl", kMaxCheckpointPickleBytes);
    if (!pickle_bytes) return pickle_bytes.status();
    Expected<pickle::Document> document = pickle::unpickle(*pickle_bytes, source_);
    if (!document) return document.status();
    document_ = &*document;
    return extract();
  }

 private:
  Status fail(const std::string& what) const {
    return corrupt_data(fmt::format("'{}' is not a readable PyTorch checkpoint: {}", source_, what));
  }

  Status find_prefix() {
    const zip_int64_t entries = zip_get_num_entries(archive_, 0);
    std::vector<std::string> prefixes;
    bool has_code = false;
    for (zip_int64_t i = 0; i < entries; ++i) {
      const char* name = zip_get_name(archive_, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW);
      if (name == nullptr) continue;
      const std::string_view entry(name);
      const size_t slash = entry.find('/');
      if (slash == std::string_view::npos) continue;
      const std::string_view rest = entry.substr(slash + 1);
      if (rest == "data.pkl") prefixes.emplace_back(entry.substr(0, slash + 1));
      if (rest.substr(0, 5) == "code/" || rest == "constants.pkl") has_code = true;
    }
    if (has_code) {
      return unsupported(fmt::format(
          "'{}' is a TorchScript module (torch.jit.save), not a torch.save checkpoint of weights; save the model's "
          "state_dict() with torch.save instead",
          source_));
    }
    if (prefixes.size() != 1) {
      return fail(prefixes.empty() ? "the zip archive has no <name>/data.pkl (a torch.save file has one)"
                                   : fmt::format("the zip archive has {} data.pkl files", prefixes.size()));
    }
    prefix_ = prefixes[0];
    if (zip_name_locate(archive_, (prefix_ + "byteorder").c_str(), 0) >= 0) {
      Expected<std::string> order = member(prefix_ + "byteorder", 64);
      if (!order) return order.status();
      if (*order != "little") {
        return unsupported(
            fmt::format("'{}' was saved on a '{}'-endian machine; only little-endian checkpoints are read", source_,
                        order->substr(0, 16)));
      }
    }
    return {};
  }

  // A whole member, refused above `max_bytes` (as the archive declares it) before anything is allocated.
  Expected<std::string> member(const std::string& name, uint64_t max_bytes) {
    const zip_int64_t index = zip_name_locate(archive_, name.c_str(), 0);
    if (index < 0) return fail(fmt::format("the record {} is missing", name));
    Expected<std::string> bytes =
        read_zip_member(archive_, static_cast<zip_uint64_t>(index), archive_bytes_, max_bytes, source_);
    if (!bytes && bytes.status().code() == StatusCode::unsupported) return invalid_argument(bytes.status().message());
    return bytes;
  }

  // The bytes of a storage, read once per key.
  Expected<const std::string*> storage_bytes(const pickle::StorageRef& storage, size_t element_size) {
    auto found = storages_.find(storage.key);
    if (found == storages_.end()) {
      if (storage.key.empty() || storage.key.find('/') != std::string::npos ||
          storage.key.find("..") != std::string::npos) {
        return fail(fmt::format("a storage key '{}' is not a record name", storage.key.substr(0, 64)));
      }
      const uint64_t expected = static_cast<uint64_t>(storage.numel) * element_size;
      if (static_cast<uint64_t>(storage.numel) > kMaxCheckpointTensorBytes || expected > kMaxCheckpointTensorBytes) {
        return invalid_argument(fmt::format("'{}': storage {} holds {} elements, more than this reader accepts",
                                            source_, storage.key, storage.numel));
      }
      // Storages are read whole: their total is bounded too (many one-element views of distinct big storages).
      if (read_bytes_ + expected > kMaxCheckpointTensorBytes) {
        return invalid_argument(
            fmt::format("'{}': the state dict's storages exceed {} bytes", source_, kMaxCheckpointTensorBytes));
      }
      Expected<std::string> bytes = member(prefix_ + "data/" + storage.key, expected);
      if (!bytes) return bytes.status();
      read_bytes_ += bytes->size();
      if (bytes->size() != expected) {
        return fail(fmt::format("storage {} has {} bytes, its {} elements of {} need {} (truncated?)", storage.key,
                                bytes->size(), storage.numel, storage.type_name, expected));
      }
      found = storages_.emplace(storage.key, std::move(*bytes)).first;
    }
    return &found->second;
  }

  Expected<CheckpointTensor> materialise(const std::string& name, const pickle::Node& node) {
    const pickle::TensorRef& tensor = document_->tensor(node);
    const pickle::StorageRef& storage = document_->storage(document_->node(tensor.storage));
    const std::optional<TensorDtype> dtype = dtype_of_storage(storage.type_name);
    if (!dtype) {
      return unsupported(fmt::format("'{}': tensor '{}' is stored as torch.{}, a dtype the model cannot use", source_,
                                     name, storage.type_name));
    }
    const size_t element_size = dtype_size_bytes(*dtype);
    if (tensor.shape.size() > kMaxTensorDims)
      return fail(fmt::format("tensor '{}' has {} dimensions", name, tensor.shape.size()));
    // Elements, and the last element the view reaches, without overflow: sizes and strides come from the file.
    uint64_t count = 1;
    uint64_t last = static_cast<uint64_t>(std::max<int64_t>(tensor.storage_offset, 0));
    const uint64_t limit = kMaxCheckpointTensorBytes;
    if (tensor.storage_offset < 0) return fail(fmt::format("tensor '{}' has a negative storage offset", name));
    for (size_t d = 0; d < tensor.shape.size(); ++d) {
      const int64_t size = tensor.shape[d], stride = tensor.stride[d];
      if (size < 0 || stride < 0) return fail(fmt::format("tensor '{}' has a negative size or stride", name));
      if (size != 0 && count > limit / static_cast<uint64_t>(size)) {
        return invalid_argument(fmt::format("'{}': tensor '{}' of shape [{}] is larger than this reader accepts",
                                            source_, name, fmt::join(tensor.shape, ", ")));
      }
      count *= static_cast<uint64_t>(size);
    }
    // More elements than the storage holds is an expanded view (stride 0): valid in torch, absurd in weights, and
    // a way for a few bytes of file to claim gigabytes.
    if (count > static_cast<uint64_t>(storage.numel)) {
      return unsupported(
          fmt::format("'{}': tensor '{}' of shape [{}] is a view with more elements than its storage "
                      "({}); save a contiguous copy",
                      source_, name, fmt::join(tensor.shape, ", "), storage.numel));
    }
    if (count > limit / element_size || total_bytes_ + count * element_size > limit) {
      return invalid_argument(fmt::format("'{}': the state dict's tensors exceed {} bytes", source_, limit));
    }
    if (count > 0) {
      for (size_t d = 0; d < tensor.shape.size(); ++d) {
        const uint64_t reach = static_cast<uint64_t>(tensor.shape[d] - 1);
        const uint64_t stride = static_cast<uint64_t>(tensor.stride[d]);
        if (stride != 0 && reach > (std::numeric_limits<uint64_t>::max() - last) / stride) {
          return fail(fmt::format("tensor '{}' reaches beyond its storage", name));
        }
        last += reach * stride;
      }
      if (last >= static_cast<uint64_t>(storage.numel)) {
        return fail(
            fmt::format("tensor '{}' of shape [{}] (offset {}, strides [{}]) reaches element {} of a storage "
                        "of {}",
                        name, fmt::join(tensor.shape, ", "), tensor.storage_offset, fmt::join(tensor.stride, ", "),
                        last, storage.numel));
      }
    }
    Expected<const std::string*> bytes = storage_bytes(storage, element_size);
    if (!bytes) return bytes.status();
    CheckpointTensor out;
    out.name = name;
    out.dtype = *dtype;
    out.shape = tensor.shape;
    out.data.resize(static_cast<size_t>(count * element_size));
    total_bytes_ += out.data.size();
    if (count == 0) return out;
    const char* base = (*bytes)->data();
    // Walk the view in C order, copying runs of contiguous innermost elements at once.
    const size_t dims = tensor.shape.size();
    size_t run = 1;  // elements per contiguous run along the innermost dims
    size_t outer = dims;
    int64_t expected_stride = 1;
    while (outer > 0 && tensor.stride[outer - 1] == expected_stride) {
      run *= static_cast<size_t>(tensor.shape[outer - 1]);
      expected_stride *= tensor.shape[outer - 1];
      --outer;
    }
    std::vector<int64_t> index(outer, 0);
    for (size_t written = 0; written < count; written += run) {
      int64_t element = tensor.storage_offset;
      for (size_t d = 0; d < outer; ++d) element += index[d] * tensor.stride[d];
      std::memcpy(out.data.data() + written * element_size, base + static_cast<size_t>(element) * element_size,
                  run * element_size);
      for (size_t d = outer; d-- > 0;) {
        if (++index[d] < tensor.shape[d]) break;
        index[d] = 0;
      }
    }
    return out;
  }

  Expected<Checkpoint> extract() {
    const pickle::Document& doc = *document_;
    const pickle::Node& root = doc.node(doc.root());
    if (root.kind != pickle::Kind::dict) {
      return unsupported(
          fmt::format("'{}' holds {} instead of a dict of tensors (a state dict)", source_, doc.describe(doc.root())));
    }
    Checkpoint checkpoint;
    pickle::NodeId state = doc.root();
    checkpoint.layout = "state dict";
    if (const std::optional<pickle::NodeId> nested = doc.dict_get(doc.root(), "state_dict")) {
      if (doc.node(*nested).kind != pickle::Kind::dict) {
        return unsupported(
            fmt::format("'{}': its 'state_dict' entry is {}, not a dict of tensors", source_, doc.describe(*nested)));
      }
      state = *nested;
      checkpoint.layout = "Lightning checkpoint (state_dict)";
      for (size_t i = 0; i + 1 < root.items.size(); i += 2) {
        const pickle::Node& key = doc.node(root.items[i]);
        if (key.kind == pickle::Kind::string && key.text != "state_dict") checkpoint.other_entries.push_back(key.text);
      }
    }
    const pickle::Node& dict = doc.node(state);
    // Python semantics of a repeated key: first position, last value.
    std::map<std::string, size_t> position;
    for (size_t i = 0; i + 1 < dict.items.size(); i += 2) {
      const pickle::Node& key = doc.node(dict.items[i]);
      const pickle::Node& value = doc.node(dict.items[i + 1]);
      if (key.kind != pickle::Kind::string) {
        return unsupported(
            fmt::format("'{}': the state dict has a key that is {}, not a name", source_, doc.describe(dict.items[i])));
      }
      if (value.kind != pickle::Kind::tensor) {
        return unsupported(fmt::format("'{}': entry '{}' of the state dict is {}, not a tensor", source_, key.text,
                                       doc.describe(dict.items[i + 1])));
      }
      Expected<CheckpointTensor> tensor = materialise(key.text, value);
      if (!tensor) return tensor.status();
      const auto [it, inserted] = position.emplace(key.text, checkpoint.tensors.size());
      if (inserted) {
        checkpoint.tensors.push_back(std::move(*tensor));
      } else {
        total_bytes_ -= checkpoint.tensors[it->second].data.size();
        checkpoint.tensors[it->second] = std::move(*tensor);
      }
    }
    if (checkpoint.tensors.empty()) {
      std::vector<std::string> keys;
      for (size_t i = 0; i + 1 < root.items.size() && keys.size() < 8; i += 2) {
        const pickle::Node& key = doc.node(root.items[i]);
        if (key.kind == pickle::Kind::string) keys.push_back("'" + key.text.substr(0, 40) + "'");
      }
      return invalid_argument(
          fmt::format("'{}' holds no tensors (neither a state dict nor a 'state_dict' entry; its "
                      "keys: {})",
                      source_, keys.empty() ? std::string("none") : fmt::format("{}", fmt::join(keys, ", "))));
    }
    return checkpoint;
  }

  zip_t* archive_;
  uint64_t archive_bytes_ = 0;
  std::string source_;
  std::string prefix_;
  const pickle::Document* document_ = nullptr;
  std::map<std::string, std::string> storages_;
  uint64_t total_bytes_ = 0;
  uint64_t read_bytes_ = 0;
};

std::string zip_error_text(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  return text;
}

}  // namespace

Expected<Checkpoint> read_checkpoint(const fs::path& path) {
  std::error_code exists;
  if (!fs::is_regular_file(path, exists))
    return not_found(fmt::format("checkpoint '{}' does not exist", path.string()));
  int code = 0;
  ZipPtr archive(zip_open(path.c_str(), ZIP_RDONLY, &code));
  if (!archive) {
    if (code == ZIP_ER_OPEN || code == ZIP_ER_READ) {
      return io_error(fmt::format("cannot read '{}': {}", path.string(), zip_error_text(code)));
    }
    return corrupt_data(fmt::format("'{}' is not a readable PyTorch checkpoint: its zip archive is damaged ({})",
                                    path.string(), zip_error_text(code)));
  }
  const uint64_t archive_bytes = fs::file_size(path, exists);
  return Reader(archive.get(), exists ? 0 : archive_bytes, path.string()).read();
}

Expected<Checkpoint> parse_checkpoint(std::string_view bytes, const std::string& source) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (buffer == nullptr) return internal_error(fmt::format("libzip: {}", zip_error_strerror(&error)));
  ZipPtr archive(zip_open_from_source(buffer, ZIP_RDONLY, &error));
  if (!archive) {
    zip_source_free(buffer);
    const std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    return corrupt_data(
        fmt::format("'{}' is not a readable PyTorch checkpoint: its zip archive is damaged ({})", source, message));
  }
  zip_error_fini(&error);
  return Reader(archive.get(), bytes.size(), source).read();
}

WeightsFileKind detect_weights_file(std::span<const std::byte> head, uint64_t file_size) {
  auto byte = [&](size_t i) { return i < head.size() ? std::to_integer<uint8_t>(head[i]) : -1; };
  if (byte(0) == 'P' && byte(1) == 'K' && byte(2) == 3 && byte(3) == 4) return WeightsFileKind::torch_zip;
  if (byte(0) == 0x80 && byte(1) >= 2 && byte(1) <= 5) return WeightsFileKind::torch_legacy;
  if (head.size() >= 9 && file_size >= 9) {
    uint64_t header = 0;
    std::memcpy(&header, head.data(), 8);
    if (header >= 2 && header <= file_size - 8 && byte(8) == '{') return WeightsFileKind::safetensors;
  }
  return WeightsFileKind::unknown;
}

std::string describe_unknown_weights_file(const fs::path& path, std::span<const std::byte> head) {
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::vector<std::string> hex;
  for (size_t i = 0; i < std::min<size_t>(head.size(), 8); ++i)
    hex.push_back(fmt::format("{:02x}", std::to_integer<uint8_t>(head[i])));
  const std::string start = head.empty() ? "it is empty" : fmt::format("it starts with {}", fmt::join(hex, " "));
  if (extension == ".ckpt" || extension == ".pt" || extension == ".pth" || extension == ".bin") {
    return fmt::format(
        "'{}' is not a PyTorch checkpoint: torch.save writes a zip archive (starting with 'PK'), but {}. The file "
        "is damaged or something else; expected a LocoTrack checkpoint (locotrack_small.ckpt / "
        "locotrack_base.ckpt from the release) or a .safetensors file",
        path.string(), start);
  }
  return fmt::format(
      "'{}' is not a weights file Trackscope reads: neither a PyTorch checkpoint (a torch.save zip archive) nor "
      "safetensors (an 8-byte header length, then a JSON header); {}",
      path.string(), start);
}

}  // namespace trackscope::core::io
