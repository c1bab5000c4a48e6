#pragma once
// Images the UI writes (screenshots, report charts), atomically: encoded in memory, then written through
// core::io::write_file_atomically, so a cut-off write never leaves a half PNG in place of a good one.
//
//   TRACKSCOPE_RETURN_IF_ERROR(save_image_atomically(window.grab().toImage(), "shot.png"));
//
// Threads: any thread (QImage encoding is reentrant); a QPixmap must be converted on the GUI thread first.

#include <QImage>
#include <QString>

#include "core/status.h"

namespace trackscope::ui {

/// Encodes `image` as `format` ("PNG", "JPG") and replaces `path` with it atomically. internal_error when Qt
/// cannot encode it, io_error when the file cannot be written (the previous file is then untouched).
core::Status save_image_atomically(const QImage& image, const QString& path, const char* format = "PNG");

}  // namespace trackscope::ui
