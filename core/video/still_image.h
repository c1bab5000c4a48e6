#pragma once
// Internal to core/video: JPEG and PNG still images decoded by libjpeg-turbo and libpng themselves, with the
// settings PIL and OpenCV use, so that image sequences give exactly the pixels the reference pipelines see
// (FFmpeg's own mjpeg decoder has another IDCT and chroma upsampling: ~1.5 grey levels darker on average).
//
//   Expected<StillHeader> header = read_still_header("00012.jpg");       // size only, reads a few KB
//   Expected<StillImage> image = decode_still(bytes, "00012.jpg");       // packed RGB24 + what went wrong
//
// Decoding rules (docs/video-decoding.md):
//  - JPEG: libjpeg's defaults, as PIL's JpegDecode.c and OpenCV's imread leave them: JDCT_ISLOW integer IDCT,
//    fancy (triangle) chroma upsampling, block smoothing for progressive files; output JCS_RGB (greyscale
//    images come out with R = G = B, as PIL's convert("RGB")). CMYK/YCCK JPEGs are refused (unsupported): PIL
//    and OpenCV convert them differently, there is no reference to match.
//  - EXIF orientation is not applied (pixels as stored, as PIL's Image.open and the ffmpeg 5.1 CLI give them);
//    the tag is reported in StillImage::exif_orientation.
//  - PNG: libpng with 16-bit samples reduced to their high byte (png_set_strip_16, as OpenCV's imread and
//    PIL for RGB; PIL clips 16-bit greyscale instead), palettes expanded, 1/2/4-bit greyscale scaled to 8 bits,
//    greyscale replicated to RGB, alpha and tRNS transparency dropped without compositing, no gamma
//    correction, interlaced images de-interlaced.
//  - Other formats (BMP, TIFF, WebP, PPM) are not handled here: the image sequence decodes them with FFmpeg.
// Damage: a JPEG that decodes with libjpeg's "Corrupt JPEG data" warnings keeps the pixels libjpeg produced
// and reports the warnings; a JPEG that ends early is `truncated` (libjpeg fills the missing rows). A PNG
// that is damaged or truncated anywhere is an error (libpng cannot recover; PIL refuses it too).
// Threads: all functions are independent and may be called from any thread concurrently.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace trackscope::core::still_image {

enum class StillFormat {
  jpeg,
  png,
  other,  // anything else: not decoded here
};

/// The format the first bytes announce (JPEG: FF D8 FF; PNG: its 8-byte signature), whatever the file name.
StillFormat sniff_format(std::span<const uint8_t> head);

/// The largest width or height accepted, as for every frame (a hostile header must not allocate gigabytes).
inline constexpr int kMaxImageSide = 16384;
/// Whether an image (or frame) of width x height pixels is within 1..kMaxImageSide on both sides.
inline constexpr bool within_image_sides(int64_t width, int64_t height) {
  return width >= 1 && height >= 1 && width <= kMaxImageSide && height <= kMaxImageSide;
}

struct StillHeader {
  StillFormat format = StillFormat::other;
  int width = 0;
  int height = 0;
  std::string description;  // "JPEG YCbCr 4:2:0", "8-bit RGB PNG": for messages and `info`
};

/// Reads the header of a JPEG or PNG file (the bytes up to the image data) and checks that the file is
/// complete: it ends with the end-of-image marker (JPEG FF D9, PNG IEND) within its last 4 KiB; a JPEG
/// without one there (data appended after the image, or truncation) is decoded in full to decide.
/// A file in another format gives format `other` and size 0 (not an error: the caller decodes it otherwise).
/// Errors: not_found, io_error, corrupt_data (damaged header, truncated, empty), unsupported (CMYK JPEG, larger
/// than kMaxImageSide).
Expected<StillHeader> read_still_header(const std::filesystem::path& file);

struct StillImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;  // packed RGB24, width * 3 bytes per row
  int corrupt_warnings = 0;  // libjpeg "Corrupt JPEG data" warnings: the pixels are what libjpeg (and PIL)
                             // produce from damaged data
  bool truncated = false;    // the JPEG data ended before the last row: libjpeg filled the missing rows
  std::string warning;       // the first warning, as libjpeg words it; empty if none
  int exif_orientation = 0;  // EXIF Orientation tag (1..8), 0 when absent; never applied to the pixels
  bool damaged() const { return corrupt_warnings > 0 || truncated; }
};

/// Decodes a whole JPEG or PNG file held in memory. `name` only labels messages.
/// Errors: corrupt_data (not decodable), unsupported (CMYK JPEG, 12-bit JPEG, other formats, too large).
Expected<StillImage> decode_still(std::span<const uint8_t> bytes, std::string_view name);

/// Reads a file into memory. Errors: not_found, io_error, corrupt_data (empty).
Expected<std::vector<uint8_t>> read_file_bytes(const std::filesystem::path& file);
/// The same into `bytes`, reusing its capacity: a sequence reading one file per frame keeps one buffer (fresh
/// buffers of a few hundred KB per frame made glibc return and re-fault memory: +0.9 ms per 854x480 frame).
Status read_file_bytes(const std::filesystem::path& file, std::vector<uint8_t>& bytes);

}  // namespace trackscope::core::still_image
