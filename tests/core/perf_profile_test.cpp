// The Profile data model: statistics, the case builder, the JSON schema (round trip, tolerance of unknown fields,
// rejection of unknown major versions and damaged files) and the transcribed H200 fixture.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/perf/profile.h"

namespace trackscope::core {
namespace {

namespace fs = std::filesystem;
const fs::path kFixture =
    fs::path(TRACKSCOPE_SOURCE_DIR) / "tests/data/perf/h200_locotrack_section5_2_transcribed.json";

fs::path output_dir() {
  const fs::path dir = fs::path(TRACKSCOPE_TEST_OUTPUT_DIR) / "perf_profile";
  fs::create_directories(dir);
  return dir;
}

TEST(Statistics, MedianP90MinMaxMean) {
  const std::vector<double> odd = {5, 1, 3, 2, 4};
  const SampleStatistics s = compute_statistics(odd);
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.median_ms, 3.0);
  EXPECT_DOUBLE_EQ(s.p90_ms, 4.6);  // numpy.percentile([1..5], 90)
  EXPECT_DOUBLE_EQ(s.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(s.max_ms, 5.0);
  EXPECT_DOUBLE_EQ(s.mean_ms, 3.0);
  const std::vector<double> even = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(compute_statistics(even).median_ms, 2.5);
  EXPECT_DOUBLE_EQ(compute_statistics(even).p90_ms, 3.7);
  EXPECT_EQ(compute_statistics({}).count, 0);
}

// Two chunks x two iterations; repeat r has every refinement sample take (r + 1) ms and the backbone 10 ms.
std::vector<StageSample> repeat_samples(int r) {
  std::vector<StageSample> samples;
  samples.push_back({Stage::backbone, 0, 0, 10.0 + r, StageClock::device_events, 100.0, 10.0});
  for (int chunk = 0; chunk < 2; ++chunk) {
    samples.push_back({Stage::init, chunk, 0, 2.0, StageClock::device_events, 5.0, 1.0});
    for (int iteration = 1; iteration <= 2; ++iteration) {
      samples.push_back(
          {Stage::refine_encoder, chunk, iteration, (r + 1.0) * iteration, StageClock::device_events, 7.0, 3.0});
    }
  }
  return samples;
}

TEST(ProfileCaseBuilder, AggregatesChunksIterationsAndRepeats) {
  RunConfig config;
  config.points = 512;
  config.frames = 47;
  config.chunk = 256;
  ProfileCaseBuilder builder(config);
  builder.add_warmup(repeat_samples(9), 500.0);
  const double walls[] = {40.0, 60.0, 50.0};
  for (int r = 0; r < 3; ++r) builder.add_repeat(repeat_samples(r), walls[r]);
  const ProfileCase c = builder.build(123, TelemetrySummary{});
  EXPECT_EQ(c.name, "small-n512-t47-fp32-c256");
  EXPECT_EQ(c.config.repeats, 3);
  EXPECT_EQ(c.config.warmup, 1);
  EXPECT_DOUBLE_EQ(c.end_to_end.median_ms, 50.0);
  EXPECT_DOUBLE_EQ(c.points_per_second, 512 / 0.050);
  EXPECT_EQ(c.peak_device_memory_bytes, 123);
  ASSERT_EQ(c.stages.size(), 3u);  // only the stages that were sampled, in canonical order
  EXPECT_EQ(c.stages[0].name, "backbone");
  EXPECT_EQ(c.stages[1].name, "init");
  const StageStats* encoder = c.find_stage(Stage::refine_encoder);
  ASSERT_NE(encoder, nullptr);
  // Per repeat: 2 chunks x (1 + 2) x (r + 1) ms = 6 (r + 1).
  EXPECT_EQ(encoder->repeat_ms, (std::vector<double>{6.0, 12.0, 18.0}));
  EXPECT_DOUBLE_EQ(encoder->stats.median_ms, 12.0);
  EXPECT_EQ(encoder->warmup_ms, (std::vector<double>{60.0}));
  EXPECT_EQ(encoder->executions_per_run, 4);
  EXPECT_DOUBLE_EQ(encoder->flops, 28.0);
  EXPECT_DOUBLE_EQ(encoder->bytes, 12.0);
  ASSERT_EQ(encoder->iterations.size(), 2u);
  EXPECT_DOUBLE_EQ(encoder->iterations[0].stats.median_ms, 2 * 2.0);  // iteration 1 of repeat 1: 2 chunks x 2 ms
  EXPECT_DOUBLE_EQ(encoder->iterations[1].stats.median_ms, 2 * 4.0);
  ASSERT_EQ(encoder->chunk_samples.size(), 4u);  // from the median repeat (wall 50 ms, r = 2)
  EXPECT_DOUBLE_EQ(encoder->chunk_samples[1].ms, 3.0 * 2);
  EXPECT_EQ(c.find_stage(Stage::init)->iterations.size(), 0u);
}

Profile rich_profile() {
  Profile p;
  p.tool = {"trackscope-cli", "0.1.0", "trackscope-cli bench --json x.json"};
  p.created_utc = "2025-01-31T12:00:00Z";
  p.origin = ProfileOrigin::measured;
  p.host = {"AMD EPYC 9654", 16, "gpu-host", "Linux 6.8 x86_64"};
  p.device.id = "cuda:0";
  p.device.name = "NVIDIA H200";
  p.device.multiprocessors = 132;
  p.device.memory_bytes = 150754820096;
  p.device.compute_capability_major = 9;
  p.device.sm_clock_max_mhz = 1980;
  p.device.memory_clock_max_mhz = 3201;
  p.device.l2_cache_bytes = 52428800;
  p.device.pci_bus_id = "0000:19:00.0";
  p.device.measured_peaks.fp32_tflops = 51.5;
  p.device.measured_peaks.bandwidth_gbps = 4100.25;
  p.runtime = {"2.11.0", "13.0", "9.10.2", "580.65.06", true};
  RunConfig config;
  config.model_size = "base";
  config.points = 1024;
  config.frames = 47;
  config.precision = Precision::bf16;
  config.chunk = 256;
  config.tf32_cudnn = true;
  ProfileCaseBuilder builder(config);
  for (int r = 0; r < 3; ++r) builder.add_repeat(repeat_samples(r), 40.0 + r * 0.1);
  TelemetrySummary telemetry;
  telemetry.samples = 31;
  telemetry.sm_clock_min_mhz = 1755;
  telemetry.sm_clock_median_mhz = 1980;
  telemetry.power_median_w = 412.5;
  telemetry.power_limit_w = 700;
  telemetry.temperature_max_c = 61;
  telemetry.memory_used_max_bytes = 3'000'000'000;
  telemetry.pcie_generation = 5;
  telemetry.throttle_reasons_seen = throttle_reason::sw_power_cap;
  telemetry.throttle_reasons_seen_names = decode_throttle_reasons(throttle_reason::sw_power_cap);
  ProfileCase c = builder.build(2'600'000'000, telemetry);
  c.host_syncs_per_run = 12;
  c.stages[0].kernel_launches_per_run = 420;
  c.notes = "a note, with \"quotes\"";
  p.cases.push_back(c);
  c.name = "second";
  c.telemetry.reset();
  p.cases.push_back(c);
  return p;
}

TEST(ProfileJson, RoundTripsEveryField) {
  const Profile p = rich_profile();
  Expected<Profile> back = profile_from_json(profile_to_json(p));
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(*back, p);
  const fs::path file = output_dir() / "round_trip.json";
  ASSERT_TRUE(write_profile(p, file));
  Expected<Profile> read = read_profile(file);
  ASSERT_TRUE(read) << read.status().message();
  EXPECT_EQ(*read, p);
}

TEST(ProfileJson, ToleratesUnknownFieldsAndNewerMinorVersions) {
  nlohmann::json j = nlohmann::json::parse(profile_to_json(rich_profile()));
  j["schema_version"] = "1.7";
  j["future_top_level"] = {{"x", 1}};
  j["device"]["future_device_field"] = "y";
  j["cases"][0]["future_case_field"] = nlohmann::json::array({1, 2});
  j["cases"][0]["stages"][0]["future_stage_field"] = 3.5;
  Expected<Profile> back = profile_from_json(j.dump());
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(back->schema_minor, 7);
  Profile expected = rich_profile();
  expected.schema_minor = 7;
  EXPECT_EQ(*back, expected);
}

TEST(ProfileJson, RejectsUnknownMajorVersionsAndOtherSchemas) {
  nlohmann::json j = nlohmann::json::parse(profile_to_json(rich_profile()));
  j["schema_version"] = "2.0";
  Expected<Profile> newer = profile_from_json(j.dump());
  ASSERT_FALSE(newer);
  EXPECT_EQ(newer.status().code(), StatusCode::unsupported);
  EXPECT_NE(newer.status().message().find("2.0"), std::string::npos) << newer.status().message();
  j["schema_version"] = "1.0";
  j["schema"] = "someone.else";
  EXPECT_EQ(profile_from_json(j.dump()).status().code(), StatusCode::unsupported);
  j["schema"] = kProfileSchemaName;
  j["schema_version"] = "one";
  EXPECT_EQ(profile_from_json(j.dump()).status().code(), StatusCode::corrupt_data);
}

TEST(ProfileJson, NamesTheMissingOrMistypedField) {
  nlohmann::json j = nlohmann::json::parse(profile_to_json(rich_profile()));
  j["cases"][1]["config"].erase("points");
  Expected<Profile> missing = profile_from_json(j.dump());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().code(), StatusCode::corrupt_data);
  EXPECT_NE(missing.status().message().find("cases[1].config.points"), std::string::npos) << missing.status().message();
  j = nlohmann::json::parse(profile_to_json(rich_profile()));
  j["cases"][0]["stages"][2]["stats"]["median_ms"] = "fast";
  Expected<Profile> mistyped = profile_from_json(j.dump());
  ASSERT_FALSE(mistyped);
  EXPECT_NE(mistyped.status().message().find("cases[0].stages[2].stats.median_ms"), std::string::npos)
      << mistyped.status().message();
  j = nlohmann::json::parse(profile_to_json(rich_profile()));
  j["cases"][0]["config"]["precision"] = "fp8";
  EXPECT_EQ(profile_from_json(j.dump()).status().code(), StatusCode::corrupt_data);
  EXPECT_EQ(profile_from_json("[1, 2]").status().code(), StatusCode::corrupt_data);
}

TEST(ProfileJson, DamagedAndMissingFiles) {
  const std::string text = profile_to_json(rich_profile());
  const fs::path truncated = output_dir() / "truncated.json";
  std::ofstream(truncated) << text.substr(0, text.size() / 2);
  Expected<Profile> damaged = read_profile(truncated);
  ASSERT_FALSE(damaged);
  EXPECT_EQ(damaged.status().code(), StatusCode::corrupt_data);
  EXPECT_NE(damaged.status().message().find("truncated.json"), std::string::npos);
  EXPECT_EQ(read_profile(output_dir() / "does_not_exist.json").status().code(), StatusCode::not_found);
  EXPECT_EQ(write_profile(rich_profile(), output_dir() / "no_such_dir" / "x.json").code(), StatusCode::io_error);
}

TEST(ProfileJson, ReadsTheTranscribedH200Fixture) {
  Expected<Profile> p = read_profile(kFixture);
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->origin, ProfileOrigin::transcribed);
  EXPECT_EQ(p->device.name, "NVIDIA H200");
  EXPECT_EQ(p->device.compute_capability(), 90);
  EXPECT_EQ(p->cases.size(), 11u);  // every row of docs/locotrack-spec.md §5.2
  const ProfileCase* official = nullptr;
  for (const ProfileCase& c : p->cases) {
    if (c.name == "small-n1024-t47-c256-default") official = &c;
    EXPECT_EQ(c.config.frames, 47);
    EXPECT_EQ(c.config.warmup, -1);  // not recorded
  }
  ASSERT_NE(official, nullptr);
  EXPECT_TRUE(official->config.tf32_cudnn);
  EXPECT_FALSE(official->config.tf32_matmul);
  EXPECT_DOUBLE_EQ(official->end_to_end.median_ms, 316.0);
  EXPECT_DOUBLE_EQ(official->find_stage(Stage::backbone)->stats.median_ms, 12.8);
  EXPECT_DOUBLE_EQ(official->find_stage(Stage::refine_correlation)->stats.median_ms, 73.4 + 43.5);
  EXPECT_EQ(official->find_stage(Stage::refine_encoder)->executions_per_run, 16);
}

}  // namespace
}  // namespace trackscope::core

