// trackscope: the GUI.
#include <QApplication>

#include "ui/main_window.h"

int main(int argc, char** argv) {
  QApplication application(argc, argv);
  QApplication::setApplicationName("Trackscope");
  QApplication::setOrganizationName("Trackscope");
  QApplication::setOrganizationDomain("trackscope.org");
  trackscope::ui::MainWindow window;
  window.show();
  return QApplication::exec();
}
