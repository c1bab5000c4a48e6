#pragma once
// ThreadMailbox: hands work from worker threads to the thread that owns the mailbox (the GUI thread).
//
//   ThreadMailbox mailbox_;                       // a member of a GUI-thread object, declared before its threads
//   worker_ = std::jthread([this] {
//     auto result = compute();
//     mailbox_.post([this, result] { on_done(result); });   // runs later on the GUI thread
//   });
//
// Contract: post() may be called from any thread, at any time while the mailbox lives; the posted functions run
// once each, in the order posted, on the mailbox's thread, from its event loop (never inside post(), even when
// called on that thread). Functions still queued when the mailbox is destroyed are destroyed without running, so
// the owner must join (or stop) the threads that post before destroying it -- the same rule as for a queued
// QMetaObject::invokeMethod to a QObject.
//
// Why not QMetaObject::invokeMethod with a lambda: Qt's event queue synchronises through its own futex-based
// mutex, which ThreadSanitizer cannot see, while the lambda's captures are written by the worker and read by the
// GUI thread in the project's own (instrumented) code, so every such hand-off reads as a data race. Here the
// payload travels through a std::mutex, and the event that wakes the owner carries nothing the project touches.

#include <QObject>

#include <deque>
#include <functional>
#include <mutex>

namespace trackscope::ui {

class ThreadMailbox : public QObject {
 public:
  explicit ThreadMailbox(QObject* parent = nullptr);
  ~ThreadMailbox() override;
  ThreadMailbox(const ThreadMailbox&) = delete;
  ThreadMailbox& operator=(const ThreadMailbox&) = delete;

  /// Queues `task` to run on this object's thread. Thread-safe.
  void post(std::function<void()> task);

 protected:
  void customEvent(QEvent* event) override;

 private:
  std::mutex mutex_;
  std::deque<std::function<void()>> tasks_;  // guarded by mutex_
  bool wake_pending_ = false;                // guarded by mutex_: a wake-up event is on its way
};

}  // namespace trackscope::ui
