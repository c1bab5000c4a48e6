#pragma once
// Video input: metadata and frame-accurate random access by frame index.
//
//   auto source = VideoSource::open("clip.mp4");             // or an image-sequence folder / "%05d.jpg" pattern
//   if (!source) return source.status();
//   const VideoInfo& info = (*source)->info();
//   Expected<FramePtr> frame = (*source)->read_frame(42);          // native size, RGB
//   Expected<FramePtr> small = (*source)->read_frame(42, {256, 256});
//
// Coordinates: frames are returned upright (container rotation applied); width/height in VideoInfo are the
// upright size. Pixel (i, j) covers [j, j+1) x [i, i+1) (raster convention, centre at j+0.5, i+0.5).
// Threads: a VideoSource is used by one thread at a time (it owns a decoder). Each thread that decodes opens
// its own instance (the display decode thread and the tracking thread each have one).
// Pixels (docs/video-decoding.md): video frames are converted to RGB exactly as `ffmpeg -i V -pix_fmt rgb24`
// (FFmpeg 5.1) does it, from the stream's colour tags; JPEG and PNG images are decoded by libjpeg-turbo and
// libpng with the settings PIL and OpenCV use. Damage: every frame carries what the decoder reported about it
// (Frame::integrity); integrity() sums it up for the frames decoded so far, scan_integrity() for all of them.
// FFmpeg stays behind the implementation: no FFmpeg type appears in this header.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace trackscope::core {

struct Rational {
  int64_t num = 0;
  int64_t den = 1;
  double to_double() const { return den == 0 ? 0.0 : static_cast<double>(num) / static_cast<double>(den); }
  bool operator==(const Rational&) const = default;
};

struct VideoInfo {
  std::filesystem::path path;
  std::string container;  // FFmpeg demuxer name, e.g. "mov,mp4,m4a,3gp,3g2,mj2", "image2"
  std::string codec;      // decoder name, e.g. "h264"
  int width = 0;          // upright size in stored pixels (a non-square sample aspect ratio is not applied)
  int height = 0;
  Rational frame_rate;      // average frame rate (frames per second)
  int64_t frame_count = 0;  // exact number of decodable frames (counted by demuxing when the header lies;
                            // a stream cut inside a group of pictures starts at its first decodable frame)
  int64_t duration_us = 0;  // from the first frame's presentation time to the end of the last frame
  int rotation_deg = 0;     // clockwise rotation applied to the coded frames to make them upright: 0/90/180/270
  bool variable_frame_rate = false;
  // How frame 0's pixels become RGB (docs/video-decoding.md), for `info` and bug reports:
  std::string pixel_format;    // the decoder's format ("yuv420p"), or the image's ("JPEG YCbCr 4:2:0")
  std::string color_matrix;    // the stream's YCbCr matrix tag ("bt709", "smpte170m", "unknown"); "" for images
  std::string color_range;     // the stream's range tag ("tv" = limited, "pc" = full, "unknown"); "" for images
  std::string rgb_conversion;  // what is applied: "BT.709 limited range, bicubic (as ffmpeg -pix_fmt rgb24)",
                               // "libjpeg-turbo (islow IDCT, fancy upsampling: as PIL and OpenCV)"
};

/// What the decoder reported about one frame. Damaged frames still have pixels (the decoder's concealment,
/// as ffmpeg and PIL would give them): they are flagged, not dropped.
struct FrameIntegrity {
  int decoder_errors = 0;  // errors the decoder reported for this frame: H.264 slices in error, failed packets,
                           // libjpeg "Corrupt JPEG data" warnings
  bool concealed = false;  // damaged or missing areas were filled in by the decoder (error concealment, rows
                           // past the end of a truncated JPEG)
  bool resized = false;    // an image of another size, scaled to the sequence's size (ImagePolicy::resize)
  bool damaged() const { return decoder_errors > 0 || concealed; }
  bool operator==(const FrameIntegrity&) const = default;
};

/// A decoded frame: packed RGB24, row-major, `width * 3` bytes per row. Immutable once made, shared by
/// reference between the cache, the GUI and the tracker.
struct Frame {
  int64_t index = 0;   // frame index in the video (0-based, presentation order)
  int64_t pts_us = 0;  // presentation time of the frame, relative to frame 0 (frame 0 has 0)
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;
  FrameIntegrity integrity;

  size_t bytes() const { return rgb.size(); }
  const uint8_t* pixel(int x, int y) const { return rgb.data() + (static_cast<size_t>(y) * width + x) * 3; }
};
using FramePtr = std::shared_ptr<const Frame>;

/// Requested output size; {0, 0} means the native (upright) size. Scaling uses a bicubic-quality filter; the
/// tracker does its own model-exact resizing from native frames.
struct FrameSize {
  int width = 0;
  int height = 0;
  bool native() const { return width == 0 && height == 0; }
  /// What VideoSource::read_frame accepts: native, or both sides within 1..still_image::kMaxImageSide.
  /// Errors: invalid_argument, saying so.
  Status check() const;
};

/// What an image sequence does with images it cannot use as they are: unreadable files (not an image,
/// damaged header, truncated) and images whose size differs from the sequence's (that of its first usable
/// image). Checked when the sequence opens, from each file's header and end (cheap: a few KB per file).
enum class ImagePolicy {
  stop,    // opening fails with a message naming the first such file (the default)
  skip,    // such files are left out of the sequence (frame indices count the remaining images)
  resize,  // images of another size are scaled (bicubic) to the sequence's size; unreadable ones are left out
};
const char* to_string(ImagePolicy policy);
Expected<ImagePolicy> parse_image_policy(std::string_view text);  // "stop", "skip", "resize"

