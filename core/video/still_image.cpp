#include "core/video/still_image.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <system_error>

// jpeglib.h needs FILE and size_t declared first.
#include <jerror.h>
#include <jpeglib.h>
#include <png.h>

namespace trackscope::core::still_image {

namespace fs = std::filesystem;

namespace {

constexpr size_t kTailBytes = 4096;

// ---------------------------------------------------------------------------------------------------------
// libjpeg reports fatal errors through error_exit, which must not return: it longjmps back to the function
// that called setjmp. Every function below that calls setjmp holds only trivially destructible locals, so the
// jump skips no destructor (the C++ rule for longjmp); the owners of memory live in the callers.

struct JpegErrors {
  jpeg_error_mgr base;  // first member: libjpeg hands back a pointer to it
  std::jmp_buf jump;
  int corrupt_warnings;
  bool premature_end;
  char first_warning[JMSG_LENGTH_MAX];
  char error[JMSG_LENGTH_MAX];
  int error_code;
};

void on_jpeg_error(j_common_ptr info) {
  auto* errors = reinterpret_cast<JpegErrors*>(info->err);
  info->err->format_message(info, errors->error);
  errors->error_code = info->err->msg_code;
  std::longjmp(errors->jump, 1);
}

// Warnings about metadata leave the pixels alone; every other warning means the entropy-coded data is damaged.
bool is_pixel_warning(int code) {
  return code != JWRN_ADOBE_XFORM && code != JWRN_JFIF_MAJOR && code != JWRN_BOGUS_ICC;
}

void on_jpeg_message(j_common_ptr info, int level) {
  if (level >= 0) return;  // trace messages
  auto* errors = reinterpret_cast<JpegErrors*>(info->err);
  ++info->err->num_warnings;
  const int code = info->err->msg_code;
  if (!is_pixel_warning(code)) return;
  if (code == JWRN_JPEG_EOF) {
    errors->premature_end = true;
  } else {
    ++errors->corrupt_warnings;
  }
  if (errors->first_warning[0] == '\0') info->err->format_message(info, errors->first_warning);
}

void silent_output(j_common_ptr /*info*/) {}

struct JpegDecoder {
  jpeg_decompress_struct info;
  JpegErrors errors;
};

void init_jpeg(JpegDecoder& decoder) {
  std::memset(&decoder, 0, sizeof(decoder));
  decoder.info.err = jpeg_std_error(&decoder.errors.base);
  decoder.errors.base.error_exit = on_jpeg_error;
  decoder.errors.base.emit_message = on_jpeg_message;
  decoder.errors.base.output_message = silent_output;
}

// Owns the libjpeg state of one decode (created by the functions below, destroyed here).
struct JpegDecoderDeleter {
  void operator()(JpegDecoder* decoder) const {
    jpeg_destroy_decompress(&decoder->info);
    delete decoder;
  }
};
using JpegDecoderPtr = std::unique_ptr<JpegDecoder, JpegDecoderDeleter>;

// The settings PIL and OpenCV decode with: libjpeg's defaults, spelled out.
void use_reference_settings(jpeg_decompress_struct& info) {
  info.out_color_space = JCS_RGB;
  info.dct_method = JDCT_ISLOW;
  info.do_fancy_upsampling = TRUE;
  info.do_block_smoothing = TRUE;
  info.scale_num = 1;
  info.scale_denom = 1;
}

// setjmp frames: trivially destructible locals only.
bool jpeg_header_from_memory(JpegDecoder* decoder, const uint8_t* data, size_t size) {
  if (setjmp(decoder->errors.jump) != 0) return false;
  jpeg_create_decompress(&decoder->info);
  jpeg_mem_src(&decoder->info, data, static_cast<unsigned long>(size));
  jpeg_save_markers(&decoder->info, JPEG_APP0 + 1, 0xFFFF);
  jpeg_read_header(&decoder->info, TRUE);
  return true;
}

bool jpeg_header_from_file(JpegDecoder* decoder, FILE* file) {
  if (setjmp(decoder->errors.jump) != 0) return false;
  jpeg_create_decompress(&decoder->info);
  jpeg_stdio_src(&decoder->info, file);
  jpeg_read_header(&decoder->info, TRUE);
  return true;
}

bool jpeg_decode_rows(JpegDecoder* decoder, uint8_t* rgb, size_t stride_bytes) {
  if (setjmp(decoder->errors.jump) != 0) return false;
  use_reference_settings(decoder->info);
  jpeg_start_decompress(&decoder->info);
  if (decoder->info.output_components != 3) return false;
  while (decoder->info.output_scanline < decoder->info.output_height) {
    std::array<JSAMPROW, 16> rows{};
    const JDIMENSION first = decoder->info.output_scanline;
    const JDIMENSION count = std::min<JDIMENSION>(16, decoder->info.output_height - first);
    for (JDIMENSION i = 0; i < count; ++i) rows[i] = rgb + (static_cast<size_t>(first) + i) * stride_bytes;
    jpeg_read_scanlines(&decoder->info, rows.data(), count);
  }
  jpeg_finish_decompress(&decoder->info);
  return true;
}

std::string jpeg_colour_name(J_COLOR_SPACE space) {
  switch (space) {
    case JCS_GRAYSCALE: return "greyscale";
    case JCS_YCbCr: return "YCbCr";
    case JCS_RGB: return "RGB";
    case JCS_CMYK: return "CMYK";
    case JCS_YCCK: return "YCCK";
    default: return "unknown colour space";
  }
}

std::string jpeg_description(const jpeg_decompress_struct& info) {
  std::string text = "JPEG " + jpeg_colour_name(info.jpeg_color_space);
  if (info.jpeg_color_space == JCS_YCbCr && info.num_components == 3) {
    const int h = info.comp_info[0].h_samp_factor, v = info.comp_info[0].v_samp_factor;
    const int ch = info.comp_info[1].h_samp_factor, cv = info.comp_info[1].v_samp_factor;
    if (h == ch && v == cv) {
      text += " 4:4:4";
    } else if (h == 2 * ch && v == 2 * cv) {
      text += " 4:2:0";
    } else if (h == 2 * ch && v == cv) {
      text += " 4:2:2";
    } else {
      text += fmt::format(" {}x{}/{}x{}", h, v, ch, cv);
    }
  }
  if (info.progressive_mode) text += " progressive";
  return text;
}

Status check_jpeg_header(const jpeg_decompress_struct& info, std::string_view name) {
  if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {
    return unsupported(
        fmt::format("{} is a {} JPEG; only greyscale, YCbCr and RGB JPEGs are read (PIL and OpenCV "
                    "disagree on CMYK): convert the images to RGB first",
                    name, jpeg_colour_name(info.jpeg_color_space)));
  }
  if (!within_image_sides(info.image_width, info.image_height)) {
    return unsupported(fmt::format("{} is {}x{} pixels; images up to {} pixels per side are read", name,
                                   info.image_width, info.image_height, kMaxImageSide));
  }
  return {};
}

// The EXIF Orientation tag (0x0112) of IFD0 in an APP1 "Exif" payload; 0 when absent or unreadable.
int exif_orientation(const uint8_t* data, size_t size) {
  if (size < 14 || std::memcmp(data, "Exif\0\0", 6) != 0) return 0;
  const uint8_t* tiff = data + 6;
  const size_t tiff_size = size - 6;
  const bool little = tiff[0] == 'I' && tiff[1] == 'I';
  if (!little && !(tiff[0] == 'M' && tiff[1] == 'M')) return 0;
  auto u16 = [&](size_t at) -> uint32_t {
    return little ? static_cast<uint32_t>(tiff[at] | (tiff[at + 1] << 8))
                  : static_cast<uint32_t>((tiff[at] << 8) | tiff[at + 1]);
  };
  auto u32 = [&](size_t at) -> uint32_t {
    return little ? u16(at) | (u16(at + 2) << 16) : (u16(at) << 16) | u16(at + 2);
  };
  const uint32_t ifd = u32(4);
  if (ifd + 2 > tiff_size) return 0;
  const uint32_t entries = u16(ifd);
  for (uint32_t i = 0; i < entries; ++i) {
    const size_t entry = ifd + 2 + static_cast<size_t>(i) * 12;
    if (entry + 12 > tiff_size) return 0;
    if (u16(entry) == 0x0112 && u16(entry + 2) == 3) {
      const uint32_t value = u16(entry + 8);
      return value >= 1 && value <= 8 ? static_cast<int>(value) : 0;
    }
  }
  return 0;
}

// libjpeg's fatal error as a Status: a format this libjpeg does not decode (12-bit, lossless) is unsupported,
// anything else is damage.
Status jpeg_failure(const JpegErrors& errors, std::string_view name) {
  if (errors.error[0] == '\0') return internal_error(fmt::format("{}: libjpeg did not give RGB", name));
  const int code = errors.error_code;
  if (code == JERR_BAD_LIB_VERSION || code == JERR_BAD_STRUCT_SIZE) {
    return internal_error(
        fmt::format("{} cannot be read: {} (Trackscope was built against another libjpeg than "
                    "the one it runs with: cmake/TrackscopeStillImage.cmake)",
                    name, errors.error));
  }
  if (code == JERR_BAD_PRECISION || code == JERR_CONVERSION_NOTIMPL || code == JERR_SOF_UNSUPPORTED) {
    return unsupported(fmt::format("{} cannot be read: {}", name, errors.error));
  }
  return corrupt_data(
      fmt::format("{} is not a readable JPEG ({}): the file is damaged or truncated", name, errors.error));
}

Expected<StillImage> decode_jpeg(std::span<const uint8_t> bytes, std::string_view name) {
  JpegDecoderPtr decoder(new JpegDecoder);
  init_jpeg(*decoder);
  if (!jpeg_header_from_memory(decoder.get(), bytes.data(), bytes.size())) return jpeg_failure(decoder->errors, name);
  TRACKSCOPE_RETURN_IF_ERROR(check_jpeg_header(decoder->info, name));
  StillImage image;
  image.width = static_cast<int>(decoder->info.image_width);
  image.height = static_cast<int>(decoder->info.image_height);
  for (jpeg_saved_marker_ptr marker = decoder->info.marker_list; marker != nullptr; marker = marker->next) {
    if (marker->marker == JPEG_APP0 + 1 && image.exif_orientation == 0) {
      image.exif_orientation = exif_orientation(marker->data, marker->data_length);
    }
  }
  image.rgb.resize(static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3);
  const size_t stride = static_cast<size_t>(image.width) * 3;
  if (!jpeg_decode_rows(decoder.get(), image.rgb.data(), stride)) return jpeg_failure(decoder->errors, name);
  image.corrupt_warnings = decoder->errors.corrupt_warnings;
  image.truncated = decoder->errors.premature_end;
  image.warning = decoder->errors.first_warning;
  return image;
}

// ---------------------------------------------------------------------------------------------------------
// libpng: the same longjmp discipline, through png_jmpbuf.

struct PngSource {
  const uint8_t* data;
  size_t size;
  size_t offset;
  char error[256];
};

void on_png_error(png_structp png, png_const_charp message) {
  auto* source = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(source->error, sizeof(source->error), "%s", message != nullptr ? message : "libpng error");
  png_longjmp(png, 1);
}

// libpng warns about metadata (a known-incorrect sRGB profile, a bad ancillary chunk CRC): pixels unaffected.
void on_png_warning(png_structp /*png*/, png_const_charp /*message*/) {}

void read_png_bytes(png_structp png, png_bytep out, size_t length) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (length > source->size - source->offset) png_error(png, "the file ends before the image data does (truncated)");
  std::memcpy(out, source->data + source->offset, length);
  source->offset += length;
}

struct PngDecoder {
  png_structp png;
  png_infop info;
  PngSource source;
};

struct PngDecoderDeleter {
  void operator()(PngDecoder* decoder) const {
    png_destroy_read_struct(&decoder->png, decoder->info != nullptr ? &decoder->info : nullptr, nullptr);
    delete decoder;
  }
};
using PngDecoderPtr = std::unique_ptr<PngDecoder, PngDecoderDeleter>;

PngDecoderPtr make_png_decoder() {
  PngDecoderPtr decoder(new PngDecoder{});
  decoder->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &decoder->source, on_png_error, on_png_warning);
  if (decoder->png == nullptr) throw std::bad_alloc();
  decoder->info = png_create_info_struct(decoder->png);
  if (decoder->info == nullptr) throw std::bad_alloc();
  return decoder;
}

