#include "ui/workbench_actions.h"

#include <QAction>
#include <QActionGroup>
#include <QDialog>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QTableWidget>
#include <QVBoxLayout>

namespace trackscope::ui {
namespace {

QAction* make_action(QMainWindow* window, QMenu* menu, const QString& text, const QList<QKeySequence>& shortcuts,
                     const QString& name) {
  auto* action = new QAction(text, window);
  action->setObjectName(name);
  action->setShortcuts(shortcuts);
  action->setShortcutContext(Qt::WindowShortcut);
  menu->addAction(action);
  window->addAction(action);  // the shortcut works even while the menu bar is hidden
  return action;
}

}  // namespace

WorkbenchActions create_workbench_actions(QMainWindow* window) {
  WorkbenchActions actions;
  QMenuBar* bar = window->menuBar();

  QMenu* file = bar->addMenu(QObject::tr("&File"));
  actions.open = make_action(window, file, QObject::tr("&Open Video..."), {QKeySequence::Open}, "action_open");
  actions.open_image_folder = make_action(window, file, QObject::tr("Open &Image Sequence Folder..."),
                                          {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O)}, "action_open_image_folder");
  actions.recent_menu = file->addMenu(QObject::tr("Open &Recent"));
  actions.recent_menu->setObjectName("menu_recent");
  file->addSeparator();
  actions.open_project = make_action(window, file, QObject::tr("Open &Project..."),
                                     {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P)}, "action_open_project");
  actions.save_project =
      make_action(window, file, QObject::tr("&Save Project"), {QKeySequence::Save}, "action_save_project");
  actions.save_project_as = make_action(window, file, QObject::tr("Save Project &As..."),
                                        {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S)}, "action_save_project_as");
  file->addSeparator();
  actions.import_tracks = make_action(window, file, QObject::tr("&Import Tracks..."),
                                      {QKeySequence(Qt::CTRL | Qt::Key_I)}, "action_import_tracks");
  actions.export_menu = file->addMenu(QObject::tr("&Export"));
  actions.export_menu->setObjectName("menu_export");
  actions.export_csv = make_action(window, actions.export_menu, QObject::tr("Tracks as &CSV..."),
                                   {QKeySequence(Qt::CTRL | Qt::Key_E)}, "action_export_csv");
  actions.export_json =
      make_action(window, actions.export_menu, QObject::tr("Tracks as &JSON..."), {}, "action_export_json");
  actions.export_npz =
      make_action(window, actions.export_menu, QObject::tr("Tracks as &TAP-Vid .npz..."), {}, "action_export_npz");
  actions.export_deeplabcut = make_action(window, actions.export_menu, QObject::tr("Tracks as &DeepLabCut CSV..."), {},
                                          "action_export_deeplabcut");
  actions.export_coco =
      make_action(window, actions.export_menu, QObject::tr("Tracks as C&OCO Keypoints..."), {}, "action_export_coco");
  actions.export_menu->addSeparator();
  actions.export_video = make_action(window, actions.export_menu, QObject::tr("Annotated &Video..."),
                                     {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E)}, "action_export_video");
  file->addSeparator();
  actions.quit = make_action(window, file, QObject::tr("&Quit"), {QKeySequence(Qt::CTRL | Qt::Key_Q)}, "action_quit");
  actions.quit->setMenuRole(QAction::QuitRole);

  QMenu* edit = bar->addMenu(QObject::tr("&Edit"));
  actions.undo = make_action(window, edit, QObject::tr("&Undo"), {QKeySequence(Qt::CTRL | Qt::Key_Z)}, "action_undo");
  actions.redo =
      make_action(window, edit, QObject::tr("&Redo"),
                  {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z), QKeySequence(Qt::CTRL | Qt::Key_Y)}, "action_redo");
  actions.undo->setProperty("help_text", QObject::tr("Undo (every edit, re-tracking included)"));
  actions.redo->setProperty("help_text", QObject::tr("Redo"));
  actions.undo->setEnabled(false);
  actions.redo->setEnabled(false);
  edit->addSeparator();
  actions.delete_point =
      make_action(window, edit, QObject::tr("&Delete Point"),
                  {QKeySequence(Qt::Key_Delete), QKeySequence(Qt::Key_Backspace)}, "action_delete_point");
  actions.toggle_occluded = make_action(window, edit, QObject::tr("Mark &Occluded / Visible Here"),
                                        {QKeySequence(Qt::Key_O)}, "action_toggle_occluded");
  actions.delete_track_after = make_action(window, edit, QObject::tr("Delete Track &After This Frame"),
                                           {QKeySequence(Qt::CTRL | Qt::Key_Delete)}, "action_delete_track_after");
  actions.delete_track_before = make_action(window, edit, QObject::tr("Delete Track &Before This Frame"),
                                            {QKeySequence(Qt::CTRL | Qt::Key_Backspace)}, "action_delete_track_before");

  QMenu* playback = bar->addMenu(QObject::tr("&Playback"));
  actions.play_pause =
      make_action(window, playback, QObject::tr("&Play / Pause"), {QKeySequence(Qt::Key_Space)}, "action_play_pause");
  playback->addSeparator();
  actions.previous_frame = make_action(window, playback, QObject::tr("Previous Frame"), {QKeySequence(Qt::Key_Left)},
                                       "action_previous_frame");
  actions.next_frame =
      make_action(window, playback, QObject::tr("Next Frame"), {QKeySequence(Qt::Key_Right)}, "action_next_frame");
  actions.back_10_frames = make_action(window, playback, QObject::tr("Back 10 Frames"),
                                       {QKeySequence(Qt::CTRL | Qt::Key_Left)}, "action_back_10_frames");
  actions.forward_10_frames = make_action(window, playback, QObject::tr("Forward 10 Frames"),
                                          {QKeySequence(Qt::CTRL | Qt::Key_Right)}, "action_forward_10_frames");
  actions.first_frame =
      make_action(window, playback, QObject::tr("First Frame"), {QKeySequence(Qt::Key_Home)}, "action_first_frame");
  actions.last_frame =
      make_action(window, playback, QObject::tr("Last Frame"), {QKeySequence(Qt::Key_End)}, "action_last_frame");
  playback->addSeparator();
  actions.next_keyframe =
      make_action(window, playback, QObject::tr("Next &Keyframe"), {QKeySequence(Qt::Key_K)}, "action_next_keyframe");
  actions.previous_keyframe = make_action(window, playback, QObject::tr("Previous Keyframe"),
                                          {QKeySequence(Qt::SHIFT | Qt::Key_K)}, "action_previous_keyframe");
  actions.next_suspicious = make_action(window, playback, QObject::tr("Next &Suspicious Frame"),
                                        {QKeySequence(Qt::Key_N)}, "action_next_suspicious");
  actions.previous_suspicious = make_action(window, playback, QObject::tr("Previous Suspicious Frame"),
                                            {QKeySequence(Qt::SHIFT | Qt::Key_N)}, "action_previous_suspicious");

  QMenu* tracking = bar->addMenu(QObject::tr("&Tracking"));
  actions.track =
      make_action(window, tracking, QObject::tr("&Track"), {QKeySequence(Qt::CTRL | Qt::Key_T)}, "action_track");
  actions.track->setToolTip(QObject::tr("Track every point through the whole clip (Ctrl+T)"));
  actions.track_selected = make_action(window, tracking, QObject::tr("Track &Selected Point"),
                                       {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_T)}, "action_track_selected");
  actions.track_selected->setIconText(QObject::tr("Track Selected"));
  actions.cancel_tracking = make_action(window, tracking, QObject::tr("&Cancel Tracking"),
                                        {QKeySequence(Qt::CTRL | Qt::Key_Period)}, "action_cancel_tracking");
  actions.cancel_tracking->setIconText(QObject::tr("Cancel"));
  actions.cancel_tracking->setEnabled(false);
  tracking->addSeparator();
  actions.retrack_forward = make_action(window, tracking, QObject::tr("Re-track &Forward from Keyframe"),
                                        {QKeySequence(Qt::CTRL | Qt::Key_BracketRight)}, "action_retrack_forward");
  actions.retrack_backward = make_action(window, tracking, QObject::tr("Re-track &Backward from Keyframe"),
                                         {QKeySequence(Qt::CTRL | Qt::Key_BracketLeft)}, "action_retrack_backward");
  actions.retrack_both = make_action(window, tracking, QObject::tr("&Re-track Both Ways from Keyframe"),
                                     {QKeySequence(Qt::CTRL | Qt::Key_R)}, "action_retrack_both");
  QMenu* merge = tracking->addMenu(QObject::tr("&Merge Re-tracked Frames"));
  auto* merge_group = new QActionGroup(window);
  actions.merge_overwrite =
      make_action(window, merge, QObject::tr("&Overwrite from the Keyframe On"), {}, "action_merge_overwrite");
  actions.merge_fill_missing =
      make_action(window, merge, QObject::tr("&Fill Only Missing Frames"), {}, "action_merge_fill_missing");
  for (QAction* action : {actions.merge_overwrite, actions.merge_fill_missing}) {
    action->setCheckable(true);
    merge_group->addAction(action);
  }
  actions.merge_overwrite->setChecked(true);
  tracking->addSeparator();
  actions.check_consistency = make_action(window, tracking, QObject::tr("&Check Consistency (Forward-Backward)"),
                                          {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_K)}, "action_check_consistency");

  QMenu* view = bar->addMenu(QObject::tr("&View"));
  actions.fit = make_action(window, view, QObject::tr("&Fit to Window"),
                            {QKeySequence(Qt::Key_F), QKeySequence(Qt::CTRL | Qt::Key_0)}, "action_fit");
  actions.zoom_in = make_action(window, view, QObject::tr("Zoom &In"),
                                {QKeySequence::ZoomIn, QKeySequence(Qt::CTRL | Qt::Key_Equal)}, "action_zoom_in");
  actions.zoom_out = make_action(window, view, QObject::tr("Zoom &Out"), {QKeySequence::ZoomOut}, "action_zoom_out");
  actions.actual_size = make_action(window, view, QObject::tr("&Actual Pixels (100%)"),
                                    {QKeySequence(Qt::CTRL | Qt::Key_1)}, "action_actual_size");
  view->addSeparator();
  actions.tracks_menu = view->addMenu(QObject::tr("&Tracks"));
  actions.show_tracks = make_action(window, actions.tracks_menu, QObject::tr("Show &Tracks"), {}, "action_show_tracks");
  actions.show_tracks->setCheckable(true);
  actions.show_tracks->setChecked(true);
  actions.show_occluded =
      make_action(window, actions.tracks_menu, QObject::tr("Show &Occluded Estimates"), {}, "action_show_occluded");
  actions.show_occluded->setCheckable(true);
  actions.show_occluded->setChecked(true);
  actions.show_occluded->setIconText(QObject::tr("Occluded"));
  actions.show_occluded->setToolTip(
      QObject::tr("Draw estimates the model thinks are occluded as hollow rings "
                  "(off: hide them)"));
  actions.colour_by_direction =
      make_action(window, actions.tracks_menu, QObject::tr("Colour Trails by &Motion Direction"),
                  {QKeySequence(Qt::Key_C)}, "action_colour_by_direction");
  actions.colour_by_direction->setCheckable(true);
  actions.show_quality_strip = make_action(window, view, QObject::tr("Show &Quality Strip"), {QKeySequence(Qt::Key_Q)},
                                           "action_show_quality_strip");
  actions.show_quality_strip->setCheckable(true);
  actions.show_quality_strip->setChecked(true);
  actions.panels_menu = view->addMenu(QObject::tr("&Panels"));

  QMenu* help = bar->addMenu(QObject::tr("&Help"));
  actions.keyboard_shortcuts = make_action(window, help, QObject::tr("&Keyboard Shortcuts"), {QKeySequence(Qt::Key_F1)},
                                           "action_keyboard_shortcuts");
  return actions;
}

