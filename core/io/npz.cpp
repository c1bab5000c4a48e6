#include "core/io/npz.h"

#include <zip.h>

#include <charconv>
#include <limits>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/io/atomic_file.h"
#include "core/io/zip_member.h"

namespace trackscope::core::io {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

std::string zip_message(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  return text;
}

struct ZipCloser {
  void operator()(zip_t* archive) const {
    if (archive != nullptr) zip_discard(archive);
  }
};
using ZipHandle = std::unique_ptr<zip_t, ZipCloser>;

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<size_t> shape;
};

void skip_spaces(std::string_view& text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\n')) text.remove_prefix(1);
}

// The text after `'key'` and its colon, or nullopt.
std::optional<std::string_view> value_of(std::string_view header, std::string_view key) {
  const std::string quoted = fmt::format("'{}'", key);
  const size_t at = header.find(quoted);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = header.substr(at + quoted.size());
  skip_spaces(rest);
  if (rest.empty() || rest.front() != ':') return std::nullopt;
  rest.remove_prefix(1);
  skip_spaces(rest);
  return rest;
}

// The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 48, 2), }.
// Parsed by hand (no std::regex: libstdc++'s regex recurses per character and overflows the stack on long input).
std::optional<NpyHeader> parse_header(std::string_view header) {
  NpyHeader parsed;
  std::optional<std::string_view> descr = value_of(header, "descr");
  if (!descr || descr->empty() || descr->front() != '\'') return std::nullopt;
  const size_t close = descr->find('\'', 1);
  if (close == std::string_view::npos) return std::nullopt;
  parsed.descr = std::string(descr->substr(1, close - 1));
  std::optional<std::string_view> order = value_of(header, "fortran_order");
  if (!order) return std::nullopt;
  if (order->substr(0, 4) == "True") {
    parsed.fortran_order = true;
  } else if (order->substr(0, 5) != "False") {
    return std::nullopt;
  }
  std::optional<std::string_view> shape = value_of(header, "shape");
  if (!shape || shape->empty() || shape->front() != '(') return std::nullopt;
  std::string_view rest = shape->substr(1);
  while (true) {
    skip_spaces(rest);
    if (rest.empty()) return std::nullopt;
    if (rest.front() == ')') break;
    size_t extent = 0;
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), extent);
    if (error != std::errc()) return std::nullopt;  // not a number, or beyond size_t
    parsed.shape.push_back(extent);
    rest.remove_prefix(static_cast<size_t>(end - rest.data()));
    skip_spaces(rest);
    if (!rest.empty() && rest.front() == ',') rest.remove_prefix(1);
    if (parsed.shape.size() > 32) return std::nullopt;  // numpy's own limit is 32 dimensions (64 since 2.0)
  }
  return parsed;
}

Expected<std::vector<NpyArray>> read_members(zip_t* archive, uint64_t archive_bytes, const std::string& source) {
  std::vector<NpyArray> arrays;
  const zip_int64_t entries = zip_get_num_entries(archive, 0);
  for (zip_int64_t i = 0; i < entries; ++i) {
    const char* raw_name = zip_get_name(archive, static_cast<zip_uint64_t>(i), 0);
    if (raw_name == nullptr) continue;
    const std::string name = raw_name;
    if (name.size() < 4 || name.substr(name.size() - 4) != ".npy") continue;
    Expected<std::string> bytes =
        read_zip_member(archive, static_cast<zip_uint64_t>(i), archive_bytes, kMaxNpzMemberBytes, source);
    if (!bytes) return bytes.status();
    Expected<NpyArray> array = parse_npy(*bytes, name.substr(0, name.size() - 4));
    if (!array) return array.status();
    arrays.push_back(std::move(*array));
  }
  return arrays;
}

}  // namespace

size_t NpyArray::element_count() const {
  size_t count = 1;
  for (size_t extent : shape) count *= extent;
  return count;
}

size_t NpyArray::element_size() const {
  if (dtype == "<f4" || dtype == "<i4") return 4;
  if (dtype == "<f8" || dtype == "<i8") return 8;
  if (dtype == "|u1" || dtype == "|b1") return 1;
  return 0;
}