struct VideoOpenOptions {
  int decoder_threads = 0;                    // 0 = FFmpeg's automatic choice
  Rational image_sequence_frame_rate{25, 1};  // image sequences carry no timing; FFmpeg's image2 default
  ImagePolicy image_policy = ImagePolicy::stop;
  Status check() const;
};

/// Damage found so far in a video or image sequence.
struct IntegrityReport {
  struct DamagedFrame {
    int64_t index = 0;
    FrameIntegrity integrity;
    std::string detail;  // what the decoder said ("concealed errors (decode_error_flags 0x4)", "00012.jpg:
                         // Corrupt JPEG data: premature end of data segment")
  };
  struct ImageProblem {
    std::filesystem::path file;
    std::string reason;
  };
  int64_t frame_count = 0;
  int64_t checked_frames = 0;                // distinct frames decoded so far (all of them after scan_integrity)
  std::vector<DamagedFrame> damaged_frames;  // ascending index; frames decoded so far that were damaged
  int64_t unattributed_errors = 0;           // decoder errors that could not be tied to a frame
  std::string stream_error;                  // reading the file stopped early (damaged or truncated container)
  std::vector<ImageProblem> skipped_images;  // left out of an image sequence (ImagePolicy skip/resize)
  std::vector<ImageProblem> resized_images;  // scaled to the sequence's size (ImagePolicy::resize)

  bool complete() const { return checked_frames >= frame_count; }
  /// No damage, nothing skipped or resized, no unattributed error, no stream error.
  bool clean() const;
  /// The damaged frames among [first, end) (end < 0: to the end).
  std::vector<int64_t> damaged_in(int64_t first, int64_t end) const;
  /// One line for users, e.g. "3 damaged frames (12, 13, 40): the decoder concealed errors; ...".
  std::string summary() const;
};

class VideoSource {
 public:
  virtual ~VideoSource() = default;

  /// Opens a video file, an image-sequence folder (its image files sorted by name, byte-wise) or an FFmpeg
  /// image2 pattern ("dir/%05d.jpg": consecutive numbers from the first existing of 0..4, as ffmpeg does).
  /// Only the best video stream is used; other streams (audio, subtitles) need no decoder. Opening demuxes the
  /// whole file once (packets only, no decoding) to count frames and index keyframes, and decodes frame 0.
  /// Image sequences read every file's header and end and apply options.image_policy (unreadable, truncated
  /// and other-size images). Fails with not_found, unsupported (not a video, no video stream, no decoder, a CMYK
  /// JPEG), corrupt_data (damaged, truncated before any frame, empty; an image the policy stops on, named) or
  /// invalid_argument (bad options).
  static Expected<std::unique_ptr<VideoSource>> open(const std::filesystem::path& path,
                                                     const VideoOpenOptions& options = {});

  /// Opens a video file or a single image held in memory (`bytes`: the whole file) through FFmpeg's custom I/O,
  /// with the same demuxers, decoders, checks and errors as open() of a file. `name` stands for the file in
  /// VideoInfo::path and in messages (its extension helps FFmpeg's format probe). The source keeps the bytes.
  static Expected<std::unique_ptr<VideoSource>> open_bytes(std::shared_ptr<const std::vector<uint8_t>> bytes,
                                                           const std::string& name,
                                                           const VideoOpenOptions& options = {});

  virtual const VideoInfo& info() const = 0;

  /// Frame `index` (0 <= index < frame_count), exactly the frame a sequential decode yields at that position,
  /// also after arbitrary seeks and for variable-frame-rate files (frames are indexed by presentation time).
  /// Sequential reads are fast (no seek); a jump seeks to the nearest keyframe at or before and decodes forward.
  /// `size` both 0 = native, else both in [1, 16384]. Errors: invalid_argument (index or size), corrupt_data
  /// (the frame cannot be decoded: damaged or truncated file; an image found damaged only when decoded, under
  /// ImagePolicy::stop); the source stays usable after an error. Frames the decoder concealed errors in are
  /// returned, with Frame::integrity saying so.
  virtual Expected<FramePtr> read_frame(int64_t index, FrameSize size = {}) = 0;

  /// Wall time of the last read_frame call in milliseconds (demux + decode + convert).
  virtual double last_decode_ms() const = 0;

  /// Work done by read_frame since open: for tests and benchmarks (sequential reads never seek; a jump
  /// decodes from the nearest keyframe, not from the start).
  struct DecodeCounters {
    int64_t seeks = 0;           // demuxer repositionings (keyframe seeks, rewinds)
    int64_t decoded_frames = 0;  // pictures the decoder produced, including those only decoded to reach a target
  };
  virtual DecodeCounters decode_counters() const { return {}; }

  /// Damage found in the frames decoded since open (including frames decoded only to reach another one),
  /// and what the open left out or resized.
  virtual IntegrityReport integrity() const;

  /// Decodes every frame once (without the RGB conversion where the implementation can skip it) so that
  /// integrity() covers the whole video; the source stays usable (the next read seeks). Takes about as long as
  /// decoding the clip. Errors: those of read_frame (a frame that cannot be decoded at all).
  virtual Expected<IntegrityReport> scan_integrity();
};

}  // namespace trackscope::core