std::vector<ShortcutDescription> shortcut_descriptions(const WorkbenchActions& actions) {
  std::vector<ShortcutDescription> result;
  const QAction* listed[] = {actions.open,
                             actions.open_image_folder,
                             actions.open_project,
                             actions.save_project,
                             actions.save_project_as,
                             actions.import_tracks,
                             actions.export_csv,
                             actions.export_video,
                             actions.quit,
                             actions.undo,
                             actions.redo,
                             actions.delete_point,
                             actions.toggle_occluded,
                             actions.delete_track_after,
                             actions.delete_track_before,
                             actions.play_pause,
                             actions.previous_frame,
                             actions.next_frame,
                             actions.back_10_frames,
                             actions.forward_10_frames,
                             actions.first_frame,
                             actions.last_frame,
                             actions.next_keyframe,
                             actions.previous_keyframe,
                             actions.next_suspicious,
                             actions.previous_suspicious,
                             actions.track,
                             actions.track_selected,
                             actions.cancel_tracking,
                             actions.retrack_forward,
                             actions.retrack_backward,
                             actions.retrack_both,
                             actions.check_consistency,
                             actions.fit,
                             actions.zoom_in,
                             actions.zoom_out,
                             actions.actual_size,
                             actions.colour_by_direction,
                             actions.show_quality_strip,
                             actions.keyboard_shortcuts};
  for (const QAction* action : listed) {
    if (action == nullptr || action->shortcuts().isEmpty()) continue;
    QStringList keys;
    for (const QKeySequence& sequence : action->shortcuts()) keys << sequence.toString(QKeySequence::NativeText);
    // Actions whose text follows the state ("Undo Move point 3") carry a fixed help text.
    QString text = action->property("help_text").toString();
    if (text.isEmpty()) text = action->text();
    text.remove('&');
    text.remove(QStringLiteral("..."));
    result.push_back({keys.join(QStringLiteral(", ")), text});
  }
  result.push_back({QObject::tr("Left click"), QObject::tr("Add a query point on the shown frame")});
  result.push_back({QObject::tr("Left drag on a point"), QObject::tr("Move the point (on its query frame)")});
  result.push_back({QObject::tr("Left drag on a track estimate"),
                    QObject::tr("Correct the track on the shown frame (the frame becomes a keyframe)")});
  result.push_back({QObject::tr("Click in the quality strip"), QObject::tr("Go to that frame and select that track")});
  result.push_back({QObject::tr("Wheel"), QObject::tr("Zoom about the pointer")});
  result.push_back({QObject::tr("Middle drag, Shift+drag, Space+drag"), QObject::tr("Pan")});
  result.push_back({QObject::tr("Drop a file on the window"), QObject::tr("Open it")});
  return result;
}

