#include "core/perf/stage_timing.h"

namespace trackscope::core {

std::string_view stage_name(Stage stage) {
  switch (stage) {
    case Stage::decode: return "decode";
    case Stage::resize_normalize: return "resize_normalize";
    case Stage::upload: return "upload";
    case Stage::backbone: return "backbone";
    case Stage::feature_stream: return "feature_stream";
    case Stage::query_features: return "query_features";
    case Stage::init: return "init";
    case Stage::refine_correlation: return "refine_correlation";
    case Stage::refine_encoder: return "refine_encoder";
    case Stage::refine_transformer: return "refine_transformer";
    case Stage::assembly: return "assembly";
    case Stage::download: return "download";
  }
  return "unknown";
}

std::optional<Stage> stage_from_name(std::string_view name) {
  for (Stage stage : kAllStages) {
    if (stage_name(stage) == name) return stage;
  }
  return std::nullopt;
}

bool is_refinement_stage(Stage stage) {
  return stage == Stage::refine_correlation || stage == Stage::refine_encoder || stage == Stage::refine_transformer;
}

}  // namespace trackscope::core
