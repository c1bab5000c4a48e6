#include "ui/main_window.h"

namespace trackscope::ui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) { setWindowTitle("Trackscope"); }

}  // namespace trackscope::ui
