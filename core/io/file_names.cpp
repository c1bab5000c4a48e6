#include "core/io/file_names.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace trackscope::core::io {

bool file_name_ends_with(const std::filesystem::path& path, std::string_view suffix) {
  const std::string name = path.filename().string();
  if (name.size() <= suffix.size()) return false;
  return std::equal(suffix.begin(), suffix.end(), name.end() - static_cast<std::ptrdiff_t>(suffix.size()),
                    [](char a, char b) {
                      return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
                    });
}

}  // namespace trackscope::core::io
