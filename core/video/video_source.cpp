// VideoSource::open: decides between a container file and an image sequence (folder or image2 pattern).
#include "core/video/video_source.h"

#include "core/io/file_names.h"

extern "C" {
#include <libavformat/avformat.h>
}

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <system_error>

#include "core/video/ffmpeg_support.h"
#include "core/video/still_image.h"
#include "core/video/video_source_backends.h"

namespace trackscope::core {

namespace fs = std::filesystem;

Status FrameSize::check() const {
  if (native() || still_image::within_image_sides(width, height)) return {};
  return invalid_argument(fmt::format("frame size must be 0x0 (native) or within 1..{} per side, got {}x{}",
                                      still_image::kMaxImageSide, width, height));
}

Status VideoOpenOptions::check() const {
  if (decoder_threads < 0 || decoder_threads > 64) {
    return invalid_argument(fmt::format("decoder_threads must be in [0, 64] (0 = automatic), got {}", decoder_threads));
  }
  if (image_sequence_frame_rate.num <= 0 || image_sequence_frame_rate.den <= 0) {
    return invalid_argument(fmt::format("image_sequence_frame_rate must be positive, got {}/{}",
                                        image_sequence_frame_rate.num, image_sequence_frame_rate.den));
  }
  switch (image_policy) {
    case ImagePolicy::stop:
    case ImagePolicy::skip:
    case ImagePolicy::resize: break;
    default: return invalid_argument("image_policy must be stop, skip or resize");
  }
  return {};
}

const char* to_string(ImagePolicy policy) {
  switch (policy) {
    case ImagePolicy::stop: return "stop";
    case ImagePolicy::skip: return "skip";
    case ImagePolicy::resize: return "resize";
  }
  return "unknown";
}

Expected<ImagePolicy> parse_image_policy(std::string_view text) {
  for (ImagePolicy policy : {ImagePolicy::stop, ImagePolicy::skip, ImagePolicy::resize}) {
    if (text == to_string(policy)) return policy;
  }
  return invalid_argument(fmt::format("unknown image policy '{}': use stop, skip or resize", text));
}

bool IntegrityReport::clean() const {
  return damaged_frames.empty() && unattributed_errors == 0 && stream_error.empty() && skipped_images.empty() &&
         resized_images.empty();
}

std::vector<int64_t> IntegrityReport::damaged_in(int64_t first, int64_t end) const {
  std::vector<int64_t> indices;
  for (const DamagedFrame& frame : damaged_frames) {
    if (frame.index >= first && (end < 0 || frame.index < end)) indices.push_back(frame.index);
  }
  return indices;
}

std::string IntegrityReport::summary() const {
  std::vector<std::string> parts;
  if (!damaged_frames.empty()) {
    std::string list;
    constexpr size_t kListed = 12;
    for (size_t i = 0; i < damaged_frames.size() && i < kListed; ++i) {
      list += (i == 0 ? "" : ", ") + std::to_string(damaged_frames[i].index);
    }
    if (damaged_frames.size() > kListed) list += ", ...";
    parts.push_back(
        fmt::format("{} damaged frame{} ({}): the decoder reported errors and concealed them; the "
                    "frames after a damaged one up to the next keyframe may carry the damage too",
                    damaged_frames.size(), damaged_frames.size() == 1 ? "" : "s", list));
  }
  if (unattributed_errors > 0)
    parts.push_back(fmt::format("{} decoder errors not tied to a frame", unattributed_errors));
  if (!stream_error.empty()) parts.push_back(stream_error);
  if (!skipped_images.empty()) {
    parts.push_back(fmt::format("{} image{} left out (first: {}: {})", skipped_images.size(),
                                skipped_images.size() == 1 ? "" : "s", skipped_images[0].file.filename().string(),
                                skipped_images[0].reason));
  }
  if (!resized_images.empty()) {
    parts.push_back(fmt::format("{} image{} of another size resized (first: {}: {})", resized_images.size(),
                                resized_images.size() == 1 ? "" : "s", resized_images[0].file.filename().string(),
                                resized_images[0].reason));
  }
  if (parts.empty()) return checked_frames >= frame_count ? "no damage found" : "no damage found so far";
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) text += (i == 0 ? "" : "; ") + parts[i];
  return text;
}

