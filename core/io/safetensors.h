#pragma once
// Reading and writing .safetensors files (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON `{"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
// "__metadata__": {"key": "value"}}`, then the tensor bytes (offsets are relative to the end of the header).
// Torch-free: the gpu layer turns the byte ranges into tensors.
//
//   Expected<SafetensorsSet> set = SafetensorsSet::open("weights/model-*.safetensors");   // or one file
//   if (!set) return set.status();
//   for (const TensorEntry& t : set->tensors()) use(t.name, t.dtype, t.shape, set->bytes(t));
//
//   std::vector<TensorToWrite> out = {{"w", TensorDtype::f32, {2, 3}, std::as_bytes(std::span(values))}};
//   Status written = write_safetensors("out.safetensors", out, {{"format", "pt"}});
//
// Validation is strict (the reference implementation's rules): a truncated file, a header length beyond the
// file, bad JSON, duplicate names, an unknown dtype, a byte range that does not match shape x dtype, ranges
// that overlap, leave gaps or run past the data, all give corrupt_data/unsupported with the tensor named.
// A set of shards behaves as one set of tensors; a name present in two shards is an error.
// Threads: a SafetensorsSet is immutable after open() and may be read from any thread.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace trackscope::core::io {

enum class TensorDtype { boolean, u8, i8, u16, i16, f16, bf16, u32, i32, f32, u64, i64, f64, f8_e4m3, f8_e5m2 };

/// The safetensors spelling ("F32", "BF16", "U8", "BOOL", "F8_E4M3", ...).
std::string_view dtype_name(TensorDtype dtype);
std::optional<TensorDtype> dtype_from_name(std::string_view name);
std::size_t dtype_size_bytes(TensorDtype dtype);

struct TensorEntry {
  std::string name;
  TensorDtype dtype = TensorDtype::f32;
  std::vector<std::int64_t> shape;
  std::uint64_t data_begin = 0;  // byte range in its shard's data section (after the header)
  std::uint64_t data_end = 0;
  std::size_t shard = 0;  // index into SafetensorsSet::files()

  std::int64_t element_count() const;
  /// "name (BF16 [64, 49, 5, 5])", for messages.
  std::string describe() const;
};

/// Files a path stands for: the file itself if it exists; for a name containing '*', the matching files of
/// its folder; for "dir/stem.safetensors" that does not exist, the shards "dir/stem-0.safetensors",
/// "dir/stem-1.safetensors", ... Shards are sorted naturally (stem-2 before stem-10). not_found if none exist.
Expected<std::vector<std::filesystem::path>> resolve_shards(const std::filesystem::path& path);

/// The identity of the weights a path stands for (resolve_shards): the file's SHA-256 (hex), or for several
/// shards the SHA-256 of their hex digests concatenated in shard order. The batch command's checksums use it.
Expected<std::string> weights_sha256(const std::filesystem::path& path);

class SafetensorsSet {
 public:
  /// One file, a '*' pattern or an implied shard set (see resolve_shards). Reads the files into memory.
  static Expected<SafetensorsSet> open(const std::filesystem::path& path);
  /// Several shards forming one set of tensors.
  static Expected<SafetensorsSet> open(const std::vector<std::filesystem::path>& shards);
  /// Parses bytes already in memory; `source` names them in messages.
  static Expected<SafetensorsSet> parse(std::vector<std::byte> bytes, const std::string& source);

  /// Every tensor, shard by shard, each shard's tensors in data order.
  const std::vector<TensorEntry>& tensors() const { return tensors_; }
  /// nullptr when absent.
  const TensorEntry* find(std::string_view name) const;
  /// The raw little-endian bytes of a tensor of this set (data_end - data_begin bytes, no alignment promised).
  std::span<const std::byte> bytes(const TensorEntry& tensor) const;
  /// The union of the shards' __metadata__ (a key in two shards keeps the first shard's value).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::vector<std::filesystem::path>& files() const { return files_; }
  /// Sum of data bytes over all tensors.
  std::uint64_t data_bytes() const;

 private:
  struct Shard {
    std::shared_ptr<const std::vector<std::byte>> file_bytes;
    std::size_t data_offset = 0;  // 8 + header length
  };
  Status add_shard(std::vector<std::byte> bytes, const std::string& source);

  std::vector<Shard> shards_;
  std::vector<std::filesystem::path> files_;
  std::vector<TensorEntry> tensors_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

struct TensorToWrite {
  std::string name;
  TensorDtype dtype = TensorDtype::f32;
  std::vector<std::int64_t> shape;
  std::span<const std::byte> data;  // exactly element_count x dtype size bytes, little-endian
};

/// The bytes of a safetensors file holding `tensors` in the given order, with `metadata` as __metadata__
/// (omitted when empty). The header is padded with spaces to a multiple of 8 bytes. invalid_argument for an
/// empty or duplicate name, a name "__metadata__", or a data size that does not match shape and dtype.
Expected<std::vector<std::byte>> serialize_safetensors(const std::vector<TensorToWrite>& tensors,
                                                       const std::map<std::string, std::string>& metadata = {});

/// Writes serialize_safetensors() to `path` through a temporary file in the same folder and a rename, so a
/// failed write never leaves a half-written file under the final name.
Status write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

}  // namespace trackscope::core::io