struct PngLayout {
  png_uint_32 width;
  png_uint_32 height;
  int bit_depth;
  int colour_type;
  int interlace;
};

// setjmp frames: trivially destructible locals only.
bool png_read_header(PngDecoder* decoder, FILE* file, PngLayout* layout) {
  if (setjmp(png_jmpbuf(decoder->png)) != 0) return false;
  if (file != nullptr) {
    png_init_io(decoder->png, file);
  } else {
    png_set_read_fn(decoder->png, &decoder->source, read_png_bytes);
  }
  png_read_info(decoder->png, decoder->info);
  png_get_IHDR(decoder->png, decoder->info, &layout->width, &layout->height, &layout->bit_depth, &layout->colour_type,
               &layout->interlace, nullptr, nullptr);
  return true;
}

bool png_set_rgb8(PngDecoder* decoder, const PngLayout* layout, int* channels, int* depth) {
  if (setjmp(png_jmpbuf(decoder->png)) != 0) return false;
  png_structp png = decoder->png;
  if (layout->bit_depth == 16) png_set_strip_16(png);
  if (layout->colour_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (layout->colour_type == PNG_COLOR_TYPE_GRAY && layout->bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if ((layout->colour_type & PNG_COLOR_MASK_COLOR) == 0) png_set_gray_to_rgb(png);
  png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, decoder->info);
  *channels = png_get_channels(png, decoder->info);
  *depth = png_get_bit_depth(png, decoder->info);
  return true;
}

bool png_read_pixels(PngDecoder* decoder, png_bytepp rows) {
  if (setjmp(png_jmpbuf(decoder->png)) != 0) return false;
  png_read_image(decoder->png, rows);
  png_read_end(decoder->png, nullptr);
  return true;
}

std::string png_description(const PngLayout& layout) {
  const char* type = "unknown colour type";
  switch (layout.colour_type) {
    case PNG_COLOR_TYPE_GRAY: type = "greyscale"; break;
    case PNG_COLOR_TYPE_GRAY_ALPHA: type = "greyscale+alpha"; break;
    case PNG_COLOR_TYPE_RGB: type = "RGB"; break;
    case PNG_COLOR_TYPE_RGB_ALPHA: type = "RGBA"; break;
    case PNG_COLOR_TYPE_PALETTE: type = "palette"; break;
    default: break;
  }
  return fmt::format("{}-bit {} PNG{}", layout.bit_depth, type,
                     layout.interlace != PNG_INTERLACE_NONE ? " interlaced" : "");
}

Status check_png_size(const PngLayout& layout, std::string_view name) {
  if (layout.width > static_cast<png_uint_32>(kMaxImageSide) ||
      layout.height > static_cast<png_uint_32>(kMaxImageSide)) {
    return unsupported(fmt::format("{} is {}x{} pixels; images up to {} pixels per side are read", name, layout.width,
                                   layout.height, kMaxImageSide));
  }
  return {};
}

Expected<StillImage> decode_png(std::span<const uint8_t> bytes, std::string_view name) {
  PngDecoderPtr decoder = make_png_decoder();
  decoder->source = PngSource{bytes.data(), bytes.size(), 0, {}};
  PngLayout layout{};
  if (!png_read_header(decoder.get(), nullptr, &layout)) {
    return corrupt_data(fmt::format("{} is not a readable PNG ({})", name, decoder->source.error));
  }
  TRACKSCOPE_RETURN_IF_ERROR(check_png_size(layout, name));
  int channels = 0, depth = 0;
  if (!png_set_rgb8(decoder.get(), &layout, &channels, &depth)) {
    return corrupt_data(fmt::format("{} is not a readable PNG ({})", name, decoder->source.error));
  }
  if (channels != 3 || depth != 8) {
    return unsupported(fmt::format("{}: a {} does not convert to 8-bit RGB", name, png_description(layout)));
  }
  StillImage image;
  image.width = static_cast<int>(layout.width);
  image.height = static_cast<int>(layout.height);
  image.rgb.resize(static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3);
  std::vector<png_bytep> rows(static_cast<size_t>(image.height));
  for (size_t y = 0; y < rows.size(); ++y) rows[y] = image.rgb.data() + y * static_cast<size_t>(image.width) * 3;
  if (!png_read_pixels(decoder.get(), rows.data())) {
    return corrupt_data(
        fmt::format("{} cannot be decoded ({}): the file is damaged or truncated", name, decoder->source.error));
  }
  return image;
}

// ---------------------------------------------------------------------------------------------------------

struct FileCloser {
  void operator()(FILE* file) const { std::fclose(file); }
};
using FilePtr = std::unique_ptr<FILE, FileCloser>;

Status open_error(const fs::path& file) {
  std::error_code error;
  if (!fs::exists(file, error)) return not_found(fmt::format("image not found: {}", file.string()));
  return io_error(fmt::format("cannot read {}", file.string()));
}

// Whether `marker` occurs in the last kTailBytes of the file.
Expected<bool> tail_contains(FILE* file, const fs::path& path, std::span<const uint8_t> marker) {
  if (std::fseek(file, 0, SEEK_END) != 0) return io_error(fmt::format("cannot read {}", path.string()));
  const long size = std::ftell(file);
  if (size < 0) return io_error(fmt::format("cannot read {}", path.string()));
  const long start = std::max<long>(0, size - static_cast<long>(kTailBytes));
  if (std::fseek(file, start, SEEK_SET) != 0) return io_error(fmt::format("cannot read {}", path.string()));
  std::vector<uint8_t> tail(static_cast<size_t>(size - start));
  if (std::fread(tail.data(), 1, tail.size(), file) != tail.size()) {
    return io_error(fmt::format("cannot read {}", path.string()));
  }
  return std::search(tail.begin(), tail.end(), marker.begin(), marker.end()) != tail.end();
}

}  // namespace

