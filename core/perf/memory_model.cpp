#include "core/perf/memory_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/tracking/locotrack_shape.h"

namespace trackscope::core {
namespace {

constexpr int64_t kGridElementsPerFrame = 32 * 32 * 256 + 64 * 64 * 128 + 128 * 128 * 64;  // 1,835,008
constexpr int64_t kFramePixels = 256 * 256 * 3;
constexpr int64_t kSupportElements = 49 * (256 + 128 + 64);
constexpr int64_t kCorrelationRow = locotrack::kCorrPaddedRow;  // 7^4 per level, rows padded to a multiple of 8
constexpr int64_t kEncoded = 3 * 256;
// Live activations of the backbone per frame: measured peak of the ResNet forward (stem output, block input,
// normalised copy, two conv outputs, residual sum at 128x128x64 = 1 M elements each, and the smaller groups).
constexpr int64_t kBackboneElementsPerFrame = 12 * 1024 * 1024;
// The eager path materialises the 7x7xC neighbourhoods of the three levels (49 x 448 per (q, t)), the einsum's
// permuted copy and its output, all float32.
constexpr int64_t kEagerNeighbourhoodBytes = 3 * 49 * 448 * 4;
// Eager initialisation: cost volumes, the upsampled plane, the stacked copy, conv output, heatmap and the
// soft-argmax temporaries over 64x64 cells, ~16 float32 planes per (q, t).
constexpr int64_t kEagerInitBytesPerQueryFrame = 16 * 4096 * 4;

int64_t parameter_count(ModelSize size) { return size == ModelSize::small ? 8'236'133 : 11'519'717; }
int transformer_dim(ModelSize size) { return size == ModelSize::small ? 256 : 384; }

double gib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

}  // namespace

Status TrackerMemoryInput::check() const {
  if (frames <= 0 || frames > 1'000'000) return invalid_argument(fmt::format("memory plan: {} frames", frames));
  if (points < 0 || points > 10'000'000) return invalid_argument(fmt::format("memory plan: {} points", points));
  if (compute_dtype_bytes != 2 && compute_dtype_bytes != 4) {
    return invalid_argument(fmt::format("memory plan: element size {} (2 or 4)", compute_dtype_bytes));
  }
  if (budget_bytes <= 0) return invalid_argument("memory plan: the budget must be positive");
  if (requested_chunk < 0 || max_chunk <= 0 || max_backbone_frames <= 0 || init_queries_per_pass <= 0) {
    return invalid_argument("memory plan: chunk, backbone frames and init pass must be positive");
  }
  if (source_width <= 0 || source_height <= 0) return invalid_argument("memory plan: empty source frames");
  if (reserve_bytes < 0 || extra_bytes < 0) return invalid_argument("memory plan: negative reserve");
  return {};
}

int64_t chunk_memory_bytes(const TrackerMemoryInput& input, int chunk) {
  const int64_t e = input.compute_dtype_bytes;
  const int64_t frames = input.frames;
  const int64_t dim = transformer_dim(input.model_size);
  const int64_t heads = dim / 64;
  // Per (query, frame): correlations of the three levels, CMDTop outputs, mixer input and relative-motion
  // features, ~12 D of hidden states (residual stream, LN outputs, q/k/v, attention output) and the 4 D MLP
  // twice (linear output and GELU), the float32 state (tracks, logits, update, probabilities).
  int64_t per_query_frame =
      e * (3 * kCorrelationRow + kEncoded + locotrack::kMixerInputChannels + 84 + 12 * dim + 8 * dim) + 4 * 16;
  if (input.attention_materialised) per_query_frame += 2 * heads * frames * e;
  if (!input.fused) per_query_frame += kEagerNeighbourhoodBytes;
  const int64_t pass = std::min<int64_t>(chunk, input.init_queries_per_pass);
  const int64_t init_bytes = input.fused ? pass * frames * (32 * 32 + 64 * 64) * e
                                         : static_cast<int64_t>(chunk) * frames * kEagerInitBytesPerQueryFrame;
  return static_cast<int64_t>(chunk) * frames * per_query_frame + std::max<int64_t>(init_bytes, 0);
}

int64_t prepare_memory_bytes_per_frame(const TrackerMemoryInput& input) {
  if (input.low_memory_prepare) return kFramePixels * 4 * 2;  // the model-size float frame (and its upload)
  // The uint8 frame, its float copy, the normalisation's temporary and the channels-first planes, at native size.
  return static_cast<int64_t>(input.source_width) * input.source_height * 3 * (1 + 12);
}

int64_t backbone_memory_bytes(const TrackerMemoryInput& input, int frames) {
  // Low-memory preparation reads two source rows per output row: 512 rows of one frame, uint8 and float.
  const int64_t rows = input.low_memory_prepare ? int64_t{2} * 256 * input.source_width * 3 * (1 + 4 + 4) : 0;
  return static_cast<int64_t>(frames) *
             (kBackboneElementsPerFrame * input.compute_dtype_bytes + prepare_memory_bytes_per_frame(input)) +
         rows;
}

int64_t decoder_memory_bytes(int width, int height, int decoder_threads) {
  const int64_t pixels = static_cast<int64_t>(std::max(width, 0)) * std::max(height, 0);
  return pixels * 3 / 2 * (4 + std::max(decoder_threads, 1)) + pixels * 3;
}

std::string TrackerMemoryPlan::summary() const {
  return fmt::format(
      "weights {:.2f} GiB + frames {:.2f} GiB + feature grids {:.2f} GiB + query features {:.2f} GiB + "
      "max(backbone of {} frames {:.2f} GiB, chunk of {} queries {:.2f} GiB) + reserve {:.2f} GiB{} = "
      "{:.2f} GiB of a {:.2f} GiB budget ({} chunks)",
      gib(weights_bytes), gib(frames_bytes), gib(grids_bytes), gib(queries_bytes), backbone_frames, gib(backbone_bytes),
      query_chunk, gib(chunk_bytes), gib(reserve_bytes),
      extra_bytes > 0 ? fmt::format(" + decoding {:.2f} GiB", gib(extra_bytes)) : std::string(), gib(peak_bytes),
      gib(budget_bytes), chunk_count);
}

Expected<TrackerMemoryPlan> plan_tracker_memory(const TrackerMemoryInput& input) {
  TRACKSCOPE_RETURN_IF_ERROR(input.check());
  const int64_t e = input.compute_dtype_bytes;
  TrackerMemoryPlan plan;
  plan.budget_bytes = input.budget_bytes;
  plan.reserve_bytes = input.reserve_bytes;
  plan.extra_bytes = input.extra_bytes;
  plan.weights_bytes = parameter_count(input.model_size) * (4 + (e == 4 ? 0 : e));
  plan.frames_bytes = static_cast<int64_t>(input.frames) * kFramePixels * e;
  plan.grids_bytes = static_cast<int64_t>(input.frames) * kGridElementsPerFrame * e;
  plan.queries_bytes = static_cast<int64_t>(input.points) * kSupportElements * e +
                       std::min<int64_t>(input.points, 1024) * 49 * 256 * 4 * 6;
  const int64_t fixed = plan.weights_bytes + plan.frames_bytes + plan.grids_bytes + plan.queries_bytes +
                        plan.reserve_bytes + plan.extra_bytes;
  const int64_t available = input.budget_bytes - fixed;
  const int64_t minimum_chunk = input.points > 0 ? chunk_memory_bytes(input, 1) : 0;
  const int64_t minimum = std::max(backbone_memory_bytes(input, 1), minimum_chunk);
  if (available < minimum) {
    return out_of_memory(fmt::format(
        "tracking {} points over {} frames needs at least {:.2f} GiB (feature grids alone {:.2f} GiB{}), more than "
        "the {:.2f} GiB memory budget: track fewer frames at a time (a shorter frame range), use bf16 or fp16 "
        "(half the grid memory), or raise the budget",
        input.points, input.frames, gib(fixed + minimum), gib(plan.grids_bytes),
        input.extra_bytes > 0 ? fmt::format(", decoding {}x{} frames {:.2f} GiB", input.source_width,
                                            input.source_height, gib(input.extra_bytes))
                              : std::string(),
        gib(input.budget_bytes)));
  }
  plan.backbone_frames = std::min(input.max_backbone_frames, input.frames);
  while (plan.backbone_frames > 1 && backbone_memory_bytes(input, plan.backbone_frames) > available) {
    --plan.backbone_frames;
  }
  plan.backbone_bytes = backbone_memory_bytes(input, plan.backbone_frames);
  if (input.points > 0) {
    const int wanted = input.requested_chunk > 0 ? input.requested_chunk : input.max_chunk;
    int chunk = std::max(1, std::min(wanted, input.points));
    // Largest fitting chunk by bisection: chunk_memory_bytes grows with the chunk.
    if (chunk_memory_bytes(input, chunk) > available) {
      int low = 1, high = chunk;
      while (low < high) {
        const int middle = low + (high - low + 1) / 2;
        if (chunk_memory_bytes(input, middle) <= available)
          low = middle;
        else
          high = middle - 1;
      }
      chunk = low;
    }
    plan.query_chunk = chunk;
    plan.chunk_count = (input.points + chunk - 1) / chunk;
    plan.chunk_bytes = chunk_memory_bytes(input, chunk);
  }
  plan.peak_bytes = fixed + std::max(plan.backbone_bytes, plan.chunk_bytes);
  return plan;
}

// ---------------------------------------------------------------------------------------------------------
// Long videos.

namespace {

constexpr int64_t kEncodedChannels = 3 * 256;       // CMDTop outputs of the three levels per (query, frame)
constexpr int64_t kStatePerQueryFrame = 4 * 4 * 3;  // x, y, occlusion, distance in float32: current, next, staging
constexpr int kMaxAutomaticWindow = 1024;
constexpr int kMinWindow = 16;
constexpr int64_t kDiskMargin = int64_t{1} << 30;  // left free on the cache's disk

int default_overlap(int window) { return std::clamp(window / 16, 8, 64); }

std::string mode_name(LongVideoMode mode) {
  switch (mode) {
    case LongVideoMode::automatic: return "automatic";
    case LongVideoMode::whole_clip: return "whole clip";
    case LongVideoMode::exact_streaming: return "exact streaming";
    case LongVideoMode::windowed: return "windowed";
  }
  return "?";
}

// The sizes of an exact-streaming run and the bytes they take on each side.
struct StreamingSizes {
  int frame_block = 1, block_chunk = 1, mixer_chunk = 1, per_pass = 1, backbone_frames = 1;
};

struct StreamingBytes {
  int64_t device_fixed = 0;  // weights, query features, reserve
  int64_t features = 0;      // the feature pass: a backbone call and its grids
  int64_t block = 0;         // a streamed block and its initialisation / correlation work
  int64_t mixer = 0;         // the long-sequence transformer
  int64_t encoded = 0;       // host: encoded correlations of one pass's queries
  int64_t state = 0;         // host: tracks and logits of every query
  int64_t staging = 0;       // host: pinned staging of two blocks (CUDA)
  int64_t host_fixed = 0;    // host: the decoder
  int64_t device() const { return device_fixed + std::max({features, block, mixer}); }
};

StreamingBytes streaming_bytes(const RunPlanInput& in, const TrackerMemoryInput& t, const StreamingSizes& z) {
  const int64_t e = t.compute_dtype_bytes;
  StreamingBytes b;
  b.device_fixed = parameter_count(t.model_size) * (4 + (e == 4 ? 0 : e)) +
                   static_cast<int64_t>(t.points) * kSupportElements * e +
                   std::min<int64_t>(t.points, 1024) * 49 * 256 * 4 * 6 + t.reserve_bytes;
  b.features = backbone_memory_bytes(t, z.backbone_frames) + z.backbone_frames * kGridElementsPerFrame * e;
  b.block = int64_t{z.frame_block} * kGridElementsPerFrame * e + streaming_block_bytes(t, z.frame_block, z.block_chunk);
  b.mixer = long_mixer_bytes(t, z.mixer_chunk, in.mixer_block);
  b.encoded = int64_t{z.per_pass} * t.frames * kEncodedChannels * e;
  b.state = int64_t{t.points} * t.frames * kStatePerQueryFrame;
  b.staging = in.device_is_host ? 0 : 2 * int64_t{z.frame_block} * kGridElementsPerFrame * e;
  b.host_fixed =
      in.decoder_threads >= 0 ? decoder_memory_bytes(t.source_width, t.source_height, in.decoder_threads) : 0;
  return b;
}

// Host bytes besides the cache (on the CPU: everything, the device side included).
int64_t streaming_host_bytes(const RunPlanInput& in, const StreamingBytes& b) {
  const int64_t host = b.encoded + b.state + b.staging + b.host_fixed;
  return in.device_is_host ? host + b.device() : host;
}

}  // namespace

const char* to_string(LongVideoMode mode) {
  switch (mode) {
    case LongVideoMode::automatic: return "auto";
    case LongVideoMode::whole_clip: return "whole";
    case LongVideoMode::exact_streaming: return "exact";
    case LongVideoMode::windowed: return "windowed";
  }
  return "?";
}

Expected<LongVideoMode> parse_long_video_mode(std::string_view text) {
  if (text == "auto" || text == "automatic") return LongVideoMode::automatic;
  if (text == "whole" || text == "whole_clip") return LongVideoMode::whole_clip;
  if (text == "exact" || text == "exact_streaming" || text == "streaming") return LongVideoMode::exact_streaming;
  if (text == "windowed") return LongVideoMode::windowed;
  return invalid_argument(fmt::format("unknown long-video mode '{}': use auto, whole, exact or windowed", text));
}

const char* to_string(CacheLocation location) {
  switch (location) {
    case CacheLocation::none: return "none";
    case CacheLocation::host: return "host memory";
    case CacheLocation::file: return "cache file";
  }
  return "?";
}

Status RunPlanInput::check() const {
  TRACKSCOPE_RETURN_IF_ERROR(tracker.check());
  if (!device_is_host && host_budget_bytes <= 0)
    return invalid_argument("memory plan: the host budget must be positive");
  if (window_frames < 0 || window_overlap < 0) return invalid_argument("memory plan: negative window");
  if (window_frames > 0 && window_frames < kMinWindow) {
    return invalid_argument(
        fmt::format("windows of {} frames are too short: use at least {}", window_frames, kMinWindow));
  }
  if (window_frames > 0 && window_overlap >= window_frames / 2) {
    return invalid_argument(
        fmt::format("an overlap of {} frames needs windows longer than {} frames", window_overlap, 2 * window_overlap));
  }
  if (max_stream_block <= 0 || mixer_block <= 0) return invalid_argument("memory plan: empty streaming blocks");
  return {};
}

int64_t streaming_block_bytes(const TrackerMemoryInput& input, int frame_block, int query_chunk) {
  TrackerMemoryInput block = input;
  block.frames = frame_block;
  block.attention_materialised = false;  // the transformer does not run on blocks
  return chunk_memory_bytes(block, query_chunk) + int64_t{query_chunk} * frame_block * kEncodedChannels * 4;
}

int64_t long_mixer_bytes(const TrackerMemoryInput& input, int queries, int mixer_block) {
  const int64_t e = input.compute_dtype_bytes;
  const int64_t dim = transformer_dim(input.model_size);
  const int64_t frames = input.frames;
  // Over the whole time axis: the residual stream, keys and values, the update; per block of frames: the input,
  // queries, normalised copies, the MLP's hidden layer (twice), and one head's scores and probabilities against
  // at most every frame.
  const int64_t whole = int64_t{queries} * frames * (3 * dim * e + 4 * 4);
  const int64_t block =
      int64_t{queries} * mixer_block * ((locotrack::kMixerInputChannels + 8 * dim + 2 * 4 * dim) * e + 2 * frames * 4);
  return whole + block;
}

int64_t whole_axis_mixer_bytes(const TrackerMemoryInput& input, int queries) {
  const int64_t e = input.compute_dtype_bytes;
  const int64_t dim = transformer_dim(input.model_size);
  const int64_t heads = dim / 64;
  const int64_t frames = input.frames;
  // Per (query, frame): the input, ~12 D of hidden states and the 4 D MLP twice, every head's scores and
  // probabilities against every frame, the float32 state (as chunk_memory_bytes counts the transformer).
  return int64_t{queries} * frames *
         (e * (locotrack::kMixerInputChannels + 12 * dim + 8 * dim + 2 * heads * frames) + 4 * 16);
}

std::string RunPlan::summary() const {
  std::string figures;
  switch (mode) {
    case LongVideoMode::whole_clip: figures = whole.summary(); break;
    case LongVideoMode::exact_streaming:
      figures = fmt::format(
          "feature grids {:.2f} GiB in {}, streamed in blocks of {} frames; {} queries per block call, {} per "
          "transformer call ({}); {} group{} of queries, each reading the cache 5 times; peak {:.2f} GiB{} of a "
          "{:.2f} GiB budget",
          gib(streaming.cache_bytes), to_string(streaming.cache), streaming.frame_block, streaming.block_query_chunk,
          streaming.mixer_query_chunk,
          streaming.whole_axis_mixer ? std::string("the whole time axis at once")
                                     : fmt::format("in blocks of {} frames", streaming.mixer_block),
          streaming.passes, streaming.passes == 1 ? "" : "s", gib(streaming.device_peak_bytes),
          streaming.host_peak_bytes > 0 ? fmt::format(" (host {:.2f} GiB)", gib(streaming.host_peak_bytes))
                                        : std::string(),
          gib(budget_bytes));
      break;
    case LongVideoMode::windowed:
      figures = fmt::format("{} window{} of {} frames overlapping by {}; per window: {}", windows.count,
                            windows.count == 1 ? "" : "s", windows.frames, windows.overlap, windows.window.summary());
      break;
    case LongVideoMode::automatic: break;
  }
  return fmt::format("{}{}; {}", headline(), low_memory_prepare ? "; large frames are resized one at a time" : "",
                     figures);
}

std::string RunPlan::headline() const {
  return fmt::format("{} ({}): {}", mode_name(mode), forced ? "asked for" : "chosen by the memory plan", reason);
}

Expected<RunPlan> plan_run(const RunPlanInput& in) {
  TRACKSCOPE_RETURN_IF_ERROR(in.check());
  RunPlan plan;
  plan.budget_bytes = in.tracker.budget_bytes;
  plan.host_budget_bytes = in.device_is_host ? in.tracker.budget_bytes : in.host_budget_bytes;
  plan.forced = in.requested != LongVideoMode::automatic;
  TrackerMemoryInput base = in.tracker;
  plan.decoder_bytes = decoder_memory_bytes(base.source_width, base.source_height, in.decoder_threads);
  // Frames whose float copies at native size would take more than an eighth of the budget are prepared one at a
  // time at model size (the decoded frames then stay inside the plan whatever their size).
  if (!base.low_memory_prepare) {
    base.low_memory_prepare = prepare_memory_bytes_per_frame(base) > base.budget_bytes / 8;
  }
  plan.low_memory_prepare = base.low_memory_prepare;
  if (in.device_is_host) base.extra_bytes += plan.decoder_bytes;
  const int64_t e = base.compute_dtype_bytes;
  const int64_t host_decode = plan.decoder_bytes + int64_t{base.max_backbone_frames} * base.source_width *
                                                       base.source_height * 3;  // the pinned upload batch
  const bool host_decode_fits = in.device_is_host || host_decode <= in.host_budget_bytes;

  // 1. The whole clip.
  Expected<TrackerMemoryPlan> whole = plan_tracker_memory(base);
  std::string whole_failure;
  if (whole && !host_decode_fits) {
    whole =
        out_of_memory(fmt::format("decoding {}x{} frames needs {:.2f} GiB of host memory, more than the {:.2f} GiB "
                                  "host budget",
                                  base.source_width, base.source_height, gib(host_decode), gib(in.host_budget_bytes)));
  }
  // Automatically, a whole-clip run must also track a useful number of queries at a time (a long clip's chunk
  // memory grows with its frames); asked for, any chunk will do.
  const int useful_chunk = std::min({base.points, 8, base.requested_chunk > 0 ? base.requested_chunk : 8});
  const int64_t whole_grids = int64_t{base.frames} * kGridElementsPerFrame * e;
  std::string whole_why = fmt::format("the whole clip does not fit the {:.2f} GiB budget (feature grids {:.2f} GiB)",
                                      gib(base.budget_bytes), gib(whole_grids));
  if (whole && in.requested == LongVideoMode::automatic && whole->query_chunk < useful_chunk) {
    whole_why = fmt::format(
        "the whole clip would track only {} quer{} at a time in the {:.2f} GiB budget (feature "
        "grids {:.2f} GiB)",
        whole->query_chunk, whole->query_chunk == 1 ? "y" : "ies", gib(base.budget_bytes), gib(whole_grids));
    whole = out_of_memory(whole_why);
  }
  if (!whole) whole_failure = whole.status().message();
  if (in.requested == LongVideoMode::whole_clip || (in.requested == LongVideoMode::automatic && whole)) {
    if (!whole) {
      return out_of_memory(whole_failure +
                           " (exact streaming or windowed tracking would run it: choose auto, "
                           "exact or windowed)");
    }
    plan.mode = LongVideoMode::whole_clip;
    plan.whole = *whole;
    plan.reason = plan.forced ? "the whole clip, as asked"
                              : fmt::format("the whole clip fits: {:.2f} GiB of the {:.2f} GiB budget",
                                            gib(whole->peak_bytes), gib(whole->budget_bytes));
    return plan;
  }

  // 2. Exact streaming: size the pieces, halving the one that takes the most until everything fits.
  std::string exact_failure;
  if (in.requested != LongVideoMode::windowed) {
    StreamingSizes z;
    z.frame_block = std::min(in.max_stream_block, base.frames);
    z.block_chunk =
        std::max(1, std::min(base.points, base.requested_chunk > 0 ? base.requested_chunk : base.max_chunk));
    z.mixer_chunk = std::max(1, std::min(base.points, base.requested_chunk > 0 ? base.requested_chunk : 1024));
    z.per_pass = std::max(1, base.points);
    z.backbone_frames = std::min(base.max_backbone_frames, base.frames);
    const int64_t cache_bytes = int64_t{base.frames} * kGridElementsPerFrame * e;
    const int64_t host_room = in.device_is_host ? in.tracker.budget_bytes : in.host_budget_bytes;
    StreamingBytes b;
    bool fits = false;
    for (;;) {
      b = streaming_bytes(in, base, z);
      const bool device_ok = in.device_is_host || b.device() <= base.budget_bytes;
      const bool host_ok = streaming_host_bytes(in, b) <= host_room;
      if (device_ok && host_ok) {
        fits = true;
        break;
      }
      // The largest reducible term gives way first (the encoded store last: each halving adds passes).
      struct Option {
        int64_t bytes;
        int* size;
      };
      std::vector<Option> options;
      if (!device_ok || in.device_is_host) {
        if (z.mixer_chunk > 1) options.push_back({b.mixer, &z.mixer_chunk});
        if (z.block_chunk > 1) options.push_back({b.block, &z.block_chunk});
        if (z.frame_block > 1) options.push_back({b.block, &z.frame_block});
        if (z.backbone_frames > 1) options.push_back({b.features, &z.backbone_frames});
      }
      if (!host_ok && z.per_pass > 1) options.push_back({b.encoded / 4, &z.per_pass});
      if (!host_ok && !in.device_is_host && z.frame_block > 1) options.push_back({b.staging, &z.frame_block});
      if (options.empty()) break;
      const auto largest = std::max_element(options.begin(), options.end(),
                                            [](const Option& a, const Option& c) { return a.bytes < c.bytes; });
      *largest->size = std::max(1, *largest->size / 2);
    }
    if (!fits) {
      exact_failure = fmt::format(
          "exact streaming needs {:.2f} GiB{} even with the smallest blocks, more than the budget",
          gib(in.device_is_host ? streaming_host_bytes(in, b) : b.device()),
          in.device_is_host
              ? ""
              : fmt::format(" of device memory and {:.2f} GiB of host memory", gib(streaming_host_bytes(in, b))));
    } else {
      StreamingPlan& s = plan.streaming;
      s.cache_bytes = cache_bytes;
      s.frame_block = z.frame_block;
      s.backbone_frames = z.backbone_frames;
      s.mixer_block = in.mixer_block;
      s.block_query_chunk = z.block_chunk;
      s.mixer_query_chunk = z.mixer_chunk;
      s.queries_per_pass = z.per_pass;
      s.passes = base.points > 0 ? (base.points + z.per_pass - 1) / z.per_pass : 0;
      s.encoded_bytes = b.encoded;
      int64_t host_needs = streaming_host_bytes(in, b);
      const bool disk_fits = in.disk_free_bytes >= cache_bytes + kDiskMargin;
      // NOLINTNEXTLINE(bugprone-branch-clone): the file first when preferred, else after host memory was tried
      if (in.prefer_cache_file && disk_fits) {
        s.cache = CacheLocation::file;
      } else if (host_needs + cache_bytes <= host_room) {
        s.cache = CacheLocation::host;
      } else if (disk_fits) {
        s.cache = CacheLocation::file;
      } else {
        exact_failure = fmt::format(
            "exact streaming keeps the feature grids of every frame ({:.2f} GiB), which fit neither in memory ({:.2f} "
            "GiB left of the budget) nor on disk ({})",
            gib(cache_bytes), gib(std::max<int64_t>(0, host_room - host_needs)),
            in.disk_free_bytes < 0 ? "no cache directory"
                                   : fmt::format("{:.2f} GiB free in {}", gib(in.disk_free_bytes), in.cache_dir));
      }
      if (exact_failure.empty() && in.whole_axis_mixer) {
        // The blocked transformer certifies each block's attention reach, ~10x the time of the whole-clip run's
        // (fused) transformer on a short clip: where the whole time axis fits in its place (and the cache stays
        // where it is), run that instead.
        StreamingBytes whole_axis = b;
        whole_axis.mixer = whole_axis_mixer_bytes(base, z.mixer_chunk);
        const int64_t cache_in_memory = s.cache == CacheLocation::host ? cache_bytes : 0;
        s.whole_axis_mixer = in.device_is_host ? streaming_host_bytes(in, whole_axis) + cache_in_memory <= host_room
                                               : whole_axis.device() <= base.budget_bytes;
        if (s.whole_axis_mixer) {
          b = whole_axis;
          host_needs = streaming_host_bytes(in, b);
        }
      }
      if (exact_failure.empty()) {
        s.device_peak_bytes =
            in.device_is_host ? host_needs + (s.cache == CacheLocation::host ? cache_bytes : 0) : b.device();
        s.host_peak_bytes = in.device_is_host ? 0 : host_needs + (s.cache == CacheLocation::host ? cache_bytes : 0);
        plan.mode = LongVideoMode::exact_streaming;
        const std::string where =
            s.cache == CacheLocation::host
                ? std::string("they fit in host memory")
                : fmt::format("they go to a cache file in {} ({:.2f} GiB free)", in.cache_dir, gib(in.disk_free_bytes));
        plan.reason = plan.forced
                          ? fmt::format("exact streaming, as asked: the feature grids ({:.2f} GiB) are streamed; {}",
                                        gib(cache_bytes), where)
                          : fmt::format("{}; {}", whole_why, where);
        return plan;
      }
    }
    if (in.requested == LongVideoMode::exact_streaming) {
      return out_of_memory(exact_failure +
                           ": raise the budget, give a cache directory with room "
                           "(--cache-dir), or use windowed mode (approximate, any length)");
    }
  }

  // 3. Windowed.
  const int cap = in.window_frames > 0 ? in.window_frames : std::min(kMaxAutomaticWindow, base.frames);
  auto window_plan = [&](int frames, int overlap) -> Expected<WindowPlan> {
    TrackerMemoryInput w = base;
    w.frames = std::min(frames, base.frames);
    WindowPlan p;
    p.frames = w.frames;
    p.overlap = w.frames >= base.frames ? 0 : overlap;
    // Decoded frames of the overlap are kept for the next window (at most 1/16 of the budget).
    const int64_t frame_bytes = int64_t{base.source_width} * base.source_height * 3;
    const int64_t kept = std::min<int64_t>(int64_t{p.overlap} * frame_bytes, base.budget_bytes / 16);
    p.frame_cache_bytes = kept - kept % std::max<int64_t>(frame_bytes, 1);
    if (in.device_is_host) w.extra_bytes += p.frame_cache_bytes;
    Expected<TrackerMemoryPlan> wp = plan_tracker_memory(w);
    if (!wp) return wp.status();
    // A usable window tracks a reasonable number of queries at a time.
    if (in.window_frames == 0 && wp->query_chunk < useful_chunk && w.frames > kMinWindow) {
      return out_of_memory("chunk too small");
    }
    p.window = *wp;
    p.count = p.overlap == 0 ? 1 : 1 + (base.frames - p.frames + (p.frames - p.overlap) - 1) / (p.frames - p.overlap);
    return p;
  };
  Expected<WindowPlan> windows = out_of_memory("no window fits");
  if (in.window_frames > 0) {
    windows = window_plan(in.window_frames, in.window_overlap > 0 ? in.window_overlap : default_overlap(cap));
  } else {
    // The longest window that fits (bisection: a window's bytes grow with its frames).
    int low = std::min(kMinWindow, base.frames), high = cap;
    auto overlap_of = [&](int frames) {
      return in.window_overlap > 0 ? std::min(in.window_overlap, frames / 2 - 1) : default_overlap(frames);
    };
    if (window_plan(low, overlap_of(low))) {
      while (low < high) {
        const int middle = low + (high - low + 1) / 2;
        if (window_plan(middle, overlap_of(middle)))
          low = middle;
        else
          high = middle - 1;
      }
      windows = window_plan(low, overlap_of(low));
    }
  }
  if (!windows) {
    return out_of_memory(fmt::format(
        "tracking {} points over {} frames does not fit the {:.2f} GiB budget in any mode: the whole clip ({}); {}; "
        "and even windows of {} frames do not fit ({}). Raise the budget or track fewer points at a time",
        base.points, base.frames, gib(base.budget_bytes), whole_failure,
        exact_failure.empty() ? "exact streaming was not tried" : exact_failure,
        in.window_frames > 0 ? in.window_frames : kMinWindow, windows.status().message()));
  }
  plan.mode = LongVideoMode::windowed;
  plan.windows = *windows;
  if (plan.forced) {
    plan.reason = "windowed, as asked (approximate: the track is handed from one window to the next)";
  } else {
    plan.reason = fmt::format(
        "{} and {}: windowed tracking (approximate; for exact results give a cache directory with {:.2f} GiB free: "
        "--cache-dir)",
        whole_why, exact_failure.empty() ? std::string("exact streaming was not possible") : exact_failure,
        gib(int64_t{base.frames} * kGridElementsPerFrame * e + kDiskMargin));
  }
  return plan;
}

}  // namespace trackscope::core
