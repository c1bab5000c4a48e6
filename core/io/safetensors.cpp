#include "core/io/safetensors.h"

#include "core/io/atomic_file.h"
#include "core/io/sha256.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <utility>

namespace trackscope::core::io {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

// The reference implementation refuses headers above 100 MB; a header that large is damage, not a model.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

struct DtypeInfo {
  TensorDtype dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DtypeInfo, 15> kDtypes = {{
    {TensorDtype::boolean, "BOOL", 1},
    {TensorDtype::u8, "U8", 1},
    {TensorDtype::i8, "I8", 1},
    {TensorDtype::u16, "U16", 2},
    {TensorDtype::i16, "I16", 2},
    {TensorDtype::f16, "F16", 2},
    {TensorDtype::bf16, "BF16", 2},
    {TensorDtype::u32, "U32", 4},
    {TensorDtype::i32, "I32", 4},
    {TensorDtype::f32, "F32", 4},
    {TensorDtype::u64, "U64", 8},
    {TensorDtype::i64, "I64", 8},
    {TensorDtype::f64, "F64", 8},
    {TensorDtype::f8_e4m3, "F8_E4M3", 1},
    {TensorDtype::f8_e5m2, "F8_E5M2", 1},
}};

const DtypeInfo& info_of(TensorDtype dtype) {
  for (const DtypeInfo& info : kDtypes) {
    if (info.dtype == dtype) return info;
  }
  throw InvariantError("unknown TensorDtype");
}

// Element count with overflow detection; nullopt if the product does not fit in int64.
std::optional<std::int64_t> checked_element_count(const std::vector<std::int64_t>& shape) {
  std::int64_t count = 1;
  for (std::int64_t dim : shape) {
    if (dim < 0) return std::nullopt;
    if (dim != 0 && count > std::numeric_limits<std::int64_t>::max() / dim) return std::nullopt;
    count *= dim;
  }
  return count;
}

Expected<std::vector<std::byte>> read_file(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return not_found(fmt::format("safetensors file '{}' does not exist", path.string()));
  }
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error) return io_error(fmt::format("cannot read the size of '{}': {}", path.string(), error.message()));
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error(fmt::format("cannot open '{}' for reading", path.string()));
  std::vector<std::byte> bytes(static_cast<std::size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  if (static_cast<std::uintmax_t>(in.gcount()) != size) {
    return io_error(fmt::format("reading '{}' stopped after {} of {} bytes", path.string(), in.gcount(), size));
  }
  return bytes;
}

// Splits a name into text and digit runs so that "x-2" sorts before "x-10".
bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool digit_a = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
    const bool digit_b = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
    if (digit_a && digit_b) {
      std::size_t end_a = i, end_b = j;
      while (end_a < a.size() && std::isdigit(static_cast<unsigned char>(a[end_a]))) ++end_a;
      while (end_b < b.size() && std::isdigit(static_cast<unsigned char>(b[end_b]))) ++end_b;
      const std::string run_a = a.substr(i, end_a - i), run_b = b.substr(j, end_b - j);
      const std::string trimmed_a = run_a.substr(std::min(run_a.find_first_not_of('0'), run_a.size()));
      const std::string trimmed_b = run_b.substr(std::min(run_b.find_first_not_of('0'), run_b.size()));
      if (trimmed_a.size() != trimmed_b.size()) return trimmed_a.size() < trimmed_b.size();
      if (trimmed_a != trimmed_b) return trimmed_a < trimmed_b;
      i = end_a;
      j = end_b;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

// Matches a file name against a pattern whose only wildcard is '*'.
bool wildcard_match(std::string_view pattern, std::string_view text) {
  const std::size_t star = pattern.find('*');
  if (star == std::string_view::npos) return pattern == text;
  const std::string_view head = pattern.substr(0, star);
  if (text.substr(0, head.size()) != head) return false;
  const std::string_view rest = pattern.substr(star + 1);
  for (std::size_t k = head.size(); k <= text.size(); ++k) {
    if (wildcard_match(rest, text.substr(k))) return true;
  }
  return false;
}

std::vector<std::filesystem::path> sorted_naturally(std::vector<std::filesystem::path> paths) {
  std::sort(paths.begin(), paths.end(),
            [](const auto& a, const auto& b) { return natural_less(a.filename().string(), b.filename().string()); });
  return paths;
}

}  // namespace

std::string_view dtype_name(TensorDtype dtype) { return info_of(dtype).name; }

std::optional<TensorDtype> dtype_from_name(std::string_view name) {
  for (const DtypeInfo& info : kDtypes) {
    if (info.name == name) return info.dtype;
  }
  return std::nullopt;
}

std::size_t dtype_size_bytes(TensorDtype dtype) { return info_of(dtype).size; }

std::int64_t TensorEntry::element_count() const { return checked_element_count(shape).value_or(-1); }

std::string TensorEntry::describe() const {
  return fmt::format("{} ({} [{}])", name, dtype_name(dtype), fmt::join(shape, ", "));
}

Expected<std::string> weights_sha256(const std::filesystem::path& path) {
  Expected<std::vector<std::filesystem::path>> files = resolve_shards(path);
  if (!files) return files.status();
  std::string hashes;
  for (const std::filesystem::path& file : *files) {
    Expected<std::string> sha = sha256_file_hex(file);
    if (!sha) return sha.status();
    hashes += *sha;
  }
  return files->size() == 1 ? hashes : sha256_hex(hashes);
}

Expected<std::vector<std::filesystem::path>> resolve_shards(const std::filesystem::path& path) {
  std::error_code error;
  if (std::filesystem::is_regular_file(path, error)) return std::vector<std::filesystem::path>{path};
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  const std::string name = path.filename().string();
  std::vector<std::filesystem::path> found;
  if (name.find('*') != std::string::npos) {
    for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
      if (entry.is_regular_file(error) && wildcard_match(name, entry.path().filename().string())) {
        found.push_back(entry.path());
      }
    }
    if (found.empty()) return not_found(fmt::format("no file matches '{}'", path.string()));
    return sorted_naturally(std::move(found));
  }
  if (path.extension() == ".safetensors") {
    const std::string stem = path.stem().string();
    for (int index = 0;; ++index) {
      const std::filesystem::path shard = folder / fmt::format("{}-{}.safetensors", stem, index);
      if (!std::filesystem::is_regular_file(shard, error)) break;
      found.push_back(shard);
    }
  }
  if (found.empty()) {
    return not_found(fmt::format("'{}' does not exist (nor do shards named {}-0.safetensors, -1, ...)", path.string(),
                                 path.stem().string()));
  }
  return found;
}

