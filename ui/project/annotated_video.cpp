#include "ui/project/annotated_video.h"

#include <QImage>
#include <QPainter>

#include <algorithm>
#include <cstring>

#include "ui/canvas_markers.h"
#include "ui/point_colours.h"

namespace trackscope::ui {

core::Expected<core::Frame> render_annotated_frame(core::VideoSource& video, const core::Annotation& annotation,
                                                   int64_t index, const AnnotatedVideoOptions& options) {
  core::Expected<core::FramePtr> decoded = video.read_frame(index);
  if (!decoded) return decoded.status();
  const core::Frame& frame = **decoded;
  QImage image = QImage(frame.rgb.data(), frame.width, frame.height, frame.width * 3, QImage::Format_RGB888)
                     .convertToFormat(QImage::Format_RGB32);
  const double radius = options.marker_radius_px > 0.0 ? options.marker_radius_px : std::max(4.0, frame.height / 100.0);
  {
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing, true);
    paint_track_overlay(
        painter, annotation, index, options.overlay, [](QPointF point_in_image) { return point_in_image; }, radius,
        std::nullopt);
    if (options.draw_query_points) {
      for (const core::QueryPoint& point : annotation) {
        if (point.query.frame != index) continue;
        MarkerStyle style;
        style.radius_widget_px = radius;
        paint_marker(painter, QPointF(point.query.x_px, point.query.y_px), point_colour(point.colour_index), style,
                     QString::number(point.id));
      }
    }
  }
  const QImage rgb = image.convertToFormat(QImage::Format_RGB888);
  core::Frame out;
  out.index = index;
  out.pts_us = frame.pts_us;
  out.width = frame.width;
  out.height = frame.height;
  out.rgb.resize(static_cast<size_t>(frame.width) * frame.height * 3);
  for (int y = 0; y < frame.height; ++y) {
    std::memcpy(out.rgb.data() + static_cast<size_t>(y) * frame.width * 3, rgb.constScanLine(y),
                static_cast<size_t>(frame.width) * 3);
  }
  return out;
}

core::Status render_annotated_video(core::VideoSource& video, const core::io::Project& snapshot,
                                    const std::filesystem::path& path, const AnnotatedVideoOptions& options,
                                    const std::function<void(int64_t done, int64_t total)>& progress,
                                    std::stop_token stop) {
  const core::VideoInfo& info = video.info();
  if (!core::video_encoder_available(options.codec)) {
    return core::unsupported(std::string("this FFmpeg build has no ") + core::to_string(options.codec) + " encoder");
  }
  core::Annotation annotation;
  core::io::load_into(snapshot, annotation);
  core::VideoWriterOptions writer_options;
  writer_options.codec = options.codec;
  writer_options.width = info.width;
  writer_options.height = info.height;
  writer_options.frame_rate = info.frame_rate.num > 0 ? info.frame_rate : core::Rational{25, 1};
  writer_options.quality = options.quality;
  // 4:2:0 needs even sizes, and 4:4:4 keeps thin coloured trails sharp: use it for odd sizes.
  writer_options.chroma =
      (info.width % 2 != 0 || info.height % 2 != 0) ? core::ChromaFormat::yuv444 : core::ChromaFormat::yuv420;
  core::Expected<std::unique_ptr<core::VideoWriter>> writer = core::VideoWriter::create(path, writer_options);
  if (!writer) return writer.status();
  for (int64_t index = 0; index < info.frame_count; ++index) {
    if (stop.stop_requested()) {
      writer->reset();  // unfinished: the temporary file is removed, a previous export at `path` is kept
      return core::cancelled("the annotated video export was cancelled");
    }
    core::Expected<core::Frame> frame = render_annotated_frame(video, annotation, index, options);
    if (!frame) return frame.status().with_context("frame " + std::to_string(index));
    TRACKSCOPE_RETURN_IF_ERROR((*writer)->write(*frame));
    if (progress) progress(index + 1, info.frame_count);
  }
  return (*writer)->finish();
}

}  // namespace trackscope::ui
