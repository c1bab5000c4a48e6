#include "core/video/image_io.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
}

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <system_error>

#include "core/io/atomic_file.h"
#include "core/video/ffmpeg_support.h"
#include "core/video/still_image.h"

namespace trackscope::core {

namespace fs = std::filesystem;

namespace {

Status check_frame(const Frame& frame) {
  if (frame.width < 1 || frame.height < 1 ||
      frame.rgb.size() != static_cast<size_t>(frame.width) * static_cast<size_t>(frame.height) * 3) {
    return invalid_argument(
        fmt::format("not a packed RGB24 image: {}x{} with {} bytes", frame.width, frame.height, frame.rgb.size()));
  }
  return {};
}

Expected<std::vector<uint8_t>> encode_image(const Frame& frame, AVCodecID codec_id, AVPixelFormat pixel_format,
                                            int qscale) {
  TRACKSCOPE_RETURN_IF_ERROR(check_frame(frame));
  ffmpeg::route_ffmpeg_logs();
  const AVCodec* codec = avcodec_find_encoder(codec_id);
  if (codec == nullptr) {
    return unsupported(fmt::format("this FFmpeg build has no {} encoder", avcodec_get_name(codec_id)));
  }
  ffmpeg::CodecContextPtr encoder(avcodec_alloc_context3(codec));
  if (!encoder) return out_of_memory("cannot allocate an image encoder");
  encoder->width = frame.width;
  encoder->height = frame.height;
  encoder->pix_fmt = pixel_format;
  encoder->time_base = AVRational{1, 25};
  if (qscale > 0) {
    encoder->flags |= AV_CODEC_FLAG_QSCALE;
    encoder->global_quality = qscale * FF_QP2LAMBDA;
  }
  if (pixel_format != AV_PIX_FMT_RGB24) {
    encoder->color_range = AVCOL_RANGE_JPEG;
    encoder->colorspace = AVCOL_SPC_BT470BG;
  }
  int result = avcodec_open2(encoder.get(), codec, nullptr);
  if (result < 0)
    return unsupported(fmt::format("cannot open the {} encoder ({})", codec->name, ffmpeg::error_text(result)));

  ffmpeg::AvFramePtr picture = ffmpeg::make_frame();
  picture->format = pixel_format;
  picture->width = frame.width;
  picture->height = frame.height;
  picture->color_range = encoder->color_range;
  picture->colorspace = encoder->colorspace;
  if (av_frame_get_buffer(picture.get(), 0) < 0) return out_of_memory("cannot allocate an image buffer");
  ffmpeg::RgbToEncoderConverter converter;
  TRACKSCOPE_RETURN_IF_ERROR(converter.convert(frame.rgb.data(), frame.width * 3, *picture));
  picture->pts = 0;
  result = avcodec_send_frame(encoder.get(), picture.get());
  if (result >= 0) result = avcodec_send_frame(encoder.get(), nullptr);
  ffmpeg::PacketPtr packet = ffmpeg::make_packet();
  if (result >= 0) result = avcodec_receive_packet(encoder.get(), packet.get());
  if (result < 0)
    return internal_error(fmt::format("{} encoding failed ({})", codec->name, ffmpeg::error_text(result)));
  return std::vector<uint8_t>(packet->data, packet->data + packet->size);
}

Status write_file(const fs::path& path, const std::vector<uint8_t>& bytes) {
  return io::write_file_atomically(path, {reinterpret_cast<const char*>(bytes.data()), bytes.size()});
}

}  // namespace

bool png_encoder_available() { return avcodec_find_encoder(AV_CODEC_ID_PNG) != nullptr; }

Status write_png(const fs::path& path, const Frame& frame) {
  Expected<std::vector<uint8_t>> bytes = encode_image(frame, AV_CODEC_ID_PNG, AV_PIX_FMT_RGB24, 0);
  if (!bytes) return bytes.status().with_context(fmt::format("cannot write {}", path.string()));
  return write_file(path, *bytes);
}

Status write_jpeg(const fs::path& path, const Frame& frame, int qscale) {
  if (qscale < 2 || qscale > 31) return invalid_argument(fmt::format("JPEG qscale must be in [2, 31], got {}", qscale));
  Expected<std::vector<uint8_t>> bytes = encode_image(frame, AV_CODEC_ID_MJPEG, AV_PIX_FMT_YUVJ444P, qscale);
  if (!bytes) return bytes.status().with_context(fmt::format("cannot write {}", path.string()));
  return write_file(path, *bytes);
}

Expected<Frame> read_png(const fs::path& path) {
  Expected<std::vector<uint8_t>> bytes = still_image::read_file_bytes(path);
  if (!bytes) return bytes.status();
  if (still_image::sniff_format(*bytes) != still_image::StillFormat::png) {
    return corrupt_data(fmt::format("{} is not a PNG file", path.string()));
  }
  Expected<still_image::StillImage> image = still_image::decode_still(*bytes, path.string());
  if (!image) return image.status();
  Frame out;
  out.width = image->width;
  out.height = image->height;
  out.rgb = std::move(image->rgb);
  return out;
}

}  // namespace trackscope::core
