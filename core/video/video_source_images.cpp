// The image-sequence VideoSource: one still image per frame, each file read through FFmpeg's image2 demuxer and
// decoded on its own, so random access costs the same as sequential access.
#include <chrono>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/dict.h>
#include <libavutil/mathematics.h>
}

#include <fmt/format.h>

#include "core/log.h"
#include "core/video/ffmpeg_support.h"
#include "core/video/video_source_backends.h"

namespace trackscope::core::video_backends {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMaxFrameSide = 16384;

class ImageSequenceSource final : public VideoSource {
 public:
  ImageSequenceSource(fs::path display_path, std::vector<fs::path> files, const VideoOpenOptions& options)
      : display_path_(std::move(display_path)), files_(std::move(files)), options_(options) {}

  Status open();
  const VideoInfo& info() const override { return info_; }
  Expected<FramePtr> read_frame(int64_t index, FrameSize size) override;
  double last_decode_ms() const override { return last_decode_ms_; }
  DecodeCounters decode_counters() const override { return counters_; }

 private:
  Status decode_file(const fs::path& file);  // into decoded_
  Expected<FramePtr> load(int64_t index, FrameSize size);

  fs::path display_path_;
  std::vector<fs::path> files_;
  VideoOpenOptions options_;
  VideoInfo info_;
  ffmpeg::CodecContextPtr decoder_;  // reused while consecutive files share a codec
  ffmpeg::PacketPtr packet_ = ffmpeg::make_packet();
  ffmpeg::AvFramePtr decoded_ = ffmpeg::make_frame();
  ffmpeg::RgbConverter converter_;
  FramePtr last_frame_;
  FrameSize last_size_;
  double last_decode_ms_ = 0.0;
  DecodeCounters counters_;
};

Status ImageSequenceSource::decode_file(const fs::path& file) {
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

Expected<FramePtr> ImageSequenceSource::load(int64_t index, FrameSize size) {
  TRACKSCOPE_RETURN_IF_ERROR(decode_file(files_[static_cast<size_t>(index)]));
  Frame out;
  out.index = index;
  out.pts_us =
      av_rescale_q(index, AVRational{static_cast<int>(info_.frame_rate.den), static_cast<int>(info_.frame_rate.num)},
                   AVRational{1, 1000000});
  // Every frame comes out at the size of frame 0, even where the images differ in size.
  out.width = !size.native() ? size.width : (info_.width > 0 ? info_.width : decoded_->width);
  out.height = !size.native() ? size.height : (info_.height > 0 ? info_.height : decoded_->height);
  out.rgb.resize(static_cast<size_t>(out.width) * out.height * 3);
  TRACKSCOPE_RETURN_IF_ERROR(converter_.convert(*decoded_, out.width, out.height, out.rgb.data(), out.width * 3));
  return FramePtr(std::make_shared<const Frame>(std::move(out)));
}

Status ImageSequenceSource::open() {
  info_.path = display_path_;
  info_.container = "image2";
  info_.frame_count = static_cast<int64_t>(files_.size());
  info_.frame_rate = options_.image_sequence_frame_rate;
  info_.duration_us = av_rescale_q(
      info_.frame_count, AVRational{static_cast<int>(info_.frame_rate.den), static_cast<int>(info_.frame_rate.num)},
      AVRational{1, 1000000});
  Expected<FramePtr> first = load(0, {});
  if (!first)
    return first.status().with_context(fmt::format("{}: cannot decode the first image", display_path_.string()));
  info_.codec = decoder_->codec->name;
  info_.width = (*first)->width;
  info_.height = (*first)->height;
  last_frame_ = *first;
  counters_ = {};
  log::debug("opened image sequence {}: {} {} images {}x{}", display_path_.string(), info_.codec, info_.frame_count,
             info_.width, info_.height);
  return {};
}

Expected<FramePtr> ImageSequenceSource::read_frame(int64_t index, FrameSize size) {
  const auto start = Clock::now();
  if (!size.native() &&
      (size.width < 1 || size.height < 1 || size.width > kMaxFrameSide || size.height > kMaxFrameSide)) {
    return invalid_argument(fmt::format("frame size must be 0x0 (native) or within 1..{} per side, got {}x{}",
                                        kMaxFrameSide, size.width, size.height));
  }
  if (index < 0 || index >= info_.frame_count) {
    return invalid_argument(fmt::format("frame index {} is out of range [0, {})", index, info_.frame_count));
  }
  Expected<FramePtr> frame =
      (last_frame_ && last_frame_->index == index && last_size_.width == size.width && last_size_.height == size.height)
          ? Expected<FramePtr>(last_frame_)
          : load(index, size);
  if (frame) {
    last_frame_ = *frame;
    last_size_ = size;
  }
  last_decode_ms_ = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return frame;
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
