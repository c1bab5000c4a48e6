#include "core/io/npz.h"

#include <zip.h>

#include <memory>
#include <regex>

#include <fmt/format.h>

#include "core/io/atomic_file.h"

namespace trackscope::core::io {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kMaxMemberBytes = size_t{8} << 30;

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
  if (header_start + header_length > bytes.size()) return corrupt_data(fmt::format("{}.npy: truncated header", name));
  const std::string header(bytes.substr(header_start, header_length));
  std::smatch descr, order, shape;
  static const std::regex kDescr(R"('descr'\s*:\s*'([^']+)')");
  static const std::regex kOrder(R"('fortran_order'\s*:\s*(True|False))");
  static const std::regex kShape(R"('shape'\s*:\s*\(([^)]*)\))");
  if (!std::regex_search(header, descr, kDescr) || !std::regex_search(header, order, kOrder) ||
      !std::regex_search(header, shape, kShape)) {
    return corrupt_data(fmt::format("{}.npy: unreadable header '{}'", name, header));
  }
  NpyArray array;
  array.name = std::move(name);
  array.dtype = descr[1].str();
  if (array.dtype == "<b1" || array.dtype == "?") array.dtype = "|b1";
  if (array.dtype == "<u1") array.dtype = "|u1";
  if (array.element_size() == 0) {
    return unsupported(fmt::format("{}.npy: dtype '{}' is not supported (float32/64, int32/64, uint8, bool)",
                                   array.name, array.dtype));
  }
  if (order[1].str() == "True")
    return unsupported(fmt::format("{}.npy: Fortran-ordered arrays are not supported", array.name));
  static const std::regex kExtent(R"(\d+)");
  const std::string extents = shape[1].str();
  for (std::sregex_iterator it(extents.begin(), extents.end(), kExtent), end; it != end; ++it) {
    array.shape.push_back(static_cast<size_t>(std::stoull(it->str())));
  }
  const size_t data_start = header_start + header_length;
  const size_t expected = array.element_count() * array.element_size();
  if (bytes.size() - data_start != expected) {
    return corrupt_data(fmt::format("{}.npy: {} data bytes for shape {} of {}, expected {} (truncated?)", array.name,
                                    bytes.size() - data_start, extents, array.dtype, expected));
  }
  array.data.resize(expected);
  std::memcpy(array.data.data(), bytes.data() + data_start, expected);
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
  std::vector<NpyArray> arrays;
  const zip_int64_t entries = zip_get_num_entries(archive.get(), 0);
  for (zip_int64_t i = 0; i < entries; ++i) {
    zip_stat_t stat;
    if (zip_stat_index(archive.get(), static_cast<zip_uint64_t>(i), 0, &stat) != 0) continue;
    std::string name = stat.name;
    if (name.size() < 4 || name.substr(name.size() - 4) != ".npy") continue;
    if (stat.size > kMaxMemberBytes) return unsupported(fmt::format("{} in '{}' is too large", name, path.string()));
    zip_file_t* file = zip_fopen_index(archive.get(), static_cast<zip_uint64_t>(i), 0);
    if (file == nullptr)
      return corrupt_data(fmt::format("'{}': cannot read {}: {}", path.string(), name, zip_strerror(archive.get())));
    std::string bytes(static_cast<size_t>(stat.size), '\0');
    const zip_int64_t got = zip_fread(file, bytes.data(), stat.size);
    const bool ok = got == static_cast<zip_int64_t>(stat.size);
    const std::string message = ok ? std::string() : zip_file_strerror(file);
    zip_fclose(file);
    if (!ok) return corrupt_data(fmt::format("'{}': {} is damaged: {}", path.string(), name, message));
    Expected<NpyArray> array = parse_npy(bytes, name.substr(0, name.size() - 4));
    if (!array) return array.status();
    arrays.push_back(std::move(*array));
  }
  return arrays;
}

}  // namespace trackscope::core::io
