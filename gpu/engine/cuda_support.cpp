// CUDA side of the engine's runtime support (see cuda_support.h). The only engine TU with CUDA headers;
// compiled only when LibTorch has CUDA (TRACKSCOPE_WITH_CUDA_OPS).
#include "gpu/engine/cuda_support.h"

#include "gpu/torch_compat.h"

#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

namespace trackscope::gpu::cuda_support {
namespace {

void check(cudaError_t error, const char* what) {
  TORCH_CHECK(error == cudaSuccess, what, " failed: ", cudaGetErrorName(error), " (", cudaGetErrorString(error), ")");
}

cudaEvent_t as_event(Event e) { return static_cast<cudaEvent_t>(e); }

}  // namespace

bool available() { return true; }

EventPool::~EventPool() {
  for (Event e : events_) cudaEventDestroy(as_event(e));
}

Event EventPool::next() {
  if (used_ == events_.size()) {
    cudaEvent_t event = nullptr;
    check(cudaEventCreate(&event), "cudaEventCreate");
    events_.push_back(event);
  }
  return events_[used_++];
}

void record(Event event, int device) {
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(stream, &status), "cudaStreamIsCapturing");
  if (status == cudaStreamCaptureStatusActive) {
    check(cudaEventRecordWithFlags(as_event(event), stream, cudaEventRecordExternal), "cudaEventRecordWithFlags");
  } else {
    check(cudaEventRecord(as_event(event), stream), "cudaEventRecord");
  }
}

void synchronize_event(Event event) { check(cudaEventSynchronize(as_event(event)), "cudaEventSynchronize"); }

double elapsed_ms(Event start, Event end) {
  float ms = 0.0f;
  check(cudaEventElapsedTime(&ms, as_event(start), as_event(end)), "cudaEventElapsedTime");
  return static_cast<double>(ms);
}

bool try_elapsed_ms(Event start, Event end, double& ms) {
  float value = 0.0f;
  if (cudaEventElapsedTime(&value, as_event(start), as_event(end)) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky-free error state of the runtime
    return false;
  }
  ms = static_cast<double>(value);
  return true;
}

void synchronize_device(int device) {
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

MemoryInfo memory_info(int device) {
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  return {static_cast<int64_t>(free_bytes), static_cast<int64_t>(total_bytes)};
}

namespace {
// The allocator's counters over all pools (large and small blocks).
// (auto: the stats types moved from CUDACachingAllocator to c10::CachingDeviceAllocator in LibTorch 2.x;
// index 0 is the AGGREGATE entry in every version.)
auto allocated_stat(int device) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  return stats.allocated_bytes[0];
}
}  // namespace

int64_t peak_allocated_bytes(int device) { return allocated_stat(device).peak; }
int64_t allocated_bytes(int device) { return allocated_stat(device).current; }

void reset_peak_memory(int device) {
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
}

void empty_cache() { c10::cuda::CUDACachingAllocator::emptyCache(); }

bool register_host_memory(void* data, size_t bytes) {
  if (cudaHostRegister(data, bytes, cudaHostRegisterPortable) == cudaSuccess) return true;
  (void)cudaGetLastError();  // a refused registration is not a sticky error: clear it for the next call's check
  return false;
}

void unregister_host_memory(void* data) { (void)cudaHostUnregister(data); }

struct Graph::Impl {
  at::cuda::CUDAGraph graph;
  bool captured = false;
};

Graph::Graph() : impl_(std::make_unique<Impl>()) {}
Graph::~Graph() = default;

void Graph::capture(int device, const std::function<void(bool)>& work) {
  TORCH_CHECK(!impl_->captured, "CUDA graph: captured twice");
  const auto index = static_cast<c10::DeviceIndex>(device);
  const c10::cuda::CUDAGuard device_guard(index);
  const c10::cuda::CUDAStream caller = c10::cuda::getCurrentCUDAStream(index);
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index);
  // The side stream starts after everything already enqueued (the inputs), and the caller continues after it.
  cudaEvent_t ready = nullptr;
  check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  const auto destroy = [&ready] { cudaEventDestroy(ready); };
  try {
    check(cudaEventRecord(ready, caller.stream()), "cudaEventRecord");
    check(cudaStreamWaitEvent(side.stream(), ready, 0), "cudaStreamWaitEvent");
    {
      const c10::cuda::CUDAStreamGuard stream_guard(side);
      work(false);
      check(cudaStreamSynchronize(side.stream()), "cudaStreamSynchronize");
#if TRACKSCOPE_TORCH_AT_LEAST(2, 1)
      // Thread-local capture: another thread's CUDA calls (a decode thread registering its staging memory, another
      // engine) neither fail nor invalidate this capture, as they would in LibTorch's default global mode.
      impl_->graph.capture_begin(/*pool=*/{0, 0}, cudaStreamCaptureModeThreadLocal);
#else
      impl_->graph.capture_begin();
#endif
      try {
        work(true);
      } catch (...) {
        try {
          impl_->graph.capture_end();
        } catch (...) {}
        throw;
      }
      impl_->graph.capture_end();
    }
  } catch (...) {
    destroy();
    throw;
  }
  destroy();
  impl_->captured = true;
}

void Graph::replay(int device) {
  TORCH_CHECK(impl_->captured, "CUDA graph: replay before capture");
  const c10::cuda::CUDAGuard device_guard(static_cast<c10::DeviceIndex>(device));
  impl_->graph.replay();
}

struct CopyStreamScope::Impl {
  explicit Impl(c10::DeviceIndex index)
      : caller(c10::cuda::getCurrentCUDAStream(index)), side(c10::cuda::getStreamFromPool(false, index)) {}
  c10::cuda::CUDAStream caller;
  c10::cuda::CUDAStream side;
};

CopyStreamScope::CopyStreamScope(int device) {
  if (device < 0) return;
  impl_ = std::make_unique<Impl>(static_cast<c10::DeviceIndex>(device));
  c10::cuda::setCurrentCUDAStream(impl_->side);
}

CopyStreamScope::~CopyStreamScope() {
  if (!impl_) return;
  // A destructor cannot throw: should the event fail, the host waits for the copies instead (still ordered).
  cudaEvent_t done = nullptr;
  const bool joined = cudaEventCreateWithFlags(&done, cudaEventDisableTiming) == cudaSuccess &&
                      cudaEventRecord(done, impl_->side.stream()) == cudaSuccess &&
                      cudaStreamWaitEvent(impl_->caller.stream(), done, 0) == cudaSuccess;
  if (!joined) {
    (void)cudaGetLastError();
    (void)cudaStreamSynchronize(impl_->side.stream());
  }
  if (done != nullptr) (void)cudaEventDestroy(done);  // released once the wait has completed
  c10::cuda::setCurrentCUDAStream(impl_->caller);
}

void used_on_current_stream(const at::Tensor& tensor, int device) {
  if (device < 0 || !tensor.defined() || !tensor.is_cuda()) return;
  tensor.record_stream(c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)));
}

void nvtx_push(const char* name) { nvtxRangePushA(name); }
void nvtx_pop() { nvtxRangePop(); }

}  // namespace trackscope::gpu::cuda_support
