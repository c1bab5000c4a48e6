#pragma once
// Text and CSV renderings of the performance analyses, shared by `trackscope-cli` (tables on stdout) and the
// performance dock's report export (CSV files).
//
//   std::cout << format_comparison(comparison);
//   TRACKSCOPE_RETURN_IF_ERROR(io::write_file_atomically("comparison.csv", comparison_csv(comparison)));
//
// Threads: pure functions.

#include <string>
#include <string_view>

#include "core/perf/diagnosis.h"
#include "core/perf/gpu_specs.h"
#include "core/perf/roofline.h"

namespace trackscope::core {

/// The GPU specification table, one row per card, with the source of each row below.
std::string format_gpu_spec_table(bool with_sources = true);
/// Per-stage roofline table with a header naming the device and its peaks.
std::string format_roofline(const Roofline& roofline);
/// Per-stage comparison (A ms, B ms, measured, predicted, precision-aware ratio, excess), then the causes of the
/// highlighted stages and the warnings.
std::string format_comparison(const Comparison& comparison);
/// One line per case: name, end-to-end median and p90, points/s, peak memory.
std::string format_profile_summary(const Profile& profile);
/// What `trackscope-cli bench` prints: the device and host lines, then per case its end-to-end time and one row
/// per stage (median and p90 ms, share of the case, achieved TFLOP/s and GB/s).
std::string format_bench_report(const Profile& profile);
/// The case of `profile` named `wanted`, or at index `wanted` (decimal digits). not_found lists the cases;
/// invalid_argument when the profile has none.
Expected<size_t> find_profile_case(const Profile& profile, const std::string& wanted, const std::string& source);

/// A profile file with the case to show: "A.json" (case 0) or "A.json:N" (the GUI's --compare A.json:1,B.json).
/// The text after the last ':' is an index only when it is decimal digits after a non-empty path ("c:x.json" and
/// "x.json:" are paths); invalid_argument for an index past int (core/dimensions.h).
struct ProfileChoice {
  std::string path;
  int case_index = 0;
};
Expected<ProfileChoice> parse_profile_choice(std::string_view text);

/// CSV with a header row; numbers in plain decimal; empty cells for unknown values.
std::string roofline_csv(const Roofline& roofline);
std::string comparison_csv(const Comparison& comparison);
/// Every stage of every case: case, stage, median/p90/min/mean ms, flops, bytes.
std::string profile_stages_csv(const Profile& profile);

}  // namespace trackscope::core
