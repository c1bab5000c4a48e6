#pragma once
// How the UI opens videos. The app injects core::FrameServer::open; tests inject a fake server with known
// frames, artificial decode delays and errors on demand. The UI never calls FrameServer::open itself.
//
//   FrameServerFactory factory = [](const std::filesystem::path& path, const core::FrameServerOptions& options) {
//     return core::FrameServer::open(path, options);
//   };
//
// Threads: the factory is called on a worker thread (opening probes the file, which may take a while), so it
// must be safe to call from any thread and must not touch widgets.

#include <QString>

#include <filesystem>
#include <functional>
#include <memory>

#include "core/status.h"
#include "core/video/frame_server.h"

namespace trackscope::ui {

using FrameServerFactory = std::function<core::Expected<std::unique_ptr<core::FrameServer>>(
    const std::filesystem::path& path, const core::FrameServerOptions& options)>;

/// A filesystem path from a QString, in the local 8-bit encoding the OS uses for file names.
std::filesystem::path path_from_qstring(const QString& text);
/// The inverse of path_from_qstring.
QString qstring_from_path(const std::filesystem::path& path);

}  // namespace trackscope::ui
