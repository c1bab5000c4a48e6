#pragma once
// The questions project handling asks the user (where is the moved video, save unsaved changes, recover after a
// crash, which file), as injectable functions: the defaults show Qt dialogs, tests answer them in code.
//
//   ProjectPrompts prompts = default_project_prompts();
//   prompts.offer_recovery = [](QWidget*, const QString&) { return RecoveryChoice::recover; };   // a test
//
// Threads: GUI thread only (the defaults open modal dialogs).

#include <QString>

#include <functional>

class QWidget;

namespace trackscope::ui {

enum class UnsavedChoice { save, discard, cancel };
enum class RecoveryChoice { recover, discard, later };

struct ProjectPrompts {
  /// The project's video is not where it was: returns the new location, "" to cancel.
  std::function<QString(QWidget* parent, const QString& missing_video)> locate_video;
  /// A yes/no question (e.g. "this video's fingerprint differs: use it anyway?").
  std::function<bool(QWidget* parent, const QString& title, const QString& text)> confirm;
  /// Unsaved changes before they would be replaced.
  std::function<UnsavedChoice(QWidget* parent, const QString& text)> unsaved_changes;
  /// A recovery file of a session that crashed was found.
  std::function<RecoveryChoice(QWidget* parent, const QString& text)> offer_recovery;
  /// A file to write (`filter` in QFileDialog syntax); "" to cancel.
  std::function<QString(QWidget* parent, const QString& title, const QString& start, const QString& filter)> save_path;
  /// A file to read; "" to cancel.
  std::function<QString(QWidget* parent, const QString& title, const QString& start, const QString& filter)> open_path;
};

/// Qt dialogs for every prompt.
ProjectPrompts default_project_prompts();
/// Headless answers (--screenshot, scripted runs): no dialog ever opens. Each prompt takes its cancel or safe
/// answer and logs the question and the answer: the missing video is not located (the open is cancelled), a
/// confirmation is declined, unsaved changes are discarded (nothing can be saved without a file chooser; a
/// recovery file still holds autosaved edits), a recovery file is kept for later, file choosers return "".
ProjectPrompts headless_project_prompts();
/// `prompts` with its empty members filled from `defaults` (default_project_prompts() when not given).
ProjectPrompts complete_prompts(ProjectPrompts prompts);
ProjectPrompts complete_prompts(ProjectPrompts prompts, const ProjectPrompts& defaults);

}  // namespace trackscope::ui