namespace trackscope::core {
namespace {

TEST(ProfileJson, TheSchemaDocumentsExampleParses) {
  std::ifstream in(fs::path(TRACKSCOPE_SOURCE_DIR) / "docs/bench-json-schema.md");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const size_t begin = doc.find("```json\n");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = doc.find("```", begin + 8);
  Expected<Profile> example = profile_from_json(doc.substr(begin + 8, end - begin - 8));
  ASSERT_TRUE(example) << example.status().message();
  ASSERT_EQ(example->cases.size(), 1u);
  const ProfileCase& c = example->cases[0];
  EXPECT_EQ(c.stages.size(), 3u);
  EXPECT_EQ(c.find_stage(Stage::refine_encoder)->iterations.size(), 4u);
  EXPECT_EQ(c.find_stage(Stage::backbone)->warmup_ms.size(), 2u);
  ASSERT_TRUE(c.telemetry);
  EXPECT_EQ(c.telemetry->throttle_reasons_seen, throttle_reason::gpu_idle);
  EXPECT_EQ(*example->device.measured_peaks.bandwidth_gbps, 4150.0);
  // Writing it back and reading again loses nothing.
  Expected<Profile> again = profile_from_json(profile_to_json(*example));
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *example);
}

}  // namespace
}  // namespace trackscope::core

