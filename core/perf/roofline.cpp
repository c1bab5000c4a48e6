#include "core/perf/roofline.h"

#include <fmt/format.h>

#include <algorithm>

namespace trackscope::core {

const GpuSpec* spec_for_device(const DeviceInfo& device) {
  if (!device.is_cuda() && device.spec_key.empty()) return nullptr;
  if (!device.spec_key.empty()) {
    if (const GpuSpec* spec = find_gpu_spec(device.spec_key)) return spec;
  }
  return find_gpu_spec(device.name);
}

DevicePeaks peaks_for_device(const DeviceInfo& device) {
  DevicePeaks peaks = device_peaks(spec_for_device(device), device.measured_peaks);
  if (peaks.compute_capability == 0) peaks.compute_capability = device.compute_capability();
  return peaks;
}

bool uses_tf32(StageWork work, const RunConfig& config, int compute_capability) {
  if (compute_capability < 80) return false;
  if (work != StageWork::convolution && work != StageWork::matrix) return false;
  if (config.precision == Precision::tf32) return true;
  if (config.precision != Precision::fp32) return false;
  return work == StageWork::convolution ? config.tf32_cudnn : config.tf32_matmul;
}

Precision effective_precision(StageWork work, const RunConfig& config, int compute_capability) {
  if (work != StageWork::convolution && work != StageWork::matrix) return Precision::fp32;
  if (uses_tf32(work, config, compute_capability)) return Precision::tf32;
  return config.precision == Precision::tf32 ? Precision::fp32 : config.precision;
}

int precision_bytes(Precision precision) {
  return precision == Precision::bf16 || precision == Precision::fp16 ? 2 : 4;
}

const char* to_string(Bound bound) {
  switch (bound) {
    case Bound::compute: return "compute";
    case Bound::memory: return "memory";
    case Bound::none: return "-";
  }
  return "?";
}

Bound Floor::bound() const {
  if (compute_ms <= 0.0 && memory_ms <= 0.0) return Bound::none;
  return compute_ms >= memory_ms ? Bound::compute : Bound::memory;
}

Floor floor_of(double flops, double bytes, double tflops, double gbps) {
  Floor floor;
  if (tflops > 0.0) floor.compute_ms = flops / (tflops * 1e12) * 1e3;
  if (gbps > 0.0) floor.memory_ms = bytes / (gbps * 1e9) * 1e3;
  return floor;
}

namespace {

double stage_peak_tflops(StageWork work, const RunConfig& config, const DevicePeaks& peaks, PeakBasis basis) {
  if (basis == PeakBasis::nominal) {
    const bool tensor_work = work == StageWork::convolution || work == StageWork::matrix;
    return peaks.nominal_tflops(tensor_work ? config.precision : Precision::fp32);
  }
  return peaks.effective_tflops(effective_precision(work, config, peaks.compute_capability));
}

}  // namespace

std::optional<Floor> stage_floor(const StageStats& stage, const RunConfig& config, const DeviceInfo& device,
                                 PeakBasis basis) {
  const std::optional<Stage> known = stage.stage();
  if (!known) return std::nullopt;
  const StageWork work = stage_work(*known);
  if (work == StageWork::host || work == StageWork::transfer) return std::nullopt;
  if (stage.flops <= 0.0 && stage.bytes <= 0.0) return std::nullopt;
  const DevicePeaks peaks = peaks_for_device(device);
  if (!peaks.known()) return std::nullopt;
  return floor_of(stage.flops, stage.bytes, stage_peak_tflops(work, config, peaks, basis), peaks.bandwidth_gbps);
}

Roofline compute_roofline(const Profile& profile, const ProfileCase& run, const RooflineOptions& options) {
  Roofline roofline;
  roofline.device_name = profile.device.name;
  roofline.peaks = peaks_for_device(profile.device);
  roofline.total_ms = run.stage_sum_ms();
  for (const StageStats& stage : run.stages) {
    StageRoofline row;
    row.stage = stage.name;
    row.work = stage.stage() ? stage_work(*stage.stage()) : StageWork::host;
    row.ms = stage.stats.median_ms;
    row.share_of_total = roofline.total_ms > 0.0 ? row.ms / roofline.total_ms : 0.0;
    row.flops = stage.flops;
    row.bytes = stage.bytes;
    row.precision = effective_precision(row.work, run.config, roofline.peaks.compute_capability);
    const double seconds = row.ms / 1e3;
    if (seconds > 0.0) {
      row.achieved_tflops = stage.flops / seconds / 1e12;
      row.achieved_gbps = stage.bytes / seconds / 1e9;
    }
    row.floor = stage_floor(stage, run.config, profile.device, PeakBasis::effective);
    if (row.floor) {
      row.peak_tflops = roofline.peaks.effective_tflops(row.precision);
      row.peak_gbps = roofline.peaks.bandwidth_gbps;
      row.compute_share = row.peak_tflops > 0.0 ? row.achieved_tflops / row.peak_tflops : 0.0;
      row.bandwidth_share = row.peak_gbps > 0.0 ? row.achieved_gbps / row.peak_gbps : 0.0;
      if (row.floor->ms() > 0.0) {
        row.above_floor = row.ms / row.floor->ms();
        row.flagged = row.above_floor > options.flag_factor;
        roofline.total_floor_ms += row.floor->ms();
      }
    }
    roofline.stages.push_back(row);
  }
  return roofline;
}

double predict_stage_ms(double measured_ms, double floor_ms, double target_floor_ms, double attainable_fraction,
                        double source_clock_mhz, double target_clock_mhz) {
  if (measured_ms <= 0.0 || floor_ms <= 0.0) return measured_ms;
  const double efficiency = floor_ms / measured_ms;
  if (efficiency >= attainable_fraction) return target_floor_ms / efficiency;
  const double clock_scale =
      source_clock_mhz > 0.0 && target_clock_mhz > 0.0 ? source_clock_mhz / target_clock_mhz : 1.0;
  return target_floor_ms / attainable_fraction + (measured_ms - floor_ms / attainable_fraction) * clock_scale;
}

Expected<Profile> predict_profile(const Profile& profile, size_t case_index, const GpuSpec& target,
                                  const WhatIfOptions& options) {
  if (case_index >= profile.cases.size()) {
    return invalid_argument(
        fmt::format("case {} does not exist (the profile has {})", case_index, profile.cases.size()));
  }
  if (!(options.attainable_fraction > 0.0 && options.attainable_fraction <= 1.0)) {
    return invalid_argument(fmt::format("attainable fraction {} must be in (0, 1]", options.attainable_fraction));
  }
  const DevicePeaks source_peaks = peaks_for_device(profile.device);
  if (!source_peaks.known()) {
    return unsupported(
        fmt::format("cannot predict from '{}': it has no specification and no measured peaks "
                    "(a what-if scales each stage by the ratio of its floors)",
                    profile.device.name));
  }
  const ProfileCase& source = profile.cases[case_index];
  Profile predicted;
  predicted.tool = profile.tool;
  predicted.created_utc = utc_timestamp_now();
  predicted.origin = ProfileOrigin::predicted;
  predicted.host = profile.host;
  predicted.device.id = "what-if";
  predicted.device.name = target.cuda_names.empty() ? target.display_name : target.cuda_names.front();
  predicted.device.multiprocessors = target.multiprocessors;
  predicted.device.memory_bytes = static_cast<int64_t>(target.memory_gb * 1e9);
  predicted.device.compute_capability_major = target.compute_capability_major;
  predicted.device.compute_capability_minor = target.compute_capability_minor;
  predicted.device.sm_clock_max_mhz = target.boost_clock_mhz;
  predicted.device.l2_cache_bytes = static_cast<int64_t>(target.l2_mb * 1024 * 1024);
  predicted.device.spec_key = target.key;

  ProfileCase run = source;
  run.telemetry.reset();
  if (options.precision) run.config.precision = *options.precision;
  if (options.tf32_matmul) run.config.tf32_matmul = *options.tf32_matmul;
  if (options.tf32_cudnn) run.config.tf32_cudnn = *options.tf32_cudnn;
  run.name = default_case_name(run.config) + "@" + target.key;
  const double bytes_scale = static_cast<double>(precision_bytes(run.config.precision)) /
                             static_cast<double>(precision_bytes(source.config.precision));
  double delta_ms = 0.0;
  for (StageStats& stage : run.stages) {
    const StageStats* original = source.find_stage(stage.name);
    const bool device_stage = stage.stage() && stage_work(*stage.stage()) != StageWork::host &&
                              stage_work(*stage.stage()) != StageWork::transfer;
    if (device_stage) stage.bytes *= bytes_scale;
    const std::optional<Floor> before = stage_floor(*original, source.config, profile.device, PeakBasis::effective);
    const std::optional<Floor> after = stage_floor(stage, run.config, predicted.device, PeakBasis::effective);
    if (!before || !after || before->ms() <= 0.0 || original->stats.median_ms <= 0.0) continue;
    const double source_clock =
        profile.device.sm_clock_max_mhz > 0.0 ? profile.device.sm_clock_max_mhz : source_peaks.boost_clock_mhz;
    const double ratio = predict_stage_ms(original->stats.median_ms, before->ms(), after->ms(),
                                          options.attainable_fraction, source_clock, target.boost_clock_mhz) /
                         original->stats.median_ms;
    auto scale = [ratio](SampleStatistics& s) {
      s.median_ms *= ratio;
      s.p90_ms *= ratio;
      s.min_ms *= ratio;
      s.max_ms *= ratio;
      s.mean_ms *= ratio;
    };
    scale(stage.stats);
    for (double& ms : stage.repeat_ms) ms *= ratio;
    stage.warmup_ms.clear();  // one-time costs do not transfer
    for (IterationStats& it : stage.iterations) scale(it.stats);
    for (ChunkSample& c : stage.chunk_samples) c.ms *= ratio;
    delta_ms += stage.stats.median_ms - original->stats.median_ms;
  }
  auto shift = [delta_ms](double ms) { return ms > 0.0 ? std::max(ms + delta_ms, 0.0) : ms; };
  run.end_to_end.median_ms = shift(run.end_to_end.median_ms);
  run.end_to_end.p90_ms = shift(run.end_to_end.p90_ms);
  run.end_to_end.min_ms = shift(run.end_to_end.min_ms);
  run.end_to_end.max_ms = shift(run.end_to_end.max_ms);
  run.end_to_end.mean_ms = shift(run.end_to_end.mean_ms);
  const double wall_ms = run.end_to_end.median_ms > 0.0 ? run.end_to_end.median_ms : run.stage_sum_ms();
  run.points_per_second = wall_ms > 0.0 ? run.config.points / (wall_ms / 1e3) : 0.0;
  run.peak_device_memory_bytes = static_cast<int64_t>(static_cast<double>(run.peak_device_memory_bytes) * bytes_scale);
  run.notes = fmt::format("predicted from '{}' measured on {}", source.name, profile.device.name);
  predicted.origin_note = fmt::format(
      "what-if: case '{}' of {} ({}) predicted on {} at {}{}. First-order model: each device stage = its floor "
      "(max of FLOPs/peak, bytes/bandwidth) at {:.0f}% efficiency + the source's overhead beyond that, scaled by "
      "the SM clocks (stages already above {:.0f}% keep their efficiency); bf16 below compute capability 8.0 at "
      "{:.0f}% of the FP32 rate; host stages and PCIe copies unchanged; peak memory scaled by the element size.",
      source.name, profile.device.name, to_string(profile.origin), target.display_name, to_string(run.config.precision),
      run.config.precision == Precision::fp32 && (run.config.tf32_cudnn || run.config.tf32_matmul) ? " with TF32 flags"
                                                                                                   : "",
      options.attainable_fraction * 100, options.attainable_fraction * 100, kEmulatedBf16FractionOfFp32 * 100);
  predicted.cases.push_back(std::move(run));
  return predicted;
}

}  // namespace trackscope::core
