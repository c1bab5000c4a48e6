// The container VideoSource: libavformat demuxing and libavcodec decoding of the best video stream. Opening
// demuxes every packet once (no decoding) to get the exact frame count and an index of presentation times and
// keyframes; random access seeks to the keyframe at or before the target and decodes forward.
#include <cmath>
#include <cstring>
#include <fstream>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/mathematics.h>
}

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/video/ffmpeg_support.h"
#include "core/video/memory_input.h"
#include "core/video/video_source_backends.h"

namespace trackscope::core::video_backends {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxConsecutiveDecodeErrors = 64;

// Demuxers that turn arbitrary text into "video" (ANSI art renderers): a text file is not a video to us.
bool is_text_demuxer(const char* name) {
  static constexpr std::array<const char*, 5> kNames = {"tty", "bin", "xbin", "adf", "idf"};
  return std::any_of(kNames.begin(), kNames.end(), [&](const char* n) { return std::strcmp(n, name) == 0; });
}

// Explains a failed avformat_open_input: a known format that fails to parse is damaged, an unknown one is
// not a video. `memory`: the bytes of a source opened from memory (else the file is read).
Status classify_open_failure(const fs::path& path, int av_error, const std::vector<uint8_t>* memory) {
  if (av_error == AVERROR(ENOENT)) return not_found(fmt::format("video not found: {}", path.string()));
  if (av_error == AVERROR(EACCES)) return io_error(fmt::format("permission denied reading {}", path.string()));
  std::vector<unsigned char> head(1 << 16, 0);
  const size_t probe_bytes = head.size() - AVPROBE_PADDING_SIZE;
  size_t got = 0;
  if (memory != nullptr) {
    got = std::min(probe_bytes, memory->size());
    std::copy_n(memory->begin(), got, head.begin());
  } else {
    std::ifstream file(path, std::ios::binary);
    file.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(probe_bytes));
    got = static_cast<size_t>(file.gcount());
  }
  const std::string name = path.string();
  AVProbeData probe{};
  probe.filename = name.c_str();
  probe.buf = head.data();
  probe.buf_size = static_cast<int>(got);
  int score = 0;
  const AVInputFormat* format = av_probe_input_format3(&probe, 1, &score);
  if (format != nullptr && score > AVPROBE_SCORE_EXTENSION && !is_text_demuxer(format->name)) {
    return corrupt_data(fmt::format("{} looks like a {} file but cannot be read ({}): it is damaged or truncated", name,
                                    format->long_name != nullptr ? format->long_name : format->name,
                                    ffmpeg::error_text(av_error)));
  }
  return unsupported(fmt::format("{} is not a video file FFmpeg can read ({})", name, ffmpeg::error_text(av_error)));
}

