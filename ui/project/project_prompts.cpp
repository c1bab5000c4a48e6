#include "ui/project/project_prompts.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QPushButton>

#include "core/log.h"

namespace trackscope::ui {

ProjectPrompts default_project_prompts() {
  ProjectPrompts prompts;
  prompts.locate_video = [](QWidget* parent, const QString& missing) {
    QMessageBox::information(parent, QObject::tr("Video not found"),
                             QObject::tr("The project's video is no longer at\n%1\n\nChoose where it is now.")
                                 .arg(QDir::toNativeSeparators(missing)));
    return QFileDialog::getOpenFileName(parent, QObject::tr("Locate %1").arg(QFileInfo(missing).fileName()),
                                        QFileInfo(missing).absolutePath());
  };
  prompts.confirm = [](QWidget* parent, const QString& title, const QString& text) {
    return QMessageBox::question(parent, title, text, QMessageBox::Yes | QMessageBox::No, QMessageBox::No) ==
           QMessageBox::Yes;
  };
  prompts.unsaved_changes = [](QWidget* parent, const QString& text) {
    const auto answer =
        QMessageBox::warning(parent, QObject::tr("Unsaved changes"), text,
                             QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    return answer == QMessageBox::Save      ? UnsavedChoice::save
           : answer == QMessageBox::Discard ? UnsavedChoice::discard
                                            : UnsavedChoice::cancel;
  };
  prompts.offer_recovery = [](QWidget* parent, const QString& text) {
    QMessageBox box(QMessageBox::Question, QObject::tr("Recover unsaved work"), text, QMessageBox::NoButton, parent);
    QPushButton* recover = box.addButton(QObject::tr("Recover"), QMessageBox::AcceptRole);
    QPushButton* discard = box.addButton(QObject::tr("Discard"), QMessageBox::DestructiveRole);
    box.addButton(QObject::tr("Later"), QMessageBox::RejectRole);
    box.setDefaultButton(recover);
    box.exec();
    if (box.clickedButton() == recover) return RecoveryChoice::recover;
    if (box.clickedButton() == discard) return RecoveryChoice::discard;
    return RecoveryChoice::later;
  };
  prompts.save_path = [](QWidget* parent, const QString& title, const QString& start, const QString& filter) {
    return QFileDialog::getSaveFileName(parent, title, start, filter);
  };
  prompts.open_path = [](QWidget* parent, const QString& title, const QString& start, const QString& filter) {
    return QFileDialog::getOpenFileName(parent, title, start, filter);
  };
  return prompts;
}

ProjectPrompts headless_project_prompts() {
  auto plain = [](const QString& text) { return text.simplified().toStdString(); };
  ProjectPrompts prompts;
  prompts.locate_video = [plain](QWidget*, const QString& missing) {
    core::log::warn("headless: the project's video is missing ({}); not asking where it is: the open is cancelled",
                    plain(missing));
    return QString();
  };
  prompts.confirm = [plain](QWidget*, const QString& title, const QString& text) {
    core::log::warn("headless: {}: {} -- answered No", plain(title), plain(text));
    return false;
  };
  prompts.unsaved_changes = [plain](QWidget*, const QString& text) {
    core::log::warn("headless: {} -- answered Discard", plain(text));
    return UnsavedChoice::discard;
  };
  prompts.offer_recovery = [plain](QWidget*, const QString& text) {
    core::log::warn("headless: {} -- answered Later (the recovery file is kept)", plain(text));
    return RecoveryChoice::later;
  };
  prompts.save_path = [plain](QWidget*, const QString& title, const QString&, const QString&) {
    core::log::warn("headless: {}: no file chooser -- cancelled", plain(title));
    return QString();
  };
  prompts.open_path = prompts.save_path;
  return prompts;
}

ProjectPrompts complete_prompts(ProjectPrompts prompts) {
  return complete_prompts(std::move(prompts), default_project_prompts());
}

ProjectPrompts complete_prompts(ProjectPrompts prompts, const ProjectPrompts& defaults) {
  if (!prompts.locate_video) prompts.locate_video = defaults.locate_video;
  if (!prompts.confirm) prompts.confirm = defaults.confirm;
  if (!prompts.unsaved_changes) prompts.unsaved_changes = defaults.unsaved_changes;
  if (!prompts.offer_recovery) prompts.offer_recovery = defaults.offer_recovery;
  if (!prompts.save_path) prompts.save_path = defaults.save_path;
  if (!prompts.open_path) prompts.open_path = defaults.open_path;
  return prompts;
}

}  // namespace trackscope::ui
