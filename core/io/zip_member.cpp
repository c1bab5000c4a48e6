#include "core/io/zip_member.h"

#include <fmt/format.h>

namespace trackscope::core::io {

Expected<std::string> read_zip_member(zip_t* archive, zip_uint64_t index, uint64_t archive_bytes, uint64_t max_bytes,
                                      const std::string& source) {
  zip_stat_t stat;
  zip_stat_init(&stat);
  if (zip_stat_index(archive, index, 0, &stat) != 0 || (stat.valid & ZIP_STAT_SIZE) == 0 ||
      (stat.valid & ZIP_STAT_COMP_SIZE) == 0 || (stat.valid & ZIP_STAT_COMP_METHOD) == 0) {
    return corrupt_data(
        fmt::format("'{}': member {} of the zip archive cannot be read: {}", source, index, zip_strerror(archive)));
  }
  const std::string name = (stat.valid & ZIP_STAT_NAME) != 0 ? stat.name : fmt::format("#{}", index);
  if (stat.size > max_bytes) {
    return unsupported(fmt::format("'{}': {} claims {} bytes, more than the {} this reader accepts", source, name,
                                   stat.size, max_bytes));
  }
  const bool stored = stat.comp_method == ZIP_CM_STORE;
  if (stat.comp_size > archive_bytes || (stored && stat.comp_size != stat.size) ||
      (!stored && stat.size / 1032 > stat.comp_size + 1)) {
    return corrupt_data(fmt::format("'{}' is damaged: {} claims {} bytes from {} compressed bytes in an archive of {}",
                                    source, name, stat.size, stat.comp_size, archive_bytes));
  }
  zip_file_t* file = zip_fopen_index(archive, index, 0);
  if (file == nullptr)
    return corrupt_data(fmt::format("'{}': cannot read {}: {}", source, name, zip_strerror(archive)));
  std::string bytes(static_cast<size_t>(stat.size), '\0');
  const zip_int64_t got = bytes.empty() ? 0 : zip_fread(file, bytes.data(), stat.size);
  const std::string error = got == static_cast<zip_int64_t>(stat.size) ? std::string() : zip_file_strerror(file);
  zip_fclose(file);
  if (!error.empty() || got != static_cast<zip_int64_t>(stat.size)) {
    return corrupt_data(fmt::format("'{}': {} is damaged: {}", source, name, error.empty() ? "truncated" : error));
  }
  return bytes;
}

}  // namespace trackscope::core::io
