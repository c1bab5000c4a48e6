#include "core/video/video_writer.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/opt.h>
}

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "core/io/atomic_file.h"
#include "core/log.h"
#include "core/video/ffmpeg_support.h"
#include "core/video/still_image.h"

namespace trackscope::core {

namespace fs = std::filesystem;

const char* to_string(VideoCodec codec) {
  switch (codec) {
    case VideoCodec::h264: return "h264";
    case VideoCodec::vp9: return "vp9";
    case VideoCodec::mjpeg: return "mjpeg";
  }
  return "unknown";
}

namespace {

constexpr std::array<const char*, 10> kPresets = {"ultrafast", "superfast", "veryfast", "faster",   "fast",
                                                  "medium",    "slow",      "slower",   "veryslow", "placebo"};

const char* encoder_name(VideoCodec codec) {
  switch (codec) {
    case VideoCodec::h264: return "libx264";
    case VideoCodec::vp9: return "libvpx-vp9";
    case VideoCodec::mjpeg: return "mjpeg";
  }
  return "";
}

int default_quality(VideoCodec codec) {
  switch (codec) {
    case VideoCodec::h264: return 23;
    case VideoCodec::vp9: return 32;
    case VideoCodec::mjpeg: return 3;
  }
  return 0;
}

AVPixelFormat pixel_format_for(const VideoWriterOptions& options) {
  const bool full = options.chroma == ChromaFormat::yuv444;
  if (options.codec == VideoCodec::mjpeg) return full ? AV_PIX_FMT_YUVJ444P : AV_PIX_FMT_YUVJ420P;
  return full ? AV_PIX_FMT_YUV444P : AV_PIX_FMT_YUV420P;
}

// libvpx's speed knobs for x264's preset names.
void set_vp9_speed(AVCodecContext* encoder, const std::string& preset) {
  int cpu_used = 2;
  const char* deadline = "good";
  if (preset == "ultrafast" || preset == "superfast" || preset == "veryfast") {
    deadline = "realtime";
    cpu_used = 8;
  } else if (preset == "faster" || preset == "fast") {
    cpu_used = 4;
  } else if (preset == "slow" || preset == "slower") {
    cpu_used = 1;
  } else if (preset == "veryslow" || preset == "placebo") {
    cpu_used = 0;
  }
  av_opt_set(encoder->priv_data, "deadline", deadline, 0);
  av_opt_set_int(encoder->priv_data, "cpu-used", cpu_used, 0);
  av_opt_set_int(encoder->priv_data, "row-mt", 1, 0);
}

class FfmpegVideoWriter final : public VideoWriter {
 public:
  FfmpegVideoWriter(fs::path path, const VideoWriterOptions& options) : path_(std::move(path)), options_(options) {}
  // Unfinished: the temporary file goes with file_ (AtomicFile's destructor); the previous file stays.
  ~FfmpegVideoWriter() override {
    if (open_ && !finished_) log::info("{} was not finished: the previous file (if any) is kept", path_.string());
  }

  Status open();
  Status write(const Frame& frame) override;
  Status write(const Frame& frame, int64_t pts_us) override;
  Status finish() override;
  int64_t frames_written() const override { return frames_written_; }

 private:
  Status encode(const Frame& frame, int64_t pts);
  Status drain(bool flush);