int rotation_of(const AVStream& stream) {
  const int32_t* matrix = nullptr;
#if LIBAVCODEC_VERSION_INT >= AV_VERSION_INT(60, 29, 100)
  const AVPacketSideData* side = av_packet_side_data_get(
      stream.codecpar->coded_side_data, stream.codecpar->nb_coded_side_data, AV_PKT_DATA_DISPLAYMATRIX);
  if (side != nullptr && side->size >= 9 * sizeof(int32_t)) matrix = reinterpret_cast<const int32_t*>(side->data);
#else
  size_t size = 0;
  const uint8_t* data = av_stream_get_side_data(&stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
  if (data != nullptr && size >= 9 * sizeof(int32_t)) matrix = reinterpret_cast<const int32_t*>(data);
#endif
  if (matrix == nullptr) return 0;
  const double counterclockwise = av_display_rotation_get(matrix);
  if (std::isnan(counterclockwise)) return 0;
  const long quarter_turns = std::lround(-counterclockwise / 90.0);
  return static_cast<int>(((quarter_turns % 4) + 4) % 4) * 90;
}

struct PacketRecord {
  int64_t pts = AV_NOPTS_VALUE;
  int64_t dts = AV_NOPTS_VALUE;
  int64_t duration = 0;
  bool keyframe = false;
  bool discard = false;  // decoded for reference only (e.g. before an edit list's start)
};

// Where decoding can restart: from this keyframe on, every frame with index >= frame_index decodes exactly.
struct SeekPoint {
  int64_t frame_index = 0;
  int64_t seek_ts = 0;  // av_seek_frame timestamp in the stream time base (dts when known)
};

class ContainerVideoSource final : public VideoSource {
 public:
  ContainerVideoSource(fs::path path, const VideoOpenOptions& options) : path_(std::move(path)), options_(options) {}
  /// Reads `bytes` instead of the file at path_ (which then only names the source).
  void read_from_memory(std::shared_ptr<const std::vector<uint8_t>> bytes) { memory_ = std::move(bytes); }

  Status open();
  const VideoInfo& info() const override { return info_; }
  Expected<FramePtr> read_frame(int64_t index, FrameSize size) override;
  double last_decode_ms() const override { return last_frame_.last_read_ms(); }
  DecodeCounters decode_counters() const override { return counters_; }
  IntegrityReport integrity() const override;
  Expected<IntegrityReport> scan_integrity() override;

 private:
  enum class IndexMode {
    presentation_time,  // frames identified by their timestamp; keyframe seeks
    decode_order,       // no usable timestamps: frames counted from the start, going back rewinds
  };

  Status open_format();
  Status open_decoder();
  Status build_index();
  Status drop_undecodable_start();
  void fill_info();
  Status rewind(bool reopen);
  Status seek_to(size_t seek_point);
  Expected<bool> decode_next();
  int64_t identify(const AVFrame& frame) const;
  size_t seek_point_for(int64_t index) const;
  Expected<FramePtr> locate(int64_t index, FrameSize size);
  Expected<FramePtr> to_rgb(const AVFrame& frame, int64_t index, FrameSize size);
  void reset_decoder_state();
  int64_t index_of_timestamp(int64_t ts) const;  // -1 when no frame has it
  void note_frame(int64_t index, const AVFrame& frame);
  void note_rejected_packet(const AVPacket& packet, int av_error);
  FrameIntegrity integrity_of(int64_t index) const;

  fs::path path_;
  VideoOpenOptions options_;
  VideoInfo info_;
  std::shared_ptr<const std::vector<uint8_t>> memory_;  // set: demux these bytes through custom I/O
  std::unique_ptr<ffmpeg::MemoryInput> input_;          // declared before format_: it must outlive it
  ffmpeg::InputFormatPtr format_;
  ffmpeg::CodecContextPtr decoder_;
  int stream_index_ = -1;
  AVRational time_base_{1, 1};
  ffmpeg::PacketPtr packet_ = ffmpeg::make_packet();
  ffmpeg::AvFramePtr decoded_ = ffmpeg::make_frame();
  ffmpeg::RgbConverter converter_;

  IndexMode mode_ = IndexMode::presentation_time;
  bool timestamps_are_dts_ = false;  // frames are identified by dts (codecs that never reorder, no pts)
  int64_t skip_unreferenced_before_ = AV_NOPTS_VALUE;  // see decode_next()
  std::vector<PacketRecord> packets_;                  // decode order, video stream only
  std::vector<int64_t> frame_ts_;                      // presentation order (presentation_time mode)
  std::vector<SeekPoint> seek_points_;                 // ascending frame_index, seek_points_[0].frame_index == 0
  int64_t start_ts_ = 0;                               // earliest packet timestamp: where rewind seeks
  int64_t frame_count_ = 0;

  int64_t last_output_ = -1;    // index of the frame decoded last (-1: none since the start)
  bool position_known_ = true;  // false right after a keyframe seek, until a frame identifies itself
  bool demux_ended_ = false;
  bool draining_ = false;

  LastFrame last_frame_;
  DecodeCounters counters_;

  // Damage seen so far. A frame's error flags are set (not added) each time it is decoded, so decoding a frame
  // again after a seek does not count its damage twice.
  struct FrameDamage {
    int error_flags = 0;           // AVFrame::decode_error_flags of its last decode
    bool corrupt_flag = false;     // AV_FRAME_FLAG_CORRUPT
    bool packet_rejected = false;  // avcodec_send_packet refused its packet
  };
  std::vector<bool> checked_;
  std::map<int64_t, FrameDamage> damage_;
  int64_t unattributed_errors_ = 0;
  std::string stream_error_;
  ffmpeg::ConversionDescription conversion_;
};

Status ContainerVideoSource::open_format() {
  AVFormatContext* raw = nullptr;
  if (memory_) {
    format_.reset();
    input_ = std::make_unique<ffmpeg::MemoryInput>(memory_);  // a fresh read position for every (re)open
    raw = avformat_alloc_context();
    if (raw == nullptr) return out_of_memory("cannot allocate a demuxer context");
    raw->pb = input_->io();
    raw->flags |= AVFMT_FLAG_CUSTOM_IO;
  }
  const int opened = avformat_open_input(&raw, path_.c_str(), nullptr, nullptr);
  if (opened < 0) return classify_open_failure(path_, opened, memory_.get());
  format_.reset(raw);
  if (is_text_demuxer(format_->iformat->name)) {
    return unsupported(fmt::format("{} is a text file, not a video", path_.string()));
  }
  const int found = avformat_find_stream_info(format_.get(), nullptr);
  if (found < 0) {
    return corrupt_data(fmt::format("cannot read the streams of {} ({}): the file is damaged or truncated",
                                    path_.string(), ffmpeg::error_text(found)));
  }
  return {};
}

Status ContainerVideoSource::open_decoder() {
  const AVCodec* decoder = nullptr;
  int best = av_find_best_stream(format_.get(), AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0);
  if (best >= 0 && (format_->streams[best]->disposition & AV_DISPOSITION_ATTACHED_PIC) != 0) {
    best = AVERROR_STREAM_NOT_FOUND;  // cover art, not a video: look for a real one below
    for (unsigned i = 0; i < format_->nb_streams; ++i) {
      const AVStream* stream = format_->streams[i];
      if (stream->codecpar->codec_type != AVMEDIA_TYPE_VIDEO) continue;
      if ((stream->disposition & AV_DISPOSITION_ATTACHED_PIC) != 0) continue;
      decoder = avcodec_find_decoder(stream->codecpar->codec_id);
      best = decoder != nullptr ? static_cast<int>(i) : AVERROR_DECODER_NOT_FOUND;
      if (decoder != nullptr) break;
    }
  }
  if (best == AVERROR_DECODER_NOT_FOUND) {
    std::string codec = "unknown";
    for (unsigned i = 0; i < format_->nb_streams; ++i) {
      const AVCodecParameters* parameters = format_->streams[i]->codecpar;
      if (parameters->codec_type != AVMEDIA_TYPE_VIDEO) continue;
      if (parameters->codec_id != AV_CODEC_ID_NONE) {
        codec = avcodec_get_name(parameters->codec_id);
      } else if (parameters->codec_tag != 0) {
        char tag[AV_FOURCC_MAX_STRING_SIZE] = {};
        codec = fmt::format("unknown, tag '{}'", av_fourcc_make_string(tag, parameters->codec_tag));
      }
      break;
    }
    return unsupported(
        fmt::format("{}: this FFmpeg build has no decoder for its video codec ({})", path_.string(), codec));
  }
  if (best < 0) return unsupported(fmt::format("{} has no video stream", path_.string()));
  stream_index_ = best;
  for (unsigned i = 0; i < format_->nb_streams; ++i) {
    format_->streams[i]->discard = static_cast<int>(i) == stream_index_ ? AVDISCARD_DEFAULT : AVDISCARD_ALL;
  }
  const AVStream* stream = format_->streams[stream_index_];
  time_base_ = stream->time_base;

  decoder_.reset(avcodec_alloc_context3(decoder));
  if (!decoder_) return out_of_memory("cannot allocate a video decoder");
  int result = avcodec_parameters_to_context(decoder_.get(), stream->codecpar);
  if (result < 0)
    return corrupt_data(fmt::format("{}: bad codec parameters ({})", path_.string(), ffmpeg::error_text(result)));
  decoder_->pkt_timebase = stream->time_base;
  decoder_->thread_count = options_.decoder_threads;
  decoder_->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
  result = avcodec_open2(decoder_.get(), decoder, nullptr);
  if (result < 0) {
    return unsupported(
        fmt::format("{}: cannot open the {} decoder ({})", path_.string(), decoder->name, ffmpeg::error_text(result)));
  }
  return {};
}

Status ContainerVideoSource::build_index() {
  int result = 0;
  while ((result = av_read_frame(format_.get(), packet_.get())) >= 0) {
    if (packet_->stream_index == stream_index_) {
      packets_.push_back({packet_->pts, packet_->dts, packet_->duration, (packet_->flags & AV_PKT_FLAG_KEY) != 0,
                          (packet_->flags & AV_PKT_FLAG_DISCARD) != 0});
    }
    av_packet_unref(packet_.get());
  }
  if (result != AVERROR_EOF) {
    stream_error_ = fmt::format(
        "reading stopped after {} video packets ({}): the rest of the file is damaged or "
        "truncated",
        packets_.size(), ffmpeg::error_text(result));
    log::warn("{}: {}", path_.string(), stream_error_);
  }
  // An mp4/mov index lists every sample: fewer packets than listed means the file was cut short (the demuxer
  // ends at the cut as if the file ended there).
  const int64_t listed = format_->streams[stream_index_]->nb_frames;
  if (stream_error_.empty() && listed > 0 && static_cast<int64_t>(packets_.size()) < listed) {
    stream_error_ = fmt::format("the file is truncated: its index lists {} video frames, {} could be read", listed,
                                packets_.size());
    log::warn("{}: {}", path_.string(), stream_error_);
  }
  std::vector<const PacketRecord*> frames;
  for (const PacketRecord& packet : packets_) {
    if (!packet.discard) frames.push_back(&packet);
  }
  if (frames.empty()) return corrupt_data(fmt::format("{} contains no video frames", path_.string()));
  frame_count_ = static_cast<int64_t>(frames.size());

  const bool all_pts = std::all_of(frames.begin(), frames.end(), [](auto* p) { return p->pts != AV_NOPTS_VALUE; });
  const bool all_dts = std::all_of(frames.begin(), frames.end(), [](auto* p) { return p->dts != AV_NOPTS_VALUE; });
  const bool reorders = decoder_->has_b_frames > 0 || format_->streams[stream_index_]->codecpar->video_delay > 0;
  // A packet's presentation time, or its decode time where the codec never reorders frames.
  const bool use_dts = !all_pts && all_dts && !reorders;
  timestamps_are_dts_ = use_dts;
  auto timestamp_of = [use_dts](const PacketRecord& p) { return use_dts ? p.dts : p.pts; };
  if (all_pts || use_dts) {
    for (const PacketRecord* packet : frames) frame_ts_.push_back(timestamp_of(*packet));
    std::sort(frame_ts_.begin(), frame_ts_.end());
  }
  const bool unique = !frame_ts_.empty() && std::adjacent_find(frame_ts_.begin(), frame_ts_.end()) == frame_ts_.end();
  mode_ = unique ? IndexMode::presentation_time : IndexMode::decode_order;
  if (!unique) {
    frame_ts_.clear();
    log::debug("{}: no unique timestamps, frames are counted in decode order", path_.string());
  }

  start_ts_ = INT64_MAX;
  for (const PacketRecord& packet : packets_) {
    const int64_t ts = packet.dts != AV_NOPTS_VALUE ? packet.dts : packet.pts;
    if (ts != AV_NOPTS_VALUE) start_ts_ = std::min(start_ts_, ts);
  }
  if (start_ts_ == INT64_MAX) start_ts_ = 0;
  seek_points_.push_back({0, start_ts_});
  if (mode_ == IndexMode::presentation_time) {
    for (const PacketRecord& packet : packets_) {
      const int64_t ts = timestamp_of(packet);
      if (!packet.keyframe || ts == AV_NOPTS_VALUE) continue;
      const int64_t frame_index = std::lower_bound(frame_ts_.begin(), frame_ts_.end(), ts) - frame_ts_.begin();
      if (frame_index <= seek_points_.back().frame_index || frame_index >= frame_count_) continue;
      seek_points_.push_back({frame_index, ts});
    }
  }
  return {};
}

void ContainerVideoSource::fill_info() {
  const AVStream& stream = *format_->streams[stream_index_];
  info_.path = path_;
  info_.container = format_->iformat->name;
  info_.codec = decoder_->codec->name;
  info_.frame_count = frame_count_;
  info_.rotation_deg = rotation_of(stream);

  AVRational rate = stream.avg_frame_rate;
  if (rate.num <= 0 || rate.den <= 0) rate = stream.r_frame_rate;
  if (mode_ == IndexMode::presentation_time) {
    // From the first frame's start to the last frame's end; the last frame lasts its packet duration, or the
    // typical frame interval.
    std::vector<int64_t> deltas;
    for (size_t i = 1; i < frame_ts_.size(); ++i) deltas.push_back(frame_ts_[i] - frame_ts_[i - 1]);
    int64_t last_duration = 0;
    for (const PacketRecord& packet : packets_) {
      if (!packet.discard && (packet.pts == frame_ts_.back() || packet.dts == frame_ts_.back())) {
        last_duration = packet.duration;
      }
    }
    if (!deltas.empty()) {
      std::vector<int64_t> sorted = deltas;
      std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
      const int64_t median = sorted[sorted.size() / 2];
      if (last_duration <= 0) last_duration = median;
      const auto [low, high] = std::minmax_element(deltas.begin(), deltas.end());
      info_.variable_frame_rate = (*high - *low) > std::max<int64_t>(1, median / 50);
    } else if (last_duration <= 0 && rate.num > 0 && rate.den > 0) {
      last_duration = av_rescale_q(1, av_inv_q(rate), time_base_);
    }
    const int64_t span = frame_ts_.back() - frame_ts_.front() + std::max<int64_t>(last_duration, 0);
    info_.duration_us = av_rescale_q(span, time_base_, AVRational{1, 1000000});
  } else if (format_->duration != AV_NOPTS_VALUE && format_->duration > 0) {
    info_.duration_us = format_->duration;
  }
  if ((rate.num <= 0 || rate.den <= 0) && info_.duration_us > 0) {
    av_reduce(&rate.num, &rate.den, frame_count_ * 1000000, info_.duration_us, 1 << 30);
  }
  if ((rate.num <= 0 || rate.den <= 0)) rate = AVRational{25, 1};
  if (info_.duration_us <= 0) info_.duration_us = av_rescale_q(frame_count_, av_inv_q(rate), AVRational{1, 1000000});
  info_.frame_rate = Rational{rate.num, rate.den};
}

Status ContainerVideoSource::open() {
  TRACKSCOPE_RETURN_IF_ERROR(open_format());
  TRACKSCOPE_RETURN_IF_ERROR(open_decoder());
  TRACKSCOPE_RETURN_IF_ERROR(build_index());
  TRACKSCOPE_RETURN_IF_ERROR(drop_undecodable_start());
  fill_info();
  checked_.assign(static_cast<size_t>(frame_count_), false);
  TRACKSCOPE_RETURN_IF_ERROR(rewind(false));
  // Frame 0 gives the real picture size (the container's may differ) and proves the stream decodes.
  Expected<FramePtr> first = locate(0, {});
  if (!first) return first.status().with_context(fmt::format("{}: cannot decode the first frame", path_.string()));
  info_.width = (*first)->width;
  info_.height = (*first)->height;
  info_.pixel_format = conversion_.pixel_format;
  info_.color_matrix = conversion_.color_matrix;
  info_.color_range = conversion_.color_range;
  info_.rgb_conversion = conversion_.conversion;
  last_frame_.remember(*first);
  counters_ = {};
  log::debug("opened {}: {} {}x{} {} frames, {} seek points, rotation {}", path_.string(), info_.codec, info_.width,
             info_.height, info_.frame_count, seek_points_.size(), info_.rotation_deg);
  return {};
}

// A stream cut in the middle of a group of pictures starts with frames that reference pictures it does not
// contain; decoders drop them. Frame 0 is the first frame that decodes, so the index starts there.
Status ContainerVideoSource::drop_undecodable_start() {
  if (mode_ != IndexMode::presentation_time) return {};
  TRACKSCOPE_RETURN_IF_ERROR(rewind(false));
  Expected<bool> decoded = decode_next();
  // Nothing decoded here (some demuxers cannot seek back to the start): leave it to locate(), which reopens.
  if (!decoded || !*decoded) return {};
  const int64_t ts = decoded_->pts != AV_NOPTS_VALUE ? decoded_->pts : decoded_->best_effort_timestamp;
  const auto first = std::lower_bound(frame_ts_.begin(), frame_ts_.end(), ts);
  const int64_t skipped = first - frame_ts_.begin();
  if (skipped <= 0 || first == frame_ts_.end()) return {};
  log::debug("{}: the first {} frames cannot be decoded (the stream starts without a keyframe)", path_.string(),
             skipped);
  frame_ts_.erase(frame_ts_.begin(), first);
  frame_count_ -= skipped;
  std::vector<SeekPoint> kept = {{0, start_ts_}};
  for (const SeekPoint& point : seek_points_) {
    if (point.frame_index - skipped > 0) kept.push_back({point.frame_index - skipped, point.seek_ts});
  }
  seek_points_ = std::move(kept);
  return {};
}

void ContainerVideoSource::reset_decoder_state() {
  avcodec_flush_buffers(decoder_.get());
  demux_ended_ = false;
  draining_ = false;
}

Status ContainerVideoSource::rewind(bool reopen) {
  ++counters_.seeks;
  reset_decoder_state();
  last_output_ = -1;
  position_known_ = true;
  if (!reopen && av_seek_frame(format_.get(), stream_index_, start_ts_, AVSEEK_FLAG_BACKWARD) >= 0) return {};
  // Some demuxers cannot seek (or not to the very start): opening again is always the start.
  format_.reset();
  TRACKSCOPE_RETURN_IF_ERROR(open_format());
  for (unsigned i = 0; i < format_->nb_streams; ++i) {
    format_->streams[i]->discard = static_cast<int>(i) == stream_index_ ? AVDISCARD_DEFAULT : AVDISCARD_ALL;
  }
  return {};
}

Status ContainerVideoSource::seek_to(size_t seek_point) {
  if (seek_point == 0) return rewind(false);
  ++counters_.seeks;
  reset_decoder_state();
  const int64_t ts = seek_points_[seek_point].seek_ts;
  if (av_seek_frame(format_.get(), stream_index_, ts, AVSEEK_FLAG_BACKWARD) < 0 &&
      avformat_seek_file(format_.get(), stream_index_, INT64_MIN, ts, ts, 0) < 0) {
    return rewind(false);
  }
  position_known_ = false;
  return {};
}

size_t ContainerVideoSource::seek_point_for(int64_t index) const {
  const auto after = std::upper_bound(seek_points_.begin(), seek_points_.end(), index,
                                      [](int64_t i, const SeekPoint& point) { return i < point.frame_index; });
  return static_cast<size_t>(after - seek_points_.begin()) - 1;
}

int64_t ContainerVideoSource::identify(const AVFrame& frame) const {
  if (mode_ == IndexMode::presentation_time) {
    const int64_t ts = frame.pts != AV_NOPTS_VALUE ? frame.pts : frame.best_effort_timestamp;
    const auto found = std::lower_bound(frame_ts_.begin(), frame_ts_.end(), ts);
    if (ts != AV_NOPTS_VALUE && found != frame_ts_.end() && *found == ts) return found - frame_ts_.begin();
  }
  return position_known_ ? last_output_ + 1 : -1;
}

Expected<bool> ContainerVideoSource::decode_next() {
  int consecutive_errors = 0;
  while (true) {
    int result = avcodec_receive_frame(decoder_.get(), decoded_.get());
    if (result == 0) {
      ++counters_.decoded_frames;
      return true;
    }
    if (result == AVERROR_EOF) return false;
    if (result != AVERROR(EAGAIN)) {
      log::debug("{}: decoding error ({})", path_.string(), ffmpeg::error_text(result));
      ++unattributed_errors_;
      if (++consecutive_errors > kMaxConsecutiveDecodeErrors) {
        return corrupt_data(
            fmt::format("{}: too many decoding errors ({})", path_.string(), ffmpeg::error_text(result)));
      }
      continue;
    }
    if (demux_ended_) {
      if (draining_) return false;
      avcodec_send_packet(decoder_.get(), nullptr);
      draining_ = true;
      continue;
    }
    result = av_read_frame(format_.get(), packet_.get());
    if (result < 0) {
      if (result != AVERROR_EOF) log::debug("{}: demuxing stopped ({})", path_.string(), ffmpeg::error_text(result));
      demux_ended_ = true;
      continue;
    }
    if (packet_->stream_index == stream_index_) {
      // Frames shown before the target that no other frame references need not be decoded at all (about half
      // of the work on x264's default B-frame pattern). This cannot change any other frame's pixels.
      const int64_t ts = timestamps_are_dts_ ? packet_->dts : packet_->pts;
      const bool skip =
          skip_unreferenced_before_ != AV_NOPTS_VALUE && ts != AV_NOPTS_VALUE && ts < skip_unreferenced_before_;
      decoder_->skip_frame = skip ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
      result = avcodec_send_packet(decoder_.get(), packet_.get());
      if (result < 0 && result != AVERROR(EAGAIN)) {
        log::debug("{}: damaged packet skipped ({})", path_.string(), ffmpeg::error_text(result));
        note_rejected_packet(*packet_, result);
        if (++consecutive_errors > kMaxConsecutiveDecodeErrors) {
          av_packet_unref(packet_.get());
          return corrupt_data(
              fmt::format("{}: too many damaged packets ({})", path_.string(), ffmpeg::error_text(result)));
        }
      }
    }
    av_packet_unref(packet_.get());
  }
}

Expected<FramePtr> ContainerVideoSource::locate(int64_t index, FrameSize size) {
  size_t seek_point = seek_point_for(index);
  const bool forward = position_known_ && index > last_output_ &&
                       (mode_ == IndexMode::decode_order || seek_points_[seek_point].frame_index <= last_output_ + 1);
  bool rewound = false;
  bool reopened = false;
  int64_t first_found = -1;
  if (!forward) {
    TRACKSCOPE_RETURN_IF_ERROR(seek_to(mode_ == IndexMode::presentation_time ? seek_point : 0));
    rewound = seek_point == 0 || mode_ == IndexMode::decode_order;
  }
  if (mode_ == IndexMode::presentation_time) skip_unreferenced_before_ = frame_ts_[static_cast<size_t>(index)];
  struct StopSkipping {
    int64_t& value;
    ~StopSkipping() { value = AV_NOPTS_VALUE; }
  } stop_skipping{skip_unreferenced_before_};
  while (true) {
    Expected<bool> decoded = decode_next();
    if (!decoded) return decoded.status();
    int64_t found = -1;
    if (*decoded) {
      found = identify(*decoded_);
      if (found < 0) continue;  // after a seek, before any frame with a known timestamp
      note_frame(found, *decoded_);
      last_output_ = found;
      position_known_ = true;
      if (first_found < 0) first_found = found;
      if (found < index) continue;
      if (found == index) {
        log::debug("frame {}: seek point {} (frame {}), forward {}, first decoded {}", index, seek_point,
                   seek_points_[seek_point].frame_index, forward, first_found);
        return to_rgb(*decoded_, index, size);
      }
    }
    // Past the target (the seek landed late) or the stream ended first: start from further back.
    if (mode_ == IndexMode::presentation_time && seek_point > 0 && found > index) {
      TRACKSCOPE_RETURN_IF_ERROR(seek_to(--seek_point));
      rewound = seek_point == 0;
    } else if (!rewound) {
      TRACKSCOPE_RETURN_IF_ERROR(rewind(false));
      rewound = true;
    } else if (!reopened) {
      TRACKSCOPE_RETURN_IF_ERROR(rewind(true));
      reopened = true;
    } else {
      return corrupt_data(fmt::format("{}: frame {} of {} cannot be decoded: the file is damaged or truncated",
                                      path_.string(), index, frame_count_));
    }
  }
}

Expected<FramePtr> ContainerVideoSource::to_rgb(const AVFrame& frame, int64_t index, FrameSize size) {
  const bool swap = info_.rotation_deg == 90 || info_.rotation_deg == 270;
  int width = frame.width, height = frame.height;
  if (!size.native()) {
    width = swap ? size.height : size.width;
    height = swap ? size.width : size.height;
  } else if (info_.width > 0) {
    // Every frame comes out at the size of frame 0, even where the stream changes resolution.
    width = swap ? info_.height : info_.width;
    height = swap ? info_.width : info_.height;
  }
  Frame out;
  out.index = index;
  if (mode_ == IndexMode::presentation_time) {
    out.pts_us =
        av_rescale_q(frame_ts_[static_cast<size_t>(index)] - frame_ts_.front(), time_base_, AVRational{1, 1000000});
  } else {
    out.pts_us = av_rescale_q(
        index, av_inv_q(AVRational{static_cast<int>(info_.frame_rate.num), static_cast<int>(info_.frame_rate.den)}),
        AVRational{1, 1000000});
  }
  out.width = width;
  out.height = height;
  out.integrity = integrity_of(index);
  if (conversion_.pixel_format.empty()) conversion_ = ffmpeg::describe_conversion(frame);
  out.rgb.resize(static_cast<size_t>(width) * height * 3);
  TRACKSCOPE_RETURN_IF_ERROR(converter_.convert(frame, width, height, out.rgb.data(), width * 3));
  if (info_.rotation_deg != 0) out = ffmpeg::rotate_clockwise(out, info_.rotation_deg);
  return FramePtr(std::make_shared<const Frame>(std::move(out)));
}

int64_t ContainerVideoSource::index_of_timestamp(int64_t ts) const {
  if (mode_ != IndexMode::presentation_time || ts == AV_NOPTS_VALUE) return -1;
  const auto found = std::lower_bound(frame_ts_.begin(), frame_ts_.end(), ts);
  return found != frame_ts_.end() && *found == ts ? found - frame_ts_.begin() : -1;
}

void ContainerVideoSource::note_frame(int64_t index, const AVFrame& frame) {
  if (index < 0 || index >= frame_count_) return;
  checked_[static_cast<size_t>(index)] = true;
  const bool corrupt = (frame.flags & AV_FRAME_FLAG_CORRUPT) != 0;
  if (frame.decode_error_flags == 0 && !corrupt) {
    auto found = damage_.find(index);
    if (found != damage_.end()) {
      found->second.error_flags = 0;
      found->second.corrupt_flag = false;
      if (!found->second.packet_rejected) damage_.erase(found);
    }
    return;
  }
  FrameDamage& damage = damage_[index];
  damage.error_flags = frame.decode_error_flags;
  damage.corrupt_flag = corrupt;
}

void ContainerVideoSource::note_rejected_packet(const AVPacket& packet, int av_error) {
  // With frame threads the error may surface a packet or two late; the packet in hand is the best estimate.
  const int64_t index = index_of_timestamp(timestamps_are_dts_ ? packet.dts : packet.pts);
  if (index < 0) {
    ++unattributed_errors_;
    return;
  }
  damage_[index].packet_rejected = true;
  log::debug("{}: the packet of frame {} was rejected ({})", path_.string(), index, ffmpeg::error_text(av_error));
}

FrameIntegrity ContainerVideoSource::integrity_of(int64_t index) const {
  FrameIntegrity integrity;
  const auto found = damage_.find(index);
  if (found == damage_.end()) return integrity;
  const FrameDamage& damage = found->second;
  for (int bit :
       {FF_DECODE_ERROR_INVALID_BITSTREAM, FF_DECODE_ERROR_MISSING_REFERENCE, FF_DECODE_ERROR_DECODE_SLICES}) {
    if ((damage.error_flags & bit) != 0) ++integrity.decoder_errors;
  }
  if (damage.packet_rejected) ++integrity.decoder_errors;
  integrity.concealed = (damage.error_flags & FF_DECODE_ERROR_CONCEALMENT_ACTIVE) != 0 || damage.corrupt_flag;
  // A frame marked corrupt without any other flag still counts as damaged.
  if (integrity.decoder_errors == 0 && !integrity.concealed && damage.error_flags != 0) integrity.decoder_errors = 1;
  return integrity;
}

IntegrityReport ContainerVideoSource::integrity() const {
  IntegrityReport report;
  report.frame_count = frame_count_;
  report.checked_frames = std::count(checked_.begin(), checked_.end(), true);
  report.unattributed_errors = unattributed_errors_;
  report.stream_error = stream_error_;
  for (const auto& [index, damage] : damage_) {
    const FrameIntegrity integrity = integrity_of(index);
    if (!integrity.damaged()) continue;
    std::vector<std::string> what;
    if ((damage.error_flags & FF_DECODE_ERROR_INVALID_BITSTREAM) != 0) what.emplace_back("invalid bitstream");
    if ((damage.error_flags & FF_DECODE_ERROR_MISSING_REFERENCE) != 0) what.emplace_back("missing reference");
    if ((damage.error_flags & FF_DECODE_ERROR_DECODE_SLICES) != 0) what.emplace_back("slices in error");
    if ((damage.error_flags & FF_DECODE_ERROR_CONCEALMENT_ACTIVE) != 0) what.emplace_back("errors concealed");
    if (damage.corrupt_flag) what.emplace_back("marked corrupt");
    if (damage.packet_rejected) what.emplace_back("packet rejected by the decoder");
    std::string detail;
    for (size_t i = 0; i < what.size(); ++i) detail += (i == 0 ? "" : ", ") + what[i];
    report.damaged_frames.push_back({index, integrity, detail});
  }
  return report;
}

Expected<IntegrityReport> ContainerVideoSource::scan_integrity() {
  TRACKSCOPE_RETURN_IF_ERROR(rewind(false));
  while (true) {
    Expected<bool> decoded = decode_next();
    if (!decoded) {
      // Too many errors in a row: what was found so far is the report; the decoder gave up here.
      if (stream_error_.empty()) stream_error_ = decoded.status().message();
      break;
    }
    if (!*decoded) break;
    const int64_t found = identify(*decoded_);
    if (found < 0) continue;
    last_output_ = found;
    position_known_ = true;
    note_frame(found, *decoded_);
  }
  // The next read starts from a known place.
  TRACKSCOPE_RETURN_IF_ERROR(rewind(false));
  return integrity();
}

Expected<FramePtr> ContainerVideoSource::read_frame(int64_t index, FrameSize size) {
  return last_frame_.read(index, size, frame_count_, [this](int64_t i, FrameSize s) { return locate(i, s); });
}

}  // namespace

Expected<std::unique_ptr<VideoSource>> open_container(const fs::path& path, const VideoOpenOptions& options) {
  auto source = std::make_unique<ContainerVideoSource>(path, options);
  TRACKSCOPE_RETURN_IF_ERROR(source->open());
  return std::unique_ptr<VideoSource>(std::move(source));
}

Expected<std::unique_ptr<VideoSource>> open_container_bytes(std::shared_ptr<const std::vector<uint8_t>> bytes,
                                                            const std::string& name, const VideoOpenOptions& options) {
  auto source = std::make_unique<ContainerVideoSource>(name, options);
  source->read_from_memory(std::move(bytes));
  TRACKSCOPE_RETURN_IF_ERROR(source->open());
  return std::unique_ptr<VideoSource>(std::move(source));
}

}  // namespace trackscope::core::video_backends
