// cuda_support.h for builds without Trackscope's CUDA support: nothing is available, nothing is recorded.
#include "gpu/engine/cuda_support.h"

#include <stdexcept>

namespace trackscope::gpu::cuda_support {

bool available() { return false; }
EventPool::~EventPool() = default;
Event EventPool::next() { return nullptr; }
void record(Event /*event*/, int /*device*/) {}
void synchronize_event(Event /*event*/) {}
double elapsed_ms(Event /*start*/, Event /*end*/) { return 0.0; }
bool try_elapsed_ms(Event /*start*/, Event /*end*/, double& /*ms*/) { return false; }
void synchronize_device(int /*device*/) {}
MemoryInfo memory_info(int /*device*/) { return {}; }
int64_t peak_allocated_bytes(int /*device*/) { return 0; }
int64_t allocated_bytes(int /*device*/) { return 0; }
void reset_peak_memory(int /*device*/) {}
void empty_cache() {}
bool register_host_memory(void* /*data*/, size_t /*bytes*/) { return false; }
void unregister_host_memory(void* /*data*/) {}
struct Graph::Impl {};
Graph::Graph() = default;
Graph::~Graph() = default;
void Graph::capture(int /*device*/, const std::function<void(bool)>& /*work*/) {
  throw std::runtime_error("CUDA graphs: this build has no CUDA support");
}
void Graph::replay(int /*device*/) { throw std::runtime_error("CUDA graphs: this build has no CUDA support"); }
struct CopyStreamScope::Impl {};
CopyStreamScope::CopyStreamScope(int /*device*/) {}
CopyStreamScope::~CopyStreamScope() = default;
void used_on_current_stream(const at::Tensor& /*tensor*/, int /*device*/) {}
void nvtx_push(const char* /*name*/) {}
void nvtx_pop() {}

}  // namespace trackscope::gpu::cuda_support
