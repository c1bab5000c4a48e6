#include "core/tracking/evaluation_perturbation.h"

#include <fmt/format.h>

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t declared first
#include <jpeglib.h>
// clang-format on

#include <algorithm>
#include <chrono>
#include <csetjmp>
#include <memory>

#include "core/video/image_resize.h"

namespace trackscope::core {
namespace {

// libjpeg reports fatal errors through error_exit, which must not return: jump back to the caller's setjmp
// (the only way out of the C library without unwinding C frames with a C++ exception).
struct JpegError {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_jpeg_error(j_common_ptr info) {
  auto* error = reinterpret_cast<JpegError*>(info->err);
  (*info->err->format_message)(info, error->message);
  std::longjmp(error->jump, 1);
}

void ignore_jpeg_message(j_common_ptr, int) {}

Status check_frame(const Frame& frame) {
  if (frame.width <= 0 || frame.height <= 0 ||
      frame.rgb.size() != static_cast<size_t>(frame.width) * static_cast<size_t>(frame.height) * 3) {
    return invalid_argument(fmt::format("frame {} is {}x{} with {} bytes of RGB24", frame.index, frame.width,
                                        frame.height, frame.rgb.size()));
  }
  return {};
}

}  // namespace

Status FramePerturbation::check() const {
  if (brightness_levels < -255 || brightness_levels > 255) {
    return invalid_argument(fmt::format("brightness shift {} grey levels not in [-255, 255]", brightness_levels));
  }
  if (jpeg_quality < 1 || jpeg_quality > 100) {
    return invalid_argument(fmt::format("JPEG quality {} not in [1, 100]", jpeg_quality));
  }
  return {};
}

std::string FramePerturbation::name() const {
  switch (kind) {
    case PerturbationKind::none: return "none";
    case PerturbationKind::brightness: return fmt::format("brightness {:+d}", brightness_levels);
    case PerturbationKind::jpeg: return fmt::format("jpeg q{}", jpeg_quality);
  }
  return "?";
}

Expected<std::vector<uint8_t>> encode_jpeg(const uint8_t* rgb, int width, int height, int quality) {
  if (width <= 0 || height <= 0 || quality < 1 || quality > 100) {
    return invalid_argument(fmt::format("cannot encode a {}x{} JPEG at quality {}", width, height, quality));
  }
  jpeg_compress_struct info{};
  JpegError error{};
  info.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = on_jpeg_error;
  error.manager.emit_message = ignore_jpeg_message;
  unsigned char* buffer = nullptr;
  unsigned long size = 0;  // NOLINT(google-runtime-int): libjpeg's type
  if (setjmp(error.jump) != 0) {
    jpeg_destroy_compress(&info);
    std::free(buffer);
    return internal_error(fmt::format("libjpeg could not encode a {}x{} image: {}", width, height, error.message));
  }
  jpeg_create_compress(&info);
  jpeg_mem_dest(&info, &buffer, &size);
  info.image_width = static_cast<JDIMENSION>(width);
  info.image_height = static_cast<JDIMENSION>(height);
  info.input_components = 3;
  info.in_color_space = JCS_RGB;
  jpeg_set_defaults(&info);  // 4:2:0, islow DCT, standard Huffman tables: PIL's defaults
  jpeg_set_quality(&info, quality, TRUE);
  jpeg_start_compress(&info, TRUE);
  const size_t stride = static_cast<size_t>(width) * 3;
  while (info.next_scanline < info.image_height) {
    auto* row = const_cast<JSAMPROW>(rgb + info.next_scanline * stride);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  std::vector<uint8_t> bytes(buffer, buffer + size);
  jpeg_destroy_compress(&info);
  std::free(buffer);
  return bytes;
}

Expected<Frame> decode_jpeg(const std::vector<uint8_t>& jpeg) {
  jpeg_decompress_struct info{};
  JpegError error{};
  info.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = on_jpeg_error;
  error.manager.emit_message = ignore_jpeg_message;
  Frame frame;
  if (setjmp(error.jump) != 0) {
    jpeg_destroy_decompress(&info);
    return corrupt_data(fmt::format("libjpeg could not decode {} bytes: {}", jpeg.size(), error.message));
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, jpeg.data(), static_cast<unsigned long>(jpeg.size()));  // NOLINT(google-runtime-int)
  jpeg_read_header(&info, TRUE);
  info.out_color_space = JCS_RGB;
  info.dct_method = JDCT_ISLOW;
  info.do_fancy_upsampling = TRUE;
  jpeg_start_decompress(&info);
  frame.width = static_cast<int>(info.output_width);
  frame.height = static_cast<int>(info.output_height);
  frame.rgb.resize(static_cast<size_t>(frame.width) * static_cast<size_t>(frame.height) * 3);
  const size_t stride = static_cast<size_t>(frame.width) * 3;
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = frame.rgb.data() + info.output_scanline * stride;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return frame;
}

Expected<Frame> perturb_frame(const Frame& frame, const FramePerturbation& perturbation) {
  TRACKSCOPE_RETURN_IF_ERROR(perturbation.check());
  TRACKSCOPE_RETURN_IF_ERROR(check_frame(frame));
  switch (perturbation.kind) {
    case PerturbationKind::none: return frame;
    case PerturbationKind::brightness: {
      Frame out = frame;
      const int shift = perturbation.brightness_levels;
      for (uint8_t& sample : out.rgb) sample = static_cast<uint8_t>(std::clamp(sample + shift, 0, 255));
      return out;
    }
    case PerturbationKind::jpeg: {
      Expected<std::vector<uint8_t>> bytes =
          encode_jpeg(frame.rgb.data(), frame.width, frame.height, perturbation.jpeg_quality);
      if (!bytes) return bytes.status();
      Expected<Frame> decoded = decode_jpeg(*bytes);
      if (!decoded) return decoded.status();
      decoded->index = frame.index;
      decoded->pts_us = frame.pts_us;
      return decoded;
    }
  }
  return invalid_argument("unknown perturbation");
}

PerturbedVideoSource::PerturbedVideoSource(VideoSource& base, FramePerturbation perturbation)
    : base_(base), perturbation_(perturbation) {}

Expected<FramePtr> PerturbedVideoSource::read_frame(int64_t index, FrameSize size) {
  const auto start = std::chrono::steady_clock::now();
  Expected<FramePtr> native = base_.read_frame(index);
  if (!native) return native.status();
  Expected<Frame> changed = perturb_frame(**native, perturbation_);
  if (!changed) return changed.status().with_context(fmt::format("frame {}", index));
  if (!size.native() && (size.width != changed->width || size.height != changed->height)) {
    changed = resize_image(*changed, size, ResizeFilter::lanczos);
    if (!changed) return changed.status();
  }
  last_decode_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return std::make_shared<const Frame>(std::move(*changed));
}

}  // namespace trackscope::core
