#include "ui/thread_mailbox.h"

#include <QCoreApplication>
#include <QEvent>
#include <QPointer>

#include <utility>

namespace trackscope::ui {

namespace {

// One event type for every mailbox: each mailbox receives only its own wake-ups, so the type is never read.
const QEvent::Type kWakeEvent = static_cast<QEvent::Type>(QEvent::registerEventType());

}  // namespace

ThreadMailbox::ThreadMailbox(QObject* parent) : QObject(parent) {}

ThreadMailbox::~ThreadMailbox() = default;

void ThreadMailbox::post(std::function<void()> task) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
    wake = !std::exchange(wake_pending_, true);
  }
  // One event per batch: tasks posted before the owner wakes ride along with the first one.
  if (wake) QCoreApplication::postEvent(this, new QEvent(kWakeEvent));
}

void ThreadMailbox::customEvent(QEvent* /*event: only wake-ups arrive here, and reading it would race*/) {
  std::deque<std::function<void()>> tasks;
  {
    std::lock_guard lock(mutex_);
    tasks.swap(tasks_);
    wake_pending_ = false;
  }
  // A task may destroy the owner, and with it this mailbox: the rest of the batch is then dropped, as Qt drops the
  // queued events of a destroyed receiver.
  const QPointer<ThreadMailbox> alive(this);
  for (std::function<void()>& task : tasks) {
    if (!alive) return;
    task();
  }
}

}  // namespace trackscope::ui
