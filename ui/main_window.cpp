#include "ui/main_window.h"

#include <QAction>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMimeData>
#include <QStatusBar>
#include <QVBoxLayout>

#include <cmath>

#include "core/io/project.h"
#include "core/log.h"
#include "ui/annotation_controller.h"
#include "ui/annotation_editor.h"
#include "ui/frame_server_factory.h"
#include "ui/perf/performance_dock.h"
#include "ui/point_list_panel.h"
#include "ui/project/export_controller.h"
#include "ui/settings.h"
#include "ui/timeline.h"
#include "ui/tracking/quality_strip.h"
#include "ui/tracking/tracking_controller.h"
#include "ui/tracking/tracking_widgets.h"
#include "ui/video_canvas.h"
#include "ui/video_session.h"
#include "ui/workbench_parts.h"

namespace trackscope::ui {
namespace {

const char* const kVideoFilter =
    "Videos (*.mp4 *.m4v *.mov *.mkv *.webm *.avi *.mpg *.mpeg *.ts *.wmv *.flv *.ogv *.gif *.y4m);;All files (*)";

QString fps_text(const core::VideoInfo& info) {
  const double fps = info.frame_rate.to_double();
  QString text = fps > 0.0 ? QObject::tr("%1 fps").arg(QString::number(fps, 'g', 5)) : QObject::tr("? fps");
  if (info.variable_frame_rate) text += QObject::tr(" (variable)");
  return text;
}

// The first local file (or folder) among dropped URLs; empty if none.
QString dropped_path(const QMimeData* mime) {
  if (mime == nullptr || !mime->hasUrls()) return {};
  for (const QUrl& url : mime->urls()) {
    if (url.isLocalFile()) return url.toLocalFile();
  }
  return {};
}

}  // namespace

MainWindow::MainWindow(MainWindowOptions options, QWidget* parent)
    : QMainWindow(parent), options_(std::move(options)), settings_(std::make_unique<Settings>(options_.settings_file)) {
  setWindowTitle(QStringLiteral("Trackscope"));
  setAcceptDrops(true);
  editor_ = new AnnotationEditor(this);
  session_ = new VideoSession(options_.frame_server_factory, settings_->frame_server_options(), this);
  actions_ = create_workbench_actions(this);
  build_widgets();
  connect_actions();
  connect_session();
  create_controllers();
  connect(projects_, &ProjectController::state_changed, this, &MainWindow::update_window_title);
  rebuild_recent_menu();
  update_status_fields();
  resize(1280, 800);
  if (const QByteArray geometry = settings_->main_window_geometry(); !geometry.isEmpty()) restoreGeometry(geometry);
  if (const QByteArray state = settings_->main_window_state(); !state.isEmpty()) restoreState(state);
}

MainWindow::~MainWindow() {
  // Stop and join the tracking job and the video export first: their results go to widgets about to be destroyed.
  tracking_->shutdown();
  exports_->shutdown();
  timeline_->pause();
  // Children are deleted after this body; none of them may call back into a half-destroyed window.
  for (QObject* sender : std::initializer_list<QObject*>{canvas_, timeline_, point_list_})
    disconnect(sender, nullptr, this, nullptr);
  // Join the decode thread while every widget it could reach through queued calls still exists.
  delete session_;
  session_ = nullptr;
}

void MainWindow::create_controllers() {
  // The controllers get the parts they work with, and ask the window for what only it does through signals.
  const WorkbenchParts parts{editor_,         session_,  canvas_,     timeline_, point_list_,
                             settings_.get(), &actions_, statusBar(), this};
  TrackingOptions tracking;
  tracking.tracker_factory = std::move(options_.tracker_factory);
  tracking.telemetry_factory = options_.telemetry_factory;
  tracking.video_opener = options_.video_opener;
  tracking.tracker = options_.tracker_options;
  tracking.apply_slice = options_.track_apply_slice;
  tracking_ = new TrackingController(parts, std::move(tracking), this);
  // Placed before restoreState (which finds them by object name).
  addToolBar(Qt::TopToolBarArea, tracking_->toolbar());
  addDockWidget(Qt::BottomDockWidgetArea, tracking_->performance_dock());
  // Hidden until asked for (View > Panels > Performance; the window remembers it): its charts need height the
  // video canvas would lose. It collects runs and telemetry while hidden.
  tracking_->performance_dock()->hide();
  connect(this, &MainWindow::video_opened, tracking_, &TrackingController::on_video_opened);
  connect(tracking_, &TrackingController::error, this, &MainWindow::report_error);

  annotations_ = new AnnotationController(parts, tracking_->service(), this);
  add_below_timeline(annotations_->quality_strip());
  connect(this, &MainWindow::video_opened, annotations_, &AnnotationController::on_video_opened);
  connect(annotations_, &AnnotationController::seek_requested, this, &MainWindow::seek);

  prompts_ = complete_prompts(options_.project.prompts,
                              options_.headless ? headless_project_prompts() : default_project_prompts());
  options_.project.prompts = prompts_;
  projects_ = new ProjectController(parts, tracking_, annotations_, std::move(options_.project), this);
  connect(this, &MainWindow::video_opened, projects_, &ProjectController::on_video_opened);
  connect(projects_, &ProjectController::video_open_requested, this, &MainWindow::open_video_now);
  connect(projects_, &ProjectController::seek_requested, this, &MainWindow::seek);
  connect(projects_, &ProjectController::error, this, &MainWindow::report_error);

  exports_ = new ExportController(parts, projects_, tracking_, prompts_, options_.video_opener, this);
  connect(exports_, &ExportController::error, this, &MainWindow::report_error);
}

void MainWindow::build_widgets() {
  auto* centre = new QWidget(this);
  canvas_ = new VideoCanvas(editor_, centre);
  canvas_->setObjectName("video_canvas");
  timeline_ = new Timeline(centre);
  timeline_->setObjectName("timeline");
  auto* layout = new QVBoxLayout(centre);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(canvas_, 1);
  layout->addWidget(timeline_);
  centre_layout_ = layout;
  setCentralWidget(centre);

  auto* dock = new QDockWidget(tr("Points"), this);
  dock->setObjectName("points_dock");
  point_list_ = new PointListPanel(editor_, dock);
  point_list_->setObjectName("point_list");
  dock->setWidget(point_list_);
  addDockWidget(Qt::RightDockWidgetArea, dock);
  actions_.panels_menu->addAction(dock->toggleViewAction());

  resolution_label_ = new QLabel(this);
  fps_label_ = new QLabel(this);
  frame_label_ = new QLabel(this);
  decode_label_ = new QLabel(this);
  zoom_label_ = new QLabel(this);
  decode_label_->setToolTip(tr("Decode time of the most recently decoded frame (mean over the video)"));
  for (QLabel* label : {resolution_label_, fps_label_, frame_label_, decode_label_, zoom_label_}) {
    statusBar()->addPermanentWidget(label);
  }
  canvas_->setFocus();
}

void MainWindow::connect_actions() {
  connect(actions_.open, &QAction::triggered, this, &MainWindow::choose_and_open_video);
  connect(actions_.open_image_folder, &QAction::triggered, this, &MainWindow::choose_and_open_image_folder);
  connect(actions_.quit, &QAction::triggered, this, &QWidget::close);
  connect(actions_.open_project, &QAction::triggered, this, [this] { projects_->choose_and_open(); });
  connect(actions_.save_project, &QAction::triggered, this, [this] { projects_->save(); });
  connect(actions_.save_project_as, &QAction::triggered, this, [this] { projects_->choose_and_save_as(); });
  connect(actions_.delete_point, &QAction::triggered, editor_, &AnnotationEditor::remove_selected_point);
  connect(actions_.play_pause, &QAction::triggered, timeline_, &Timeline::toggle_play);
  connect(actions_.previous_frame, &QAction::triggered, this, [this] { step(-1); });
  connect(actions_.next_frame, &QAction::triggered, this, [this] { step(1); });
  connect(actions_.back_10_frames, &QAction::triggered, this, [this] { step(-10); });
  connect(actions_.forward_10_frames, &QAction::triggered, this, [this] { step(10); });
  connect(actions_.first_frame, &QAction::triggered, this, [this] {
    timeline_->pause();
    seek(0);
  });
  connect(actions_.last_frame, &QAction::triggered, this, [this] {
    timeline_->pause();
    seek(session_->frame_count() - 1);
  });
  connect(actions_.fit, &QAction::triggered, canvas_, &VideoCanvas::fit_to_window);
  connect(actions_.zoom_in, &QAction::triggered, canvas_, &VideoCanvas::zoom_in);
  connect(actions_.zoom_out, &QAction::triggered, canvas_, &VideoCanvas::zoom_out);
  connect(actions_.actual_size, &QAction::triggered, canvas_, [this] { canvas_->set_zoom(1.0); });
  connect(actions_.keyboard_shortcuts, &QAction::triggered, this, [this] { show_keyboard_shortcuts(this, actions_); });

  connect(timeline_, &Timeline::frame_requested, this, [this](qint64 index) { seek(index); });
  connect(canvas_, &VideoCanvas::play_pause_requested, timeline_, &Timeline::toggle_play);
  connect(canvas_, &VideoCanvas::view_changed, this, &MainWindow::update_status_fields);
  connect(point_list_, &PointListPanel::point_activated, this, &MainWindow::on_point_activated);
}

void MainWindow::connect_session() {
  connect(session_, &VideoSession::video_opened, this, &MainWindow::on_video_opened);
  connect(session_, &VideoSession::open_failed, this, &MainWindow::on_open_failed);
  connect(session_, &VideoSession::frame_ready, this, [this](const core::FramePtr& frame) {
    canvas_->set_frame(frame);
    if (frame && frame->integrity.damaged()) timeline_->add_damaged_frames({frame->index});
    on_frame_ready();
  });
  connect(session_, &VideoSession::frame_failed, this, &MainWindow::on_frame_failed);
}

void MainWindow::open_video(const QString& path) {
  if (core::io::is_project_path(path_from_qstring(path))) {
    open_project(path);
    return;
  }
  open_video_now(path);
}

bool MainWindow::open_project(const QString& path) { return projects_->open_project(path); }

void MainWindow::open_interactively(const QString& path) {
  if (path.isEmpty() || !projects_->confirm_discard(tr("opening %1").arg(QFileInfo(path).fileName()))) return;
  open_video(path);
}

void MainWindow::add_below_timeline(QWidget* widget) { centre_layout_->addWidget(widget); }

void MainWindow::open_video_now(const QString& path) {
  if (path.isEmpty()) return;
  const QString absolute = QFileInfo(path).absoluteFilePath();
  statusBar()->showMessage(tr("Opening %1 ...").arg(QDir::toNativeSeparators(absolute)));
  session_->open(absolute);
}

void MainWindow::report_error(const QString& title, const QString& message) {
  core::log::error("{}: {}", title.toStdString(), message.toStdString());
  statusBar()->showMessage(title + QStringLiteral(": ") + message.section('\n', 0, 0), 15000);
  Q_EMIT error_reported(title, message);
  if (options_.error_presenter) {
    options_.error_presenter(this, title, message);
  } else {
    show_error_message_box(this, title, message);
  }
}

void MainWindow::seek(int64_t index) {
  if (!session_->has_video()) return;
  timeline_->set_current_frame(index);
  session_->seek(timeline_->current_frame());
  timeline_->set_frame_pending(session_->frame_pending());
  update_status_fields();
}

void MainWindow::step(int64_t delta) {
  if (!session_->has_video()) return;
  timeline_->pause();
  seek(session_->requested_frame() + delta);
}

QString MainWindow::status_fields() const {
  QStringList fields;
  for (const QLabel* label : {resolution_label_, fps_label_, frame_label_, decode_label_, zoom_label_}) {
    if (!label->text().isEmpty()) fields << label->text();
  }
  return fields.join(QStringLiteral(" | "));
}

void MainWindow::choose_and_open_video() {
  if (!projects_->confirm_discard(tr("opening another video"))) return;
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Open Video"), settings_->last_open_folder(), tr(kVideoFilter));
  open_video(path);
}

void MainWindow::choose_and_open_image_folder() {
  if (!projects_->confirm_discard(tr("opening another video"))) return;
  const QString path =
      QFileDialog::getExistingDirectory(this, tr("Open Image Sequence Folder"), settings_->last_open_folder());
  open_video(path);
}

void MainWindow::rebuild_recent_menu() {
  QMenu* menu = actions_.recent_menu;
  menu->clear();
  const QStringList files = settings_->recent_files();
  for (int i = 0; i < files.size(); ++i) {
    const QString& path = files[i];
    // "&1 bees.mp4": Alt+digit picks an entry; the full path is in the tooltip and the status tip.
    QString label = QFileInfo(path).fileName();
    if (label.isEmpty()) label = path;
    label.replace('&', QStringLiteral("&&"));
    QAction* action = menu->addAction(i < 9 ? QStringLiteral("&%1 %2").arg(i + 1).arg(label) : label);
    action->setData(path);
    action->setToolTip(path);
    action->setStatusTip(path);
    connect(action, &QAction::triggered, this, [this, path] { open_interactively(path); });
  }
  if (!files.isEmpty()) {
    menu->addSeparator();
    connect(menu->addAction(tr("Clear Recent Files")), &QAction::triggered, this, [this] {
      settings_->clear_recent_files();
      rebuild_recent_menu();
    });
  }
  menu->setEnabled(!files.isEmpty());
}

void MainWindow::on_video_opened() {
  const core::VideoInfo& info = session_->info();
  const QString path = session_->path();
  editor_->clear();  // the points belonged to the previous video
  frame_error_reported_ = false;
  canvas_->clear_frame();
  canvas_->fit_to_window();
  timeline_->set_video(info.frame_count, info.frame_rate.to_double());
  settings_->add_recent_file(path);
  settings_->set_last_open_folder(QFileInfo(path).absolutePath());
  rebuild_recent_menu();
  update_window_title();
  statusBar()->showMessage(tr("Opened %1").arg(QDir::toNativeSeparators(path)), 5000);
  seek(0);
  update_status_fields();
  Q_EMIT video_opened(path);
}

void MainWindow::on_open_failed(const QString& path, const QString& message) {
  if (!QFileInfo::exists(path)) {
    settings_->remove_recent_file(path);
    rebuild_recent_menu();
  }
  QString text = tr("Could not open %1\n\n%2").arg(QDir::toNativeSeparators(path), message);
  if (session_->has_video()) {
    text += tr("\n\n%1 stays open.").arg(QFileInfo(session_->path()).fileName());
  }
  statusBar()->clearMessage();
  report_error(tr("Could not open video"), text);
}

void MainWindow::on_frame_ready() {
  timeline_->set_frame_pending(false);
  update_status_fields();
}

void MainWindow::on_frame_failed(qint64 index, const QString& message) {
  timeline_->pause();
  timeline_->set_frame_pending(false);
  const QString text = tr("Frame %1 of %2 could not be decoded:\n%3\n\nThe file may be truncated or damaged; "
                          "the other frames can still be viewed.")
                           .arg(index)
                           .arg(QFileInfo(session_->path()).fileName(), message);
  if (!frame_error_reported_) {
    frame_error_reported_ = true;
    report_error(tr("Could not decode frame"), text);
  } else {
    core::log::warn("{}", text.toStdString());
    statusBar()->showMessage(tr("Frame %1 could not be decoded: %2").arg(index).arg(message), 10000);
  }
  update_status_fields();
}

void MainWindow::on_point_activated(int id) {
  const core::QueryPoint* point = editor_->annotation().find(id);
  if (point != nullptr && point->query.frame != session_->requested_frame()) {
    timeline_->pause();
    seek(point->query.frame);
  }
}

void MainWindow::update_status_fields() {
  if (!session_ || !session_->has_video()) {
    for (QLabel* label : {resolution_label_, fps_label_, frame_label_, decode_label_}) label->clear();
    zoom_label_->clear();
    return;
  }
  const core::VideoInfo& info = session_->info();
  resolution_label_->setText(tr("%1 × %2").arg(info.width).arg(info.height));
  fps_label_->setText(fps_text(info));
  QString frame = tr("frame %1").arg(session_->requested_frame());
  if (session_->frame_pending()) frame += tr(" (decoding)");
  frame_label_->setText(frame);
  const core::FrameServerStats stats = session_->stats();
  decode_label_->setText(
      stats.decoded_frames > 0
          ? tr("decode %1 ms (mean %2)").arg(stats.last_decode_ms, 0, 'f', 1).arg(stats.mean_decode_ms, 0, 'f', 1)
          : tr("decode – ms"));
  zoom_label_->setText(tr("zoom %1%").arg(std::lround(canvas_->zoom() * 100.0)));
}

void MainWindow::update_window_title() {
  if (!session_->has_video()) {
    setWindowTitle(QStringLiteral("Trackscope"));
    return;
  }
  const QString project = projects_ != nullptr ? projects_->project_path() : QString();
  const QString name = project.isEmpty() ? QFileInfo(session_->path()).fileName() : QFileInfo(project).fileName();
  const bool dirty = projects_ != nullptr && projects_->dirty();
  setWindowTitle(tr("%1%2 — Trackscope").arg(name, dirty ? QStringLiteral(" *") : QString()));
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (!dropped_path(event->mimeData()).isEmpty()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const QString path = dropped_path(event->mimeData());
  if (path.isEmpty()) return;
  event->acceptProposedAction();
  open_interactively(path);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!projects_->confirm_discard(tr("closing"))) {
    event->ignore();
    return;
  }
  timeline_->pause();
  settings_->set_main_window_layout(saveGeometry(), saveState());
  if (const core::Status synced = settings_->sync(); !synced) core::log::warn("{}", synced.message());
  event->accept();
}

}  // namespace trackscope::ui