Expected<SafetensorsSet> SafetensorsSet::open(const std::filesystem::path& path) {
  Expected<std::vector<std::filesystem::path>> shards = resolve_shards(path);
  if (!shards) return shards.status();
  return open(*shards);
}

Expected<SafetensorsSet> SafetensorsSet::open(const std::vector<std::filesystem::path>& shards) {
  if (shards.empty()) return invalid_argument("no safetensors file given");
  SafetensorsSet set;
  for (const std::filesystem::path& path : shards) {
    Expected<std::vector<std::byte>> bytes = read_file(path);
    if (!bytes) return bytes.status();
    TRACKSCOPE_RETURN_IF_ERROR(set.add_shard(std::move(*bytes), path.string()));
    set.files_.push_back(path);
  }
  return set;
}

Expected<SafetensorsSet> SafetensorsSet::parse(std::vector<std::byte> bytes, const std::string& source) {
  SafetensorsSet set;
  TRACKSCOPE_RETURN_IF_ERROR(set.add_shard(std::move(bytes), source));
  set.files_.emplace_back(source);
  return set;
}

Status SafetensorsSet::add_shard(std::vector<std::byte> bytes, const std::string& source) {
  auto fail = [&source](const std::string& what) {
    return corrupt_data(fmt::format("'{}' is not a valid safetensors file: {}", source, what));
  };
  const std::uint64_t file_size = bytes.size();
  if (file_size < 8) {
    return fail(fmt::format("it has {} bytes, fewer than the 8-byte header length (truncated?)", file_size));
  }
  std::uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  if (header_size > file_size - 8) {
    return fail(
        fmt::format("the header length {} runs past the end of the file ({} bytes): truncated, or not "
                    "a safetensors file",
                    header_size, file_size));
  }
  if (header_size > kMaxHeaderBytes) return fail(fmt::format("the header length {} is absurd", header_size));
  if (header_size < 2 || static_cast<char>(bytes[8]) != '{') return fail("the header is not a JSON object");
  const auto* header_begin = reinterpret_cast<const char*>(bytes.data() + 8);
  const std::string_view header_text(header_begin, static_cast<std::size_t>(header_size));

  // nlohmann keeps the last of two equal keys silently; the callback sees every top-level key.
  std::vector<std::string> duplicates;
  std::set<std::string> seen;
  nlohmann::json header;
  try {
    header =
        nlohmann::json::parse(header_text.begin(), header_text.end(),
                              [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
                                if (depth == 1 && event == nlohmann::json::parse_event_t::key && parsed.is_string()) {
                                  if (!seen.insert(parsed.get<std::string>()).second)
                                    duplicates.push_back(parsed.get<std::string>());
                                }
                                return true;
                              });
  } catch (const nlohmann::json::exception& e) {
    return fail(fmt::format("bad JSON header: {}", e.what()));
  }
  if (!header.is_object()) return fail("the header is not a JSON object");
  if (!duplicates.empty()) return fail(fmt::format("duplicate names in the header: {}", fmt::join(duplicates, ", ")));

  const std::size_t shard_index = shards_.size();
  const std::uint64_t data_size = file_size - 8 - header_size;
  std::vector<TensorEntry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) return fail("__metadata__ is not an object of strings");
      for (const auto& [key, text] : value.items()) {
        if (!text.is_string()) return fail(fmt::format("__metadata__ entry '{}' is not a string", key));
        metadata_.emplace(key, text.get<std::string>());
      }
      continue;
    }
    if (name.empty()) return fail("a tensor has an empty name");
    if (!value.is_object()) return fail(fmt::format("the entry of '{}' is not an object", name));
    const auto dtype_it = value.find("dtype");
    const auto shape_it = value.find("shape");
    const auto offsets_it = value.find("data_offsets");
    if (dtype_it == value.end() || !dtype_it->is_string()) return fail(fmt::format("'{}' has no dtype string", name));
    if (shape_it == value.end() || !shape_it->is_array()) return fail(fmt::format("'{}' has no shape array", name));
    if (offsets_it == value.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
      return fail(fmt::format("'{}' has no data_offsets [begin, end]", name));
    }
    TensorEntry entry;
    entry.name = name;
    entry.shard = shard_index;
    const std::optional<TensorDtype> dtype = dtype_from_name(dtype_it->get<std::string>());
    if (!dtype) {
      return unsupported(
          fmt::format("'{}': tensor '{}' has the unknown dtype '{}'", source, name, dtype_it->get<std::string>()));
    }
    entry.dtype = *dtype;
    for (const auto& dim : *shape_it) {
      if (!dim.is_number_unsigned())
        return fail(fmt::format("'{}' has a shape entry that is not a natural number", name));
      const std::uint64_t d = dim.get<std::uint64_t>();
      if (d > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return fail(fmt::format("'{}' has an absurd dimension {}", name, d));
      }
      entry.shape.push_back(static_cast<std::int64_t>(d));
    }
    for (const auto& offset : *offsets_it) {
      if (!offset.is_number_unsigned())
        return fail(fmt::format("'{}' has data_offsets that are not natural numbers", name));
    }
    entry.data_begin = (*offsets_it)[0].get<std::uint64_t>();
    entry.data_end = (*offsets_it)[1].get<std::uint64_t>();
    if (entry.data_end < entry.data_begin) {
      return fail(fmt::format("'{}' has data_offsets [{}, {}] that end before they begin", name, entry.data_begin,
                              entry.data_end));
    }
    const std::optional<std::int64_t> count = checked_element_count(entry.shape);
    const std::uint64_t element_size = dtype_size_bytes(entry.dtype);
    if (!count || static_cast<std::uint64_t>(*count) > std::numeric_limits<std::uint64_t>::max() / element_size) {
      return fail(fmt::format("{} has a shape whose size overflows", entry.describe()));
    }
    const std::uint64_t expected_bytes = static_cast<std::uint64_t>(*count) * element_size;
    if (entry.data_end - entry.data_begin != expected_bytes) {
      return fail(fmt::format("{} needs {} bytes but its data_offsets [{}, {}] hold {}", entry.describe(),
                              expected_bytes, entry.data_begin, entry.data_end, entry.data_end - entry.data_begin));
    }
    if (entry.data_end > data_size) {
      return fail(fmt::format("{} lies at bytes [{}, {}) but the data section has only {} bytes (truncated file?)",
                              entry.describe(), entry.data_begin, entry.data_end, data_size));
    }
    entries.push_back(std::move(entry));
  }

  std::sort(entries.begin(), entries.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return std::pair(a.data_begin, a.data_end) < std::pair(b.data_begin, b.data_end);
  });
  std::uint64_t cursor = 0;
  const TensorEntry* previous = nullptr;
  for (const TensorEntry& entry : entries) {
    if (entry.data_begin == entry.data_end && entry.data_begin <= cursor) continue;  // empty tensors take no room
    if (entry.data_begin < cursor) {
      return fail(fmt::format("{} at [{}, {}) overlaps {} at [{}, {})", entry.describe(), entry.data_begin,
                              entry.data_end, previous->describe(), previous->data_begin, previous->data_end));
    }
    if (entry.data_begin > cursor) {
      return fail(
          fmt::format("{} begins at byte {}, leaving a gap after byte {}", entry.describe(), entry.data_begin, cursor));
    }
    cursor = entry.data_end;
    previous = &entry;
  }
  if (cursor != data_size) {
    return fail(fmt::format("the tensors cover {} bytes but the data section has {}", cursor, data_size));
  }

  for (TensorEntry& entry : entries) {
    if (index_.count(entry.name) != 0) {
      const TensorEntry& other = tensors_[index_.find(entry.name)->second];
      return corrupt_data(fmt::format("tensor '{}' is in two shards: '{}' and '{}'", entry.name,
                                      files_.size() > other.shard ? files_[other.shard].string() : "(earlier shard)",
                                      source));
    }
    index_.emplace(entry.name, tensors_.size());
    tensors_.push_back(std::move(entry));
  }
  Shard shard;
  shard.data_offset = static_cast<std::size_t>(8 + header_size);
  shard.file_bytes = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
  shards_.push_back(std::move(shard));
  return {};
}

