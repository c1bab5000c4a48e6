#pragma once
// StageRecorder: times the canonical pipeline stages (core/perf/stage_timing.h) of one tracking run.
// Torch-free. On a CUDA device a stage is bracketed by two CUDA events recorded on the current stream, so
// timing adds no host synchronisation: collect() waits once for the last event (the engine calls it where
// it synchronises anyway, when a chunk's results are downloaded) and converts the pairs to StageSamples.
// On the CPU (or for host work) a stage is timed with the steady clock when its scope closes. Every stage is
// also an NVTX range (visible in Nsight Systems) on CUDA.
//
//   StageRecorder recorder(device_index);                       // -1 = CPU
//   {
//     auto scope = recorder.time(core::Stage::backbone, 0, 0, cost);
//     ... enqueue the backbone ...
//   }                                                           // end event recorded here
//   std::vector<core::StageSample> samples = recorder.collect(); // one host wait on CUDA
//
// Threads: one recorder belongs to the thread that enqueues the work (the tracking thread).

#include <chrono>
#include <vector>

#include "core/perf/cost_model.h"
#include "core/perf/stage_timing.h"
#include "gpu/engine/cuda_support.h"

namespace trackscope::gpu::engine {

class StageRecorder {
 public:
  /// cuda_device < 0: every stage is timed with the steady clock (CPU work is synchronous).
  explicit StageRecorder(int cuda_device);
  StageRecorder(const StageRecorder&) = delete;
  StageRecorder& operator=(const StageRecorder&) = delete;

  /// Closes its stage when destroyed.
  class [[nodiscard]] Scope {
   public:
    Scope(Scope&& other) noexcept;
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;
    ~Scope();

   private:
    friend class StageRecorder;
    Scope(StageRecorder* recorder, size_t pending_index) : recorder_(recorder), index_(pending_index) {}
    StageRecorder* recorder_;
    size_t index_;
  };

  /// Starts timing `stage` (its StageSample::start_ms: ms since this recorder was made). `host` = the work is on the
  /// host (decode, assembly): steady clock even on CUDA.
  Scope time(core::Stage stage, int chunk, int iteration, const core::WorkCost& cost, bool host = false);

  /// The samples of every closed stage since the last collect(), in start order. Waits for the device work of
  /// the recorded events (one host synchronisation on CUDA; none on the CPU).
  std::vector<core::StageSample> collect();

  /// A stage timed elsewhere on the host (e.g. on a decode thread): [start, end) of the steady clock.
  void add_host_sample(core::Stage stage, int chunk, int iteration, const core::WorkCost& cost,
                       std::chrono::steady_clock::time_point start, double elapsed_ms);

  /// Appends the stages of `replayed`, a recorder that was used while its work was captured into a
  /// cuda_support::Graph: its events are nodes of the graph, recorded again by every replay. Call it right after
  /// the replay; this recorder's collect() then waits for them and reports the replay's times. `replayed` must
  /// stay alive and unreplayed until then, and is never collected itself.
  void add_replayed(const StageRecorder& replayed);

  /// True when device stages are timed with CUDA events.
  bool uses_device_events() const { return cuda_device_ >= 0 && cuda_support::available(); }

 private:
  struct Pending {
    core::StageSample sample;
    bool device = false;
    cuda_support::Event start = nullptr;
    cuda_support::Event end = nullptr;
    std::chrono::steady_clock::time_point host_start;
    bool closed = false;
    bool replayed = false;  // events recorded by a graph replay (add_replayed)
  };
  void close(size_t index);

  int cuda_device_;
  const std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();  // StageSample::start_ms 0
  // A CUDA event recorded at the first device stage, and the host's offset then: device starts are placed on the
  // host's time axis through it.
  cuda_support::EventPool origin_pool_;
  cuda_support::Event origin_event_ = nullptr;
  double origin_event_ms_ = 0.0;
  cuda_support::EventPool events_;
  std::vector<Pending> pending_;
};

}  // namespace trackscope::gpu::engine
