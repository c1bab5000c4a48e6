#include "ui/error_presenter.h"

#include <QMessageBox>

namespace trackscope::ui {

void show_error_message_box(QWidget* parent, const QString& title, const QString& message) {
  auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, parent);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->setTextInteractionFlags(Qt::TextSelectableByMouse);
  box->open();
}

}  // namespace trackscope::ui