std::vector<double> NpyArray::as_doubles() const {
  std::vector<double> values(element_count());
  for (size_t i = 0; i < values.size(); ++i) {
    const std::byte* p = data.data() + i * element_size();
    if (dtype == "<f4") {
      float v;
      std::memcpy(&v, p, 4);
      values[i] = v;
    } else if (dtype == "<f8") {
      std::memcpy(&values[i], p, 8);
    } else if (dtype == "<i4") {
      int32_t v;
      std::memcpy(&v, p, 4);
      values[i] = v;
    } else if (dtype == "<i8") {
      int64_t v;
      std::memcpy(&v, p, 8);
      values[i] = static_cast<double>(v);
    } else {
      values[i] = static_cast<double>(std::to_integer<uint8_t>(*p));
    }
  }
  return values;
}

std::string npy_bytes(const NpyArray& array) {
  // Python tuple syntax: "()", "(3,)", "(2, 48, 2)".
  std::string shape;
  for (size_t i = 0; i < array.shape.size(); ++i) shape += fmt::format("{}{}", i > 0 ? ", " : "", array.shape[i]);
  shape = array.shape.size() == 1 ? "(" + shape + ",)" : "(" + shape + ")";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", array.dtype, shape);
  // magic (6) + version (2) + header length (2) + header, padded with spaces and ended by '\n' to a multiple of 64.
  const size_t unpadded = kMagic.size() + 4 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>((header.size() >> 8) & 0xFF);
  out += header;
  out.append(reinterpret_cast<const char*>(array.data.data()), array.data.size());
  return out;
}

