#include "ui/tracking/tracking_widgets.h"

#include <QAction>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QToolButton>

#include <algorithm>
#include <cmath>

namespace trackscope::ui {
namespace {

const char* const kWeightsFilter = "Model weights (*.safetensors *.ckpt *.pt *.pth);;All files (*)";
const QString kChooseFile = QStringLiteral("file...");

QSpinBox* make_trail_box(QWidget* parent, const QString& name, const QString& tip) {
  auto* box = new QSpinBox(parent);
  box->setObjectName(name);
  box->setRange(0, TrackOverlayOptions::max_trail_frames);
  box->setSuffix(QObject::tr(" fr"));
  box->setToolTip(tip);
  box->setAccelerated(true);
  return box;
}

}  // namespace

TrailLengthEditor::TrailLengthEditor(QWidget* parent) : QWidget(parent) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(4, 0, 4, 0);
  before_ = make_trail_box(this, "trail_before", tr("Trail: frames before the shown one"));
  after_ = make_trail_box(this, "trail_after", tr("Trail: frames after the shown one (dashed)"));
  layout->addWidget(new QLabel(tr("Trail"), this));
  layout->addWidget(before_);
  layout->addWidget(new QLabel(tr("back"), this));
  layout->addWidget(after_);
  layout->addWidget(new QLabel(tr("ahead"), this));
  auto changed = [this] { Q_EMIT trail_changed(before_->value(), after_->value()); };
  connect(before_, &QSpinBox::valueChanged, this, changed);
  connect(after_, &QSpinBox::valueChanged, this, changed);
}

void TrailLengthEditor::set_lengths(int before_frames, int after_frames) {
  const QSignalBlocker block_before(before_);
  const QSignalBlocker block_after(after_);
  before_->setValue(before_frames);
  after_->setValue(after_frames);
}

TrackingToolbar::TrackingToolbar(QAction* track, QAction* track_selected, QAction* cancel, QAction* show_occluded,
                                 QWidget* parent)
    : QToolBar(tr("Tracking"), parent) {
  setObjectName("tracking_toolbar");
  addAction(track);
  addAction(track_selected);
  addAction(cancel);
  addSeparator();
  auto* label = new QLabel(tr(" Model "), this);
  addWidget(label);
  models_ = new QComboBox(this);
  models_->setObjectName("model_chooser");
  models_->setToolTip(
      tr("The tracker model: the bundled default, the official LocoTrack small or base "
         "checkpoint from the model folder, or a weights file"));
  models_->addItem(tr("default (bundled)"), QStringLiteral("default"));
  models_->addItem(tr("small (LocoTrack-S)"), QStringLiteral("small"));
  models_->addItem(tr("base (LocoTrack-B)"), QStringLiteral("base"));
  models_->addItem(tr("File..."), kChooseFile);
  models_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  addWidget(models_);
  addSeparator();
  trail_ = new TrailLengthEditor(this);
  addWidget(trail_);
  addAction(show_occluded);
  shown_model_ = QStringLiteral("default");
  connect(models_, &QComboBox::activated, this, &TrackingToolbar::on_model_activated);
}

void TrackingToolbar::set_model(const QString& model) {
  const QSignalBlocker block(models_);
  int index = models_->findData(model);
  if (index < 0) {
    // A weights file: listed by name above "File...", the full path in the tooltip.
    index = models_->count() - 1;
    models_->insertItem(index, QFileInfo(model).fileName(), model);
    models_->setItemData(index, model, Qt::ToolTipRole);
  }
  models_->setCurrentIndex(index);
  shown_model_ = model;
}

QString TrackingToolbar::model() const { return shown_model_; }

void TrackingToolbar::on_model_activated(int index) {
  QString model = models_->itemData(index).toString();
  if (model == kChooseFile) {
    model = QFileDialog::getOpenFileName(this, tr("Choose model weights"), QString(), tr(kWeightsFilter));
    if (model.isEmpty()) {
      set_model(shown_model_);  // dialog cancelled: show the model that is still selected
      return;
    }
  }
  set_model(model);
  Q_EMIT model_requested(model);
}

TrackingStatusWidget::TrackingStatusWidget(QAction* cancel, QWidget* parent) : QWidget(parent) {
  setObjectName("tracking_status");
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  phase_ = new QLabel(this);
  progress_ = new QProgressBar(this);
  progress_->setObjectName("tracking_progress");
  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(220);
  progress_->setTextVisible(true);
  cancel_ = new QToolButton(this);
  cancel_->setDefaultAction(cancel);
  layout->addWidget(phase_);
  layout->addWidget(progress_);
  layout->addWidget(cancel_);
  hide();
}

void TrackingStatusWidget::show_progress(double fraction, const QString& phase) {
  phase_->setText(phase);
  if (fraction < 0.0) {
    progress_->setRange(0, 0);  // busy indicator
  } else {
    progress_->setRange(0, 1000);
    progress_->setValue(static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * 1000.0)));
    progress_->setFormat(QStringLiteral("%1%").arg(std::clamp(fraction, 0.0, 1.0) * 100.0, 0, 'f', 0));
  }
  show();
}

void TrackingStatusWidget::finish() {
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  phase_->clear();
  hide();
}

}  // namespace trackscope::ui
