// Fails when a layer includes what it must not (docs/architecture.md §1): Qt in core/ or gpu/, torch or CUDA in
// core/ or ui/, FFmpeg in any header of core/ or anywhere in ui/, gpu's torch-side headers outside gpu/; and inside
// ui/, the main window's header anywhere but the window itself (controllers get the parts they use, §3).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Rule {
  std::string folder;    // layer folder relative to the source root
  bool headers_only;     // apply only to .h files
  std::regex forbidden;  // matched against the text inside #include <...> or "..."
  std::string why;
  std::string exempt = {};  // one file (relative to the source root) the rule does not apply to
};

const std::regex kInclude(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
const std::regex kQt(R"(^(Q[A-Za-z]+|Qt[A-Za-z]*/.*|qglobal\.h)$)");
const std::regex kTorch(R"(^(torch/|ATen/|c10/|caffe2/|cuda|cub/|thrust/|cudnn|nvml|gpu/torch_compat\.h|)"
                        R"(gpu/(model|ops|engine|training)/).*)");
const std::regex kFfmpeg(R"(^(libav[a-z]*|libsw[a-z]*)/.*)");
const std::regex kImageLibraries(R"(^(jpeglib\.h|jerror\.h|turbojpeg\.h|png\.h|pngconf\.h)$)");
const std::regex kMainWindow(R"(^ui/main_window\.h$)");

std::vector<std::string> violations(const fs::path& root, const Rule& rule) {
  std::vector<std::string> found;
  const fs::path folder = root / rule.folder;
  if (!fs::exists(folder)) return found;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    if (!entry.is_regular_file()) continue;
    const std::string ext = entry.path().extension().string();
    const bool header = ext == ".h" || ext == ".hpp";
    const bool source = header || ext == ".cpp" || ext == ".cc" || ext == ".cu" || ext == ".cuh";
    if (!source || (rule.headers_only && !header)) continue;
    if (!rule.exempt.empty() && fs::relative(entry.path(), root) == fs::path(rule.exempt)) continue;
    std::ifstream in(entry.path());
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      std::smatch match;
      if (std::regex_search(line, match, kInclude) && std::regex_match(match[1].str(), rule.forbidden)) {
        found.push_back(fs::relative(entry.path(), root).string() + ":" + std::to_string(number) + ": " + line + "  (" +
                        rule.why + ")");
      }
    }
  }
  return found;
}

std::vector<Rule> rules() {
  return {
      {"core", false, kQt, "core/ must not use Qt"},
      {"core", false, kTorch, "core/ must not use torch or CUDA"},
      {"core", true, kFfmpeg, "FFmpeg types stay out of core/ headers"},
      {"core", true, kImageLibraries, "libjpeg and libpng types stay out of core/ headers"},
      {"gpu", false, kQt, "gpu/ must not use Qt"},
      {"ui", false, kTorch, "ui/ must not use torch, CUDA or gpu internals"},
      {"ui", false, kFfmpeg, "ui/ must not use FFmpeg"},
      {"ui", false, kImageLibraries, "ui/ decodes images through core/"},
      {"ui", false, kMainWindow, "ui/ arrows point down: controllers get the window's parts, not the window",
       "ui/main_window.cpp"},
      {"app", false, kTorch, "app/ uses gpu only through its torch-free headers"},
  };
}

TEST(Layering, RulesCatchForbiddenIncludes) {
  // The rules themselves must bite: a fake tree with one violation per rule.
  const fs::path root = fs::temp_directory_path() / "trackscope_layering_selftest";
  fs::remove_all(root);
  auto write = [&](const std::string& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  };
  write("core/a.cpp", "#include <QString>\n#include <ATen/ATen.h>\n");
  write("core/b.h", "#include <libavformat/avformat.h>\n");
  write("core/ok.cpp", "#include <libavformat/avformat.h>\n#include <png.h>\n#include \"core/status.h\"\n");
  write("core/f.h", "#include <jpeglib.h>\n");
  write("gpu/c.cpp", "#include <QtCore/QObject>\n");
  write("ui/d.cpp",
        "#include <torch/torch.h>\n#include \"gpu/model/locotrack.h\"\n#include <libswscale/swscale.h>\n#include "
        "<png.h>\n#include \"ui/main_window.h\"\n");
  write("ui/main_window.cpp", "#include \"ui/main_window.h\"\n");  // the window itself: exempt
  write("app/e.cpp", "#include \"gpu/torch_compat.h\"\n");
  size_t total = 0;
  for (const Rule& rule : rules()) total += violations(root, rule).size();
  EXPECT_EQ(total, 11u);
  fs::remove_all(root);
}

TEST(Layering, SourceTreeRespectsLayers) {
  const fs::path root = TRACKSCOPE_SOURCE_DIR;
  ASSERT_TRUE(fs::exists(root / "core")) << "source tree not found at " << root;
  std::vector<std::string> all;
  for (const Rule& rule : rules()) {
    for (auto& v : violations(root, rule)) all.push_back(std::move(v));
  }
  std::string report;
  for (const auto& v : all) report += v + "\n";
  EXPECT_TRUE(all.empty()) << report;
}

}  // namespace
