#pragma once
// A finished tracking run of the GUI as a core::Profile (one measured case with a single repeat), so that the
// performance dock can show it as the current run, add it to the history across runs and compare it with other
// live runs or bench JSON files.
//
//   CompletedRun run = ...;                                   // filled by TrackerService when a job succeeds
//   core::Profile profile = make_live_run_profile(run, core::probe_host_info(), telemetry_summary);
//   dock->add_run(profile);
//
// Threads: plain values and a pure function.

#include <optional>
#include <string>
#include <vector>

#include "core/perf/profile.h"
#include "core/perf/telemetry.h"
#include "core/tracking/point_tracker.h"

namespace trackscope::ui {

/// What a successful run measured.
struct CompletedRun {
  core::TrackerDescription tracker;        // model, device and precision that ran
  std::vector<core::StageSample> samples;  // every stage sample the tracker reported, in order
  double wall_ms = 0.0;                    // from job start to the result (decoder open included)
  int points = 0;                          // queries tracked (N)
  int64_t frames = 0;                      // frames tracked over (T)
  int query_chunk = 0;                     // the requested chunk (0 = the tracker's choice)
  std::string video;                       // the video's path
  int run_number = 0;                      // 1 for the first run of the session, ...
  std::string plan;                        // the memory plan's summary (mode and why), kept in the profile's notes
};

/// One case named like a bench case ("small-n8-t96-fp32-c0"), origin measured, with the device of the tracker,
/// the host and the telemetry summary of the run (if the device has telemetry).
core::Profile make_live_run_profile(const CompletedRun& run, const core::HostInfo& host,
                                    std::optional<core::TelemetrySummary> telemetry);

}  // namespace trackscope::ui