StillFormat sniff_format(std::span<const uint8_t> head) {
  static constexpr std::array<uint8_t, 8> kPng = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (head.size() >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF) return StillFormat::jpeg;
  if (head.size() >= kPng.size() && std::equal(kPng.begin(), kPng.end(), head.begin())) return StillFormat::png;
  return StillFormat::other;
}

Status read_file_bytes(const fs::path& file, std::vector<uint8_t>& bytes) {
  std::ifstream stream(file, std::ios::binary | std::ios::ate);
  if (!stream) return open_error(file);
  const std::streamoff size = stream.tellg();
  if (size < 0) return io_error(fmt::format("cannot read {}", file.string()));
  if (size == 0) return corrupt_data(fmt::format("{} is empty (0 bytes)", file.string()));
  bytes.resize(static_cast<size_t>(size));
  stream.seekg(0);
  if (!stream.read(reinterpret_cast<char*>(bytes.data()), size)) {
    return io_error(fmt::format("cannot read {}", file.string()));
  }
  return {};
}

Expected<std::vector<uint8_t>> read_file_bytes(const fs::path& file) {
  std::vector<uint8_t> bytes;
  TRACKSCOPE_RETURN_IF_ERROR(read_file_bytes(file, bytes));
  return bytes;
}

Expected<StillHeader> read_still_header(const fs::path& file) {
  FilePtr stream(std::fopen(file.c_str(), "rb"));
  if (!stream) return open_error(file);
  std::array<uint8_t, 8> head{};
  const size_t got = std::fread(head.data(), 1, head.size(), stream.get());
  if (got == 0) return corrupt_data(fmt::format("{} is empty (0 bytes)", file.string()));
  const StillFormat format = sniff_format(std::span<const uint8_t>(head.data(), got));
  if (format == StillFormat::other) return StillHeader{};
  std::rewind(stream.get());
  const std::string name = file.string();
  StillHeader header;
  header.format = format;
  if (format == StillFormat::jpeg) {
    JpegDecoderPtr decoder(new JpegDecoder);
    init_jpeg(*decoder);
    if (!jpeg_header_from_file(decoder.get(), stream.get())) return jpeg_failure(decoder->errors, name);
    TRACKSCOPE_RETURN_IF_ERROR(check_jpeg_header(decoder->info, name));
    header.width = static_cast<int>(decoder->info.image_width);
    header.height = static_cast<int>(decoder->info.image_height);
    header.description = jpeg_description(decoder->info);
  } else {
    PngDecoderPtr decoder = make_png_decoder();
    PngLayout layout{};
    if (!png_read_header(decoder.get(), stream.get(), &layout)) {
      return corrupt_data(fmt::format("{} is not a readable PNG ({})", name, decoder->source.error));
    }
    TRACKSCOPE_RETURN_IF_ERROR(check_png_size(layout, name));
    header.width = static_cast<int>(layout.width);
    header.height = static_cast<int>(layout.height);
    header.description = png_description(layout);
  }

  // Complete files end with their end marker; a missing one is truncation, except for JPEGs with data appended
  // after the image (some cameras store a second image or a video there): decode those in full to decide.
  static constexpr std::array<uint8_t, 2> kJpegEnd = {0xFF, 0xD9};
  static constexpr std::array<uint8_t, 8> kPngEnd = {'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82};
  Expected<bool> complete = format == StillFormat::jpeg ? tail_contains(stream.get(), file, kJpegEnd)
                                                        : tail_contains(stream.get(), file, kPngEnd);
  if (!complete) return complete.status();
  if (*complete) return header;
  if (format == StillFormat::png) {
    return corrupt_data(fmt::format("{} is truncated: it does not end with the PNG end chunk (IEND)", name));
  }
  stream.reset();
  Expected<std::vector<uint8_t>> bytes = read_file_bytes(file);
  if (!bytes) return bytes.status();
  Expected<StillImage> image = decode_jpeg(*bytes, name);
  if (!image) return image.status();
  if (image->truncated) {
    return corrupt_data(fmt::format("{} is truncated: {} (libjpeg would fill the missing rows)", name, image->warning));
  }
  return header;
}

Expected<StillImage> decode_still(std::span<const uint8_t> bytes, std::string_view name) {
  switch (sniff_format(bytes)) {
    case StillFormat::jpeg: return decode_jpeg(bytes, name);
    case StillFormat::png: return decode_png(bytes, name);
    case StillFormat::other: break;
  }
  return unsupported(fmt::format("{} is neither a JPEG nor a PNG file", name));
}

}  // namespace trackscope::core::still_image
