#include "core/perf/report.h"

#include <fmt/format.h>

#include "core/dimensions.h"

namespace trackscope::core {

namespace {

std::string number(const std::optional<double>& value, const char* format = "{:.2f}") {
  return value ? fmt::format(fmt::runtime(format), *value) : std::string("-");
}

std::string csv_number(const std::optional<double>& value) {
  return value ? fmt::format("{:.6g}", *value) : std::string();
}

std::string csv_text(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::optional<double> if_positive(double value) { return value > 0.0 ? std::optional<double>(value) : std::nullopt; }

}  // namespace

std::string format_gpu_spec_table(bool with_sources) {
  std::string out =
      fmt::format("{:<16} {:<26} {:>4} {:>4} {:>6} {:>7} {:>5} {:>6} {:>6} {:>6} {:>7} {:>7} {:>5}\n", "key", "name",
                  "SMs", "cc", "mem GB", "GB/s", "L2 MB", "MHz", "fp32", "tf32", "bf16", "fp16", "bf16?");
  for (const GpuSpec& s : gpu_spec_table()) {
    out += fmt::format(
        "{:<16} {:<26} {:>4} {:>4} {:>6.0f} {:>7.0f} {:>5.0f} {:>6.0f} {:>6.1f} {:>6} {:>7} {:>7.1f} {:>5}\n", s.key,
        s.display_name, s.multiprocessors, fmt::format("{}.{}", s.compute_capability_major, s.compute_capability_minor),
        s.memory_gb, s.bandwidth_gbps, s.l2_mb, s.boost_clock_mhz, s.fp32_tflops,
        s.tf32_tensor_tflops > 0 ? fmt::format("{:.1f}", s.tf32_tensor_tflops) : "-",
        s.bf16_tensor_tflops > 0 ? fmt::format("{:.1f}", s.bf16_tensor_tflops) : "-", s.fp16_tensor_tflops,
        s.native_bf16() ? "yes" : "emul");
  }
  out +=
      "TFLOP/s dense (no sparsity), tensor rates with FP32 accumulation; GB = 1e9 bytes; bf16? = native bf16 tensor "
      "cores "
      "(emul: emulated, slower than fp32)\n";
  if (with_sources) {
    out += "sources:\n";
    for (const GpuSpec& s : gpu_spec_table()) out += fmt::format("  {:<16} {}\n", s.key, s.source);
  }
  return out;
}

std::string format_roofline(const Roofline& r) {
  std::string out =
      fmt::format("roofline on {} (peaks: {})\n", r.device_name, r.peaks.known() ? r.peaks.source : "unknown");
  if (r.peaks.known()) {
    out +=
        fmt::format("  fp32 {:.1f}, tf32 {:.1f}, bf16 {:.1f}, fp16 {:.1f} TFLOP/s; {:.0f} GB/s\n", r.peaks.fp32_tflops,
                    r.peaks.effective_tflops(Precision::tf32), r.peaks.effective_tflops(Precision::bf16),
                    r.peaks.effective_tflops(Precision::fp16), r.peaks.bandwidth_gbps);
  }
  out += fmt::format("{:<20} {:>9} {:>6} {:>9} {:>8} {:>5} {:>9} {:>8} {:>7} {:>7} {:>9} {:>7} {:>7}\n", "stage", "ms",
                     "share", "GFLOP", "GB", "prec", "TFLOP/s", "GB/s", "%peakF", "%peakB", "floor ms", "bound",
                     "x floor");
  for (const StageRoofline& s : r.stages) {
    const bool floor = s.floor.has_value();
    out += fmt::format(
        "{:<20} {:>9.2f} {:>5.0f}% {:>9.1f} {:>8.2f} {:>5} {:>9.2f} {:>8.0f} {:>7} {:>7} {:>9} {:>7} {:>7}{}\n",
        s.stage, s.ms, s.share_of_total * 100, s.flops / 1e9, s.bytes / 1e9, to_string(s.precision), s.achieved_tflops,
        s.achieved_gbps, floor ? fmt::format("{:.1f}", s.compute_share * 100) : "-",
        floor ? fmt::format("{:.1f}", s.bandwidth_share * 100) : "-",
        floor ? fmt::format("{:.2f}", s.floor->ms()) : "-", floor ? to_string(s.floor->bound()) : "-",
        floor ? fmt::format("{:.1f}", s.above_floor) : "-", s.flagged ? "  << far above floor" : "");
  }
  out += fmt::format("{:<20} {:>9.2f}   floor sum {:.2f} ms\n", "total", r.total_ms, r.total_floor_ms);
  return out;
}

std::string format_comparison(const Comparison& c) {
  std::string out = fmt::format("A = {}\nB = {}\n", c.a_label, c.b_label);
  out += fmt::format("{:<20} {:>10} {:>10} {:>9} {:>10} {:>10} {:>8} {:>7}\n", "stage", "A ms", "B ms", "B/A",
                     "predicted", "prec-aware", "excess", "bound B");
  for (const StageComparison& s : c.stages) {
    out += fmt::format("{:<20} {:>10} {:>10} {:>9} {:>10} {:>10} {:>8} {:>7}{}\n", s.stage, number(s.a_ms),
                       number(s.b_ms), number(s.measured_ratio, "{:.2f}x"), number(s.predicted_ratio, "{:.2f}x"),
                       number(s.precision_aware_ratio, "{:.2f}x"), number(s.excess, "{:.2f}"), to_string(s.b_bound),
                       s.highlighted ? fmt::format("  << {} slower than predicted", s.slow_side) : "");
  }
  out += fmt::format("{:<20} {:>10} {:>10} {:>9} {:>10}\n", "end to end", "", "",
                     number(c.end_to_end_measured_ratio, "{:.2f}x"), number(c.end_to_end_predicted_ratio, "{:.2f}x"));
  out +=
      "ratios are B/A; predicted = ratio of the stage floors at the datasheet rate of the precision each side asked "
      "for;\n"
      "prec-aware = the same with what really ran (TF32 flags, bf16 emulation); excess = measured / predicted\n";
  if (c.highlighted_count() > 0) {
    out += fmt::format("\ndiagnosis ({} stage(s) more than 2x off the prediction):\n", c.highlighted_count());
    for (const StageComparison& s : c.stages) {
      if (!s.highlighted) continue;
      out += fmt::format("  {} ({:.1f}x measured vs {:.1f}x predicted):\n", s.stage, s.measured_ratio.value_or(0.0),
                         s.predicted_ratio.value_or(0.0));
      for (const Cause& cause : s.causes) out += fmt::format("    - [{}] {}\n", to_string(cause.kind), cause.text);
    }
  }
  if (!c.warnings.empty()) {
    out += "\nwarnings:\n";
    for (const std::string& w : c.warnings) out += "  ! " + w + "\n";
  }
  return out;
}

std::string format_profile_summary(const Profile& p) {
  std::string out = fmt::format("{} ({}, {} SMs, cc {}.{}), {} case(s), {}\n", p.device.name, p.device.id,
                                p.device.multiprocessors, p.device.compute_capability_major,
                                p.device.compute_capability_minor, p.cases.size(), to_string(p.origin));
  for (size_t i = 0; i < p.cases.size(); ++i) {
    const ProfileCase& c = p.cases[i];
    out += fmt::format("  [{}] {:<40} median {:>9.1f} ms  p90 {:>9.1f} ms  {:>9.0f} points/s  peak {:.2f} GB\n", i,
                       c.name, c.end_to_end.median_ms, c.end_to_end.p90_ms, c.points_per_second,
                       static_cast<double>(c.peak_device_memory_bytes) / 1e9);
  }
  return out;
}

std::string format_bench_report(const Profile& p) {
  std::string out =
      fmt::format("device: {} ({}, {} SMs/threads, {:.1f} GiB, compute capability {}.{})\n", p.device.name, p.device.id,
                  p.device.multiprocessors, static_cast<double>(p.device.memory_bytes) / (1 << 30),
                  p.device.compute_capability_major, p.device.compute_capability_minor);
  out += fmt::format("host: {}, {} threads; libtorch {}, CUDA {}, cuDNN {}, driver {}, trackscope kernels {}\n",
                     p.host.cpu_model, p.host.threads, p.runtime.libtorch, p.runtime.cuda_runtime, p.runtime.cudnn,
                     p.runtime.driver, p.runtime.trackscope_kernels ? "yes" : "no");
  out += fmt::format("\n{:<34} {:>10} {:>10} {:>10} {:>9} {:>9}\n", "case / stage", "median ms", "p90 ms", "share",
                     "TFLOP/s", "GB/s");
  for (const ProfileCase& c : p.cases) {
    const double total = c.end_to_end.median_ms;
    out += fmt::format("{:<34} {:10.2f} {:10.2f} {:9.0f}%\n", c.name, total, c.end_to_end.p90_ms, 100.0);
    for (const StageStats& s : c.stages) {
      const double ms = s.stats.median_ms;
      out += fmt::format("  {:<32} {:10.3f} {:10.3f} {:9.1f}% {:9.2f} {:9.0f}\n", s.name, ms, s.stats.p90_ms,
                         total > 0 ? 100.0 * ms / total : 0.0, ms > 0 ? s.flops / (ms * 1e9) : 0.0,
                         ms > 0 ? s.bytes / (ms * 1e6) : 0.0);
    }
  }
  return out;
}

Expected<size_t> find_profile_case(const Profile& profile, const std::string& wanted, const std::string& source) {
  if (profile.cases.empty()) return invalid_argument(fmt::format("{} holds no cases", source));
  for (size_t i = 0; i < profile.cases.size(); ++i) {
    if (profile.cases[i].name == wanted) return i;
  }
  if (Expected<std::vector<int64_t>> index = parse_dimensions(wanted, {.parts = 1, .min = 0});
      index && static_cast<size_t>((*index)[0]) < profile.cases.size()) {
    return static_cast<size_t>((*index)[0]);
  }
  std::string names;
  for (size_t i = 0; i < profile.cases.size(); ++i) names += fmt::format("\n  [{}] {}", i, profile.cases[i].name);
  return not_found(fmt::format("{} has no case '{}'; its cases:{}", source, wanted, names));
}

Expected<ProfileChoice> parse_profile_choice(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size())
    return ProfileChoice{std::string(text)};
  const std::string_view index_text = text.substr(colon + 1);
  if (index_text.find_first_not_of("0123456789") != std::string_view::npos) return ProfileChoice{std::string(text)};
  Expected<std::vector<int64_t>> index = parse_dimensions(
      index_text, {.what = "profile case", .pattern = "FILE:N", .example = "a.json:1", .parts = 1, .min = 0});
  if (!index) return index.status();
  return ProfileChoice{std::string(text.substr(0, colon)), static_cast<int>((*index)[0])};
}

std::string roofline_csv(const Roofline& r) {
  std::string out =
      "stage,work,ms,share_of_total,gflop,gb,precision,achieved_tflops,achieved_gbps,peak_tflops,peak_gbps,"
      "compute_share,bandwidth_share,floor_ms,bound,above_floor,flagged\n";
  for (const StageRoofline& s : r.stages) {
    const bool f = s.floor.has_value();
    out +=
        fmt::format("{},{},{:.6g},{:.6g},{:.6g},{:.6g},{},{:.6g},{:.6g},{},{},{},{},{},{},{},{}\n", csv_text(s.stage),
                    to_string(s.work), s.ms, s.share_of_total, s.flops / 1e9, s.bytes / 1e9, to_string(s.precision),
                    s.achieved_tflops, s.achieved_gbps, csv_number(f ? if_positive(s.peak_tflops) : std::nullopt),
                    csv_number(f ? if_positive(s.peak_gbps) : std::nullopt),
                    csv_number(f ? std::optional(s.compute_share) : std::nullopt),
                    csv_number(f ? std::optional(s.bandwidth_share) : std::nullopt),
                    csv_number(f ? std::optional(s.floor->ms()) : std::nullopt), f ? to_string(s.floor->bound()) : "",
                    csv_number(f ? std::optional(s.above_floor) : std::nullopt), s.flagged ? 1 : 0);
  }
  return out;
}

std::string comparison_csv(const Comparison& c) {
  std::string out =
      "stage,a_ms,b_ms,measured_ratio,predicted_ratio,precision_aware_ratio,excess,a_bound,b_bound,highlighted,"
      "slow_side,causes\n";
  for (const StageComparison& s : c.stages) {
    std::string causes;
    for (const Cause& cause : s.causes)
      causes += (causes.empty() ? "" : " | ") + std::string(to_string(cause.kind)) + ": " + cause.text;
    out +=
        fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_text(s.stage), csv_number(s.a_ms), csv_number(s.b_ms),
                    csv_number(s.measured_ratio), csv_number(s.predicted_ratio), csv_number(s.precision_aware_ratio),
                    csv_number(s.excess), to_string(s.a_bound), to_string(s.b_bound), s.highlighted ? 1 : 0,
                    s.slow_side ? std::string(1, s.slow_side) : std::string(), csv_text(causes));
  }
  return out;
}

std::string profile_stages_csv(const Profile& p) {
  std::string out = "device,case,stage,median_ms,p90_ms,min_ms,mean_ms,samples,flops,bytes\n";
  for (const ProfileCase& c : p.cases) {
    for (const StageStats& s : c.stages) {
      out += fmt::format("{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{},{:.6g},{:.6g}\n", csv_text(p.device.name),
                         csv_text(c.name), csv_text(s.name), s.stats.median_ms, s.stats.p90_ms, s.stats.min_ms,
                         s.stats.mean_ms, s.stats.count, s.flops, s.bytes);
    }
  }
  return out;
}

}  // namespace trackscope::core