namespace trackscope::core {
namespace {

// Issue 18 item 7: sense checks on load. Every profile the project ships still loads; negative or absurd
// timings, counts that overflow and numbers beyond a double are refused with the field named.
TEST(ProfileSenseChecks, EveryShippedProfileLoads) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(TRACKSCOPE_SOURCE_DIR) / "docs/profiles")) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    if (text.find("\"trackscope.profile\"") == std::string::npos) continue;  // other result files live there too
    Expected<Profile> profile = read_profile(entry.path());
    EXPECT_TRUE(profile) << entry.path() << ": " << profile.status().message();
    ++count;
  }
  EXPECT_GT(count, 5);
}

TEST(ProfileSenseChecks, NegativeAndAbsurdValuesAreRefusedWithTheFieldNamed) {
  struct Case {
    std::string name;
    std::function<void(nlohmann::json&)> edit;
    std::string words;
  };
  const std::vector<Case> cases = {
      {"negative stage median", [](nlohmann::json& j) { j["cases"][0]["stages"][0]["stats"]["median_ms"] = -5.0; },
       "cases[0].stages[0].stats.median_ms"},
      {"negative repeat",
       [](nlohmann::json& j) {
         j["cases"][0]["stages"][0]["repeat_ms"] = {1.0, -2.0};
       },
       "repeat_ms[1]"},
      {"median above max", [](nlohmann::json& j) { j["cases"][0]["end_to_end"]["median_ms"] = 1e6; },
       "outside [min_ms, max_ms]"},
      {"points beyond int", [](nlohmann::json& j) { j["cases"][0]["config"]["points"] = 1e300; },
       "cases[0].config.points"},
      {"points wraps", [](nlohmann::json& j) { j["cases"][0]["config"]["points"] = int64_t{1} << 40; }, "out of range"},
      {"negative points", [](nlohmann::json& j) { j["cases"][0]["config"]["points"] = -1; }, "must be >= 0"},
      {"negative memory", [](nlohmann::json& j) { j["cases"][0]["peak_device_memory_bytes"] = -1; },
       "peak_device_memory_bytes"},
      {"huge schema version", [](nlohmann::json& j) { j["schema_version"] = "99999999999.0"; }, "MAJOR.MINOR"},
      {"chunk sample",
       [](nlohmann::json& j) {
         j["cases"][0]["stages"][0]["chunk_samples"] = {{{"ms", -1.0}}};
       },
       "chunk_samples[0].ms"},
  };
  for (const Case& c : cases) {
    nlohmann::json j = nlohmann::json::parse(profile_to_json(rich_profile()));
    c.edit(j);
    Expected<Profile> loaded = profile_from_json(j.dump());
    ASSERT_FALSE(loaded) << c.name;
    EXPECT_EQ(loaded.status().code(), StatusCode::corrupt_data) << c.name;
    EXPECT_NE(loaded.status().message().find(c.words), std::string::npos)
        << c.name << ": " << loaded.status().message();
  }
  // A number beyond a double's range is damage, not a crash.
  std::string text = profile_to_json(rich_profile());
  const size_t at = text.find("\"median_ms\": ");
  ASSERT_NE(at, std::string::npos);
  text.insert(at + 13, "1e999");
  text.erase(at + 13 + 5, text.find_first_of(",\n}", at + 13 + 5) - (at + 13 + 5));
  EXPECT_EQ(profile_from_json(text).status().code(), StatusCode::corrupt_data);
}

}  // namespace
}  // namespace trackscope::core
