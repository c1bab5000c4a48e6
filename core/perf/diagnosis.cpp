#include "core/perf/diagnosis.h"

#include <fmt/format.h>

#include <algorithm>

namespace trackscope::core {

namespace {

// Per-launch cost assumed when a profile counts kernel launches (CUDA launch latency on a fast host).
constexpr double kLaunchOverheadMs = 0.005;
constexpr int kManyHostSyncs = 100;

struct Side {
  char name = 'A';
  std::string label;
  const Profile* profile = nullptr;
  const ProfileCase* run = nullptr;
  const StageStats* stage = nullptr;  // may be null
  DevicePeaks peaks;
  int capability = 0;
};

std::string label_of(const RunRef& ref, char side) {
  if (!ref.label.empty()) return ref.label;
  return fmt::format("{}: {} {}", side, ref.profile->device.name, ref.run->name);
}

std::string capability_text(int capability) { return fmt::format("{}.{}", capability / 10, capability % 10); }

const char* work_noun(StageWork work) { return work == StageWork::convolution ? "convolutions" : "matrix products"; }

std::string tf32_reason(const RunConfig& config, int capability) {
  if (capability > 0 && capability < 80)
    return fmt::format("compute capability {} has no TF32", capability_text(capability));
  if (config.precision == Precision::bf16 || config.precision == Precision::fp16)
    return fmt::format("it ran {}", to_string(config.precision));
  if (capability == 0) return "it ran on the CPU";
  return "its TF32 flags were off";
}

void rule_precision_emulation(const Side& slow, StageWork work, std::vector<Cause>& causes) {
  if (slow.run->config.precision != Precision::bf16 || slow.capability == 0 || slow.capability >= 80) return;
  if (work != StageWork::convolution && work != StageWork::matrix) return;
  causes.push_back(
      {CauseKind::precision_emulation, slow.name,
       fmt::format("{} ran bf16 on compute capability {} ({}), which has no bf16 tensor cores: the {} are "
                   "emulated at about {:.1f} TFLOP/s against the {:.0f} TFLOP/s of its 16-bit tensor cores; "
                   "use fp16 or fp32 on this card",
                   slow.label, capability_text(slow.capability), slow.profile->device.name, work_noun(work),
                   slow.peaks.effective_tflops(Precision::bf16), slow.peaks.nominal_tflops(Precision::bf16))});
}

void rule_tf32_one_side(const Side& slow, const Side& fast, StageWork work, const StageComparison& row,
                        std::vector<Cause>& causes) {
  if (!uses_tf32(work, fast.run->config, fast.capability) || uses_tf32(work, slow.run->config, slow.capability)) return;
  std::string text = fmt::format(
      "{} ran this stage's {} on TF32 tensor cores ({} {:.0f} TFLOP/s against {:.0f} FP32) and {} did not ({})",
      fast.label, work_noun(work), fast.profile->device.name, fast.peaks.effective_tflops(Precision::tf32),
      fast.peaks.fp32_tflops, slow.label, tf32_reason(slow.run->config, slow.capability));
  if (row.precision_aware_ratio && row.predicted_ratio) {
    text += fmt::format(": the precision-aware prediction is {:.1f}x instead of {:.1f}x", *row.precision_aware_ratio,
                        *row.predicted_ratio);
  }
  causes.push_back(
      {CauseKind::tf32_one_side, fast.name, text + "; compare like for like by setting the TF32 flags on both sides"});
}

void rule_launch_bound(const Side& slow, const ComparisonOptions& options, std::vector<Cause>& causes) {
  const StageStats& stage = *slow.stage;
  const double ms = stage.stats.median_ms;
  const int executions = stage.executions_per_run;
  const std::optional<Floor> floor = stage_floor(stage, slow.run->config, slow.profile->device, PeakBasis::effective);
  std::string text;
  if (executions > 0 && ms / executions < options.launch_tiny_execution_ms) {
    text = fmt::format("{} spends {:.0f} us per execution ({} per run): launch and synchronisation overhead dominate",
                       slow.label, ms / executions * 1e3, executions);
  } else if (floor && floor->ms() > 0.0 && ms > options.launch_far_from_floor * floor->ms() &&
             executions >= options.launch_many_executions) {
    text = fmt::format(
        "{} runs {:.0f}x above its floor ({:.2f} ms) with {} executions per run: launch-, sync- or "
        "latency-bound (many small kernels)",
        slow.label, ms / floor->ms(), floor->ms(), executions);
  }
  if (stage.kernel_launches_per_run && *stage.kernel_launches_per_run * kLaunchOverheadMs >= 0.3 * ms) {
    text += fmt::format("{}{} kernel launches per run cost about {:.1f} ms of launch latency alone",
                        text.empty() ? slow.label + ": " : "; ", *stage.kernel_launches_per_run,
                        *stage.kernel_launches_per_run * kLaunchOverheadMs);
  }
  if (!text.empty() && slow.run->host_syncs_per_run && *slow.run->host_syncs_per_run >= kManyHostSyncs) {
    text += fmt::format("; the run makes {} host syncs", *slow.run->host_syncs_per_run);
  }
  if (!text.empty()) causes.push_back({CauseKind::launch_bound, slow.name, text});
}

void rule_memory_bound(const Side& slow, const Side& fast, std::vector<Cause>& causes) {
  const StageStats& stage = *slow.stage;
  const std::optional<Floor> floor = stage_floor(stage, slow.run->config, slow.profile->device, PeakBasis::effective);
  if (!floor || stage.bytes <= 0.0 || slow.peaks.bandwidth_gbps <= 0.0) return;
  const double achieved_gbps = stage.stats.median_ms > 0.0 ? stage.bytes / (stage.stats.median_ms / 1e3) / 1e9 : 0.0;
  const double share = achieved_gbps / slow.peaks.bandwidth_gbps;
  if (floor->bound() != Bound::memory && share < 0.5) return;
  std::string text = fmt::format(
      "memory-bound on {}: {:.2f} GB at {:.0f} GB/s is a {:.2f} ms floor; achieved {:.0f} GB/s "
      "({:.0f}% of peak)",
      slow.label, stage.bytes / 1e9, slow.peaks.bandwidth_gbps, floor->memory_ms, achieved_gbps, share * 100);
  if (slow.peaks.l2_mb > 0.0 && fast.peaks.l2_mb >= 4 * slow.peaks.l2_mb) {
    text += fmt::format("; its L2 is {:.0f} MB against {:.0f} MB: gathers lose their cache locality", slow.peaks.l2_mb,
                        fast.peaks.l2_mb);
  }
  causes.push_back({CauseKind::memory_bound, slow.name, text});
}

void rule_clocks_throttled(const Side& slow, const ComparisonOptions& options, std::vector<Cause>& causes) {
  if (!slow.run->telemetry) return;
  const TelemetrySummary& t = *slow.run->telemetry;
  double max_mhz = t.sm_clock_max_mhz.value_or(0.0);
  if (max_mhz <= 0.0) max_mhz = slow.profile->device.sm_clock_max_mhz;
  if (max_mhz <= 0.0) max_mhz = slow.peaks.boost_clock_mhz;
  std::vector<std::string> parts;
  if (t.sm_clock_median_mhz && max_mhz > 0.0 && *t.sm_clock_median_mhz < options.throttled_clock_fraction * max_mhz) {
    parts.push_back(fmt::format("median SM clock {:.0f} MHz is {:.0f}% of its {:.0f} MHz maximum",
                                *t.sm_clock_median_mhz, 100 * *t.sm_clock_median_mhz / max_mhz, max_mhz));
  }
  const uint64_t limiting = t.throttle_reasons_seen & throttle_reason::performance_limiting;
  if (limiting) {
    std::string names;
    for (const std::string& n : decode_throttle_reasons(limiting)) names += (names.empty() ? "" : ", ") + n;
    parts.push_back("throttle reasons seen: " + names);
  }
  if (t.temperature_max_c && *t.temperature_max_c >= 85.0)
    parts.push_back(fmt::format("up to {:.0f} C", *t.temperature_max_c));
  if (parts.empty()) return;
  std::string text = slow.label + " ran with throttled clocks: ";
  for (size_t i = 0; i < parts.size(); ++i) text += (i ? "; " : "") + parts[i];
  causes.push_back({CauseKind::clocks_throttled, slow.name, text});
}

void rule_cold_start(const Side& slow, const ComparisonOptions& options, std::vector<Cause>& causes) {
  const StageStats& stage = *slow.stage;
  // Only a run known to have had no warm-up (warmup == 0; -1 = not recorded) has the cold run in its statistics.
  if (slow.run->config.warmup != 0 || !stage.warmup_ms.empty()) return;
  const double median = stage.stats.median_ms;
  if (stage.stats.count >= 1 && stage.stats.count <= 2) {
    causes.push_back({CauseKind::cold_start, slow.name,
                      fmt::format("{} has no warm-up and {} repeat(s): its statistics include the cold first run "
                                  "(cuDNN autotuning, lazy CUDA/cuBLAS initialisation, allocator growth)",
                                  slow.label, stage.stats.count)});
  } else if (!stage.repeat_ms.empty() && median > 0.0 && stage.repeat_ms.front() > options.cold_start_factor * median) {
    causes.push_back({CauseKind::cold_start, slow.name,
                      fmt::format("{}'s first repeat took {:.1f} ms, {:.1f}x its median, with no warm-up: a cold start",
                                  slow.label, stage.repeat_ms.front(), stage.repeat_ms.front() / median)});
  }
}

std::optional<double> ratio_of(const std::optional<Floor>& a, const std::optional<Floor>& b) {
  if (!a || !b || a->ms() <= 0.0 || b->ms() <= 0.0) return std::nullopt;
  return b->ms() / a->ms();
}

}  // namespace

const char* to_string(CauseKind kind) {
  switch (kind) {
    case CauseKind::precision_emulation: return "precision emulation";
    case CauseKind::tf32_one_side: return "TF32 on one side only";
    case CauseKind::launch_bound: return "launch/sync-bound";
    case CauseKind::memory_bound: return "memory-bound";
    case CauseKind::clocks_throttled: return "clocks throttled";
    case CauseKind::cold_start: return "cold start";
    case CauseKind::unexplained: return "unexplained";
  }
  return "?";
}

int Comparison::highlighted_count() const {
  return static_cast<int>(
      std::count_if(stages.begin(), stages.end(), [](const StageComparison& s) { return s.highlighted; }));
}

Expected<Comparison> compare_runs(const RunRef& a, const RunRef& b, const ComparisonOptions& options) {
  if (!a.profile || !a.run || !b.profile || !b.run)
    return invalid_argument("a comparison needs a profile and a case on both sides");
  Side sides[2];
  for (int i = 0; i < 2; ++i) {
    const RunRef& ref = i == 0 ? a : b;
    sides[i].name = i == 0 ? 'A' : 'B';
    sides[i].label = label_of(ref, sides[i].name);
    sides[i].profile = ref.profile;
    sides[i].run = ref.run;
    sides[i].peaks = peaks_for_device(ref.profile->device);
    sides[i].capability =
        ref.profile->device.is_cuda() || !ref.profile->device.spec_key.empty() ? sides[i].peaks.compute_capability : 0;
  }
  Comparison result;
  result.a_label = sides[0].label;
  result.b_label = sides[1].label;
  result.warnings = comparison_traps(a, b);

  std::vector<std::string> names;
  for (const StageStats& s : a.run->stages) names.push_back(s.name);
  for (const StageStats& s : b.run->stages) {
    if (!a.run->find_stage(s.name)) names.push_back(s.name);
  }
  double a_known_ms = 0.0, b_predicted_ms = 0.0;
  for (const std::string& name : names) {
    StageComparison row;
    row.stage = name;
    const StageStats* sa = a.run->find_stage(name);
    const StageStats* sb = b.run->find_stage(name);
    if (const std::optional<Stage> stage = stage_from_name(name)) row.work = stage_work(*stage);
    if (sa) row.a_ms = sa->stats.median_ms;
    if (sb) row.b_ms = sb->stats.median_ms;
    if (sa && sb) {
      if (sa->stats.median_ms > 0.0) row.measured_ratio = sb->stats.median_ms / sa->stats.median_ms;
      const auto a_nominal = stage_floor(*sa, a.run->config, a.profile->device, PeakBasis::nominal);
      const auto b_nominal = stage_floor(*sb, b.run->config, b.profile->device, PeakBasis::nominal);
      const auto a_effective = stage_floor(*sa, a.run->config, a.profile->device, PeakBasis::effective);
      const auto b_effective = stage_floor(*sb, b.run->config, b.profile->device, PeakBasis::effective);
      row.predicted_ratio = ratio_of(a_nominal, b_nominal);
      row.precision_aware_ratio = ratio_of(a_effective, b_effective);
      if (a_effective) row.a_bound = a_effective->bound();
      if (b_effective) row.b_bound = b_effective->bound();
      if (row.measured_ratio && row.predicted_ratio) {
        row.excess = *row.measured_ratio / *row.predicted_ratio;
        if (*row.excess > options.highlight_factor || *row.excess < 1.0 / options.highlight_factor) {
          row.highlighted = true;
          row.slow_side = *row.excess > 1.0 ? 'B' : 'A';
          Side slow = sides[row.slow_side == 'A' ? 0 : 1];
          Side fast = sides[row.slow_side == 'A' ? 1 : 0];
          slow.stage = row.slow_side == 'A' ? sa : sb;
          fast.stage = row.slow_side == 'A' ? sb : sa;
          rule_precision_emulation(slow, row.work, row.causes);
          rule_tf32_one_side(slow, fast, row.work, row, row.causes);
          rule_launch_bound(slow, options, row.causes);
          rule_memory_bound(slow, fast, row.causes);
          rule_clocks_throttled(slow, options, row.causes);
          rule_cold_start(slow, options, row.causes);
          if (row.causes.empty()) {
            row.causes.push_back(
                {CauseKind::unexplained, row.slow_side,
                 "no rule matches the recorded data: profile this stage with Nsight Systems on the slow side"});
          }
        }
      }
      a_known_ms += sa->stats.median_ms;
      b_predicted_ms += sa->stats.median_ms * row.predicted_ratio.value_or(1.0);
    }
    result.stages.push_back(std::move(row));
  }
  const double a_wall = a.run->end_to_end.median_ms > 0.0 ? a.run->end_to_end.median_ms : a.run->stage_sum_ms();
  const double b_wall = b.run->end_to_end.median_ms > 0.0 ? b.run->end_to_end.median_ms : b.run->stage_sum_ms();
  if (a_wall > 0.0 && b_wall > 0.0) result.end_to_end_measured_ratio = b_wall / a_wall;
  if (a_wall > 0.0 && a_known_ms > 0.0) {
    result.end_to_end_predicted_ratio = (b_predicted_ms + std::max(a_wall - a_known_ms, 0.0)) / a_wall;
  }
  return result;
}

std::vector<std::string> run_traps(const Profile& profile, const ProfileCase& run) {
  std::vector<std::string> traps;
  const DeviceInfo& device = profile.device;
  const int capability = peaks_for_device(device).compute_capability;
  const RunConfig& c = run.config;
  const bool gpu = device.is_cuda() || !device.spec_key.empty();
  // The support table on the device as the run saw it: a what-if profile names its GPU by spec_key only.
  DeviceInfo as_run = device;
  if (gpu && !device.is_cuda()) as_run.id = DeviceId::cuda(0).to_string();
  as_run.compute_capability_major = capability / 10;
  as_run.compute_capability_minor = capability % 10;
  const SupportLevel level = precision_support(c.precision, as_run, profile.runtime).level;
  if (gpu && c.precision == Precision::bf16 && capability > 0 && level == SupportLevel::emulated) {
    traps.push_back(
        fmt::format("{} (compute capability {}) has no bf16 tensor cores: bf16 is emulated and slower than "
                    "fp32 (docs/locotrack-spec.md §6.1); use fp16 or fp32 on this card",
                    device.name, capability_text(capability)));
  }
  if (c.precision == Precision::tf32 && level == SupportLevel::unsupported) {
    traps.push_back(
        fmt::format("TF32 needs compute capability 8.0 or newer: on {} this run is plain fp32", device.name));
  }
  if (gpu && c.precision == Precision::fp32 && capability >= 80 && (c.tf32_cudnn || c.tf32_matmul)) {
    traps.push_back(
        fmt::format("'fp32' run with TF32 flags on ({}{}{}): not strict FP32 and not bit-exact to the reference",
                    c.tf32_cudnn ? "convolutions" : "", c.tf32_cudnn && c.tf32_matmul ? " and " : "",
                    c.tf32_matmul ? "matrix products" : ""));
  }
  return traps;
}

std::vector<std::string> comparison_traps(const RunRef& a, const RunRef& b) {
  std::vector<std::string> warnings;
  const std::string la = label_of(a, 'A'), lb = label_of(b, 'B');
  for (const auto& [ref, label] : {std::pair{&a, la}, std::pair{&b, lb}}) {
    for (const std::string& trap : run_traps(*ref->profile, *ref->run)) warnings.push_back(label + ": " + trap);
  }
  auto tf32_use = [](const RunRef& r) {
    const int capability = peaks_for_device(r.profile->device).compute_capability;
    const bool conv = uses_tf32(StageWork::convolution, r.run->config, capability);
    const bool matrix = uses_tf32(StageWork::matrix, r.run->config, capability);
    return std::string(conv && matrix ? "convolutions and matrix products"
                       : conv         ? "convolutions"
                       : matrix       ? "matrix products"
                                      : "");
  };
  const std::string ta = tf32_use(a), tb = tf32_use(b);
  if (ta != tb) {
    const std::string what = [&] {
      if (tb.empty())
        return fmt::format("{} used TF32 for {}, {} ran them in strict FP32 or another precision", la, ta, lb);
      if (ta.empty())
        return fmt::format("{} used TF32 for {}, {} ran them in strict FP32 or another precision", lb, tb, la);
      return fmt::format("{} used TF32 for {}, {} for {}", la, ta, lb, tb);
    }();
    warnings.push_back(
        "TF32 vs strict FP32: " + what +
        ": those stages are not compared like for like (docs/locotrack-spec.md §6.2); set the TF32 flags "
        "explicitly on both sides");
  }
  const RunConfig& ca = a.run->config;
  const RunConfig& cb = b.run->config;
  std::vector<std::string> differences;
  if (ca.model_size != cb.model_size)
    differences.push_back(fmt::format("model {} vs {}", ca.model_size, cb.model_size));
  if (ca.points != cb.points) differences.push_back(fmt::format("N {} vs {}", ca.points, cb.points));
  if (ca.frames != cb.frames) differences.push_back(fmt::format("T {} vs {}", ca.frames, cb.frames));
  if (ca.resolution != cb.resolution)
    differences.push_back(fmt::format("resolution {} vs {}", ca.resolution, cb.resolution));
  if (ca.chunk != cb.chunk) differences.push_back(fmt::format("chunk {} vs {}", ca.chunk, cb.chunk));
  if (ca.engine != cb.engine) differences.push_back(fmt::format("engine {} vs {}", ca.engine, cb.engine));
  if (!differences.empty()) {
    std::string text;
    for (const std::string& d : differences) text += (text.empty() ? "" : ", ") + d;
    warnings.push_back("different workloads (" + text +
                       "): measured ratios include the difference; predicted ratios use each side's FLOPs and bytes");
  }
  for (const auto& [ref, label] : {std::pair{&a, la}, std::pair{&b, lb}}) {
    if (ref->profile->origin != ProfileOrigin::measured) {
      warnings.push_back(
          fmt::format("{} is {}, not measured: {}", label, to_string(ref->profile->origin), ref->profile->origin_note));
    }
    if (!peaks_for_device(ref->profile->device).known()) {
      warnings.push_back(fmt::format("{}: no specification or measured peaks for '{}': no predicted ratios", label,
                                     ref->profile->device.name));
    }
  }
  return warnings;
}

}  // namespace trackscope::core
