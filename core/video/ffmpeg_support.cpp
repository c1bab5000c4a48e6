#include "core/video/ffmpeg_support.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <cstdarg>
#include <cstring>
#include <mutex>
#include <new>
#include <tuple>

#include "core/log.h"

namespace trackscope::core::ffmpeg {

void InputFormatDeleter::operator()(AVFormatContext* context) const { avformat_close_input(&context); }

void OutputFormatDeleter::operator()(AVFormatContext* context) const {
  if (context == nullptr) return;
  if (context->pb != nullptr && (context->oformat->flags & AVFMT_NOFILE) == 0) avio_closep(&context->pb);
  avformat_free_context(context);
}

void CodecContextDeleter::operator()(AVCodecContext* context) const { avcodec_free_context(&context); }
void AvFrameDeleter::operator()(AVFrame* frame) const { av_frame_free(&frame); }
void PacketDeleter::operator()(AVPacket* packet) const { av_packet_free(&packet); }
void SwsDeleter::operator()(SwsContext* context) const { sws_freeContext(context); }

AvFramePtr make_frame() {
  AvFramePtr frame(av_frame_alloc());
  if (!frame) throw std::bad_alloc();
  return frame;
}

PacketPtr make_packet() {
  PacketPtr packet(av_packet_alloc());
  if (!packet) throw std::bad_alloc();
  return packet;
}

std::string error_text(int av_error) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  if (av_strerror(av_error, text, sizeof(text)) < 0) return "FFmpeg error " + std::to_string(av_error);
  return text;
}

namespace {

void forward_log_line(void* object, int level, const char* format, va_list arguments) {
  if (level > AV_LOG_WARNING) return;
  // FFmpeg emits a line in several calls; keep the pieces per thread (decoder threads log too).
  thread_local int print_prefix = 1;
  thread_local std::string pending;
  char piece[1024];
  av_log_format_line2(object, level, format, arguments, piece, sizeof(piece), &print_prefix);
  pending += piece;
  if (!pending.empty() && pending.back() == '\n') {
    pending.pop_back();
    log::debug("ffmpeg: {}", pending);
    pending.clear();
  }
}

}  // namespace

void route_ffmpeg_logs() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_callback(forward_log_line); });
}

// ---------------------------------------------------------------------------------------------------------

struct RgbConverter::Key {
  int source_width = 0, source_height = 0, source_format = -1, colorspace = -1, range = -1;
  int width = 0, height = 0;
  bool operator==(const Key&) const = default;
};

RgbConverter::RgbConverter() = default;
RgbConverter::~RgbConverter() = default;

namespace {

// The YCbCr matrix as the ffmpeg command line's scale filter picks it (vf_scale in_color_matrix=auto):
// sws_getCoefficients of the frame's tag. Its table gives BT.601 for unspecified (2), reserved (3), RGB (0) and
// every tag it has no table for (YCgCo, 8, and those above 10: vf_scale only warns).
int matrix_for(int colorspace) {
  switch (colorspace) {
    case AVCOL_SPC_BT709:
    case AVCOL_SPC_FCC:
    case AVCOL_SPC_BT470BG:
    case AVCOL_SPC_SMPTE170M:
    case AVCOL_SPC_SMPTE240M:
    case AVCOL_SPC_BT2020_NCL:
    case AVCOL_SPC_BT2020_CL: return colorspace;
    default: return SWS_CS_DEFAULT;
  }
}
const int* coefficients_for(int colorspace) { return sws_getCoefficients(matrix_for(colorspace)); }

const char* matrix_name(int colorspace) {
  switch (matrix_for(colorspace)) {
    case AVCOL_SPC_BT709: return "BT.709";
    case AVCOL_SPC_FCC: return "FCC";
    case AVCOL_SPC_SMPTE240M: return "SMPTE 240M";
    case AVCOL_SPC_BT2020_NCL:
    case AVCOL_SPC_BT2020_CL: return "BT.2020";
    default: return "BT.601";
  }
}

bool is_yuv(AVPixelFormat format) {
  const AVPixFmtDescriptor* descriptor = av_pix_fmt_desc_get(format);
  return descriptor != nullptr && (descriptor->flags & AV_PIX_FMT_FLAG_RGB) == 0 && descriptor->nb_components >= 3;
}

// swscale's own range default for a format without a range tag: full for the JPEG (yuvj*) formats.
bool default_full_range(AVPixelFormat format) {
  return format == AV_PIX_FMT_YUVJ420P || format == AV_PIX_FMT_YUVJ422P || format == AV_PIX_FMT_YUVJ444P ||
         format == AV_PIX_FMT_YUVJ440P || format == AV_PIX_FMT_YUVJ411P;
}

}  // namespace

