#include "core/perf/cost_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "core/tracking/locotrack_shape.h"

namespace trackscope::core {

namespace {

// Channels of the three feature levels (docs/locotrack-spec.md §2.1): highest (stride 2), hires (4), lowres (8).
constexpr double kHighestChannels = 64.0;
constexpr double kHiresChannels = 128.0;
constexpr double kLowresChannels = 256.0;
constexpr double kAllChannels = kHighestChannels + kHiresChannels + kLowresChannels;  // 448
constexpr double kSupport = 49.0;             // 7x7 support / neighbourhood cells
constexpr double kCorrelation = 49.0 * 49.0;  // 7x7x7x7 per level and frame
constexpr double kLevels = 3.0;
constexpr double kCmdtopOutputs = 768.0;  // 3 levels x 256 features
constexpr double kMixerInput = locotrack::kMixerInputChannels;
constexpr double kMixerOutput = 388.0;
constexpr double kMixerLayers = 3.0;
// Softmax over 20x logits, the windowed soft-argmax and the mean/max/min statistics (with the 2x upsample) per
// hires cell: docs/locotrack-spec.md §5.1 counts about 5.6 MFLOP per query at T = 47, i.e. 29 FLOP per cell.
constexpr double kInitElementwisePerCell = 29.0;
// Bilinear sampling: 4 corners x (multiply + add); trilinear: 8 corners.
constexpr double kBilinearFlopsPerValue = 8.0;
constexpr double kTrilinearFlopsPerValue = 16.0;
// The refinement's bilinear window per neighbourhood: 7x7 cells + one row and column for the interpolation.
constexpr double kWindowCells = 8.0 * 8.0;

struct Conv {
  double out_cells, out_channels, in_channels, kernel_cells;
  double macs() const { return out_cells * out_channels * in_channels * kernel_cells; }
  double parameters() const { return out_channels * in_channels * kernel_cells; }
};

// Backbone convolutions for one frame at resolution r (docs/locotrack-spec.md §2.1), padding ignored.
std::vector<Conv> backbone_convs(double r) {
  const double c128 = (r / 2) * (r / 2), c64 = (r / 4) * (r / 4), c32 = (r / 8) * (r / 8);
  std::vector<Conv> convs = {{c128, 64, 3, 49}};
  auto group = [&convs](double cells, double in, double out) {
    convs.push_back({cells, out, in, 9});   // block 0 conv_0 (stride s)
    convs.push_back({cells, out, out, 9});  // block 0 conv_1
    convs.push_back({cells, out, in, 1});   // block 0 1x1 projection
    convs.push_back({cells, out, out, 9});  // block 1 conv_0
    convs.push_back({cells, out, out, 9});  // block 1 conv_1
  };
  group(c128, 64, 64);
  group(c64, 64, 128);
  group(c32, 128, 256);
  group(c32, 256, 256);
  return convs;
}

// CMDTop convolutions of one branch on one [49, 7, 7] input (docs/locotrack-spec.md §2.5 step 3).
std::vector<Conv> cmdtop_convs(ModelSize size) {
  if (size == ModelSize::small) return {{4, 64, 49, 25}, {1, 128, 64, 4}};
  return {{16, 64, 49, 9}, {4, 128, 64, 9}, {1, 128, 128, 4}};
}

double mixer_width(ModelSize size) { return size == ModelSize::small ? 256.0 : 384.0; }

double mixer_parameters(ModelSize size) {
  const double d = mixer_width(size);
  const double layer = 4 * (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d) + 4 * d;  // attention, MLP, 2 LN
  return kMixerInput * d + d + kMixerLayers * layer + 2 * d + d * kMixerOutput + kMixerOutput;
}

double cmdtop_parameters(ModelSize size) {
  double total = 0.0;
  for (const Conv& conv : cmdtop_convs(size)) total += conv.parameters() + 3 * conv.out_channels;  // bias, GN
  return kLevels * total;
}

struct Grids {
  double lowres_cells, hires_cells, highest_cells;
};
Grids grids(const CostModelConfig& c) {
  const double r = c.resolution;
  return {(r / 8) * (r / 8), (r / 4) * (r / 4), (r / 2) * (r / 2)};
}

// Per query (init: per query; refinement: per query and iteration) and per chunk (weights, shared reads).
WorkCost init_per_query(const CostModelConfig& c) {
  const Grids g = grids(c);
  const double t = c.frames;
  const double einsums = 2 * t * (g.lowres_cells * kLowresChannels + g.hires_cells * kHiresChannels);
  const double cost_conv = 2 * t * g.hires_cells * 2 * 9;
  const double elementwise = t * g.hires_cells * kInitElementwisePerCell;
  // The cost volumes the global softmax needs materialised: lowres, hires and the upsampled lowres.
  const double bytes = t * (g.lowres_cells + 2 * g.hires_cells) * c.dtype_bytes;
  return {einsums + cost_conv + elementwise, bytes};
}
WorkCost init_per_chunk(const CostModelConfig& c) {
  const Grids g = grids(c);  // the lowres and hires feature maps, read once per chunk by the einsums
  return {0.0, c.frames * (g.lowres_cells * kLowresChannels + g.hires_cells * kHiresChannels) * c.dtype_bytes};
}
WorkCost sampling_per_query(const CostModelConfig& c) {
  const double values = c.frames * kSupport * kAllChannels;
  const double window_reads = c.frames * kWindowCells * kAllChannels;
  const double written = c.fused_correlation ? 0.0 : values;
  return {values * kBilinearFlopsPerValue, (window_reads + written) * c.dtype_bytes};
}
WorkCost correlation_per_query(const CostModelConfig& c) {
  const double flops = 2 * c.frames * kCorrelation * kAllChannels;
  const double neighbourhoods = c.fused_correlation ? 0.0 : c.frames * kSupport * kAllChannels;
  const double supports = kSupport * kAllChannels;
  const double output = c.frames * kCorrelation * kLevels;
  return {flops, (neighbourhoods + supports + output) * c.dtype_bytes};
}
WorkCost encoder_per_query(const CostModelConfig& c) {
  double macs = 0.0;
  for (const Conv& conv : cmdtop_convs(c.model_size)) macs += conv.macs();
  const double flops = 2 * macs * 2 /* branches */ * kLevels * c.frames;
  const double bytes = c.frames * (kCorrelation * kLevels + kCmdtopOutputs) * c.dtype_bytes;
  return {flops, bytes};
}
WorkCost encoder_per_chunk(const CostModelConfig& c) { return {0.0, cmdtop_parameters(c.model_size) * c.dtype_bytes}; }
WorkCost mixer_per_query(const CostModelConfig& c) {
  const double d = mixer_width(c.model_size), t = c.frames;
  const double per_token = 2 * kMixerInput * d + kMixerLayers * 24 * d * d + 2 * d * kMixerOutput;
  const double attention = kMixerLayers * 4 * t * t * d;  // QK^T and AV over T keys
  return {t * per_token + attention, t * (kMixerInput + kMixerOutput) * c.dtype_bytes};
}
WorkCost mixer_per_chunk(const CostModelConfig& c) { return {0.0, mixer_parameters(c.model_size) * c.dtype_bytes}; }

WorkCost backbone_cost(const CostModelConfig& c) {
  double macs = 0.0, parameters = 0.0;
  for (const Conv& conv : backbone_convs(c.resolution)) {
    macs += conv.macs();
    parameters += conv.parameters();
  }
  const Grids g = grids(c);
  const double r = c.resolution;
  const double per_frame_values = r * r * 3 + g.highest_cells * kHighestChannels + g.hires_cells * kHiresChannels +
                                  g.lowres_cells * kLowresChannels;
  return {2 * macs * c.frames, (per_frame_values * c.frames + parameters) * c.dtype_bytes};
}
WorkCost query_features_per_query(const CostModelConfig& c) {
  const double values = kSupport * kAllChannels;
  return {values * kTrilinearFlopsPerValue, values * 9 /* 8 corners read, 1 written */ * c.dtype_bytes};
}

double chunks(const CostModelConfig& c) { return c.chunk_count(); }

}  // namespace

const char* to_string(ModelSize size) { return size == ModelSize::small ? "small" : "base"; }

Expected<ModelSize> parse_model_size(std::string_view text) {
  if (text == "small" || text == "s") return ModelSize::small;
  if (text == "base" || text == "b") return ModelSize::base;
  return invalid_argument(fmt::format("unknown model size '{}': use small or base", text));
}

Status CostModelConfig::check() const {
  if (frames < 1 || frames > 1'000'000)
    return invalid_argument(fmt::format("frames {} out of range (1..1000000)", frames));
  if (points < 1 || points > 10'000'000)
    return invalid_argument(fmt::format("points {} out of range (1..10^7)", points));
  if (chunk < 0) return invalid_argument(fmt::format("query chunk {} is negative", chunk));
  if (resolution < 8 || resolution % 8 != 0 || resolution > 4096) {
    return invalid_argument(fmt::format("resolution {} must be a multiple of 8 in 8..4096", resolution));
  }
  if (dtype_bytes != 2 && dtype_bytes != 4)
    return invalid_argument(fmt::format("element size {} must be 2 or 4", dtype_bytes));
  if (refinement_iterations < 0 || refinement_iterations > 64) {
    return invalid_argument(fmt::format("refinement iterations {} out of range (0..64)", refinement_iterations));
  }
  return {};
}

int CostModelConfig::chunk_count() const {
  const int n = chunk_points();
  return n <= 0 ? 0 : (points + n - 1) / n;
}

WorkCost LocoTrackCostBreakdown::total() const {
  WorkCost sum = backbone;
  for (const WorkCost* part : {&query_features, &init, &sampling, &correlation, &encoder, &mixer}) sum += *part;
  return sum;
}

LocoTrackCostBreakdown locotrack_cost_breakdown(const CostModelConfig& c) {
  const double n = c.points, iterations = c.refinement_iterations, k = chunks(c);
  LocoTrackCostBreakdown b;
  b.backbone = backbone_cost(c);
  b.query_features = query_features_per_query(c) * n;
  b.init = init_per_query(c) * n;
  b.init += init_per_chunk(c) * k;
  b.sampling = sampling_per_query(c) * (n * iterations);
  b.correlation = correlation_per_query(c) * (n * iterations);
  b.encoder = encoder_per_query(c) * (n * iterations);
  b.encoder += encoder_per_chunk(c) * (k * iterations);
  b.mixer = mixer_per_query(c) * (n * iterations);
  b.mixer += mixer_per_chunk(c) * (k * iterations);
  return b;
}

WorkCost chunk_stage_cost(Stage stage, const CostModelConfig& c, int chunk_points) {
  const double n = chunk_points, r = c.resolution;
  switch (stage) {
    case Stage::decode:
    case Stage::resize_normalize:
    case Stage::feature_stream: return {};                   // its bytes are the cache traffic, attached by the tracker
    case Stage::upload: return {0.0, c.frames * r * r * 3};  // uint8 frames at model resolution
    case Stage::backbone: return backbone_cost(c);
    case Stage::query_features: return query_features_per_query(c) * c.points;
    case Stage::init: {
      WorkCost cost = init_per_query(c) * n;
      cost += init_per_chunk(c);
      return cost;
    }
    case Stage::refine_correlation: {
      WorkCost cost = sampling_per_query(c) * n;
      cost += correlation_per_query(c) * n;
      return cost;
    }
    case Stage::refine_encoder: {
      WorkCost cost = encoder_per_query(c) * n;
      cost += encoder_per_chunk(c);
      return cost;
    }
    case Stage::refine_transformer: {
      WorkCost cost = mixer_per_query(c) * n;
      cost += mixer_per_chunk(c);
      return cost;
    }
    case Stage::assembly: return {0.0, 2.0 * n * c.frames * 4 * 4};  // x, y, occlusion, distance: read + write
    case Stage::download: return {0.0, static_cast<double>(c.points) * c.frames * 4 * 4};
  }
  return {};
}

WorkCost stage_cost(Stage stage, const CostModelConfig& c) {
  if (stage == Stage::init || stage == Stage::assembly || is_refinement_stage(stage)) {
    WorkCost total;
    const int per_chunk = c.chunk_points();
    const int iterations = is_refinement_stage(stage) ? c.refinement_iterations : 1;
    for (int first = 0; first < c.points; first += per_chunk) {
      total += chunk_stage_cost(stage, c, std::min(per_chunk, c.points - first)) * iterations;
    }
    return total;
  }
  return chunk_stage_cost(stage, c, c.points);
}

StageWork stage_work(Stage stage) {
  switch (stage) {
    case Stage::decode:
    case Stage::resize_normalize: return StageWork::host;
    case Stage::upload:
    case Stage::feature_stream:
    case Stage::download: return StageWork::transfer;
    case Stage::backbone:
    case Stage::refine_encoder: return StageWork::convolution;
    case Stage::init:
    case Stage::refine_correlation:
    case Stage::refine_transformer: return StageWork::matrix;
    case Stage::query_features:
    case Stage::assembly: return StageWork::gather;
  }
  return StageWork::host;
}

const char* to_string(StageWork work) {
  switch (work) {
    case StageWork::convolution: return "convolution";
    case StageWork::matrix: return "matrix";
    case StageWork::gather: return "gather";
    case StageWork::transfer: return "transfer";
    case StageWork::host: return "host";
  }
  return "?";
}

}  // namespace trackscope::core