Expected<NpyArray> parse_npy(std::string_view bytes, std::string name) {
  if (bytes.size() < 10 || bytes.substr(0, kMagic.size()) != kMagic) {
    return corrupt_data(fmt::format("{}.npy is not a NumPy array file (no \\x93NUMPY magic)", name));
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_length = 0, header_start = 0;
  if (major == 1) {
    header_length =
        static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return corrupt_data(fmt::format("{}.npy: truncated header", name));
    for (int i = 0; i < 4; ++i)
      header_length |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    return unsupported(fmt::format("{}.npy: .npy format version {} is not supported", name, major));
  }
  if (header_length > kMaxNpyHeaderBytes) {
    return corrupt_data(fmt::format("{}.npy: its header claims {} bytes; numpy writes at most {}", name, header_length,
                                    kMaxNpyHeaderBytes));
  }
  if (header_start + header_length > bytes.size()) return corrupt_data(fmt::format("{}.npy: truncated header", name));
  const std::string_view header = bytes.substr(header_start, header_length);
  const std::optional<NpyHeader> parsed = parse_header(header);
  if (!parsed) {
    return corrupt_data(fmt::format("{}.npy: unreadable header '{}'", name, header.substr(0, 200)));
  }
  NpyArray array;
  array.name = std::move(name);
  array.dtype = parsed->descr;
  if (array.dtype == "<b1" || array.dtype == "?") array.dtype = "|b1";
  if (array.dtype == "<u1") array.dtype = "|u1";
  if (array.element_size() == 0) {
    return unsupported(fmt::format("{}.npy: dtype '{}' is not supported (float32/64, int32/64, uint8, bool)",
                                   array.name, array.dtype));
  }
  if (parsed->fortran_order)
    return unsupported(fmt::format("{}.npy: Fortran-ordered arrays are not supported", array.name));
  array.shape = parsed->shape;
  const std::string extents = fmt::format("({})", fmt::join(array.shape, ", "));
  size_t count = 1;
  for (size_t extent : array.shape) {
    if (extent != 0 && count > std::numeric_limits<size_t>::max() / extent / 8) {
      return corrupt_data(fmt::format("{}.npy: the shape {} is absurd (its size overflows)", array.name, extents));
    }
    count *= extent;
  }
  const size_t data_start = header_start + header_length;
  const size_t expected = array.element_count() * array.element_size();
  if (bytes.size() - data_start != expected) {
    return corrupt_data(fmt::format("{}.npy: {} data bytes for shape {} of {}, expected {} (truncated?)", array.name,
                                    bytes.size() - data_start, extents, array.dtype, expected));
  }
  array.data.resize(expected);
  // An empty array's data() may be null, and memcpy from or to null is undefined even for 0 bytes (UBSan).
  if (expected > 0) std::memcpy(array.data.data(), bytes.data() + data_start, expected);
  return array;
}

Status write_npz(const std::filesystem::path& path, const std::vector<NpyArray>& arrays) {
  // libzip builds the archive in memory (a buffer source), so the file itself is written atomically by us.
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
  if (buffer == nullptr) return internal_error(fmt::format("libzip: {}", zip_error_strerror(&error)));
  zip_source_keep(buffer);  // read the finished archive back out of it after zip_close
  ZipHandle archive(zip_open_from_source(buffer, ZIP_TRUNCATE, &error));
  if (!archive) {
    zip_source_free(buffer);
    return internal_error(fmt::format("libzip: {}", zip_error_strerror(&error)));
  }
  std::vector<std::string> members;
  members.reserve(arrays.size());
  for (const NpyArray& array : arrays) {
    members.push_back(npy_bytes(array));
    zip_source_t* member = zip_source_buffer(archive.get(), members.back().data(), members.back().size(), 0);
    const zip_int64_t index =
        member ? zip_file_add(archive.get(), (array.name + ".npy").c_str(), member, ZIP_FL_ENC_UTF_8) : -1;
    if (index < 0) {
      if (member) zip_source_free(member);
      zip_source_free(buffer);
      return internal_error(fmt::format("libzip: adding {}.npy: {}", array.name, zip_strerror(archive.get())));
    }
    zip_set_file_compression(archive.get(), static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0);
    // A fixed member time (1980-01-01 00:00, the first DOS date) instead of the clock: the same arrays give the
    // same bytes, so outputs can be compared between runs.
    zip_file_set_dostime(archive.get(), static_cast<zip_uint64_t>(index), 0, (1 << 5) | 1, 0);
  }
  if (zip_close(archive.get()) != 0) {
    const std::string message = zip_strerror(archive.get());
    zip_source_free(buffer);
    return internal_error(fmt::format("libzip: writing the archive: {}", message));
  }
  archive.release();  // zip_close freed it
  std::string bytes;
  zip_stat_t stat;
  if (zip_source_stat(buffer, &stat) == 0 && zip_source_open(buffer) == 0) {
    bytes.resize(static_cast<size_t>(stat.size));
    const zip_int64_t got = zip_source_read(buffer, bytes.data(), stat.size);
    zip_source_close(buffer);
    if (got != static_cast<zip_int64_t>(stat.size)) bytes.clear();
  }
  zip_source_free(buffer);
  if (bytes.empty()) return internal_error("libzip: could not read the finished archive back");
  return write_file_atomically(path, bytes);
}

Expected<std::vector<NpyArray>> read_npz(const std::filesystem::path& path) {
  int code = 0;
  std::error_code exists_error;
  if (!std::filesystem::exists(path, exists_error)) return not_found(fmt::format("'{}' does not exist", path.string()));
  ZipHandle archive(zip_open(path.c_str(), ZIP_RDONLY, &code));
  if (!archive) {
    if (code == ZIP_ER_NOZIP || code == ZIP_ER_INCONS) {
      return corrupt_data(
          fmt::format("'{}' is not a readable .npz (zip) archive: {}", path.string(), zip_message(code)));
    }
    return io_error(fmt::format("cannot open '{}': {}", path.string(), zip_message(code)));
  }
  const uint64_t archive_bytes = std::filesystem::file_size(path, exists_error);
  return read_members(archive.get(), exists_error ? 0 : archive_bytes, path.string());
}

Expected<std::vector<NpyArray>> parse_npz(std::string_view bytes, const std::string& source) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (buffer == nullptr) return internal_error(fmt::format("libzip: {}", zip_error_strerror(&error)));
  ZipHandle archive(zip_open_from_source(buffer, ZIP_RDONLY, &error));
  if (!archive) {
    zip_source_free(buffer);
    const std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    return corrupt_data(fmt::format("'{}' is not a readable .npz (zip) archive: {}", source, message));
  }
  zip_error_fini(&error);
  return read_members(archive.get(), bytes.size(), source);
}

}  // namespace trackscope::core::io