IntegrityReport VideoSource::integrity() const {
  // Sources that do not decode (frames in memory) have nothing to report.
  IntegrityReport report;
  report.frame_count = info().frame_count;
  report.checked_frames = report.frame_count;
  return report;
}

Expected<IntegrityReport> VideoSource::scan_integrity() { return integrity(); }

namespace {

Expected<std::vector<fs::path>> list_image_folder(const fs::path& folder) {
  static constexpr std::array<std::string_view, 10> kEndings = {".jpg",  ".jpeg", ".png", ".bmp", ".tif",
                                                                ".tiff", ".webp", ".ppm", ".pgm", ".pnm"};
  Expected<std::vector<fs::path>> files = io::list_files_ending_with(folder, kEndings);
  if (files && files->empty()) {
    return not_found(
        fmt::format("folder {} contains no image files (.jpg, .png, .bmp, .tif, .webp, .ppm)", folder.string()));
  }
  return files;
}

// The files an image2 pattern names, the way ffmpeg's image2 demuxer finds them: the first existing number in
// [0, 5) starts the sequence, which runs until the first missing number.
Expected<std::vector<fs::path>> expand_pattern(const fs::path& pattern) {
  const std::string text = pattern.string();
  constexpr int kStartRange = 5;
  std::vector<char> name(text.size() + 64);
  auto name_for = [&](int number) -> std::optional<fs::path> {
    if (av_get_frame_filename2(name.data(), static_cast<int>(name.size()), text.c_str(), number, 0) < 0) {
      return std::nullopt;
    }
    return fs::path(name.data());
  };
  int first = -1;
  for (int number = 0; number < kStartRange && first < 0; ++number) {
    std::optional<fs::path> file = name_for(number);
    if (file && fs::is_regular_file(*file)) first = number;
  }
  if (first < 0) {
    return not_found(
        fmt::format("no file matches the image pattern {} (looked for numbers 0 to {})", text, kStartRange - 1));
  }
  std::vector<fs::path> files;
  for (int number = first;; ++number) {
    std::optional<fs::path> file = name_for(number);
    if (!file || !fs::is_regular_file(*file)) break;
    files.push_back(std::move(*file));
  }
  return files;
}

bool looks_like_pattern(const fs::path& path) {
  const std::string text = path.filename().string();
  return text.find('%') != std::string::npos && av_filename_number_test(path.string().c_str()) != 0;
}

}  // namespace

Expected<std::unique_ptr<VideoSource>> VideoSource::open(const fs::path& path, const VideoOpenOptions& options) {
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  ffmpeg::route_ffmpeg_logs();
  if (path.empty()) return invalid_argument("no video path given");
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (status.type() == fs::file_type::directory) {
    Expected<std::vector<fs::path>> files = list_image_folder(path);
    if (!files) return files.status();
    return video_backends::open_image_sequence(path, std::move(*files), options);
  }
  if (status.type() == fs::file_type::not_found || status.type() == fs::file_type::none) {
    if (looks_like_pattern(path)) {
      Expected<std::vector<fs::path>> files = expand_pattern(path);
      if (!files) return files.status();
      return video_backends::open_image_sequence(path, std::move(*files), options);
    }
    return not_found(fmt::format("video not found: {}", path.string()));
  }
  if (status.type() != fs::file_type::regular) {
    return unsupported(fmt::format("{} is not a regular file or a folder of images", path.string()));
  }
  const auto size_bytes = fs::file_size(path, error);
  if (error) return io_error(fmt::format("cannot read {}: {}", path.string(), error.message()));
  if (size_bytes == 0) return corrupt_data(fmt::format("{} is empty (0 bytes)", path.string()));
  return video_backends::open_container(path, options);
}

}  // namespace trackscope::core
