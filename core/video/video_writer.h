#pragma once
// VideoWriter: encodes packed RGB24 frames into a video file: H.264 in MP4/MOV/MKV/TS (libx264), VP9 in
// WebM/MKV/MP4 (libvpx-vp9) or Motion-JPEG in AVI/MKV/MOV (FFmpeg's mjpeg). The container follows the file
// extension.
//
//   VideoWriterOptions options;
//   options.codec = VideoCodec::h264;
//   options.width = 640; options.height = 360; options.frame_rate = {24, 1};
//   auto writer = VideoWriter::create("out.mp4", options);
//   if (!writer) return writer.status();
//   for (const Frame& frame : frames) TRACKSCOPE_RETURN_IF_ERROR((*writer)->write(frame));
//   TRACKSCOPE_RETURN_IF_ERROR((*writer)->finish());
//
// Timing: by default frame k is shown at k / frame_rate. With explicit_timestamps, each write() names its own
// presentation time in microseconds (strictly increasing), which makes variable-frame-rate files; WebM stores
// milliseconds, so there times must differ by at least 1 ms.
// Atomic (core/io/atomic_file.h): the frames go to a temporary file beside the target, which finish() renames
// over it; a writer destroyed without finish(), a failed write, a full disk or a kill leaves the previous file
// (if any) as it was.
// Threads: a VideoWriter is used by one thread at a time. Errors: invalid_argument (options, frame size,
// timestamps), unsupported (this FFmpeg build lacks the encoder or the container cannot hold the codec),
// io_error (the file cannot be written).

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "core/status.h"
#include "core/video/video_source.h"

namespace trackscope::core {

enum class VideoCodec { h264, vp9, mjpeg };

/// "h264", "vp9", "mjpeg".
const char* to_string(VideoCodec codec);

/// Chroma resolution of the encoded pictures. 4:2:0 plays everywhere; 4:4:4 keeps thin coloured lines sharp.
enum class ChromaFormat { yuv420, yuv444 };

struct VideoWriterOptions {
  VideoCodec codec = VideoCodec::h264;
  int width = 0;  // frame size in pixels; 4:2:0 H.264/VP9 need even sizes
  int height = 0;
  Rational frame_rate{25, 1};        // frames per second (nominal rate when timestamps are explicit)
  bool explicit_timestamps = false;  // write(frame, pts_us) instead of write(frame)
  int quality = -1;                  // constant quality: CRF for h264 (0..51) and vp9 (0..63), lower is
                                     // better; q:v for mjpeg (2..31); -1 = default (23, 32, 3)
  ChromaFormat chroma = ChromaFormat::yuv420;
  std::string preset = "medium";  // speed/size trade-off, x264's names: ultrafast ... veryslow
  int keyframe_interval = 0;      // frames between keyframes; 0 = the encoder's default
  int max_b_frames = -1;          // -1 = the encoder's default (x264: 3); 0 = none
  int rotation_deg = 0;           // display rotation stored as metadata (0/90/180/270 clockwise); MP4/MOV only
  bool faststart = false;         // MP4/MOV: index at the front (plays while downloading)
  int threads = 0;                // encoder threads, 0 = automatic
  Status check() const;
};

/// Whether this FFmpeg build can encode `codec` (the GPU machine's minimal FFmpeg has no encoders).
bool video_encoder_available(VideoCodec codec);

class VideoWriter {
 public:
  static Expected<std::unique_ptr<VideoWriter>> create(const std::filesystem::path& path,
                                                       const VideoWriterOptions& options);
  /// Without finish(), abandons the file: the temporary file is removed and the previous file is kept.
  virtual ~VideoWriter() = default;

  /// Appends a frame (packed RGB24 of exactly options.width x options.height).
  virtual Status write(const Frame& frame) = 0;
  /// Appends a frame shown at `pts_us` (explicit_timestamps only; strictly increasing, first may be > 0).
  virtual Status write(const Frame& frame, int64_t pts_us) = 0;
  /// Flushes the encoder, closes the file and puts it in place of the previous one. Further writes fail.
  virtual Status finish() = 0;

  virtual int64_t frames_written() const = 0;
};

}  // namespace trackscope::core
