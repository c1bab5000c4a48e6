#include "core/tracking/panning_clip.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/dimensions.h"
#include "core/video/sample_clip.h"

namespace trackscope::core {
namespace {

constexpr int kMaxTexturePx = 4096;  // SampleClipOptions' largest side
constexpr int64_t kFramesPerSecond = 30;

Status check_size(int64_t width, int64_t height) {
  if (width < 64 || height < 64 || width + kPanningMarginXPx > kMaxTexturePx ||
      height + kPanningMarginYPx > kMaxTexturePx || width % 2 != 0 || height % 2 != 0) {
    return invalid_argument(fmt::format("synthetic frames must be even and within 64..{} x 64..{}, got {}x{}",
                                        kMaxTexturePx - kPanningMarginXPx, kMaxTexturePx - kPanningMarginYPx, width,
                                        height));
  }
  return {};
}

class PanningVideo final : public VideoSource {
 public:
  explicit PanningVideo(const PanningClipOptions& options) {
    SampleClipOptions scene;
    scene.width = options.width + kPanningMarginXPx;
    scene.height = options.height + kPanningMarginYPx;
    texture_ = render_sample_frame(scene, 17);
    info_.path = fmt::format("synthetic:{}x{}x{}", options.width, options.height, options.frames);
    info_.container = "synthetic";
    info_.codec = "rawvideo";
    info_.width = options.width;
    info_.height = options.height;
    info_.frame_rate = {static_cast<int>(kFramesPerSecond), 1};
    info_.frame_count = options.frames;
    info_.duration_us = options.frames * 1'000'000 / kFramesPerSecond;
  }

  const VideoInfo& info() const override { return info_; }

  Expected<FramePtr> read_frame(int64_t index, FrameSize size) override {
    if (index < 0 || index >= info_.frame_count || !size.native()) {
      return invalid_argument(fmt::format("frame {} of {}", index, info_.frame_count));
    }
    const auto start = std::chrono::steady_clock::now();
    auto frame = std::make_shared<Frame>();
    frame->index = index;
    frame->pts_us = index * 1'000'000 / kFramesPerSecond;
    frame->width = info_.width;
    frame->height = info_.height;
    frame->rgb.resize(static_cast<size_t>(info_.width) * info_.height * 3);
    const PanOffset pan = pan_offset_at(index);
    const size_t row = static_cast<size_t>(info_.width) * 3;
    for (int y = 0; y < info_.height; ++y) {
      std::memcpy(frame->rgb.data() + static_cast<size_t>(y) * row,
                  texture_.rgb.data() + (static_cast<size_t>(y + pan.y_px) * texture_.width + pan.x_px) * 3, row);
    }
    last_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return FramePtr(std::move(frame));
  }

  double last_decode_ms() const override { return last_ms_; }

 private:
  Frame texture_;
  VideoInfo info_;
  double last_ms_ = 0.0;
};

}  // namespace

Status PanningClipOptions::check() const {
  TRACKSCOPE_RETURN_IF_ERROR(check_size(width, height));
  if (frames < 1) return invalid_argument(fmt::format("a synthetic clip needs at least 1 frame, got {}", frames));
  return {};
}

Expected<PanningClipOptions> parse_panning_clip(std::string_view text, std::string_view what) {
  Expected<std::vector<int64_t>> parts = parse_dimensions(
      text, {.what = what, .pattern = "WIDTHxHEIGHTxFRAMES", .example = "1920x1080x18000", .parts = 3});
  if (!parts) return parts.status();
  TRACKSCOPE_RETURN_IF_ERROR(check_size((*parts)[0], (*parts)[1]));  // before narrowing them to int
  PanningClipOptions options{static_cast<int>((*parts)[0]), static_cast<int>((*parts)[1]), (*parts)[2]};
  TRACKSCOPE_RETURN_IF_ERROR(options.check());
  return options;
}

PanOffset pan_offset_at(int64_t frame) {
  const double t = static_cast<double>(frame) / static_cast<double>(kFramesPerSecond);
  return {static_cast<int>(std::lround(240.0 + 220.0 * std::sin(t / 7.0))),
          static_cast<int>(std::lround(160.0 + 150.0 * std::cos(t / 5.0)))};
}

PointPx panning_true_position(const Query& query, int64_t frame) {
  const PanOffset origin = pan_offset_at(query.frame);
  const PanOffset pan = pan_offset_at(frame);
  return {query.x_px + origin.x_px - pan.x_px, query.y_px + origin.y_px - pan.y_px};
}

std::unique_ptr<VideoSource> make_panning_clip(const PanningClipOptions& options) {
  const Status valid = options.check();
  TRACKSCOPE_CHECK(valid.ok(), valid.message());
  return std::make_unique<PanningVideo>(options);
}

PanningTrackError measure_panning_error(const TrackSet& tracks, const PanningClipOptions& options) {
  std::vector<double> errors;
  double sum = 0.0;
  int64_t visible = 0;
  for (const Track& track : tracks.tracks) {
    const int64_t frames = std::min<int64_t>(tracks.frame_count, static_cast<int64_t>(track.points.size()));
    for (int64_t f = 0; f < frames; ++f) {
      const PointPx truth = panning_true_position(track.query, tracks.first_frame + f);
      if (truth.x_px < 0 || truth.y_px < 0 || truth.x_px >= options.width || truth.y_px >= options.height) continue;
      const TrackPoint& p = track.points[static_cast<size_t>(f)];
      const double error = std::hypot(p.x_px - truth.x_px, p.y_px - truth.y_px);
      errors.push_back(error);
      sum += error;
      visible += p.visible ? 1 : 0;
    }
  }
  PanningTrackError result;
  if (errors.empty()) return result;
  std::sort(errors.begin(), errors.end());
  const double n = static_cast<double>(errors.size());
  result.samples = static_cast<int64_t>(errors.size());
  result.mean_px = sum / n;
  result.median_px = errors[errors.size() / 2];
  result.p99_px = errors[errors.size() * 99 / 100];
  result.within_8px = static_cast<double>(std::lower_bound(errors.begin(), errors.end(), 8.0) - errors.begin()) / n;
  result.called_visible = static_cast<double>(visible) / n;
  return result;
}

}  // namespace trackscope::core
