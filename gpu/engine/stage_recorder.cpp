#include "gpu/engine/stage_recorder.h"

#include "core/status.h"

namespace trackscope::gpu::engine {

StageRecorder::StageRecorder(int cuda_device) : cuda_device_(cuda_device) {}

StageRecorder::Scope::Scope(Scope&& other) noexcept : recorder_(other.recorder_), index_(other.index_) {
  other.recorder_ = nullptr;
}

StageRecorder::Scope::~Scope() {
  if (recorder_ != nullptr) recorder_->close(index_);
}

StageRecorder::Scope StageRecorder::time(core::Stage stage, int chunk, int iteration, const core::WorkCost& cost,
                                         bool host) {
  Pending p;
  p.sample.stage = stage;
  p.sample.chunk = chunk;
  p.sample.iteration = iteration;
  p.sample.flops = cost.flops;
  p.sample.bytes = cost.bytes;
  p.device = !host && uses_device_events();
  p.sample.clock = p.device ? core::StageClock::device_events : core::StageClock::host_steady;
  if (cuda_device_ >= 0) cuda_support::nvtx_push(core::stage_name(stage).data());
  if (p.device) {
    p.start = events_.next();
    p.end = events_.next();
    cuda_support::record(p.start, cuda_device_);
  } else {
    p.host_start = std::chrono::steady_clock::now();
  }
  pending_.push_back(p);
  return Scope(this, pending_.size() - 1);
}

void StageRecorder::close(size_t index) {
  Pending& p = pending_.at(index);
  TRACKSCOPE_CHECK(!p.closed, "stage closed twice");
  if (p.device) {
    cuda_support::record(p.end, cuda_device_);
  } else {
    p.sample.elapsed_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - p.host_start).count();
  }
  if (cuda_device_ >= 0) cuda_support::nvtx_pop();
  p.closed = true;
}

void StageRecorder::add_replayed(const StageRecorder& replayed) {
  for (const Pending& p : replayed.pending_) {
    TRACKSCOPE_CHECK(p.closed, "add_replayed: a captured stage scope is still open");
    pending_.push_back(p);
    pending_.back().replayed = true;
  }
}

std::vector<core::StageSample> StageRecorder::collect() {
  for (const Pending& p : pending_) TRACKSCOPE_CHECK(p.closed, "collect() called while a stage scope is open");
  // Events complete in stream order, so waiting for the last recorded end event covers all of them.
  for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
    if (it->device) {
      cuda_support::synchronize_event(it->end);
      break;
    }
  }
  std::vector<core::StageSample> samples;
  samples.reserve(pending_.size());
  for (Pending& p : pending_) {
    if (p.replayed) {
      // A driver that cannot time events recorded by graph nodes: the stage is dropped, not mis-timed.
      if (!cuda_support::try_elapsed_ms(p.start, p.end, p.sample.elapsed_ms)) continue;
    } else if (p.device) {
      p.sample.elapsed_ms = cuda_support::elapsed_ms(p.start, p.end);
    }
    samples.push_back(p.sample);
  }
  pending_.clear();
  events_.reset();
  return samples;
}

}  // namespace trackscope::gpu::engine
