#include "ui/tracking/run_profile.h"

#include <algorithm>
#include <limits>

namespace trackscope::ui {

core::Profile make_live_run_profile(const CompletedRun& run, const core::HostInfo& host,
                                    std::optional<core::TelemetrySummary> telemetry) {
  core::RunConfig config;
  config.engine = "trackscope";
  config.model_size = run.tracker.model_size.empty() ? "unknown" : run.tracker.model_size;
  config.points = run.points;
  config.frames = static_cast<int>(std::min<int64_t>(run.frames, std::numeric_limits<int>::max()));
  config.precision = run.tracker.precision;
  config.chunk = run.query_chunk;
  config.tf32_matmul = config.tf32_cudnn = run.tracker.precision == core::Precision::tf32;
  config.repeats = 1;
  // A live run is its own warm-up: the first run on a freshly loaded model includes the cold start, which the
  // history makes visible instead of hiding it.
  config.warmup = 0;
  config.video = run.video;

  core::ProfileCaseBuilder builder(config);
  builder.add_repeat(run.samples, run.wall_ms);
  core::Profile profile;
  profile.tool.name = "trackscope";
  profile.tool.command = "GUI run " + std::to_string(run.run_number);
  profile.created_utc = core::utc_timestamp_now();
  profile.origin = core::ProfileOrigin::measured;
  profile.origin_note = "live run in the Trackscope GUI: " + run.tracker.model_name;
  profile.host = host;
  profile.device = run.tracker.device;
  profile.cases.push_back(builder.build(0, std::move(telemetry)));
  if (!run.plan.empty()) profile.cases.back().notes = "memory plan: " + run.plan;
  return profile;
}

}  // namespace trackscope::ui
