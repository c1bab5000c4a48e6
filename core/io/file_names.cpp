#include "core/io/file_names.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <system_error>

#include <fmt/format.h>

namespace trackscope::core::io {

bool file_name_ends_with(const std::filesystem::path& path, std::string_view suffix) {
  const std::string name = path.filename().string();
  if (name.size() <= suffix.size()) return false;
  return std::equal(suffix.begin(), suffix.end(), name.end() - static_cast<std::ptrdiff_t>(suffix.size()),
                    [](char a, char b) {
                      return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
                    });
}

Expected<std::vector<std::filesystem::path>> list_files_ending_with(const std::filesystem::path& folder,
                                                                    std::span<const std::string_view> endings) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const std::filesystem::directory_entry& entry : std::filesystem::directory_iterator(folder, error)) {
    const bool named = std::any_of(endings.begin(), endings.end(),
                                   [&](std::string_view ending) { return file_name_ends_with(entry.path(), ending); });
    if (named && entry.is_regular_file(error)) files.push_back(entry.path());
  }
  if (error) return io_error(fmt::format("cannot list folder {}: {}", folder.string(), error.message()));
  std::sort(files.begin(), files.end(), [](const std::filesystem::path& a, const std::filesystem::path& b) {
    return a.filename().string() < b.filename().string();
  });
  return files;
}

}  // namespace trackscope::core::io
