// The image-sequence VideoSource: one still image per frame, each file decoded on its own, so random access
// costs the same as sequential access. JPEG and PNG go through libjpeg-turbo and libpng (still_image.h: the
// pixels PIL and OpenCV give); other formats through FFmpeg's image2 demuxer and its decoders.
#include <map>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/dict.h>
#include <libavutil/mathematics.h>
#include <libavutil/pixdesc.h>
}

#include <fmt/format.h>

#include "core/log.h"
#include "core/video/ffmpeg_support.h"
#include "core/video/still_image.h"
#include "core/video/video_source_backends.h"

namespace trackscope::core::video_backends {

namespace fs = std::filesystem;

namespace {

struct ImageHeader {
  int width = 0;
  int height = 0;
  std::string description;
};

// One decoded image, before it is fitted to the sequence: JPEG/PNG pixels in `still`, other formats in the
// source's FFmpeg frame.
struct DecodedImage {
  still_image::StillFormat format = still_image::StillFormat::other;
  still_image::StillImage still;
  int width = 0;
  int height = 0;
  FrameIntegrity integrity;
  std::string detail;
};

class ImageSequenceSource final : public VideoSource {
 public:
  ImageSequenceSource(fs::path display_path, std::vector<fs::path> files, const VideoOpenOptions& options)
      : display_path_(std::move(display_path)), files_(std::move(files)), options_(options) {}

  Status open();
  const VideoInfo& info() const override { return info_; }
  Expected<FramePtr> read_frame(int64_t index, FrameSize size) override;
  double last_decode_ms() const override { return last_frame_.last_read_ms(); }
  DecodeCounters decode_counters() const override { return counters_; }
  IntegrityReport integrity() const override;
  Expected<IntegrityReport> scan_integrity() override;

 private:
  Status check_files();
  Expected<ImageHeader> read_header(const fs::path& file);
  Status decode_with_ffmpeg(const fs::path& file);  // into decoded_
  Expected<DecodedImage> decode(int64_t index);
  Expected<FramePtr> load(int64_t index, FrameSize size);
  void record(int64_t index, const FrameIntegrity& integrity, const std::string& detail);

  fs::path display_path_;
  std::vector<fs::path> files_;
  VideoOpenOptions options_;
  VideoInfo info_;
  ffmpeg::CodecContextPtr decoder_;  // reused while consecutive files share a codec
  ffmpeg::PacketPtr packet_ = ffmpeg::make_packet();
  ffmpeg::AvFramePtr decoded_ = ffmpeg::make_frame();
  ffmpeg::RgbConverter converter_;
  LastFrame last_frame_;
  DecodeCounters counters_;
  bool orientation_reported_ = false;
  std::string first_description_;    // the first image's format, from its header
  std::vector<uint8_t> file_bytes_;  // the current image file, one buffer for all (see read_file_bytes)

