#include "ui/frame_server_factory.h"

#include <QFile>

namespace trackscope::ui {

std::filesystem::path path_from_qstring(const QString& text) { return {QFile::encodeName(text).toStdString()}; }

QString qstring_from_path(const std::filesystem::path& path) {
  return QFile::decodeName(QByteArray::fromStdString(path.string()));
}

}  // namespace trackscope::ui
