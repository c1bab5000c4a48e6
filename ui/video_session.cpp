#include "ui/video_session.h"

#include <algorithm>
#include <exception>

#include "core/log.h"

namespace trackscope::ui {

struct VideoSession::OpenResult {
  std::unique_ptr<core::FrameServer> server;
  core::Status status;
};

namespace {

// The server's contract says a requested frame always gets a callback, but a frame that a prefetch finished
// just before request() could slip between "not cached" and "requested". Polling while a frame is pending
// makes such a race cost one poll interval instead of a frozen picture.
constexpr int kPendingPollMs = 200;

}  // namespace

VideoSession::VideoSession(FrameServerFactory factory, core::FrameServerOptions options, QObject* parent)
    : QObject(parent), factory_(std::move(factory)), options_(options) {
  pending_poll_.setInterval(kPendingPollMs);
  connect(&pending_poll_, &QTimer::timeout, this, &VideoSession::poll_pending);
}

VideoSession::~VideoSession() {
  // Joins the decode thread while this QObject is still whole; callbacks already queued are discarded with the
  // mailbox.
  server_.reset();
  openers_.clear();
}

const core::VideoInfo& VideoSession::info() const { return server_ ? server_->info() : no_video_; }

void VideoSession::open(const QString& path) {
  const uint64_t generation = ++open_counter_;
  opening_generation_ = generation;
  const std::filesystem::path file = path_from_qstring(path);
  auto open_file = [this, factory = factory_, options = options_, file, generation, path] {
    auto result = std::make_shared<OpenResult>();
    try {
      if (!factory) {
        result->status = core::internal_error("no frame server factory was given to the UI");
      } else if (core::Expected<std::unique_ptr<core::FrameServer>> server = factory(file, options)) {
        result->server = std::move(*server);
      } else {
        result->status = server.status();
      }
    } catch (const std::exception& error) {
      result->status = core::internal_error(std::string("opening the video failed unexpectedly: ") + error.what());
    }
    // Posted, so open() always reports later, never from inside open() itself.
    mailbox_.post([this, generation, path, result] { finish_open(generation, path, result); });
  };
  openers_.emplace(generation, std::jthread(std::move(open_file)));
}

void VideoSession::finish_open(uint64_t generation, const QString& path, const std::shared_ptr<OpenResult>& result) {
  openers_.erase(generation);  // its thread has posted this result as its last act: the join returns at once
  if (generation != opening_generation_) return;  // superseded by a newer open(); its server is dropped here
  opening_generation_ = 0;
  if (!result->server) {
    core::log::warn("could not open {}: {}", path.toStdString(), result->status.message());
    Q_EMIT open_failed(path, QString::fromStdString(result->status.message()));
    return;
  }
  // Destroying the old server joins its decode thread; its queued callbacks carry the old generation.
  server_ = std::move(result->server);
  path_ = path;
  ++generation_;
  requested_frame_ = 0;
  displayed_frame_ = -1;
  frame_pending_ = false;
  pending_poll_.stop();
  const uint64_t current = generation_;
  server_->set_frame_ready_callback([this, current](int64_t index, const core::Expected<core::FramePtr>& frame) {
    mailbox_.post([this, current, index, frame] { deliver(current, index, frame); });
  });
  const core::VideoInfo& video = server_->info();
  core::log::info("opened {}: {}x{}, {} frames at {:.3f} fps, codec {}", path.toStdString(), video.width, video.height,
                  video.frame_count, video.frame_rate.to_double(), video.codec);
  Q_EMIT video_opened();
}

void VideoSession::seek(int64_t index) {
  if (!server_) return;
  requested_frame_ = std::clamp<int64_t>(index, 0, std::max<int64_t>(0, frame_count() - 1));
  if (core::FramePtr frame = server_->request(requested_frame_)) {
    frame_pending_ = false;
    pending_poll_.stop();
    displayed_frame_ = requested_frame_;
    Q_EMIT frame_ready(frame);
    return;
  }
  frame_pending_ = true;
  if (!pending_poll_.isActive()) pending_poll_.start();
}

core::FrameServerStats VideoSession::stats() const { return server_ ? server_->stats() : core::FrameServerStats{}; }

void VideoSession::deliver(uint64_t generation, int64_t index, const core::Expected<core::FramePtr>& frame) {
  if (generation != generation_ || !frame_pending_) return;
  if (index != requested_frame_) {
    poll_pending();  // a superseded frame arrived; the requested one may be cached by now
    return;
  }
  frame_pending_ = false;
  pending_poll_.stop();
  if (!frame || !*frame) {
    const std::string message = frame ? std::string("the decoder returned no picture") : frame.status().message();
    core::log::warn("frame {} of {}: {}", index, path_.toStdString(), message);
    Q_EMIT frame_failed(index, QString::fromStdString(message));
    return;
  }
  displayed_frame_ = index;
  Q_EMIT frame_ready(*frame);
}

void VideoSession::poll_pending() {
  if (!server_ || !frame_pending_) {
    pending_poll_.stop();
    return;
  }
  if (core::FramePtr frame = server_->request(requested_frame_)) {
    frame_pending_ = false;
    pending_poll_.stop();
    displayed_frame_ = requested_frame_;
    Q_EMIT frame_ready(frame);
  }
}

}  // namespace trackscope::ui