  fs::path path_;
  VideoWriterOptions options_;
  ffmpeg::OutputFormatPtr format_;
  ffmpeg::CodecContextPtr encoder_;
  AVStream* stream_ = nullptr;  // owned by format_
  ffmpeg::AvFramePtr picture_ = ffmpeg::make_frame();
  ffmpeg::PacketPtr packet_ = ffmpeg::make_packet();
  ffmpeg::RgbToEncoderConverter converter_;
  int64_t frames_written_ = 0;
  int64_t last_pts_ = INT64_MIN;
  std::optional<io::AtomicFile> file_;  // the temporary file FFmpeg writes, renamed over path_ by finish()
  bool open_ = false;
  bool finished_ = false;
};

Status FfmpegVideoWriter::open() {
  const std::string name = path_.string();
  AVFormatContext* raw = nullptr;
  if (avformat_alloc_output_context2(&raw, nullptr, nullptr, name.c_str()) < 0 || raw == nullptr) {
    return invalid_argument(
        fmt::format("{}: unknown container for extension '{}' (use .mp4, .mov, .mkv, .webm or .avi)", name,
                    path_.extension().string()));
  }
  format_.reset(raw);
  const AVCodec* codec = avcodec_find_encoder_by_name(encoder_name(options_.codec));
  if (codec == nullptr) {
    return unsupported(fmt::format("this FFmpeg build has no {} encoder ({}), needed to write {}",
                                   to_string(options_.codec), encoder_name(options_.codec), name));
  }
  // 0 means "cannot"; a negative answer means the muxer does not say (e.g. MPEG-TS): let it try.
  if (avformat_query_codec(format_->oformat, codec->id, FF_COMPLIANCE_NORMAL) == 0) {
    return unsupported(fmt::format("the {} container cannot hold {} video ({})", format_->oformat->name,
                                   to_string(options_.codec), name));
  }
  encoder_.reset(avcodec_alloc_context3(codec));
  if (!encoder_) return out_of_memory("cannot allocate a video encoder");
  const AVRational rate{static_cast<int>(options_.frame_rate.num), static_cast<int>(options_.frame_rate.den)};
  encoder_->width = options_.width;
  encoder_->height = options_.height;
  encoder_->pix_fmt = pixel_format_for(options_);
  encoder_->framerate = rate;
  encoder_->time_base = options_.explicit_timestamps ? AVRational{1, 1000000} : av_inv_q(rate);
  encoder_->thread_count = options_.threads;
  if (options_.keyframe_interval > 0) encoder_->gop_size = options_.keyframe_interval;
  if (options_.max_b_frames >= 0) encoder_->max_b_frames = options_.max_b_frames;
  encoder_->colorspace = AVCOL_SPC_SMPTE170M;
  encoder_->color_range = options_.codec == VideoCodec::mjpeg ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
  if ((format_->oformat->flags & AVFMT_GLOBALHEADER) != 0) encoder_->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  const int quality = options_.quality >= 0 ? options_.quality : default_quality(options_.codec);
  switch (options_.codec) {
    case VideoCodec::h264:
      av_opt_set(encoder_->priv_data, "preset", options_.preset.c_str(), 0);
      av_opt_set_double(encoder_->priv_data, "crf", quality, 0);
      if (options_.keyframe_interval > 0) {
        // Keyframes exactly every keyframe_interval frames: no extra ones at scene cuts.
        av_opt_set(encoder_->priv_data, "x264-params", "scenecut=0", 0);
      }
      break;
    case VideoCodec::vp9:
      encoder_->bit_rate = 0;  // constant quality
      av_opt_set_int(encoder_->priv_data, "crf", quality, 0);
      set_vp9_speed(encoder_.get(), options_.preset);
      break;
    case VideoCodec::mjpeg:
      encoder_->flags |= AV_CODEC_FLAG_QSCALE;
      encoder_->global_quality = quality * FF_QP2LAMBDA;
      break;
  }
  int result = avcodec_open2(encoder_.get(), codec, nullptr);
  if (result < 0) {
    return unsupported(fmt::format("cannot open the {} encoder for {}x{} ({})", codec->name, options_.width,
                                   options_.height, ffmpeg::error_text(result)));
  }
  stream_ = avformat_new_stream(format_.get(), nullptr);
  if (stream_ == nullptr) return out_of_memory("cannot add a video stream");
  stream_->time_base = encoder_->time_base;
  stream_->avg_frame_rate = rate;
  avcodec_parameters_from_context(stream_->codecpar, encoder_.get());
  if (options_.rotation_deg != 0) {
    std::array<int32_t, 9> matrix{};
    // The MP4 muxer stores this matrix so that FFmpeg's demuxer (and ffmpeg's autorotate, and our reader)
    // turn the picture clockwise by the angle given here: checked against the ffmpeg command line.
    av_display_rotation_set(matrix.data(), options_.rotation_deg);
#if LIBAVCODEC_VERSION_INT >= AV_VERSION_INT(60, 29, 100)
    AVPacketSideData* side =
        av_packet_side_data_new(&stream_->codecpar->coded_side_data, &stream_->codecpar->nb_coded_side_data,
                                AV_PKT_DATA_DISPLAYMATRIX, sizeof(matrix), 0);
    if (side == nullptr) return out_of_memory("cannot store the rotation");
    std::memcpy(side->data, matrix.data(), sizeof(matrix));
#else
    uint8_t* side = av_stream_new_side_data(stream_, AV_PKT_DATA_DISPLAYMATRIX, sizeof(matrix));
    if (side == nullptr) return out_of_memory("cannot store the rotation");
    std::memcpy(side, matrix.data(), sizeof(matrix));
#endif
  }
  if ((format_->oformat->flags & AVFMT_NOFILE) == 0) {
    // FFmpeg writes a temporary file beside the target (and the muxer reads it back by this name for
    // faststart); finish() renames it over the target, so a cut-off export never replaces a good file.
    Expected<io::AtomicFile> file = io::AtomicFile::create(path_);
    if (!file) return file.status();
    file_.emplace(std::move(*file));
    const std::string temporary = file_->temporary_path().string();
    av_free(format_->url);
    format_->url = av_strdup(temporary.c_str());
    if (format_->url == nullptr) return out_of_memory("cannot allocate a file name");
    result = avio_open(&format_->pb, temporary.c_str(), AVIO_FLAG_WRITE);
    if (result < 0) return io_error(fmt::format("cannot create {} ({})", name, ffmpeg::error_text(result)));
  }
  AVDictionary* muxer_options = nullptr;
  if (options_.faststart) av_dict_set(&muxer_options, "movflags", "+faststart", 0);
  result = avformat_write_header(format_.get(), &muxer_options);
  av_dict_free(&muxer_options);
  if (result < 0) {
    return result == AVERROR(EINVAL) || result == AVERROR_INVALIDDATA || result == AVERROR_PATCHWELCOME
               ? unsupported(fmt::format("the {} container cannot hold this {} stream ({})", format_->oformat->name,
                                         to_string(options_.codec), ffmpeg::error_text(result)))
               : io_error(fmt::format("cannot write the header of {} ({})", name, ffmpeg::error_text(result)));
  }
  open_ = true;

  picture_->format = encoder_->pix_fmt;
  picture_->width = options_.width;
  picture_->height = options_.height;
  picture_->colorspace = encoder_->colorspace;
  picture_->color_range = encoder_->color_range;
  if (av_frame_get_buffer(picture_.get(), 0) < 0) return out_of_memory("cannot allocate a picture buffer");
  return {};
}

Status FfmpegVideoWriter::drain(bool flush) {
  if (flush) avcodec_send_frame(encoder_.get(), nullptr);
  while (true) {
    int result = avcodec_receive_packet(encoder_.get(), packet_.get());
    if (result == AVERROR(EAGAIN) || result == AVERROR_EOF) return {};
    if (result < 0)
      return internal_error(fmt::format("encoding {} failed ({})", path_.string(), ffmpeg::error_text(result)));
    av_packet_rescale_ts(packet_.get(), encoder_->time_base, stream_->time_base);
    packet_->stream_index = stream_->index;
    result = av_interleaved_write_frame(format_.get(), packet_.get());
    if (result < 0) return io_error(fmt::format("cannot write to {} ({})", path_.string(), ffmpeg::error_text(result)));
  }
}

Status FfmpegVideoWriter::encode(const Frame& frame, int64_t pts) {
  if (finished_) return invalid_argument(fmt::format("{} is already finished", path_.string()));
  if (frame.width != options_.width || frame.height != options_.height ||
      frame.rgb.size() != static_cast<size_t>(frame.width) * static_cast<size_t>(frame.height) * 3) {
    return invalid_argument(fmt::format("frame is {}x{} ({} bytes), the writer expects {}x{} RGB24", frame.width,
                                        frame.height, frame.rgb.size(), options_.width, options_.height));
  }
  if (pts <= last_pts_) {
    return invalid_argument(
        fmt::format("timestamps must increase: {} after {} (in 1/{} s)", pts, last_pts_, encoder_->time_base.den));
  }
  if (av_frame_make_writable(picture_.get()) < 0) return out_of_memory("cannot allocate a picture buffer");
  TRACKSCOPE_RETURN_IF_ERROR(converter_.convert(frame.rgb.data(), frame.width * 3, *picture_));
  picture_->pts = pts;
  const int result = avcodec_send_frame(encoder_.get(), picture_.get());
  if (result < 0)
    return internal_error(fmt::format("encoding {} failed ({})", path_.string(), ffmpeg::error_text(result)));
  last_pts_ = pts;
  ++frames_written_;
  return drain(false);
}

Status FfmpegVideoWriter::write(const Frame& frame) {
  if (options_.explicit_timestamps) return invalid_argument("explicit_timestamps is on: use write(frame, pts_us)");
  return encode(frame, frames_written_);
}

Status FfmpegVideoWriter::write(const Frame& frame, int64_t pts_us) {
  if (!options_.explicit_timestamps) return invalid_argument("explicit_timestamps is off: use write(frame)");
  return encode(frame, pts_us);
}

Status FfmpegVideoWriter::finish() {
  if (finished_) return {};
  finished_ = true;
  Status drained = drain(true);
  const int result = av_write_trailer(format_.get());
  int closed = 0;
  if (format_->pb != nullptr && (format_->oformat->flags & AVFMT_NOFILE) == 0) closed = avio_closep(&format_->pb);
  format_.reset();
  if (!drained || result < 0 || closed < 0) file_.reset();  // the previous file stays
  if (!drained) return drained;
  if (result < 0) return io_error(fmt::format("cannot finish {} ({})", path_.string(), ffmpeg::error_text(result)));
  if (closed < 0) return io_error(fmt::format("cannot finish {} ({})", path_.string(), ffmpeg::error_text(closed)));
  if (file_) {
    TRACKSCOPE_RETURN_IF_ERROR(file_->commit());
    file_.reset();
  }
  if (frames_written_ == 0) log::warn("{} was finished without frames", path_.string());
  return {};
}

}  // namespace

Status VideoWriterOptions::check() const {
  if (!still_image::within_image_sides(width, height)) {
    return invalid_argument(
        fmt::format("video size must be within 1..{} per side, got {}x{}", still_image::kMaxImageSide, width, height));
  }
  if (codec != VideoCodec::mjpeg && chroma == ChromaFormat::yuv420 && (width % 2 != 0 || height % 2 != 0)) {
    return invalid_argument(
        fmt::format("{} with 4:2:0 chroma needs an even size, got {}x{}", to_string(codec), width, height));
  }
  if (frame_rate.num <= 0 || frame_rate.den <= 0 || frame_rate.num > 1000000 || frame_rate.den > 1000000) {
    return invalid_argument(fmt::format("frame rate must be positive, got {}/{}", frame_rate.num, frame_rate.den));
  }
  const int max_quality = codec == VideoCodec::h264 ? 51 : codec == VideoCodec::vp9 ? 63 : 31;
  const int min_quality = codec == VideoCodec::mjpeg ? 2 : 0;
  if (quality != -1 && (quality < min_quality || quality > max_quality)) {
    return invalid_argument(fmt::format("quality for {} must be -1 or in [{}, {}], got {}", to_string(codec),
                                        min_quality, max_quality, quality));
  }
  if (std::find(kPresets.begin(), kPresets.end(), preset) == kPresets.end()) {
    return invalid_argument(
        fmt::format("unknown preset '{}' (ultrafast, superfast, veryfast, faster, fast, medium, "
                    "slow, slower, veryslow)",
                    preset));
  }
  if (keyframe_interval < 0 || max_b_frames < -1 || max_b_frames > 16 || threads < 0 || threads > 64) {
    return invalid_argument(
        fmt::format("keyframe_interval ({}) must be >= 0, max_b_frames ({}) in [-1, 16], threads "
                    "({}) in [0, 64]",
                    keyframe_interval, max_b_frames, threads));
  }
  if (rotation_deg != 0 && rotation_deg != 90 && rotation_deg != 180 && rotation_deg != 270) {
    return invalid_argument(fmt::format("rotation must be 0, 90, 180 or 270 degrees, got {}", rotation_deg));
  }
  return {};
}

bool video_encoder_available(VideoCodec codec) { return avcodec_find_encoder_by_name(encoder_name(codec)) != nullptr; }

Expected<std::unique_ptr<VideoWriter>> VideoWriter::create(const fs::path& path, const VideoWriterOptions& options) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  ffmpeg::route_ffmpeg_logs();
  auto writer = std::make_unique<FfmpegVideoWriter>(path, options);
  TRACKSCOPE_RETURN_IF_ERROR(writer->open());
  return std::unique_ptr<VideoWriter>(std::move(writer));
}

}  // namespace trackscope::core
