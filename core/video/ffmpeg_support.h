#pragma once
// Internal to core/video: RAII owners, error text, log routing and pixel conversion shared by the FFmpeg-backed
// .cpp files. Only forward declarations of FFmpeg types appear here (FFmpeg headers stay out of core/ headers);
// nothing outside core/video includes this file.
//
// Threads: the owners and converters are used by one thread at a time, like the objects that hold them.
// route_ffmpeg_logs() is safe to call from any thread, any number of times.

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "core/video/video_source.h"

struct AVCodecContext;
struct AVFormatContext;
struct AVFrame;
struct AVPacket;
struct SwsContext;

namespace trackscope::core::ffmpeg {

struct InputFormatDeleter {
  void operator()(AVFormatContext* context) const;
};  // avformat_close_input
struct OutputFormatDeleter {
  void operator()(AVFormatContext* context) const;
};  // closes pb, frees
struct CodecContextDeleter {
  void operator()(AVCodecContext* context) const;
};
struct AvFrameDeleter {
  void operator()(AVFrame* frame) const;
};
struct PacketDeleter {
  void operator()(AVPacket* packet) const;
};
struct SwsDeleter {
  void operator()(SwsContext* context) const;
};

using InputFormatPtr = std::unique_ptr<AVFormatContext, InputFormatDeleter>;
using OutputFormatPtr = std::unique_ptr<AVFormatContext, OutputFormatDeleter>;
using CodecContextPtr = std::unique_ptr<AVCodecContext, CodecContextDeleter>;
using AvFramePtr = std::unique_ptr<AVFrame, AvFrameDeleter>;
using PacketPtr = std::unique_ptr<AVPacket, PacketDeleter>;
using SwsPtr = std::unique_ptr<SwsContext, SwsDeleter>;

AvFramePtr make_frame();  // throws std::bad_alloc when FFmpeg cannot allocate
PacketPtr make_packet();

/// FFmpeg's text for an AVERROR code ("Invalid data found when processing input").
std::string error_text(int av_error);

/// Sends FFmpeg's own log lines (warnings and errors) to core::log at debug level: the Status returned to the
/// caller carries the user-facing message, FFmpeg's detail is for `-v` runs. Installed once per process.
void route_ffmpeg_logs();

/// Converts decoded frames of any pixel format to packed RGB24 at any size, exactly as the auto-inserted scale
/// filter of the ffmpeg 5.1 command line does for `ffmpeg -i V -pix_fmt rgb24` (docs/video-decoding.md):
/// swscale with flags=bicubic (fftools' default sws_flags); the YCbCr matrix from the frame's colorspace tag
/// (vf_scale in_color_matrix=auto: sws_getCoefficients(tag), BT.601 for untagged, reserved or unsupported
/// tags); the input range from the frame's color_range tag, else swscale's default for the format (full for
/// the yuvj* formats, limited for the others); RGB output full range; for yuv420p the MPEG-2 vertical chroma
/// position (src_v_chr_pos 128), as vf_scale sets it. Native-size output is bit-identical to the CLI's.
class RgbConverter {
 public:
  RgbConverter();
  ~RgbConverter();
  RgbConverter(const RgbConverter&) = delete;
  RgbConverter& operator=(const RgbConverter&) = delete;

  /// Writes `width` x `height` RGB24 pixels, `stride_bytes` per row, into `rgb`.
  Status convert(const AVFrame& frame, int width, int height, uint8_t* rgb, int stride_bytes);

  /// Scales packed RGB24 (bicubic, as above) from `source_width` x `source_height` to `width` x `height`.
  Status convert_rgb(const uint8_t* source, int source_width, int source_height, int source_stride_bytes, int width,
                     int height, uint8_t* rgb, int stride_bytes);

 private:
  struct Key;
  std::unique_ptr<Key> key_;
  SwsPtr context_;
  AvFramePtr wrapper_;  // borrows convert_rgb's source pixels
};

/// How convert() turns `frame` into RGB, in words and tags (for VideoInfo and `trackscope-cli info`).
struct ConversionDescription {
  std::string pixel_format;  // "yuv420p"
  std::string color_matrix;  // the frame's tag: "bt709", "smpte170m", ..., "unknown"
  std::string color_range;   // the frame's tag: "tv", "pc", "unknown"
  std::string conversion;    // "BT.709 matrix, limited range (tagged), bicubic: as ffmpeg -pix_fmt rgb24"
};
ConversionDescription describe_conversion(const AVFrame& frame);

/// Converts packed RGB24 images to an encoder's pixel format (same size), for the writers.
class RgbToEncoderConverter {
 public:
  RgbToEncoderConverter();
  ~RgbToEncoderConverter();
  RgbToEncoderConverter(const RgbToEncoderConverter&) = delete;
  RgbToEncoderConverter& operator=(const RgbToEncoderConverter&) = delete;

  /// `frame` must be allocated (format, width, height set, buffers present and writable).
  Status convert(const uint8_t* rgb, int stride_bytes, AVFrame& frame);

 private:
  SwsPtr context_;
  int width_ = 0;
  int height_ = 0;
  int format_ = -1;
};

/// Rotates a packed RGB image clockwise by 0, 90, 180 or 270 degrees (the coded frame made upright).
Frame rotate_clockwise(const Frame& frame, int rotation_deg);

}  // namespace trackscope::core::ffmpeg
