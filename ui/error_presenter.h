#pragma once
// How the UI shows an error to the user. Every error goes through MainWindow::report_error(), which logs it,
// puts it in the status bar and hands it to the window's ErrorPresenter: by default a message box that does
// not block (QMessageBox::open, deleted on close), so no event loop of its own runs inside report_error.
// Tests inject a presenter that records the messages instead of showing anything.

#include <QString>

#include <functional>

class QWidget;

namespace trackscope::ui {

using ErrorPresenter = std::function<void(QWidget* parent, const QString& title, const QString& message)>;

/// A window-modal warning box shown with open() (returns at once; the box deletes itself when closed).
void show_error_message_box(QWidget* parent, const QString& title, const QString& message);

}  // namespace trackscope::ui
