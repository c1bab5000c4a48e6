// Roofline, A/B comparison rules, what-if prediction and trap warnings (the precision gating: device_test).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/perf/diagnosis.h"
#include "core/perf/report.h"

namespace trackscope::core {
namespace {

const std::filesystem::path kFixture =
    std::filesystem::path(TRACKSCOPE_SOURCE_DIR) / "tests/data/perf/h200_locotrack_section5_2_transcribed.json";

struct StageSpec {
  Stage stage;
  double ms;
  double flops;
  double bytes;
  int executions = 1;
};

Profile make_profile(const std::string& cuda_name, Precision precision, bool tf32_flags,
                     const std::vector<StageSpec>& stages) {
  Profile p;
  p.device.id = "cuda:0";
  p.device.name = cuda_name;
  const GpuSpec* spec = find_gpu_spec(cuda_name);
  if (spec) {
    p.device.compute_capability_major = spec->compute_capability_major;
    p.device.compute_capability_minor = spec->compute_capability_minor;
    p.device.multiprocessors = spec->multiprocessors;
  }
  ProfileCase c;
  c.name = "case";
  c.config.points = 1024;
  c.config.frames = 47;
  c.config.precision = precision;
  c.config.tf32_cudnn = c.config.tf32_matmul = tf32_flags;
  c.config.repeats = 5;
  c.config.warmup = 2;
  double total = 0.0;
  for (const StageSpec& s : stages) {
    StageStats stats;
    stats.name = std::string(stage_name(s.stage));
    const std::vector<double> repeats(5, s.ms);
    stats.stats = compute_statistics(repeats);
    stats.repeat_ms = repeats;
    stats.flops = s.flops;
    stats.bytes = s.bytes;
    stats.executions_per_run = s.executions;
    c.stages.push_back(stats);
    total += s.ms;
  }
  c.end_to_end = compute_statistics(std::vector<double>{total});
  p.cases.push_back(c);
  return p;
}

const StageComparison& row(const Comparison& c, Stage stage) {
  auto it = std::find_if(c.stages.begin(), c.stages.end(),
                         [&](const StageComparison& s) { return s.stage == stage_name(stage); });
  if (it == c.stages.end()) throw std::runtime_error("no row");
  return *it;
}

bool has_cause(const StageComparison& s, CauseKind kind) {
  return std::any_of(s.causes.begin(), s.causes.end(), [&](const Cause& c) { return c.kind == kind; });
}

Comparison compare(const Profile& a, const Profile& b) {
  Expected<Comparison> c = compare_runs({&a, &a.cases[0], "A"}, {&b, &b.cases[0], "B"});
  if (!c) throw std::runtime_error(c.status().message());
  return *c;
}

constexpr double kComputeHeavy = 1e12;  // 1 TFLOP, 1 MB: compute-bound everywhere
constexpr double kSmallBytes = 1e6;
constexpr double kMemoryHeavy = 10e9;  // 10 GB, 1 GFLOP: memory-bound everywhere

TEST(Roofline, AchievedRatesSharesAndFloors) {
  const Profile h200 = make_profile("NVIDIA H200", Precision::fp32, false,
                                    {{Stage::backbone, 100.0, kComputeHeavy, kSmallBytes}, {Stage::decode, 7.0, 0, 0}});
  const Roofline r = compute_roofline(h200, h200.cases[0]);
  ASSERT_EQ(r.stages.size(), 2u);
  const StageRoofline& backbone = r.stages[0];
  EXPECT_EQ(backbone.precision, Precision::fp32);
  EXPECT_NEAR(backbone.achieved_tflops, 1e12 / 0.100 / 1e12, 1e-9);
  EXPECT_NEAR(backbone.compute_share, 10.0 / 67.0, 1e-9);
  ASSERT_TRUE(backbone.floor);
  EXPECT_NEAR(backbone.floor->ms(), 1e12 / 67e12 * 1e3, 1e-9);
  EXPECT_EQ(backbone.floor->bound(), Bound::compute);
  EXPECT_NEAR(backbone.above_floor, 100.0 / (1e3 / 67.0), 1e-9);
  EXPECT_TRUE(backbone.flagged);    // 6.7x above its floor
  EXPECT_FALSE(r.stages[1].floor);  // host stage: no floor
  EXPECT_FALSE(r.stages[1].flagged);
  EXPECT_NEAR(backbone.share_of_total, 100.0 / 107.0, 1e-9);
}

TEST(Roofline, StagesNearTheirFloorAreNotFlagged) {
  const Profile a100 = make_profile("NVIDIA A100-SXM4-40GB", Precision::fp32, false,
                                    {{Stage::backbone, 60.0, kComputeHeavy, kSmallBytes}});
  EXPECT_FALSE(compute_roofline(a100, a100.cases[0]).stages[0].flagged);  // floor 51.3 ms
}

TEST(Roofline, PrecisionFollowsTf32FlagsAndCapability) {
  RunConfig c;
  c.precision = Precision::fp32;
  c.tf32_cudnn = true;
  EXPECT_EQ(effective_precision(StageWork::convolution, c, 80), Precision::tf32);
  EXPECT_EQ(effective_precision(StageWork::matrix, c, 80), Precision::fp32);       // matmul flag off
  EXPECT_EQ(effective_precision(StageWork::convolution, c, 75), Precision::fp32);  // no TF32 below 8.0
  EXPECT_EQ(effective_precision(StageWork::gather, c, 90), Precision::fp32);
  c.precision = Precision::tf32;
  EXPECT_EQ(effective_precision(StageWork::matrix, c, 86), Precision::tf32);
  EXPECT_EQ(effective_precision(StageWork::matrix, c, 75), Precision::fp32);
  c.precision = Precision::bf16;
  EXPECT_EQ(effective_precision(StageWork::convolution, c, 75), Precision::bf16);
  // The T4's bf16 peak is the emulated one.
  const Profile t4 =
      make_profile("Tesla T4", Precision::bf16, false, {{Stage::backbone, 500.0, kComputeHeavy, kSmallBytes}});
  EXPECT_DOUBLE_EQ(compute_roofline(t4, t4.cases[0]).stages[0].peak_tflops, 8.1 * kEmulatedBf16FractionOfFp32);
}

TEST(Comparison, PredictedRatioFollowsBoundedness) {
  const std::vector<StageSpec> a_stages = {{Stage::backbone, 60.0, kComputeHeavy, kSmallBytes},
                                           {Stage::refine_correlation, 8.0, 1e9, kMemoryHeavy}};
  const std::vector<StageSpec> b_stages = {{Stage::backbone, 144.0, kComputeHeavy, kSmallBytes},
                                           {Stage::refine_correlation, 40.0, 1e9, kMemoryHeavy}};
  const Comparison c = compare(make_profile("NVIDIA A100-SXM4-40GB", Precision::fp32, false, a_stages),
                               make_profile("Tesla T4", Precision::fp32, false, b_stages));
  const StageComparison& backbone = row(c, Stage::backbone);
  EXPECT_NEAR(*backbone.predicted_ratio, 19.5 / 8.1, 1e-9);
  EXPECT_NEAR(*backbone.measured_ratio, 144.0 / 60.0, 1e-9);
  EXPECT_FALSE(backbone.highlighted);
  EXPECT_TRUE(backbone.causes.empty());
  const StageComparison& correlation = row(c, Stage::refine_correlation);
  EXPECT_NEAR(*correlation.predicted_ratio, 1555.0 / 320.0, 1e-9);
  EXPECT_EQ(correlation.b_bound, Bound::memory);
  EXPECT_FALSE(correlation.highlighted);
  EXPECT_NEAR(*c.end_to_end_measured_ratio, 184.0 / 68.0, 1e-9);
  EXPECT_NEAR(*c.end_to_end_predicted_ratio, (60.0 * 19.5 / 8.1 + 8.0 * 1555.0 / 320.0) / 68.0, 1e-9);
}

TEST(Comparison, Bf16OnTuringIsPrecisionEmulation) {
  const Profile a100 = make_profile("NVIDIA A100-SXM4-40GB", Precision::bf16, false,
                                    {{Stage::refine_transformer, 10.0, kComputeHeavy, kSmallBytes}});
  // Predicted (16-bit tensor rates): 312 / 65 = 4.8x. Measured 40x.
  const Profile t4 = make_profile("Tesla T4", Precision::bf16, false,
                                  {{Stage::refine_transformer, 400.0, kComputeHeavy, kSmallBytes}});
  const Comparison c = compare(a100, t4);
  const StageComparison& s = row(c, Stage::refine_transformer);
  EXPECT_NEAR(*s.predicted_ratio, 312.0 / 65.0, 1e-9);
  ASSERT_TRUE(s.highlighted);
  EXPECT_EQ(s.slow_side, 'B');
  EXPECT_TRUE(has_cause(s, CauseKind::precision_emulation));
  EXPECT_FALSE(has_cause(s, CauseKind::tf32_one_side));
  EXPECT_TRUE(std::any_of(c.warnings.begin(), c.warnings.end(),
                          [](const std::string& w) { return w.find("no bf16 tensor cores") != std::string::npos; }));
  // The same times at fp16 on the T4 are slow too, but not emulation.
  const Profile t4_fp16 = make_profile("Tesla T4", Precision::fp16, false,
                                       {{Stage::refine_transformer, 400.0, kComputeHeavy, kSmallBytes}});
  const Comparison fp16_comparison = compare(a100, t4_fp16);
  const StageComparison& fp16 = row(fp16_comparison, Stage::refine_transformer);
  ASSERT_TRUE(fp16.highlighted);
  EXPECT_FALSE(has_cause(fp16, CauseKind::precision_emulation));
}

TEST(Comparison, Tf32OnOneSideOnly) {
  // An "fp32" A100 run with PyTorch's default cuDNN TF32 against a strict T4: 20x on a convolution stage.
  const Profile a100 = make_profile("NVIDIA A100-SXM4-40GB", Precision::fp32, true,
                                    {{Stage::backbone, 10.0, kComputeHeavy, kSmallBytes}});
  const Profile t4 =
      make_profile("Tesla T4", Precision::fp32, false, {{Stage::backbone, 200.0, kComputeHeavy, kSmallBytes}});
  const Comparison c = compare(a100, t4);
  const StageComparison& s = row(c, Stage::backbone);
  ASSERT_TRUE(s.highlighted);
  EXPECT_TRUE(has_cause(s, CauseKind::tf32_one_side));
  EXPECT_NEAR(*s.precision_aware_ratio, 156.0 / 8.1, 1e-9);
  EXPECT_TRUE(std::any_of(c.warnings.begin(), c.warnings.end(),
                          [](const std::string& w) { return w.find("TF32 vs strict FP32") != std::string::npos; }));
  // Like for like: both strict, no TF32 warning (and the same times are no longer explained by TF32).
  const Profile a100_strict = make_profile("NVIDIA A100-SXM4-40GB", Precision::fp32, false,
                                           {{Stage::backbone, 10.0, kComputeHeavy, kSmallBytes}});
  const Comparison strict = compare(a100_strict, t4);
  EXPECT_FALSE(has_cause(row(strict, Stage::backbone), CauseKind::tf32_one_side));
  EXPECT_TRUE(std::none_of(strict.warnings.begin(), strict.warnings.end(),
                           [](const std::string& w) { return w.find("TF32") != std::string::npos; }));
}

TEST(Comparison, LaunchBoundMemoryBoundThrottledAndColdStart) {
  const Profile a100 =
      make_profile("NVIDIA A100-SXM4-40GB", Precision::fp32, false,
                   {{Stage::init, 1.0, 1e6, 1e6, 1000}, {Stage::refine_correlation, 10.0, 1e9, kMemoryHeavy, 16}});
  Profile t4 =
      make_profile("Tesla T4", Precision::fp32, false,
                   {{Stage::init, 30.0, 1e6, 1e6, 1000}, {Stage::refine_correlation, 200.0, 1e9, kMemoryHeavy, 16}});
  Comparison c = compare(a100, t4);
  const StageComparison& init = row(c, Stage::init);
  ASSERT_TRUE(init.highlighted);
  EXPECT_TRUE(has_cause(init, CauseKind::launch_bound));  // 30 us per execution
  const StageComparison& correlation = row(c, Stage::refine_correlation);
  ASSERT_TRUE(correlation.highlighted);
  EXPECT_TRUE(has_cause(correlation, CauseKind::memory_bound));
  const auto memory = std::find_if(correlation.causes.begin(), correlation.causes.end(),
                                   [](const Cause& x) { return x.kind == CauseKind::memory_bound; });
  EXPECT_NE(memory->text.find("L2"), std::string::npos) << memory->text;  // 4 MB vs 40 MB
  EXPECT_FALSE(has_cause(correlation, CauseKind::clocks_throttled));
  EXPECT_FALSE(has_cause(correlation, CauseKind::cold_start));

  TelemetrySummary hot;
  hot.sm_clock_median_mhz = 900;
  hot.throttle_reasons_seen = throttle_reason::hw_thermal_slowdown | throttle_reason::gpu_idle;
  t4.cases[0].telemetry = hot;
  t4.cases[0].config.warmup = 0;
  for (StageStats& s : t4.cases[0].stages) s.repeat_ms.front() *= 5;  // a cold first repeat inside the statistics
  c = compare(a100, t4);
  const StageComparison& hot_row = row(c, Stage::refine_correlation);
  EXPECT_TRUE(has_cause(hot_row, CauseKind::clocks_throttled));
  const auto throttled = std::find_if(hot_row.causes.begin(), hot_row.causes.end(),
                                      [](const Cause& x) { return x.kind == CauseKind::clocks_throttled; });
  EXPECT_NE(throttled->text.find("hw_thermal_slowdown"), std::string::npos);
  EXPECT_EQ(throttled->text.find("gpu_idle"), std::string::npos);  // idle is not a performance limit
  EXPECT_NE(throttled->text.find("1590"), std::string::npos);      // against the T4's boost clock
  EXPECT_TRUE(has_cause(hot_row, CauseKind::cold_start));
}

TEST(Comparison, UnexpectedlySlowSideAAndUnexplained) {
  const Profile a = make_profile("NVIDIA H200", Precision::fp32, false,
                                 {{Stage::refine_encoder, 100.0, kComputeHeavy, kSmallBytes, 1}});
  const Profile b = make_profile("NVIDIA H200", Precision::fp32, false,
                                 {{Stage::refine_encoder, 20.0, kComputeHeavy, kSmallBytes, 1}});
  const Comparison c = compare(a, b);
  const StageComparison& s = row(c, Stage::refine_encoder);
  EXPECT_NEAR(*s.predicted_ratio, 1.0, 1e-12);
  ASSERT_TRUE(s.highlighted);
  EXPECT_EQ(s.slow_side, 'A');
  ASSERT_EQ(s.causes.size(), 1u);
  EXPECT_EQ(s.causes[0].kind, CauseKind::unexplained);
}

TEST(Comparison, CpuWithoutPeaksHasNoPrediction) {
  Profile cpu =
      make_profile("CPU (16 threads)", Precision::fp32, false, {{Stage::backbone, 9000.0, kComputeHeavy, kSmallBytes}});
  cpu.device.id = "cpu";
  const Profile h200 =
      make_profile("NVIDIA H200", Precision::fp32, false, {{Stage::backbone, 90.0, kComputeHeavy, kSmallBytes}});
  Comparison c = compare(h200, cpu);
  EXPECT_NEAR(*row(c, Stage::backbone).measured_ratio, 100.0, 1e-9);
  EXPECT_FALSE(row(c, Stage::backbone).predicted_ratio);
  EXPECT_FALSE(row(c, Stage::backbone).highlighted);
  EXPECT_TRUE(std::any_of(c.warnings.begin(), c.warnings.end(),
                          [](const std::string& w) { return w.find("no specification") != std::string::npos; }));
  cpu.device.measured_peaks.fp32_tflops = 1.0;
  cpu.device.measured_peaks.bandwidth_gbps = 100.0;
  c = compare(h200, cpu);
  EXPECT_NEAR(*row(c, Stage::backbone).predicted_ratio, 67.0, 1e-9);
}

TEST(WhatIf, StageModel) {
  EXPECT_DOUBLE_EQ(predict_stage_ms(10.0, 8.0, 4.0, 0.5, 0.0, 0.0), 5.0);         // efficient: keeps 80%
  EXPECT_DOUBLE_EQ(predict_stage_ms(10.0, 1.0, 4.0, 0.5, 2000.0, 1000.0), 24.0);  // 4/0.5 + (10-2) x 2
  EXPECT_DOUBLE_EQ(predict_stage_ms(10.0, 1.0, 1.0, 0.5, 1000.0, 1000.0), 10.0);  // same device: unchanged
}

TEST(WhatIf, SameGpuIsIdentityAndHostStagesKeepTheirTime) {
  Expected<Profile> fixture = read_profile(kFixture);
  ASSERT_TRUE(fixture) << fixture.status().message();
  Profile source = *fixture;
  StageStats decode;
  decode.name = "decode";
  decode.clock = StageClock::host_steady;
  decode.stats = compute_statistics(std::vector<double>{30.0});
  source.cases[3].stages.push_back(decode);
  Expected<Profile> same = predict_profile(source, 3, *find_gpu_spec("h200"));
  ASSERT_TRUE(same) << same.status().message();
  EXPECT_EQ(same->origin, ProfileOrigin::predicted);
  for (const StageStats& s : source.cases[3].stages) {
    EXPECT_NEAR(same->cases[0].find_stage(s.name)->stats.median_ms, s.stats.median_ms, 1e-9) << s.name;
  }
  Expected<Profile> t4 = predict_profile(source, 3, *find_gpu_spec("t4"));
  ASSERT_TRUE(t4);
  EXPECT_DOUBLE_EQ(t4->cases[0].find_stage("decode")->stats.median_ms, 30.0);
  EXPECT_GT(t4->cases[0].find_stage("backbone")->stats.median_ms,
            10 * source.cases[3].find_stage("backbone")->stats.median_ms);
  EXPECT_EQ(t4->device.name, "Tesla T4");
  EXPECT_FALSE(predict_profile(source, 99, *find_gpu_spec("t4")));
  Profile cpu = source;
  cpu.device = {};
  cpu.device.id = "cpu";
  cpu.device.name = "CPU (2 threads)";
  EXPECT_EQ(predict_profile(cpu, 0, *find_gpu_spec("t4")).status().code(), StatusCode::unsupported);
}

TEST(WhatIf, T4Bf16AgainstTheH200IsDiagnosedAsEmulationAndTf32) {
  // The headline case: the official-style configuration (bf16, small, N=1024, T=47) predicted on a T4 from the
  // transcribed H200 measurements of docs/locotrack-spec.md §5.2 (PyTorch default flags: TF32 convolutions).
  Expected<Profile> h200 = read_profile(kFixture);
  ASSERT_TRUE(h200);
  const auto index =
      static_cast<size_t>(std::find_if(h200->cases.begin(), h200->cases.end(),
                                       [](const ProfileCase& c) { return c.name == "small-n1024-t47-c64-default"; }) -
                          h200->cases.begin());
  ASSERT_LT(index, h200->cases.size());
  WhatIfOptions bf16;
  bf16.precision = Precision::bf16;
  Expected<Profile> t4 = predict_profile(*h200, index, *find_gpu_spec("Tesla T4"), bf16);
  ASSERT_TRUE(t4);
  EXPECT_EQ(t4->cases[0].config.precision, Precision::bf16);
  EXPECT_NEAR(t4->cases[0].find_stage(Stage::backbone)->bytes,
              h200->cases[index].find_stage(Stage::backbone)->bytes / 2, 1.0);
  Expected<Comparison> c = compare_runs({&*h200, &h200->cases[index], "H200"}, {&*t4, &t4->cases[0], "T4 what-if"});
  ASSERT_TRUE(c);
  for (Stage stage : {Stage::backbone, Stage::refine_encoder}) {
    const StageComparison& s = row(*c, stage);
    EXPECT_TRUE(s.highlighted) << stage_name(stage);
    EXPECT_TRUE(has_cause(s, CauseKind::precision_emulation)) << stage_name(stage);
    EXPECT_TRUE(has_cause(s, CauseKind::tf32_one_side)) << stage_name(stage);
  }
  EXPECT_TRUE(has_cause(row(*c, Stage::refine_transformer), CauseKind::precision_emulation));
  EXPECT_GT(*c->end_to_end_measured_ratio, *c->end_to_end_predicted_ratio);
  const std::string text = format_comparison(*c);
  EXPECT_NE(text.find("precision emulation"), std::string::npos);
}

TEST(Traps, FlagsOnAStrictLabel) {
  const Profile a100 = make_profile("NVIDIA A100-SXM4-40GB", Precision::fp32, true,
                                    {{Stage::backbone, 10.0, kComputeHeavy, kSmallBytes}});
  const std::vector<std::string> traps = run_traps(a100, a100.cases[0]);
  ASSERT_EQ(traps.size(), 1u);
  EXPECT_NE(traps[0].find("not strict FP32"), std::string::npos);
  const Profile t4 =
      make_profile("Tesla T4", Precision::tf32, false, {{Stage::backbone, 10.0, kComputeHeavy, kSmallBytes}});
  ASSERT_EQ(run_traps(t4, t4.cases[0]).size(), 1u);
  EXPECT_NE(run_traps(t4, t4.cases[0])[0].find("plain fp32"), std::string::npos);
}

}  // namespace
}  // namespace trackscope::core
