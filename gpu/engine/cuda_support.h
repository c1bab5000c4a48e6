#pragma once
// The CUDA runtime pieces the engine needs beyond ATen's public headers: the current stream, event timing,
// the caching allocator's statistics and NVTX ranges. Torch-free and CUDA-free header: the
// implementation (cuda_support.cpp) is the one engine translation unit that includes ATen's CUDA headers, and
// it is compiled only when LibTorch has CUDA and TRACKSCOPE_WITH_CUDA is on (TRACKSCOPE_WITH_CUDA_OPS);
// otherwise cuda_support_none.cpp provides the same functions reporting "not available".
//
//   if (cuda_support::available()) {
//     cuda_support::EventPair& e = pool.next();
//     cuda_support::record(e.start, device);  ... work ...  cuda_support::record(e.end, device);
//     cuda_support::synchronize_event(e.end);                // the one host wait, after the chunk
//     double ms = cuda_support::elapsed_ms(e.start, e.end);
//   }
//
// Threads: every function acts on the calling thread's current stream of the given device (the tracking
// thread's). Events belong to one EventPool and one thread.

#include <cstdint>
#include <memory>
#include <vector>

namespace trackscope::gpu::cuda_support {

/// True when this build can time and query CUDA devices (cuda_support.cpp is compiled in).
bool available();

/// An opaque cudaEvent_t.
using Event = void*;

/// Owns cudaEvent_t handles and hands them out in order; reset() makes them reusable (after their times
/// have been read). Destroys them in the destructor.
class EventPool {
 public:
  EventPool() = default;
  ~EventPool();
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;
  Event next();
  void reset() { used_ = 0; }

 private:
  std::vector<Event> events_;
  size_t used_ = 0;
};

/// Records the event on the current stream of CUDA device `device`.
void record(Event event, int device);
/// Blocks the host until the event has completed.
void synchronize_event(Event event);
/// Milliseconds between two completed events.
double elapsed_ms(Event start, Event end);
/// Blocks until all work on the device is done.
void synchronize_device(int device);

struct MemoryInfo {
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
};
MemoryInfo memory_info(int device);
/// Peak bytes allocated by LibTorch's caching allocator since the last reset_peak_memory().
int64_t peak_allocated_bytes(int device);
int64_t allocated_bytes(int device);
void reset_peak_memory(int device);
/// Returns cached, unused blocks to the driver (after an out-of-memory, or when a model leaves a device).
void empty_cache();

/// NVTX range around a stage (visible in Nsight Systems); no-op without CUDA.
void nvtx_push(const char* name);
void nvtx_pop();

}  // namespace trackscope::gpu::cuda_support