void show_keyboard_shortcuts(QWidget* parent, const WorkbenchActions& actions) {
  if (auto* existing = parent->findChild<QDialog*>("keyboard_shortcuts_dialog")) {
    existing->show();
    existing->raise();
    existing->activateWindow();
    return;
  }
  auto* dialog = new QDialog(parent);
  dialog->setObjectName("keyboard_shortcuts_dialog");
  dialog->setWindowTitle(QObject::tr("Keyboard Shortcuts"));
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  const std::vector<ShortcutDescription> rows = shortcut_descriptions(actions);
  auto* table = new QTableWidget(static_cast<int>(rows.size()), 2, dialog);
  table->setHorizontalHeaderLabels({QObject::tr("Keys"), QObject::tr("Action")});
  table->verticalHeader()->setVisible(false);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setSelectionMode(QAbstractItemView::NoSelection);
  for (int row = 0; row < static_cast<int>(rows.size()); ++row) {
    table->setItem(row, 0, new QTableWidgetItem(rows[static_cast<size_t>(row)].keys));
    table->setItem(row, 1, new QTableWidgetItem(rows[static_cast<size_t>(row)].action));
  }
  table->resizeColumnsToContents();
  table->horizontalHeader()->setStretchLastSection(true);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
  QObject::connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
  auto* layout = new QVBoxLayout(dialog);
  layout->addWidget(table);
  layout->addWidget(buttons);
  dialog->resize(520, 520);
  dialog->show();
}

}  // namespace trackscope::ui
