#pragma once
// WorkbenchParts: the parts of the workbench window that its controllers (tracking, annotation, project,
// export) work with, handed to each controller at construction. The window creates and owns every part and
// outlives its controllers; none of the parts is the window itself, so a controller never reaches back up to
// it: what the window must do (report an error, seek, open a video) it is asked through the controllers' signals.
//
//   WorkbenchParts parts{editor, session, canvas, timeline, point_list, &settings, &actions, statusBar(), this};
//   auto* tracking = new TrackingController(parts, std::move(options), this);
//   connect(tracking, &TrackingController::error, this, &MainWindow::report_error);
//
// Threads: GUI thread only.

class QStatusBar;
class QWidget;

namespace trackscope::ui {

/// How long a controller's status-bar message stays up: long enough to read two lines.
inline constexpr int kStatusMessageMs = 8000;

class AnnotationEditor;
class PointListPanel;
class Settings;
class Timeline;
class VideoCanvas;
class VideoSession;
struct WorkbenchActions;

struct WorkbenchParts {
  AnnotationEditor* editor = nullptr;  // every edit of the points and tracks (one undo history)
  VideoSession* session = nullptr;     // the open video and its frames
  VideoCanvas* canvas = nullptr;
  Timeline* timeline = nullptr;
  PointListPanel* point_list = nullptr;
  Settings* settings = nullptr;
  const WorkbenchActions* actions = nullptr;
  QStatusBar* status_bar = nullptr;  // messages, and permanent widgets (progress)
  QWidget* dialog_parent = nullptr;  // the parent of the dialogs a controller opens (file choosers, questions)
};

}  // namespace trackscope::ui
