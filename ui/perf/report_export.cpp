#include "ui/perf/report_export.h"

#include <QDir>
#include <QPixmap>
#include <QWidget>

#include "core/io/atomic_file.h"
#include "core/perf/report.h"
#include "ui/frame_server_factory.h"
#include "ui/image_file.h"

namespace trackscope::ui {

namespace {

core::Status write_text(const QString& path, const std::string& text, QStringList& written) {
  TRACKSCOPE_RETURN_IF_ERROR(core::io::write_file_atomically(path_from_qstring(path), text));
  written << path;
  return {};
}

}  // namespace

core::Expected<QStringList> export_report(const QString& directory, const ReportContent& content) {
  QDir dir(directory);
  if (!dir.mkpath(".")) return core::io_error("cannot create the report folder " + directory.toStdString());
  QStringList written;
  if (content.current) {
    TRACKSCOPE_RETURN_IF_ERROR(
        write_text(dir.filePath("profile.json"), core::profile_to_json(*content.current), written));
    TRACKSCOPE_RETURN_IF_ERROR(
        write_text(dir.filePath("stages.csv"), core::profile_stages_csv(*content.current), written));
  }
  if (content.roofline) {
    TRACKSCOPE_RETURN_IF_ERROR(
        write_text(dir.filePath("roofline.csv"), core::roofline_csv(*content.roofline), written));
  }
  if (content.comparison) {
    TRACKSCOPE_RETURN_IF_ERROR(
        write_text(dir.filePath("comparison.csv"), core::comparison_csv(*content.comparison), written));
    TRACKSCOPE_RETURN_IF_ERROR(
        write_text(dir.filePath("comparison.txt"), core::format_comparison(*content.comparison), written));
  }
  if (content.compared_a) {
    TRACKSCOPE_RETURN_IF_ERROR(
        write_text(dir.filePath("comparison_a.json"), core::profile_to_json(*content.compared_a), written));
  }
  if (content.compared_b) {
    TRACKSCOPE_RETURN_IF_ERROR(
        write_text(dir.filePath("comparison_b.json"), core::profile_to_json(*content.compared_b), written));
  }
  for (const auto& [stem, widget] : content.charts) {
    if (!widget) continue;
    // A hidden widget (another tab) has no size yet: render it at a fixed report size.
    if (!widget->isVisible() || widget->width() < 50) widget->resize(900, 420);
    const QString path = dir.filePath(stem + ".png");
    TRACKSCOPE_RETURN_IF_ERROR(save_image_atomically(widget->grab().toImage(), path));
    written << path;
  }
  return written;
}

}  // namespace trackscope::ui
