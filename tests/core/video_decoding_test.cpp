// Decoded pixels against the reference tools, run live on variants made in the test from the shared clips:
// images through PIL (tests/core/video_reference_images.py; skipped without python3-pil), videos with every
// colour tag rule through the ffmpeg CLI (`ffmpeg -i V -pix_fmt rgb24 -f rawvideo -`; skipped without ffmpeg),
// PNG layouts PIL cannot write through libpng, and the EXIF orientation policy.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <png.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "core/io/sha256.h"
#include "core/video/video_source.h"
#include "video_test_support.h"

namespace trackscope::core {
namespace {

namespace fs = std::filesystem;
using testing::run_capture;
using testing::shell_quote;

std::string sha256_hex(const std::vector<uint8_t>& bytes) {
  io::Sha256 hasher;
  hasher.update(std::as_bytes(std::span(bytes)));
  return io::to_hex(hasher.finish());
}

fs::path horsejump_frame() { return testing::shared_testdata("horsejump-high_480p/video/00000.jpg"); }

std::optional<std::string> python_with_pil() {
  for (const char* python : {"/usr/bin/python3", "python3"}) {
    if (run_capture(std::string(python) + " -c 'import PIL' 2>/dev/null")) return std::string(python);
  }
  return std::nullopt;
}

bool have_ffmpeg_cli() { return run_capture("ffmpeg -version >/dev/null 2>&1").has_value(); }

TEST(ReferencePixels, ImagesDecodeAsPilDecodesThem) {
  if (!fs::exists(horsejump_frame())) GTEST_SKIP() << "test data not found: " << horsejump_frame();
  const std::optional<std::string> python = python_with_pil();
  if (!python) GTEST_SKIP() << "python3 with PIL (Debian python3-pil) is not installed";
  const fs::path folder = testing::test_folder("pil_variants");
  const fs::path script = fs::path(TRACKSCOPE_SOURCE_DIR) / "tests/core/video_reference_images.py";
  const std::optional<std::string> output =
      run_capture(*python + " " + shell_quote(script.string()) + " " + shell_quote(horsejump_frame().string()) + " " +
                  shell_quote(folder.string()));
  ASSERT_TRUE(output) << "the reference script failed";
  const nlohmann::json expected = nlohmann::json::parse(*output);
  ASSERT_GE(expected.size(), 15U);
  for (const auto& [name, reference] : expected.items()) {
    auto source = VideoSource::open(folder / name);
    if (reference.value("refused", false)) {
      ASSERT_FALSE(source) << name << " should be refused";
      EXPECT_EQ(source.status().code(), StatusCode::unsupported) << name << ": " << source.status().message();
      continue;
    }
    ASSERT_TRUE(source) << name << ": " << source.status().message();
    auto frame = (*source)->read_frame(0);
    ASSERT_TRUE(frame) << name << ": " << frame.status().message();
    EXPECT_EQ((*frame)->width, reference["width"].get<int>()) << name;
    EXPECT_EQ((*frame)->height, reference["height"].get<int>()) << name;
    EXPECT_EQ(sha256_hex((*frame)->rgb), reference["sha256"].get<std::string>()) << name << " differs from PIL";
    EXPECT_FALSE((*frame)->integrity.damaged()) << name;
  }
}

struct TaggedClip {
  std::string name;
  std::string ffmpeg_output_options;  // how the variant is made from the camel clip
  std::string file;
  std::string color_matrix;  // the tags the variant carries
  std::string color_range;
  std::string conversion;  // the start of VideoInfo::rgb_conversion
};

// One variant per rule of the conversion: each matrix swscale knows, tagged and untagged matrices and ranges,
// 4:2:0 / 4:2:2 / 4:4:4, 10 bits, odd sizes, JPEG-range formats, planar RGB. Small crops of the camel clip,
// three frames each: the rules do not depend on the size.
const std::vector<TaggedClip>& tagged_clips() {
  static const std::vector<TaggedClip> clips = {
      {"untagged", "-vf crop=480:272:16:16,setparams=range=unknown:colorspace=unknown -pix_fmt yuv420p -c:v ffv1",
       "untagged.mkv", "unknown", "unknown", "BT.601 matrix (untagged: the BT.601 default), limited range (untagged"},
      {"bt709_full", "-vf crop=480:272:16:16,setparams=range=pc:colorspace=bt709 -pix_fmt yuv420p -c:v ffv1",
       "bt709_full.mkv", "bt709", "pc", "BT.709 matrix (tagged), full range (tagged)"},
      {"untagged_matrix_full",
       "-vf crop=480:272:16:16,setparams=range=pc:colorspace=unknown -pix_fmt yuv420p -c:v ffv1", "untagged_full.mkv",
       "unknown", "pc", "BT.601 matrix (untagged: the BT.601 default), full range (tagged)"},
      {"bt470bg_422", "-vf crop=480:272:16:16,setparams=range=tv:colorspace=bt470bg -pix_fmt yuv422p -c:v ffv1",
       "bt470bg_422.mkv", "bt470bg", "tv", "BT.601 matrix (tagged), limited range (tagged)"},
      {"smpte240m_444", "-vf crop=480:272:16:16,setparams=range=tv:colorspace=smpte240m -pix_fmt yuv444p -c:v ffv1",
       "smpte240m.mkv", "smpte240m", "tv", "SMPTE 240M matrix (tagged)"},
      {"bt2020_10bit", "-vf crop=480:272:16:16,setparams=range=tv:colorspace=bt2020nc -pix_fmt yuv420p10le -c:v ffv1",
       "bt2020.mkv", "bt2020nc", "tv", "BT.2020 matrix (tagged)"},
      {"fcc", "-vf crop=480:272:16:16,setparams=range=tv:colorspace=fcc -pix_fmt yuv420p -c:v ffv1", "fcc.mkv", "fcc",
       "tv", "FCC matrix (tagged)"},
      {"bt709_odd_size", "-vf crop=479:271:1:1,setparams=range=tv:colorspace=bt709 -pix_fmt yuv444p -c:v ffv1",
       "odd.mkv", "bt709", "tv", "BT.709 matrix (tagged)"},
      {"yuvj420p_mjpeg", "-vf crop=480:272:16:16,setparams=range=pc -pix_fmt yuvj420p -c:v mjpeg -q:v 3", "mjpeg.avi",
       "bt470bg", "pc", "BT.601 matrix (tagged), full range (tagged)"},
      {"rgb_planar", "-vf crop=480:272:16:16 -pix_fmt gbrp -c:v ffv1", "gbrp.mkv", "gbr", "", "no YCbCr matrix"},
  };
  return clips;
}

class TaggedClipTest : public ::testing::TestWithParam<TaggedClip> {};

TEST_P(TaggedClipTest, FramesMatchTheFfmpegCli) {
  const fs::path camel = testing::shared_testdata("pips2_camel.mp4");
  if (!fs::exists(camel)) GTEST_SKIP() << "test data not found: " << camel;
  if (!have_ffmpeg_cli()) GTEST_SKIP() << "the ffmpeg command line is not installed";
  const TaggedClip& clip = GetParam();
  const fs::path path = testing::test_folder("tagged_" + clip.name) / clip.file;
  ASSERT_TRUE(run_capture("ffmpeg -v error -y -i " + shell_quote(camel.string()) + " -frames:v 3 " +
                          clip.ffmpeg_output_options + " " + shell_quote(path.string())))
      << "ffmpeg could not make " << clip.name;
  const std::optional<std::string> reference =
      run_capture("ffmpeg -v error -i " + shell_quote(path.string()) + " -pix_fmt rgb24 -f rawvideo -");
  ASSERT_TRUE(reference);

  auto source = VideoSource::open(path);
  ASSERT_TRUE(source) << source.status().message();
  const VideoInfo& info = (*source)->info();
  EXPECT_EQ(info.color_matrix, clip.color_matrix);
  if (!clip.color_range.empty()) {
    EXPECT_EQ(info.color_range, clip.color_range);
  }
  EXPECT_EQ(info.rgb_conversion.rfind(clip.conversion, 0), 0U) << info.rgb_conversion;
  const size_t frame_bytes = static_cast<size_t>(info.width) * info.height * 3;
  ASSERT_EQ(reference->size(), frame_bytes * static_cast<size_t>(info.frame_count));
  for (int64_t i = 0; i < info.frame_count; ++i) {
    auto frame = (*source)->read_frame(i);
    ASSERT_TRUE(frame) << frame.status().message();
    const auto* expected = reinterpret_cast<const uint8_t*>(reference->data()) + frame_bytes * static_cast<size_t>(i);
    int64_t differing = 0;
    for (size_t b = 0; b < frame_bytes; ++b) differing += (*frame)->rgb[b] != expected[b] ? 1 : 0;
    EXPECT_EQ(differing, 0) << clip.name << " frame " << i << ": bytes differing from ffmpeg -pix_fmt rgb24";
  }
}

INSTANTIATE_TEST_SUITE_P(ColourRules, TaggedClipTest, ::testing::ValuesIn(tagged_clips()),
                         [](const ::testing::TestParamInfo<TaggedClip>& param) { return param.param.name; });

// Scaled frames (FrameSize) are what `ffmpeg -vf scale=W:H -pix_fmt rgb24` gives: one bicubic swscale pass.
TEST(ReferencePixels, ScaledFramesMatchTheFfmpegScaleFilter) {
  const fs::path camel = testing::shared_testdata("pips2_camel.mp4");
  if (!fs::exists(camel)) GTEST_SKIP() << "test data not found: " << camel;
  if (!have_ffmpeg_cli()) GTEST_SKIP() << "the ffmpeg command line is not installed";
  const std::optional<std::string> reference =
      run_capture("ffmpeg -v error -i " + shell_quote(camel.string()) +
                  " -frames:v 3 -vf scale=320:184 -pix_fmt rgb24 -f rawvideo -");
  ASSERT_TRUE(reference);
  auto source = VideoSource::open(camel);
  ASSERT_TRUE(source);
  const size_t frame_bytes = 320 * 184 * 3;
  ASSERT_EQ(reference->size(), 3 * frame_bytes);
  for (int64_t i = 0; i < 3; ++i) {
    auto frame = (*source)->read_frame(i, {320, 184});
    ASSERT_TRUE(frame);
    EXPECT_EQ(0,
              std::memcmp((*frame)->rgb.data(), reference->data() + frame_bytes * static_cast<size_t>(i), frame_bytes))
        << "frame " << i;
  }
}

// PNG layouts PIL does not write: Adam7 interlacing and 16-bit RGB (reduced to the high byte, as libpng's
// png_set_strip_16 and OpenCV's imread do).
void write_png_with_libpng(const fs::path& path, const Frame& frame, bool interlaced, bool sixteen_bit) {
  FILE* file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, file);
  png_set_IHDR(png, info, static_cast<png_uint_32>(frame.width), static_cast<png_uint_32>(frame.height),
               sixteen_bit ? 16 : 8, PNG_COLOR_TYPE_RGB, interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const size_t row_bytes = static_cast<size_t>(frame.width) * 3 * (sixteen_bit ? 2 : 1);
  std::vector<uint8_t> pixels(row_bytes * static_cast<size_t>(frame.height));
  std::vector<png_bytep> rows(static_cast<size_t>(frame.height));
  for (int y = 0; y < frame.height; ++y) {
    uint8_t* row = pixels.data() + row_bytes * static_cast<size_t>(y);
    rows[static_cast<size_t>(y)] = row;
    for (int x = 0; x < frame.width * 3; ++x) {
      const uint8_t value = frame.rgb[static_cast<size_t>(y) * frame.width * 3 + static_cast<size_t>(x)];
      if (sixteen_bit) {
        row[2 * x] = value;  // big-endian: the high byte, then a low byte that must not round it up
        row[2 * x + 1] = static_cast<uint8_t>(255 - value);
      } else {
        row[x] = value;
      }
    }
  }
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(file);
}

TEST(ReferencePixels, InterlacedAndSixteenBitPngs) {
  const Frame original = testing::make_index_frame(5, 97, 61);
  for (const auto& [name, interlaced, sixteen_bit] :
       {std::tuple{"adam7", true, false}, std::tuple{"rgb16", false, true}, std::tuple{"adam7_rgb16", true, true}}) {
    const fs::path folder = testing::test_folder(std::string("libpng_") + name);
    write_png_with_libpng(folder / "0.png", original, interlaced, sixteen_bit);
    auto source = VideoSource::open(folder);
    ASSERT_TRUE(source) << name << ": " << source.status().message();
    auto frame = (*source)->read_frame(0);
    ASSERT_TRUE(frame) << name;
    EXPECT_TRUE((*frame)->rgb == original.rgb) << name;
  }
}

// EXIF orientation is not applied: the pixels are those of the same image without the tag (PIL's Image.open,
// ffmpeg 5.1), not rotated (OpenCV's imread would rotate).
TEST(ReferencePixels, ExifOrientationIsNotApplied) {
  if (!fs::exists(horsejump_frame())) GTEST_SKIP() << "test data not found: " << horsejump_frame();
  std::vector<uint8_t> jpeg = testing::read_bytes(horsejump_frame());
  ASSERT_GT(jpeg.size(), 4U);
  // APP1 "Exif", big-endian TIFF, IFD0 with one entry: Orientation (0x0112), SHORT, 1, value 6 (rotate 90 CW).
  const std::vector<uint8_t> app1 = {0xFF, 0xE1, 0x00, 0x22, 'E',  'x',  'i',  'f',  0,    0,    'M',  'M',
                                     0x00, 0x2A, 0x00, 0x00, 0x00, 0x08, 0x00, 0x01, 0x01, 0x12, 0x00, 0x03,
                                     0x00, 0x00, 0x00, 0x01, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  std::vector<uint8_t> tagged(jpeg.begin(), jpeg.begin() + 2);
  tagged.insert(tagged.end(), app1.begin(), app1.end());
  tagged.insert(tagged.end(), jpeg.begin() + 2, jpeg.end());
  const fs::path folder = testing::test_folder("exif_orientation");
  testing::write_bytes(folder / "0.jpg", tagged);
  auto rotated = VideoSource::open(folder);
  auto plain = VideoSource::open(horsejump_frame().parent_path() / "%05d.jpg");
  ASSERT_TRUE(rotated && plain) << (rotated ? plain.status().message() : rotated.status().message());
  EXPECT_EQ((*rotated)->info().width, 854);
  EXPECT_EQ((*rotated)->info().height, 480);
  auto a = (*rotated)->read_frame(0);
  auto b = (*plain)->read_frame(0);
  ASSERT_TRUE(a && b);
  EXPECT_TRUE((*a)->rgb == (*b)->rgb);
}

}  // namespace
}  // namespace trackscope::core
