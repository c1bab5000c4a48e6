#pragma once
// FrameServer: serves display frames to the GUI without ever blocking it. A decode thread owns its own
// VideoSource, a byte-limited LRU frame cache, and prefetches around the playhead.
//
//   auto server = FrameServer::open(path, {});
//   server->set_frame_ready_callback([](int64_t index, const Expected<FramePtr>& frame) {
//     /* decode thread: re-post to the GUI thread, e.g. QMetaObject::invokeMethod(..., Qt::QueuedConnection) */ });
//   if (FramePtr frame = server->request(i)) show(frame);    // cached: immediate
//   // else: keep showing the previous frame; the callback delivers frame i (or its error) shortly.
//
// Threads: every public method may be called from any thread (in practice the GUI thread); none blocks on
// decoding except wait_for(). open() opens the video on the calling thread: it demuxes the whole file once
// (about 0.1 s for a few hundred HD frames, seconds for hour-long files; open long files off the GUI thread).
// The callback runs on the decode thread; it may call request() (which never waits) but must not call
// wait_for() or destroy the server. Replacing the callback does not wait for a call already running; the
// destructor does. Scrubbing: a new request supersedes older pending ones (only the most recent request is
// decoded first; superseded ones are dropped unless they are prefetch candidates). The callback fires once for
// each requested frame that was decoded or failed, not for prefetched frames nobody asked for.
// Cache: at most cache_bytes of frames (LRU; the frames around the playhead are evicted last); a frame larger
// than the whole cache is delivered but not kept. Prefetch covers at most what the cache holds.
// Destruction stops and joins the decode thread (after the frame being decoded); no callback runs after the
// destructor returns.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>

#include "core/status.h"
#include "core/video/video_source.h"

namespace trackscope::core {

struct FrameServerOptions {
  int64_t cache_bytes = 512LL << 20;  // upper bound of decoded bytes kept (LRU eviction)
  int prefetch_ahead = 16;            // frames decoded after the playhead while idle
  int prefetch_behind = 4;            // frames decoded before the playhead while idle
  FrameSize size;                     // frame size served ({0,0} = native)
  VideoOpenOptions video;
  Status check() const;
};

struct FrameServerStats {
  int64_t cached_frames = 0;
  int64_t cached_bytes = 0;
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t decoded_frames = 0;
  double last_decode_ms = 0.0;  // decode time of the most recently decoded frame
  double mean_decode_ms = 0.0;
};

class FrameServer {
 public:
  using FrameReadyCallback = std::function<void(int64_t index, const Expected<FramePtr>& frame)>;

  static Expected<std::unique_ptr<FrameServer>> open(const std::filesystem::path& path,
                                                     const FrameServerOptions& options = {});
  virtual ~FrameServer() = default;

  virtual const VideoInfo& info() const = 0;

  /// Called on the decode thread whenever a requested (not prefetched) frame is ready or failed.
  virtual void set_frame_ready_callback(FrameReadyCallback callback) = 0;

  /// Moves the playhead to `index`. Returns the frame if cached; otherwise schedules it first in line and
  /// returns null. Out-of-range indices are clamped.
  virtual FramePtr request(int64_t index) = 0;

  /// Blocking variant for tools and tests: the frame or its decode error, or a cancelled Status on timeout.
  virtual Expected<FramePtr> wait_for(int64_t index, std::chrono::milliseconds timeout) = 0;

  /// Whether frame `index` is in the cache now (it may be evicted right after): for showing cached ranges on a
  /// timeline, and for tests. Does not move the playhead.
  virtual bool is_cached(int64_t index) const = 0;

  virtual FrameServerStats stats() const = 0;
};

}  // namespace trackscope::core
