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
  QAction* open = nullptr;                  // Ctrl+O
  QAction* open_image_folder = nullptr;     // Ctrl+Shift+O: a folder of numbered images
  QMenu* recent_menu = nullptr;             // filled by the main window from Settings::recent_files()
  QAction* quit = nullptr;                  // Ctrl+Q
  // Edit
  QAction* delete_point = nullptr;          // Delete, Backspace
  // Playback
  QAction* play_pause = nullptr;            // Space
  QAction* previous_frame = nullptr;        // Left
  QAction* next_frame = nullptr;            // Right
  QAction* back_10_frames = nullptr;        // Ctrl+Left
  QAction* forward_10_frames = nullptr;     // Ctrl+Right
  QAction* first_frame = nullptr;           // Home
  QAction* last_frame = nullptr;            // End
  // Tracking
  QAction* track = nullptr;                 // Ctrl+T: every point over the whole clip
  QAction* track_selected = nullptr;        // Ctrl+Shift+T: the selected point
  QAction* cancel_tracking = nullptr;       // Ctrl+.
  // View
  QAction* fit = nullptr;                   // F, Ctrl+0
  QAction* zoom_in = nullptr;               // Ctrl++
  QAction* zoom_out = nullptr;              // Ctrl+-
  QAction* actual_size = nullptr;           // Ctrl+1
  QMenu* tracks_menu = nullptr;             // View > Tracks: the overlay toggles (+ the trail lengths)
  QAction* show_tracks = nullptr;           // checkable: estimates and trails on the canvas
  QAction* show_occluded = nullptr;         // checkable: occluded estimates drawn hollow (off: hidden)
  QMenu* panels_menu = nullptr;             // dock toggles, filled by the main window
  // Help
  QAction* keyboard_shortcuts = nullptr;    // F1
};

/// Creates the actions as children of `window`, adds them to it, and builds the menu bar.
WorkbenchActions create_workbench_actions(QMainWindow* window);

struct ShortcutDescription {
  QString keys;      // "Ctrl+Right", "Wheel"
  QString action;    // "Forward 10 frames"
};

/// The keyboard shortcuts of `actions` followed by the canvas's mouse gestures, in menu order.
std::vector<ShortcutDescription> shortcut_descriptions(const WorkbenchActions& actions);

/// Shows (or raises) the non-modal Keyboard shortcuts window.
void show_keyboard_shortcuts(QWidget* parent, const WorkbenchActions& actions);

}  // namespace trackscope::ui
