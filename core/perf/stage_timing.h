#pragma once
// The canonical list of tracker pipeline stages, used everywhere a stage is named: the CLI's bench table,
// the bench JSON, the GUI's performance view and NVTX ranges. One StageSample is one timed execution of a
// stage (for one query chunk and, for refinement stages, one iteration).

#include <array>
#include <optional>
#include <string_view>

namespace trackscope::core {

enum class Stage {
  decode,              // demux + decode + RGB conversion (host)
  resize_normalize,    // resize to the model resolution and scale to [-1, 1]
  upload,              // host -> device copy of the frames
  backbone,            // ResNet feature grids of every frame
  feature_stream,      // exact streaming: feature grids to and from their cache (device <-> host <-> disk)
  query_features,      // query features and 7x7 supports
  init,                // global cost volumes, upsample, conv, soft-argmax, occlusion head
  refine_correlation,  // neighbourhood sampling + local 4D correlation (per iteration)
  refine_encoder,      // CMDTop correlation encoder (per iteration)
  refine_transformer,  // temporal transformer and update (per iteration)
  assembly,            // concatenating chunks, converting to video coordinates
  download,            // device -> host copy of the results
};

inline constexpr std::array<Stage, 12> kAllStages = {
    Stage::decode,         Stage::resize_normalize,   Stage::upload,   Stage::backbone,
    Stage::feature_stream, Stage::query_features,     Stage::init,     Stage::refine_correlation,
    Stage::refine_encoder, Stage::refine_transformer, Stage::assembly, Stage::download};

/// Canonical snake_case name ("refine_encoder").
std::string_view stage_name(Stage stage);
/// Inverse of stage_name; nullopt for unknown names.
std::optional<Stage> stage_from_name(std::string_view name);
/// True for the stages that run once per refinement iteration.
bool is_refinement_stage(Stage stage);

enum class StageClock {
  host_steady,    // std::chrono::steady_clock around host work (or around synchronised device work)
  device_events,  // CUDA events recorded on the stream, read back after the chunk
};

struct StageSample {
  Stage stage = Stage::decode;
  int chunk = 0;      // query chunk index (0 for per-video stages)
  int iteration = 0;  // refinement iteration 1..N for refinement stages, 0 otherwise
  double elapsed_ms = 0.0;
  StageClock clock = StageClock::host_steady;
  double flops = 0.0;  // floating-point operations (2 per multiply-add) from the actual shapes
  double bytes = 0.0;  // minimum device-memory traffic (each input read once, each output written once)
  /// When the stage started, in ms after the run began (the tracker's StageRecorder was made; device stages from
  /// their CUDA events against one recorded then): the decode-vs-compute timeline. < 0: unknown.
  double start_ms = -1.0;
};

}  // namespace trackscope::core
