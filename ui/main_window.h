#pragma once
// The main window: video canvas, timeline, point list, tracking controls and the performance dock.

#include <QMainWindow>

namespace trackscope::ui {

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
};

}  // namespace trackscope::ui
