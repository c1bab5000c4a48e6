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
#include <functional>
#include <memory>
#include <vector>

namespace at {
class Tensor;
}

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

/// Records the event on the current stream of CUDA device `device`. While that stream is being captured into a
/// Graph, the record becomes an event node of the graph (cudaEventRecordExternal): every replay records the
/// event again, so stage timing works inside graphs.
void record(Event event, int device);
/// Blocks the host until the event has completed.
void synchronize_event(Event event);
/// Milliseconds between two completed events.
double elapsed_ms(Event start, Event end);
/// Same, returning false (ms untouched) where the driver cannot time the pair.
bool try_elapsed_ms(Event start, Event end, double& ms);
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

/// Page-locks the host memory [data, data + bytes) for every CUDA device (cudaHostRegister, portable), so that
/// copies from and to it run at full speed and asynchronously. Unlike a pinned allocation from ATen's host
/// allocator (which rounds each allocation up to a power of two and pins all of it), it pins exactly `bytes`.
/// False when this build has no CUDA support or the driver refuses: the memory stays pageable. Any thread.
bool register_host_memory(void* data, size_t bytes);
/// Undoes register_host_memory; call before the memory is freed.
void unregister_host_memory(void* data);

/// A CUDA graph of the work one callable enqueues (at::cuda::CUDAGraph), for replaying launch-bound work
/// (the refinement iterations at small N) without the host's per-kernel cost.
///
///   Graph graph;
///   graph.capture(device, [&](bool capturing) { out = work(static_inputs); });  // runs it eagerly, then captures
///   copy new inputs into static_inputs; graph.replay(device);                  // out holds the new results
///
/// capture() runs work(false) once eagerly on a side stream (lazy initialisation of cuBLAS/cuDNN state must not
/// happen inside a capture), waits for it, then runs work(true) under stream capture: nothing executes, the
/// kernels are recorded; tensors allocated inside live in the graph's private memory pool and keep their
/// addresses. work must not synchronise with the host or copy from pageable host memory. replay() enqueues
/// the graph on the current stream. Throws c10::Error (CUDA builds) or std::runtime_error (no CUDA support).
class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  void capture(int device, const std::function<void(bool capturing)>& work);
  void replay(int device);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// While alive, a side stream of CUDA device `device` ("copy stream") is its current stream, so that what is
/// enqueued meanwhile (the tracker's frame uploads from pinned memory) overlaps the work already on the previous
/// current stream (the compute). The destructor makes the previous stream wait for everything enqueued on the copy
/// stream (an event: no host wait) and makes it current again. Tensors allocated inside belong to the copy stream's
/// memory: pass each one the compute then uses to used_on_current_stream() after the scope. device < 0 or no CUDA
/// support: does nothing.
///
///   at::Tensor on_device;
///   { CopyStreamScope copies(device); on_device = host_pinned.to(cuda, /*non_blocking=*/true); }
///   used_on_current_stream(on_device, device);
class CopyStreamScope {
 public:
  explicit CopyStreamScope(int device);
  ~CopyStreamScope();
  CopyStreamScope(const CopyStreamScope&) = delete;
  CopyStreamScope& operator=(const CopyStreamScope&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
/// Marks a CUDA tensor as used by the current stream of `device` (Tensor::record_stream): the caching allocator then
/// reuses its memory only after that stream's work queued so far. No-op for CPU tensors or without CUDA support.
void used_on_current_stream(const at::Tensor& tensor, int device);

/// NVTX range around a stage (visible in Nsight Systems); no-op without CUDA.
void nvtx_push(const char* name);
void nvtx_pop();

}  // namespace trackscope::gpu::cuda_support