ConversionDescription describe_conversion(const AVFrame& frame) {
  ConversionDescription description;
  const auto format = static_cast<AVPixelFormat>(frame.format);
  const char* format_name = av_get_pix_fmt_name(format);
  description.pixel_format = format_name != nullptr ? format_name : "unknown";
  const char* space = av_color_space_name(static_cast<AVColorSpace>(frame.colorspace));
  description.color_matrix = space != nullptr ? space : "unknown";
  const char* range = av_color_range_name(static_cast<AVColorRange>(frame.color_range));
  description.color_range = range != nullptr ? range : "unknown";
  if (frame.colorspace == AVCOL_SPC_UNSPECIFIED) description.color_matrix = "unknown";
  if (frame.color_range == AVCOL_RANGE_UNSPECIFIED) description.color_range = "unknown";
  if (!is_yuv(format)) {
    description.conversion = "no YCbCr matrix (not a YCbCr format), bicubic: as ffmpeg -pix_fmt rgb24";
    return description;
  }
  const bool matrix_tagged = matrix_for(frame.colorspace) == frame.colorspace;
  const bool matrix_unknown = frame.colorspace == AVCOL_SPC_UNSPECIFIED || frame.colorspace == AVCOL_SPC_RESERVED;
  const bool range_tagged = frame.color_range != AVCOL_RANGE_UNSPECIFIED;
  const bool full = range_tagged ? frame.color_range == AVCOL_RANGE_JPEG : default_full_range(format);
  description.conversion =
      fmt::format("{} matrix ({}), {} range ({}), bicubic: as ffmpeg -pix_fmt rgb24", matrix_name(frame.colorspace),
                  matrix_tagged    ? "tagged"
                  : matrix_unknown ? "untagged: the BT.601 default"
                                   : "a tag swscale has no matrix for: the BT.601 default",
                  full ? "full" : "limited", range_tagged ? "tagged" : "untagged: the format's default");
  return description;
}

Status RgbConverter::convert(const AVFrame& frame, int width, int height, uint8_t* rgb, int stride_bytes) {
  const Key key{frame.width, frame.height, frame.format, frame.colorspace, frame.color_range, width, height};
  if (!context_ || !key_ || !(*key_ == key)) {
    context_.reset();
    SwsPtr context(sws_alloc_context());
    if (!context) return out_of_memory("cannot allocate a pixel converter");
    av_opt_set_int(context.get(), "srcw", frame.width, 0);
    av_opt_set_int(context.get(), "srch", frame.height, 0);
    av_opt_set_int(context.get(), "src_format", frame.format, 0);
    av_opt_set_int(context.get(), "dstw", width, 0);
    av_opt_set_int(context.get(), "dsth", height, 0);
    av_opt_set_int(context.get(), "dst_format", AV_PIX_FMT_RGB24, 0);
    av_opt_set_int(context.get(), "sws_flags", SWS_BICUBIC, 0);
    if (frame.format == AV_PIX_FMT_YUV420P) av_opt_set_int(context.get(), "src_v_chr_pos", 128, 0);
    if (sws_init_context(context.get(), nullptr, nullptr) < 0) {
      const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(frame.format));
      return unsupported(fmt::format("cannot convert pixel format {} ({}x{}) to RGB at {}x{}",
                                     name != nullptr ? name : "unknown", frame.width, frame.height, width, height));
    }
    if (is_yuv(static_cast<AVPixelFormat>(frame.format))) {
      int* inverse_table = nullptr;
      int* table = nullptr;
      int source_full = 0, destination_full = 0, brightness = 0, contrast = 0, saturation = 0;
      sws_getColorspaceDetails(context.get(), &inverse_table, &source_full, &table, &destination_full, &brightness,
                               &contrast, &saturation);
      const int* matrix = coefficients_for(frame.colorspace);
      if (frame.color_range != AVCOL_RANGE_UNSPECIFIED) source_full = frame.color_range == AVCOL_RANGE_JPEG ? 1 : 0;
      sws_setColorspaceDetails(context.get(), matrix, source_full, matrix, destination_full, brightness, contrast,
                               saturation);
    }
    context_ = std::move(context);
    key_ = std::make_unique<Key>(key);
  }
  uint8_t* destination[4] = {rgb, nullptr, nullptr, nullptr};
  int destination_stride[4] = {stride_bytes, 0, 0, 0};
  const int rows =
      sws_scale(context_.get(), frame.data, frame.linesize, 0, frame.height, destination, destination_stride);
  if (rows != height) return internal_error(fmt::format("pixel conversion wrote {} of {} rows", rows, height));
  return {};
}

