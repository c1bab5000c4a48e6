#include "ui/timeline.h"

#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QStyleOptionSlider>
#include <QVBoxLayout>
#include <QSignalBlocker>
#include <QSlider>
#include <QStyle>
#include <QToolButton>

#include <algorithm>
#include <cmath>

namespace trackscope::ui {
namespace {

constexpr double kFallbackFramesPerSecond = 25.0;
const QColor kDamageColour(220, 40, 40);

// A thin strip under the slider with a red tick at each damaged frame, aligned with the slider's handle positions.
class DamageStrip final : public QWidget {
 public:
  DamageStrip(QSlider* slider, const std::set<int64_t>* frames, QWidget* parent)
      : QWidget(parent), slider_(slider), frames_(frames) {
    setFixedHeight(4);
    setToolTip(tr("Red: frames the decoder found damaged (errors concealed); tracks there may be wrong"));
  }

 protected:
  void paintEvent(QPaintEvent* /*event*/) override {
    QPainter painter(this);
    QStyleOptionSlider option;
    option.initFrom(slider_);
    option.orientation = Qt::Horizontal;
    const int handle = style()->pixelMetric(QStyle::PM_SliderLength, &option, slider_);
    const int span = std::max(1, width() - handle);
    const int maximum = std::max(1, slider_->maximum());
    for (int64_t index : *frames_) {
      const int x = handle / 2 + QStyle::sliderPositionFromValue(
                                     0, maximum, static_cast<int>(std::min<int64_t>(index, maximum)), span);
      painter.fillRect(x - 1, 0, 2, height(), kDamageColour);
    }
  }

 private:
  QSlider* slider_;
  const std::set<int64_t>* frames_;
};

}  // namespace

Timeline::Timeline(QWidget* parent) : QWidget(parent) {
  play_button_ = new QToolButton(this);
  play_button_->setFocusPolicy(Qt::NoFocus);
  play_button_->setAutoRaise(true);
  slider_ = new QSlider(Qt::Horizontal, this);
  // Keys belong to the window's frame-stepping shortcuts, not to a focused slider.
  slider_->setFocusPolicy(Qt::NoFocus);
  slider_->setTracking(true);
  counter_ = new QLabel(this);
  counter_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  counter_->setToolTip(tr("0-based frame index / number of frames"));
  damaged_badge_ = new QLabel(tr("damaged"), this);
  damaged_badge_->setObjectName("damaged_badge");
  damaged_badge_->setStyleSheet(
      QStringLiteral("QLabel { color: white; background: %1; border-radius: 3px; padding: 0 4px; }")
          .arg(kDamageColour.name()));
  damaged_badge_->setToolTip(
      tr("The decoder found this frame damaged and concealed the errors (see trackscope-cli info); points tracked "
         "over it may be wrong"));
  damaged_badge_->hide();
  damage_strip_ = new DamageStrip(slider_, &damaged_frames_, this);
  damage_strip_->setObjectName("damage_strip");
  damage_strip_->hide();

  auto* slider_column = new QVBoxLayout();
  slider_column->setContentsMargins(0, 0, 0, 0);
  slider_column->setSpacing(0);
  slider_column->addWidget(slider_);
  slider_column->addWidget(damage_strip_);
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(4, 2, 4, 2);
  layout->addWidget(play_button_);
  layout->addLayout(slider_column, 1);
  layout->addWidget(damaged_badge_);
  layout->addWidget(counter_);

  timer_.setTimerType(Qt::PreciseTimer);
  connect(&timer_, &QTimer::timeout, this, &Timeline::on_tick);
  connect(play_button_, &QToolButton::clicked, this, &Timeline::toggle_play);
  connect(slider_, &QSlider::valueChanged, this, &Timeline::on_slider_moved);
  clear_video();
}

void Timeline::set_video(int64_t frame_count, double frames_per_second) {
  pause();
  damaged_frames_.clear();
  frame_count_ = std::max<int64_t>(0, frame_count);
  current_frame_ = 0;
  frame_pending_ = false;
  const double fps =
      frames_per_second > 0.0 && std::isfinite(frames_per_second) ? frames_per_second : kFallbackFramesPerSecond;
  timer_.setInterval(std::max(1, static_cast<int>(std::lround(1000.0 / fps))));
  {
    const QSignalBlocker blocker(slider_);
    slider_->setRange(0, static_cast<int>(std::max<int64_t>(0, frame_count_ - 1)));
    slider_->setPageStep(10);
    slider_->setValue(0);
  }
  setEnabled(frame_count_ > 0);
  // Reserve room for the widest counter so the slider does not jitter while playing.
  const QString widest = QStringLiteral("frame %1 / %1").arg(QString(QString::number(frame_count_).size(), '8'));
  counter_->setMinimumWidth(counter_->fontMetrics().horizontalAdvance(widest) + 4);
  update_counter();
  update_play_button();
}

void Timeline::clear_video() {
  pause();
  damaged_frames_.clear();
  frame_count_ = 0;
  current_frame_ = 0;
  {
    const QSignalBlocker blocker(slider_);
    slider_->setRange(0, 0);
  }
  setEnabled(false);
  update_counter();
  update_play_button();
}

void Timeline::set_current_frame(int64_t index) {
  current_frame_ = std::clamp<int64_t>(index, 0, std::max<int64_t>(0, frame_count_ - 1));
  {
    const QSignalBlocker blocker(slider_);
    slider_->setValue(static_cast<int>(current_frame_));
  }
  update_counter();
}

QString Timeline::counter_text() const {
  if (frame_count_ == 0) return tr("no video");
  return tr("frame %1 / %2").arg(current_frame_).arg(frame_count_);
}

void Timeline::play() {
  if (frame_count_ <= 1 || timer_.isActive()) return;
  if (current_frame_ >= frame_count_ - 1) {  // at the end: play from the start
    set_current_frame(0);
    Q_EMIT frame_requested(0);
  }
  timer_.start();
  update_play_button();
  Q_EMIT playing_changed(true);
}

void Timeline::pause() {
  if (!timer_.isActive()) return;
  timer_.stop();
  update_play_button();
  Q_EMIT playing_changed(false);
}

void Timeline::toggle_play() { playing() ? pause() : play(); }

void Timeline::on_slider_moved(int value) {
  if (value == current_frame_) return;
  set_current_frame(value);
  Q_EMIT frame_requested(current_frame_);
}

void Timeline::on_tick() {
  if (frame_pending_) return;
  if (current_frame_ >= frame_count_ - 1) {
    pause();
    return;
  }
  set_current_frame(current_frame_ + 1);
  Q_EMIT frame_requested(current_frame_);
}

void Timeline::update_counter() {
  counter_->setText(counter_text());
  update_damage();
}

void Timeline::add_damaged_frames(const std::vector<int64_t>& indices) {
  bool added = false;
  for (int64_t index : indices) {
    if (index >= 0 && index < frame_count_) added |= damaged_frames_.insert(index).second;
  }
  if (added) update_damage();
}

bool Timeline::damaged_badge_visible() const { return !damaged_badge_->isHidden(); }

void Timeline::update_damage() {
  damaged_badge_->setVisible(damaged_frames_.count(current_frame_) != 0);
  damage_strip_->setVisible(!damaged_frames_.empty());
  damage_strip_->update();
}

void Timeline::update_play_button() {
  const bool is_playing = timer_.isActive();
  play_button_->setIcon(style()->standardIcon(is_playing ? QStyle::SP_MediaPause : QStyle::SP_MediaPlay));
  play_button_->setToolTip(is_playing ? tr("Pause (Space)") : tr("Play (Space)"));
}

}  // namespace trackscope::ui
