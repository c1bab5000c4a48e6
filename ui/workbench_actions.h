#pragma once
// The workbench's actions (menu entries and keyboard shortcuts) and the Help > Keyboard shortcuts dialog.
// Every action is added to the window itself as well as to its menu, so its shortcut works wherever the
// focus is inside the window. The shortcut list shown in Help is generated from these actions, so it cannot
// drift from what the keys do.
//
//   WorkbenchActions actions = create_workbench_actions(window);   // creates the menus in window->menuBar()
//   connect(actions.next_frame, &QAction::triggered, ...);
//
// Threads: GUI thread only.

#include <QString>

#include <vector>

class QAction;
class QMainWindow;
class QMenu;
class QWidget;

namespace trackscope::ui {

struct WorkbenchActions {
  // File
  QAction* open = nullptr;               // Ctrl+O
  QAction* open_image_folder = nullptr;  // Ctrl+Shift+O: a folder of numbered images
  QMenu* recent_menu = nullptr;          // filled by the main window from Settings::recent_files()
  QAction* open_project = nullptr;       // Ctrl+Shift+P
  QAction* save_project = nullptr;       // Ctrl+S
  QAction* save_project_as = nullptr;    // Ctrl+Shift+S
  QAction* import_tracks = nullptr;      // Ctrl+I: CSV, JSON or TAP-Vid .npz
  QMenu* export_menu = nullptr;          // File > Export
  QAction* export_csv = nullptr;         // Ctrl+E
  QAction* export_json = nullptr;
  QAction* export_npz = nullptr;
  QAction* export_deeplabcut = nullptr;
  QAction* export_coco = nullptr;
  QAction* export_video = nullptr;  // Ctrl+Shift+E: annotated video (H.264)
  QAction* quit = nullptr;          // Ctrl+Q
  // Edit
  QAction* undo = nullptr;                 // Ctrl+Z
  QAction* redo = nullptr;                 // Ctrl+Shift+Z, Ctrl+Y
  QAction* delete_point = nullptr;         // Delete, Backspace
  QAction* toggle_occluded = nullptr;      // O: the selected point on the shown frame, by hand (a keyframe)
  QAction* delete_track_after = nullptr;   // Ctrl+Delete: the selected track's future (after the shown frame)
  QAction* delete_track_before = nullptr;  // Ctrl+Backspace: its past
  // Playback
  QAction* play_pause = nullptr;           // Space
  QAction* previous_frame = nullptr;       // Left
  QAction* next_frame = nullptr;           // Right
  QAction* back_10_frames = nullptr;       // Ctrl+Left
  QAction* forward_10_frames = nullptr;    // Ctrl+Right
  QAction* first_frame = nullptr;          // Home
  QAction* last_frame = nullptr;           // End
  QAction* next_keyframe = nullptr;        // K (selected point, or every point)
  QAction* previous_keyframe = nullptr;    // Shift+K
  QAction* next_suspicious = nullptr;      // N: next frame with a quality flag
  QAction* previous_suspicious = nullptr;  // Shift+N
  // Tracking
  QAction* track = nullptr;             // Ctrl+T: every point over the whole clip
  QAction* track_selected = nullptr;    // Ctrl+Shift+T: the selected point
  QAction* cancel_tracking = nullptr;   // Ctrl+.
  QAction* retrack_forward = nullptr;   // Ctrl+]: selected point, from the keyframe on the shown frame
  QAction* retrack_backward = nullptr;  // Ctrl+[
  QAction* retrack_both = nullptr;      // Ctrl+R
  QAction* merge_overwrite = nullptr;   // checkable (exclusive with merge_fill_missing)
  QAction* merge_fill_missing = nullptr;
  QAction* check_consistency = nullptr;  // Ctrl+Shift+K: forward-backward check (selected, or every track)
  // View
  QAction* fit = nullptr;                  // F, Ctrl+0
  QAction* zoom_in = nullptr;              // Ctrl++
  QAction* zoom_out = nullptr;             // Ctrl+-
  QAction* actual_size = nullptr;          // Ctrl+1
  QMenu* tracks_menu = nullptr;            // View > Tracks: the overlay toggles (+ the trail lengths)
  QAction* show_tracks = nullptr;          // checkable: estimates and trails on the canvas
  QAction* show_occluded = nullptr;        // checkable: occluded estimates drawn hollow (off: hidden)
  QAction* colour_by_direction = nullptr;  // C, checkable: trails coloured by motion direction
  QAction* show_quality_strip = nullptr;   // Q, checkable: the quality strip under the timeline
  QMenu* panels_menu = nullptr;            // dock toggles, filled by the main window
  // Help
  QAction* keyboard_shortcuts = nullptr;  // F1
};

/// Creates the actions as children of `window`, adds them to it, and builds the menu bar.
WorkbenchActions create_workbench_actions(QMainWindow* window);

struct ShortcutDescription {
  QString keys;    // "Ctrl+Right", "Wheel"
  QString action;  // "Forward 10 frames"
};

/// The keyboard shortcuts of `actions` followed by the canvas's mouse gestures, in menu order.
std::vector<ShortcutDescription> shortcut_descriptions(const WorkbenchActions& actions);

/// Shows (or raises) the non-modal Keyboard shortcuts window.
void show_keyboard_shortcuts(QWidget* parent, const WorkbenchActions& actions);

}  // namespace trackscope::ui
