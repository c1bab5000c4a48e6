#include "ui/image_file.h"

#include <QBuffer>
#include <QByteArray>

#include "core/io/atomic_file.h"
#include "ui/frame_server_factory.h"

namespace trackscope::ui {

core::Status save_image_atomically(const QImage& image, const QString& path, const char* format) {
  if (image.isNull()) return core::invalid_argument("cannot write " + path.toStdString() + ": the image is empty");
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (!image.save(&buffer, format)) {
    return core::internal_error("cannot encode " + path.toStdString() + " as " + format);
  }
  return core::io::write_file_atomically(path_from_qstring(path),
                                         std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
}

}  // namespace trackscope::ui