const TensorEntry* SafetensorsSet::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const std::byte> SafetensorsSet::bytes(const TensorEntry& tensor) const {
  TRACKSCOPE_CHECK(tensor.shard < shards_.size(), "tensor entry from another set");
  const Shard& shard = shards_[tensor.shard];
  return std::span<const std::byte>(*shard.file_bytes)
      .subspan(shard.data_offset + tensor.data_begin, tensor.data_end - tensor.data_begin);
}

std::uint64_t SafetensorsSet::data_bytes() const {
  std::uint64_t total = 0;
  for (const TensorEntry& t : tensors_) total += t.data_end - t.data_begin;
  return total;
}

Expected<std::vector<std::byte>> serialize_safetensors(const std::vector<TensorToWrite>& tensors,
                                                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  std::uint64_t offset = 0;
  for (const TensorToWrite& tensor : tensors) {
    if (tensor.name.empty() || tensor.name == "__metadata__") {
      return invalid_argument(fmt::format("cannot write a tensor named '{}'", tensor.name));
    }
    if (!names.insert(tensor.name).second) {
      return invalid_argument(fmt::format("two tensors are named '{}'", tensor.name));
    }
    const std::optional<std::int64_t> count = checked_element_count(tensor.shape);
    if (!count) return invalid_argument(fmt::format("tensor '{}' has an invalid shape", tensor.name));
    const std::uint64_t expected = static_cast<std::uint64_t>(*count) * dtype_size_bytes(tensor.dtype);
    if (tensor.data.size() != expected) {
      return invalid_argument(fmt::format("tensor '{}' ({} [{}]) needs {} bytes, got {}", tensor.name,
                                          dtype_name(tensor.dtype), fmt::join(tensor.shape, ", "), expected,
                                          tensor.data.size()));
    }
    header[tensor.name] = {{"dtype", std::string(dtype_name(tensor.dtype))},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + expected}}};
    offset += expected;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::vector<std::byte> out(8 + text.size() + offset);
  const std::uint64_t header_size = text.size();
  std::memcpy(out.data(), &header_size, 8);
  std::memcpy(out.data() + 8, text.data(), text.size());
  std::size_t position = 8 + text.size();
  for (const TensorToWrite& tensor : tensors) {
    if (!tensor.data.empty()) std::memcpy(out.data() + position, tensor.data.data(), tensor.data.size());
    position += tensor.data.size();
  }
  return out;
}

Status write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  Expected<std::vector<std::byte>> bytes = serialize_safetensors(tensors, metadata);
  if (!bytes) return bytes.status();
  return write_file_atomically(path, {reinterpret_cast<const char*>(bytes->data()), bytes->size()});
}

}  // namespace trackscope::core::io
