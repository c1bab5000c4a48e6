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
  p.host_start = std::chrono::steady_clock::now();
  p.sample.start_ms = std::chrono::duration<double, std::milli>(p.host_start - origin_).count();
  if (p.device) {
    if (origin_event_ == nullptr) {
      origin_event_ = origin_pool_.next();
      cuda_support::record(origin_event_, cuda_device_);
      origin_event_ms_ = p.sample.start_ms;
    }
    p.start = events_.next();
    p.end = events_.next();
    cuda_support::record(p.start, cuda_device_);
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

void StageRecorder::add_host_sample(core::Stage stage, int chunk, int iteration, const core::WorkCost& cost,
                                    std::chrono::steady_clock::time_point start, double elapsed_ms) {
  Pending p;
  p.sample.stage = stage;
  p.sample.chunk = chunk;
  p.sample.iteration = iteration;
  p.sample.flops = cost.flops;
  p.sample.bytes = cost.bytes;
  p.sample.clock = core::StageClock::host_steady;
  p.sample.elapsed_ms = elapsed_ms;
  p.sample.start_ms = std::chrono::duration<double, std::milli>(start - origin_).count();
  p.closed = true;
  pending_.push_back(p);
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
  // Every end event (stages may run on a side stream: the frame uploads); waiting for a completed one is free.
  for (const Pending& p : pending_) {
    if (p.device) cuda_support::synchronize_event(p.end);
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
    double since_origin = 0.0;
    if (p.device && origin_event_ != nullptr && cuda_support::try_elapsed_ms(origin_event_, p.start, since_origin)) {
      p.sample.start_ms = origin_event_ms_ + since_origin;
    } else if (p.device) {
      p.sample.start_ms = -1.0;
    }
    samples.push_back(p.sample);
  }
  pending_.clear();
  events_.reset();
  return samples;
}

}  // namespace trackscope::gpu::engine