  std::vector<bool> checked_;  // per frame: decoded at least once
  std::map<int64_t, IntegrityReport::DamagedFrame> damaged_;
  std::vector<IntegrityReport::ImageProblem> skipped_;
  std::vector<IntegrityReport::ImageProblem> resized_;
};

Status ImageSequenceSource::decode_with_ffmpeg(const fs::path& file) {
  AVFormatContext* raw = nullptr;
  AVDictionary* demuxer_options = nullptr;
  av_dict_set(&demuxer_options, "pattern_type", "none", 0);  // a '%' in a file name is just a character
  const int opened = avformat_open_input(&raw, file.c_str(), av_find_input_format("image2"), &demuxer_options);
  av_dict_free(&demuxer_options);
  if (opened < 0) {
    if (opened == AVERROR(ENOENT)) return not_found(fmt::format("image not found: {}", file.string()));
    return corrupt_data(fmt::format("cannot read image {} ({})", file.string(), ffmpeg::error_text(opened)));
  }
  ffmpeg::InputFormatPtr format(raw);
  if (format->nb_streams < 1) return corrupt_data(fmt::format("{} holds no image", file.string()));
  const AVCodecParameters* parameters = format->streams[0]->codecpar;
  if (!decoder_ || decoder_->codec_id != parameters->codec_id) {
    const AVCodec* codec = avcodec_find_decoder(parameters->codec_id);
    if (codec == nullptr) {
      return unsupported(fmt::format("{}: this FFmpeg build has no {} image decoder", file.string(),
                                     avcodec_get_name(parameters->codec_id)));
    }
    decoder_.reset(avcodec_alloc_context3(codec));
    if (!decoder_) return out_of_memory("cannot allocate an image decoder");
    avcodec_parameters_to_context(decoder_.get(), parameters);
    decoder_->thread_count = 1;  // one picture per packet: threads would only add latency
    const int result = avcodec_open2(decoder_.get(), codec, nullptr);
    if (result < 0) {
      decoder_.reset();
      return unsupported(
          fmt::format("{}: cannot open the {} decoder ({})", file.string(), codec->name, ffmpeg::error_text(result)));
    }
  }
  const int read = av_read_frame(format.get(), packet_.get());
  if (read < 0) return corrupt_data(fmt::format("cannot read image {} ({})", file.string(), ffmpeg::error_text(read)));
  int result = avcodec_send_packet(decoder_.get(), packet_.get());
  av_packet_unref(packet_.get());
  if (result >= 0) result = avcodec_send_packet(decoder_.get(), nullptr);
  if (result >= 0) result = avcodec_receive_frame(decoder_.get(), decoded_.get());
  avcodec_flush_buffers(decoder_.get());
  if (result >= 0) ++counters_.decoded_frames;
  if (result < 0) {
    return corrupt_data(fmt::format("cannot decode image {} ({}): the file is damaged or truncated", file.string(),
                                    ffmpeg::error_text(result)));
  }
  return {};
}

Expected<ImageHeader> ImageSequenceSource::read_header(const fs::path& file) {
  Expected<still_image::StillHeader> still = still_image::read_still_header(file);
  if (!still) return still.status();
  if (still->format != still_image::StillFormat::other) {
    return ImageHeader{still->width, still->height, still->description};
  }
  // Other formats: FFmpeg's image2 demuxer reads the size from the header.
  AVFormatContext* raw = nullptr;
  AVDictionary* demuxer_options = nullptr;
  av_dict_set(&demuxer_options, "pattern_type", "none", 0);
  const int opened = avformat_open_input(&raw, file.c_str(), av_find_input_format("image2"), &demuxer_options);
  av_dict_free(&demuxer_options);
  if (opened < 0) {
    return corrupt_data(fmt::format("cannot read image {} ({})", file.string(), ffmpeg::error_text(opened)));
  }
  ffmpeg::InputFormatPtr format(raw);
  if (avformat_find_stream_info(format.get(), nullptr) < 0 || format->nb_streams < 1 ||
      format->streams[0]->codecpar->width <= 0 || format->streams[0]->codecpar->height <= 0) {
    return corrupt_data(fmt::format("{} is not a readable image", file.string()));
  }
  const AVCodecParameters* parameters = format->streams[0]->codecpar;
  return ImageHeader{parameters->width, parameters->height, avcodec_get_name(parameters->codec_id)};
}

// Applies the image policy to every file before anything is decoded, from headers and file ends.
Status ImageSequenceSource::check_files() {
  std::vector<fs::path> kept;
  int width = 0, height = 0;
  fs::path reference;
  for (const fs::path& file : files_) {
    Expected<ImageHeader> header = read_header(file);
    if (!header) {
      if (options_.image_policy == ImagePolicy::stop) {
        return header.status().with_context(
            fmt::format("{}: image {} cannot be used (the image policy 'skip' leaves such files out)",
                        display_path_.string(), file.filename().string()));
      }
      skipped_.push_back({file, header.status().message()});
      continue;
    }
    if (reference.empty()) {
      width = header->width;
      height = header->height;
      reference = file;
      first_description_ = header->description;
    } else if (header->width != width || header->height != height) {
      const std::string reason = fmt::format("{}x{}, the sequence is {}x{} (from {})", header->width, header->height,
                                             width, height, reference.filename().string());
      if (options_.image_policy == ImagePolicy::stop) {
        return corrupt_data(
            fmt::format("{}: image {} is {}: all images of a sequence must have one size (the image "
                        "policy 'skip' leaves such images out, 'resize' scales them)",
                        display_path_.string(), file.filename().string(), reason));
      }
      if (options_.image_policy == ImagePolicy::skip) {
        skipped_.push_back({file, reason});
        continue;
      }
      resized_.push_back({file, reason});
    }
    kept.push_back(file);
  }
  if (kept.empty()) {
    return corrupt_data(fmt::format("{}: none of its {} images can be read (first: {}: {})", display_path_.string(),
                                    files_.size(), skipped_.front().file.filename().string(), skipped_.front().reason));
  }
  for (const auto& problem : skipped_) {
    log::warn("{}: image {} left out: {}", display_path_.string(), problem.file.filename().string(), problem.reason);
  }
  for (const auto& problem : resized_) {
    log::warn("{}: image {} is resized: {}", display_path_.string(), problem.file.filename().string(), problem.reason);
  }
  files_ = std::move(kept);
  info_.width = width;
  info_.height = height;
  return {};
}

void ImageSequenceSource::record(int64_t index, const FrameIntegrity& integrity, const std::string& detail) {
  checked_[static_cast<size_t>(index)] = true;
  if (integrity.damaged()) {
    damaged_[index] = {index, integrity, detail};
  } else {
    damaged_.erase(index);
  }
}

Expected<DecodedImage> ImageSequenceSource::decode(int64_t index) {
  const fs::path& file = files_[static_cast<size_t>(index)];
  DecodedImage image;
  TRACKSCOPE_RETURN_IF_ERROR(still_image::read_file_bytes(file, file_bytes_));
  image.format = still_image::sniff_format(file_bytes_);
  if (image.format == still_image::StillFormat::other) {
    TRACKSCOPE_RETURN_IF_ERROR(decode_with_ffmpeg(file));
    image.width = decoded_->width;
    image.height = decoded_->height;
    if ((decoded_->decode_error_flags & ~FF_DECODE_ERROR_CONCEALMENT_ACTIVE) != 0) image.integrity.decoder_errors = 1;
    image.integrity.concealed = (decoded_->decode_error_flags & FF_DECODE_ERROR_CONCEALMENT_ACTIVE) != 0 ||
                                (decoded_->flags & AV_FRAME_FLAG_CORRUPT) != 0;
    if (image.integrity.damaged()) {
      image.detail = fmt::format("{}: decoder errors (decode_error_flags {:#x})", file.filename().string(),
                                 decoded_->decode_error_flags);
    }
  } else {
    Expected<still_image::StillImage> still = still_image::decode_still(file_bytes_, file.string());
    if (!still) return still.status();
    ++counters_.decoded_frames;
    image.still = std::move(*still);
    image.width = image.still.width;
    image.height = image.still.height;
    image.integrity.decoder_errors = image.still.corrupt_warnings + (image.still.truncated ? 1 : 0);
    image.integrity.concealed = image.still.truncated;
    if (image.still.damaged()) image.detail = fmt::format("{}: {}", file.filename().string(), image.still.warning);
    if (image.still.exif_orientation > 1 && !orientation_reported_) {
      orientation_reported_ = true;
      log::warn(
          "{}: EXIF orientation {} is not applied: images are used as stored, as PIL's Image.open and ffmpeg "
          "read them (docs/video-decoding.md)",
          file.string(), image.still.exif_orientation);
    }
  }
  record(index, image.integrity, image.detail);
  return image;
}

Expected<FramePtr> ImageSequenceSource::load(int64_t index, FrameSize size) {
  Expected<DecodedImage> image = decode(index);
  if (!image) return image.status();
  const fs::path& file = files_[static_cast<size_t>(index)];
  if (image->integrity.damaged() && options_.image_policy == ImagePolicy::stop) {
    return corrupt_data(
        fmt::format("frame {}: image {} is damaged ({}); the image policy 'skip' or 'resize' uses it "
                    "as the decoder fills it in, flagged",
                    index, file.string(), image->detail));
  }
  const bool other_size = info_.width > 0 && (image->width != info_.width || image->height != info_.height);
  if (other_size && options_.image_policy != ImagePolicy::resize) {
    return corrupt_data(fmt::format("frame {}: image {} is {}x{}, the sequence is {}x{} (was the file replaced?)",
                                    index, file.string(), image->width, image->height, info_.width, info_.height));
  }
  Frame out;
  out.index = index;
  out.pts_us =
      av_rescale_q(index, AVRational{static_cast<int>(info_.frame_rate.den), static_cast<int>(info_.frame_rate.num)},
                   AVRational{1, 1000000});
  out.width = !size.native() ? size.width : (info_.width > 0 ? info_.width : image->width);
  out.height = !size.native() ? size.height : (info_.height > 0 ? info_.height : image->height);
  out.integrity = image->integrity;
  out.integrity.resized = other_size;
  if (image->format == still_image::StillFormat::other) {
    out.rgb.resize(static_cast<size_t>(out.width) * out.height * 3);
    TRACKSCOPE_RETURN_IF_ERROR(converter_.convert(*decoded_, out.width, out.height, out.rgb.data(), out.width * 3));
  } else if (out.width == image->width && out.height == image->height) {
    out.rgb = std::move(image->still.rgb);
  } else {
    out.rgb.resize(static_cast<size_t>(out.width) * out.height * 3);
    TRACKSCOPE_RETURN_IF_ERROR(converter_.convert_rgb(image->still.rgb.data(), image->width, image->height,
                                                      image->width * 3, out.width, out.height, out.rgb.data(),
                                                      out.width * 3));
  }
  return FramePtr(std::make_shared<const Frame>(std::move(out)));
}

Status ImageSequenceSource::open() {
  info_.path = display_path_;
  info_.container = "image2";
  TRACKSCOPE_RETURN_IF_ERROR(check_files());
  info_.frame_count = static_cast<int64_t>(files_.size());
  checked_.assign(files_.size(), false);
  info_.frame_rate = options_.image_sequence_frame_rate;
  info_.duration_us = av_rescale_q(
      info_.frame_count, AVRational{static_cast<int>(info_.frame_rate.den), static_cast<int>(info_.frame_rate.num)},
      AVRational{1, 1000000});
  Expected<FramePtr> first = load(0, {});
  if (!first)
    return first.status().with_context(fmt::format("{}: cannot decode the first image", display_path_.string()));
  const std::string& description = first_description_;
  if (description.rfind("JPEG", 0) == 0) {
    info_.codec = "jpeg";
    info_.rgb_conversion = "libjpeg-turbo: islow IDCT, fancy upsampling (as PIL and OpenCV)";
  } else if (description.find("PNG") != std::string::npos) {
    info_.codec = "png";
    info_.rgb_conversion = "libpng: 8-bit RGB, 16-bit samples to their high byte, alpha dropped (as OpenCV)";
  } else {
    info_.codec = decoder_ ? decoder_->codec->name : description;
    const char* format = av_get_pix_fmt_name(static_cast<AVPixelFormat>(decoded_->format));
    info_.rgb_conversion = fmt::format("FFmpeg {} decoder, swscale bicubic to RGB24", info_.codec);
    if (format != nullptr) info_.pixel_format = format;
  }
  if (info_.pixel_format.empty()) info_.pixel_format = description;
  last_frame_.remember(*first);
  counters_ = {};
  log::debug("opened image sequence {}: {} {} images {}x{}", display_path_.string(), info_.codec, info_.frame_count,
             info_.width, info_.height);
  return {};
}

Expected<FramePtr> ImageSequenceSource::read_frame(int64_t index, FrameSize size) {
  return last_frame_.read(index, size, info_.frame_count, [this](int64_t i, FrameSize s) { return load(i, s); });
}

IntegrityReport ImageSequenceSource::integrity() const {
  IntegrityReport report;
  report.frame_count = info_.frame_count;
  report.checked_frames = std::count(checked_.begin(), checked_.end(), true);
  for (const auto& [index, frame] : damaged_) report.damaged_frames.push_back(frame);
  report.skipped_images = skipped_;
  report.resized_images = resized_;
  return report;
}

Expected<IntegrityReport> ImageSequenceSource::scan_integrity() {
  for (int64_t index = 0; index < info_.frame_count; ++index) {
    Expected<DecodedImage> image = decode(index);
    if (!image) {
      // No pixels at all: a damaged frame of its own kind, reported rather than ending the scan.
      FrameIntegrity integrity;
      integrity.decoder_errors = 1;
      integrity.concealed = true;
      record(index, integrity, image.status().message());
    }
  }
  return integrity();
}

}  // namespace

Expected<std::unique_ptr<VideoSource>> open_image_sequence(const fs::path& display_path, std::vector<fs::path> files,
                                                           const VideoOpenOptions& options) {
  if (files.empty()) return not_found(fmt::format("{} names no images", display_path.string()));
  auto source = std::make_unique<ImageSequenceSource>(display_path, std::move(files), options);
  TRACKSCOPE_RETURN_IF_ERROR(source->open());
  return std::unique_ptr<VideoSource>(std::move(source));
}

}  // namespace trackscope::core::video_backends