Status RgbConverter::convert_rgb(const uint8_t* source, int source_width, int source_height, int source_stride_bytes,
                                 int width, int height, uint8_t* rgb, int stride_bytes) {
  if (!wrapper_) wrapper_ = make_frame();
  wrapper_->format = AV_PIX_FMT_RGB24;
  wrapper_->width = source_width;
  wrapper_->height = source_height;
  wrapper_->colorspace = AVCOL_SPC_RGB;
  wrapper_->color_range = AVCOL_RANGE_JPEG;
  wrapper_->data[0] = const_cast<uint8_t*>(source);  // read only: sws_scale takes const planes
  wrapper_->linesize[0] = source_stride_bytes;
  const Status status = convert(*wrapper_, width, height, rgb, stride_bytes);
  wrapper_->data[0] = nullptr;
  return status;
}

RgbToEncoderConverter::RgbToEncoderConverter() = default;
RgbToEncoderConverter::~RgbToEncoderConverter() = default;

Status RgbToEncoderConverter::convert(const uint8_t* rgb, int stride_bytes, AVFrame& frame) {
  if (!context_ || width_ != frame.width || height_ != frame.height || format_ != frame.format) {
    context_.reset(sws_getContext(frame.width, frame.height, AV_PIX_FMT_RGB24, frame.width, frame.height,
                                  static_cast<AVPixelFormat>(frame.format), SWS_BICUBIC | SWS_ACCURATE_RND, nullptr,
                                  nullptr, nullptr));
    if (!context_) {
      const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(frame.format));
      return unsupported(fmt::format("cannot convert RGB to pixel format {}", name != nullptr ? name : "unknown"));
    }
    if (is_yuv(static_cast<AVPixelFormat>(frame.format))) {
      // Tag and convert with the same matrix and range, so that decoders (ours and others) restore the colours.
      int* inverse_table = nullptr;
      int* table = nullptr;
      int source_full = 0, destination_full = 0, brightness = 0, contrast = 0, saturation = 0;
      sws_getColorspaceDetails(context_.get(), &inverse_table, &source_full, &table, &destination_full, &brightness,
                               &contrast, &saturation);
      const int* matrix = coefficients_for(frame.colorspace);
      destination_full = frame.color_range == AVCOL_RANGE_JPEG ? 1 : 0;
      sws_setColorspaceDetails(context_.get(), matrix, 1, matrix, destination_full, brightness, contrast, saturation);
    }
    width_ = frame.width;
    height_ = frame.height;
    format_ = frame.format;
  }
  const uint8_t* source[4] = {rgb, nullptr, nullptr, nullptr};
  const int source_stride[4] = {stride_bytes, 0, 0, 0};
  const int rows = sws_scale(context_.get(), source, source_stride, 0, frame.height, frame.data, frame.linesize);
  if (rows != frame.height)
    return internal_error(fmt::format("pixel conversion wrote {} of {} rows", rows, frame.height));
  return {};
}

Frame rotate_clockwise(const Frame& frame, int rotation_deg) {
  const int rotation = ((rotation_deg % 360) + 360) % 360;
  if (rotation == 0) return frame;
  Frame out;
  out.index = frame.index;
  out.pts_us = frame.pts_us;
  const bool swap = rotation == 90 || rotation == 270;
  out.width = swap ? frame.height : frame.width;
  out.height = swap ? frame.width : frame.height;
  out.rgb.resize(frame.rgb.size());
  for (int y = 0; y < frame.height; ++y) {
    for (int x = 0; x < frame.width; ++x) {
      int out_x = x, out_y = y;
      if (rotation == 90) {
        out_x = frame.height - 1 - y;
        out_y = x;
      } else if (rotation == 180) {
        out_x = frame.width - 1 - x;
        out_y = frame.height - 1 - y;
      } else {
        out_x = y;
        out_y = frame.width - 1 - x;
      }
      std::memcpy(out.rgb.data() + (static_cast<size_t>(out_y) * out.width + out_x) * 3, frame.pixel(x, y), 3);
    }
  }
  return out;
}

}  // namespace trackscope::core::ffmpeg
