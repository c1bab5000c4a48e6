// The GPU specification table (consistency with the architectures, lookups by CUDA name) and the LocoTrack
// cost model against docs/locotrack-spec.md §5.1's independently counted table.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/perf/cost_model.h"
#include "core/perf/gpu_specs.h"

namespace trackscope::core {
namespace {

TEST(GpuSpecs, HasTheRequiredCards) {
  for (const char* key : {"t4", "l4", "a10", "a100-40gb", "a100-80gb", "h100-pcie", "h100-sxm", "h200", "rtx3090",
                          "rtx4090", "v100-sxm2-16gb", "rtx-a6000", "l40s"}) {
    EXPECT_NE(find_gpu_spec(key), nullptr) << key;
  }
}

TEST(GpuSpecs, RowsAreWellFormedAndUnique) {
  std::set<std::string> keys, names;
  for (const GpuSpec& s : gpu_spec_table()) {
    SCOPED_TRACE(s.key);
    EXPECT_TRUE(keys.insert(s.key).second);
    for (const std::string& name : s.cuda_names) EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_GT(s.multiprocessors, 0);
    EXPECT_GT(s.memory_gb, 0.0);
    EXPECT_GT(s.bandwidth_gbps, 0.0);
    EXPECT_GT(s.l2_mb, 0.0);
    EXPECT_GT(s.boost_clock_mhz, 0.0);
    EXPECT_GT(s.fp32_tflops, 0.0);
    EXPECT_GT(s.fp16_tensor_tflops, s.fp32_tflops);
    EXPECT_FALSE(s.source.empty());
    // TF32 and BF16 tensor cores came with Ampere (8.0); bf16 is native exactly there.
    EXPECT_EQ(s.native_bf16(), s.compute_capability() >= 80);
    EXPECT_EQ(s.tf32_tensor_tflops > 0.0, s.compute_capability() >= 80);
    EXPECT_EQ(s.bf16_tensor_tflops > 0.0, s.compute_capability() >= 80);
    if (s.compute_capability() >= 80) {
      // Dense TF32 is half the dense 16-bit tensor rate on every Ampere, Ada and Hopper part.
      EXPECT_NEAR(s.tf32_tensor_tflops, s.bf16_tensor_tflops / 2, 0.02 * s.bf16_tensor_tflops);
      EXPECT_DOUBLE_EQ(s.bf16_tensor_tflops, s.fp16_tensor_tflops);
    }
  }
}

TEST(GpuSpecs, Fp32RateMatchesSmsLanesAndClock) {
  // FP32 lanes per SM: Volta, Turing and GA100 have 64; GA10x, Ada and Hopper 128 (architecture whitepapers).
  auto lanes = [](const GpuSpec& s) { return s.compute_capability() <= 80 ? 64.0 : 128.0; };
  for (const GpuSpec& s : gpu_spec_table()) {
    const double computed = s.multiprocessors * lanes(s) * 2 * s.boost_clock_mhz * 1e6 / 1e12;
    EXPECT_NEAR(s.fp32_tflops, computed, 0.02 * computed) << s.key;
  }
}

TEST(GpuSpecs, DatasheetValuesOfKeyCards) {
  const GpuSpec* t4 = find_gpu_spec("t4");
  ASSERT_NE(t4, nullptr);
  EXPECT_DOUBLE_EQ(t4->fp32_tflops, 8.1);
  EXPECT_DOUBLE_EQ(t4->fp16_tensor_tflops, 65.0);
  EXPECT_DOUBLE_EQ(t4->bandwidth_gbps, 320.0);
  EXPECT_EQ(t4->compute_capability(), 75);
  const GpuSpec* a100 = find_gpu_spec("a100-40gb");
  const GpuSpec* a100_80 = find_gpu_spec("a100-80gb");
  ASSERT_TRUE(a100 && a100_80);
  EXPECT_DOUBLE_EQ(a100->tf32_tensor_tflops, 156.0);
  EXPECT_DOUBLE_EQ(a100->bf16_tensor_tflops, 312.0);
  EXPECT_DOUBLE_EQ(a100->bandwidth_gbps, 1555.0);
  EXPECT_DOUBLE_EQ(a100_80->bandwidth_gbps, 2039.0);
  const GpuSpec* h100 = find_gpu_spec("h100-sxm");
  const GpuSpec* h200 = find_gpu_spec("h200");
  ASSERT_TRUE(h100 && h200);
  EXPECT_DOUBLE_EQ(h100->fp32_tflops, 67.0);
  EXPECT_NEAR(h100->bf16_tensor_tflops, 989.0, 1.0);
  // The H200 is the H100 SXM's compute with more and faster memory.
  EXPECT_EQ(h200->multiprocessors, h100->multiprocessors);
  EXPECT_DOUBLE_EQ(h200->fp32_tflops, h100->fp32_tflops);
  EXPECT_DOUBLE_EQ(h200->tf32_tensor_tflops, h100->tf32_tensor_tflops);
  EXPECT_DOUBLE_EQ(h200->bf16_tensor_tflops, h100->bf16_tensor_tflops);
  EXPECT_DOUBLE_EQ(h200->bandwidth_gbps, 4800.0);
}

TEST(GpuSpecs, LookupByCudaName) {
  const std::map<std::string, std::string> expected = {{"Tesla T4", "t4"},
                                                       {"NVIDIA A100-SXM4-80GB", "a100-80gb"},
                                                       {"NVIDIA A100-SXM4-40GB", "a100-40gb"},
                                                       {"NVIDIA A100-PCIE-40GB", "a100-40gb"},
                                                       {"NVIDIA GeForce RTX 4090", "rtx4090"},
                                                       {"NVIDIA GeForce RTX 3090", "rtx3090"},
                                                       {"NVIDIA H200", "h200"},
                                                       {"NVIDIA H100 80GB HBM3", "h100-sxm"},
                                                       {"NVIDIA H100 PCIe", "h100-pcie"},
                                                       {"NVIDIA A10", "a10"},
                                                       {"nvidia l4", "l4"},
                                                       {"NVIDIA L40S", "l40s"},
                                                       {"T4", "t4"},
                                                       {"H200", "h200"}};
  for (const auto& [name, key] : expected) {
    const GpuSpec* spec = find_gpu_spec(name);
    ASSERT_NE(spec, nullptr) << name;
    EXPECT_EQ(spec->key, key) << name;
  }
  EXPECT_EQ(find_gpu_spec("NVIDIA B200"), nullptr);
  EXPECT_EQ(find_gpu_spec(""), nullptr);
  Expected<const GpuSpec*> missing = lookup_gpu_spec("NVIDIA B200");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().code(), StatusCode::not_found);
  EXPECT_NE(missing.status().message().find("h200"), std::string::npos);
}

TEST(GpuSpecs, PrecisionPeaks) {
  const GpuSpec& t4 = *find_gpu_spec("t4");
  EXPECT_DOUBLE_EQ(t4.nominal_peak_tflops(Precision::bf16), 65.0);  // what "bf16 is supported" suggests
  EXPECT_DOUBLE_EQ(t4.effective_peak_tflops(Precision::bf16), 8.1 * kEmulatedBf16FractionOfFp32);
  EXPECT_DOUBLE_EQ(t4.nominal_peak_tflops(Precision::tf32), 8.1);  // TF32 flags ignored below 8.0
  EXPECT_DOUBLE_EQ(t4.effective_peak_tflops(Precision::fp16), 65.0);
  const GpuSpec& a100 = *find_gpu_spec("a100-40gb");
  EXPECT_DOUBLE_EQ(a100.effective_peak_tflops(Precision::bf16), 312.0);
  EXPECT_DOUBLE_EQ(a100.effective_peak_tflops(Precision::tf32), 156.0);
  EXPECT_DOUBLE_EQ(a100.effective_peak_tflops(Precision::fp32), 19.5);
}

TEST(GpuSpecs, MeasuredPeaksOverrideTheDatasheet) {
  MeasuredPeaks measured;
  measured.fp32_tflops = 7.0;
  measured.bandwidth_gbps = 250.0;
  const DevicePeaks t4 = device_peaks(find_gpu_spec("t4"), measured);
  EXPECT_DOUBLE_EQ(t4.fp32_tflops, 7.0);
  EXPECT_DOUBLE_EQ(t4.bandwidth_gbps, 250.0);
  EXPECT_DOUBLE_EQ(t4.fp16_tflops, 65.0);
  EXPECT_NE(t4.source.find("measured"), std::string::npos);
  EXPECT_FALSE(device_peaks(nullptr, {}).known());  // a CPU without measurements
  EXPECT_TRUE(device_peaks(nullptr, measured).known());
}

// ---- cost model -------------------------------------------------------------------------------------------

CostModelConfig config(ModelSize size, int points) {
  CostModelConfig c;
  c.model_size = size;
  c.points = points;
  c.chunk = 256;
  return c;
}

TEST(CostModel, ReproducesTheTotalsOfLocotrackSection51) {
  // docs/locotrack-spec.md §5.1 (counted with torch.utils.flop_counter on the official model): 1.48 / 3.28 / 2.06
  // / 5.57 TFLOP.
  EXPECT_NEAR(locotrack_cost_breakdown(config(ModelSize::small, 256)).total().flops / 1e12, 1.48, 0.01);
  EXPECT_NEAR(locotrack_cost_breakdown(config(ModelSize::small, 1024)).total().flops / 1e12, 3.28, 0.01);
  EXPECT_NEAR(locotrack_cost_breakdown(config(ModelSize::base, 256)).total().flops / 1e12, 2.06, 0.01);
  EXPECT_NEAR(locotrack_cost_breakdown(config(ModelSize::base, 1024)).total().flops / 1e12, 5.57, 0.01);
}

TEST(CostModel, ReproducesThePerQueryUnitCosts) {
  CostModelConfig c = config(ModelSize::small, 1);
  c.chunk = 1;
  c.refinement_iterations = 1;
  LocoTrackCostBreakdown small = locotrack_cost_breakdown(c);
  EXPECT_NEAR(small.backbone.flops / 1e9, 885.0, 1.0);
  EXPECT_NEAR(small.init.flops / 1e6, 86.4, 0.5);
  EXPECT_NEAR(small.sampling.flops / 1e6, 8.0, 0.5);
  EXPECT_NEAR(small.correlation.flops / 1e6, 101.1, 0.2);
  EXPECT_NEAR(small.encoder.flops / 1e6, 195.4, 0.5);
  EXPECT_NEAR(small.mixer.flops / 1e6, 258.4, 0.5);
  c.model_size = ModelSize::base;
  LocoTrackCostBreakdown base = locotrack_cost_breakdown(c);
  EXPECT_NEAR(base.encoder.flops / 1e6, 458.0, 0.5);
  EXPECT_NEAR(base.mixer.flops / 1e6, 554.0, 0.5);
}

TEST(CostModel, MinimumBytesFollowTheTable) {
  // docs/locotrack-spec.md §5.1 "min bytes" (GB, N=256 / N=1024, chunk 256). The table rounds to one or two digits; the
  // init row's sub-step accounting is not spelled out there, hence its wider tolerance.
  struct Row {
    double n256, n1024, tolerance;
    WorkCost LocoTrackCostBreakdown::*member;
  };
  const Row rows[] = {{0.40, 0.40, 0.05, &LocoTrackCostBreakdown::backbone},
                      {0.2, 0.8, 0.15, &LocoTrackCostBreakdown::query_features},
                      {0.64, 2.6, 0.15, &LocoTrackCostBreakdown::init},
                      {9.8, 39.0, 0.05, &LocoTrackCostBreakdown::sampling},
                      {5.7, 22.8, 0.05, &LocoTrackCostBreakdown::correlation},
                      {1.5, 6.1, 0.05, &LocoTrackCostBreakdown::encoder},
                      {0.3, 1.2, 0.10, &LocoTrackCostBreakdown::mixer}};
  const LocoTrackCostBreakdown n256 = locotrack_cost_breakdown(config(ModelSize::small, 256));
  const LocoTrackCostBreakdown n1024 = locotrack_cost_breakdown(config(ModelSize::small, 1024));
  for (const Row& row : rows) {
    EXPECT_NEAR((n256.*row.member).bytes / 1e9, row.n256, row.tolerance * row.n256);
    EXPECT_NEAR((n1024.*row.member).bytes / 1e9, row.n1024, row.tolerance * row.n1024);
  }
  EXPECT_NEAR(n256.total().bytes / 1e9, 18.0, 1.0);
  EXPECT_NEAR(n1024.total().bytes / 1e9, 72.0, 3.0);
}

TEST(CostModel, StagesPartitionTheBreakdown) {
  const CostModelConfig c = config(ModelSize::base, 1000);  // 4 chunks, the last one short
  const LocoTrackCostBreakdown b = locotrack_cost_breakdown(c);
  WorkCost correlation = b.sampling;
  correlation += b.correlation;
  EXPECT_NEAR(stage_cost(Stage::refine_correlation, c).flops, correlation.flops, 1e-6 * correlation.flops);
  EXPECT_NEAR(stage_cost(Stage::refine_correlation, c).bytes, correlation.bytes, 1e-6 * correlation.bytes);
  EXPECT_NEAR(stage_cost(Stage::refine_encoder, c).bytes, b.encoder.bytes, 1e-6 * b.encoder.bytes);
  EXPECT_NEAR(stage_cost(Stage::refine_transformer, c).bytes, b.mixer.bytes, 1e-6 * b.mixer.bytes);
  EXPECT_NEAR(stage_cost(Stage::init, c).bytes, b.init.bytes, 1e-6 * b.init.bytes);
  double flops = 0.0;
  for (Stage stage : kAllStages) flops += stage_cost(stage, c).flops;
  EXPECT_NEAR(flops, b.total().flops, 1e-9 * flops);
  // One sample of a refinement stage is one chunk and one iteration.
  EXPECT_NEAR(chunk_stage_cost(Stage::refine_encoder, c, 256).flops * 4 * 4 * 1000 / 1024,
              stage_cost(Stage::refine_encoder, c).flops, 1e-6 * stage_cost(Stage::refine_encoder, c).flops);
}

TEST(CostModel, ScalesWithTheWorkload) {
  const CostModelConfig a = config(ModelSize::small, 1024);
  CostModelConfig chunked = a;
  chunked.chunk = 64;
  EXPECT_DOUBLE_EQ(stage_cost(Stage::refine_transformer, chunked).flops,
                   stage_cost(Stage::refine_transformer, a).flops);
  EXPECT_GT(stage_cost(Stage::refine_transformer, chunked).bytes,
            stage_cost(Stage::refine_transformer, a).bytes);  // weights per chunk
  CostModelConfig half = a;
  half.dtype_bytes = 2;
  EXPECT_DOUBLE_EQ(stage_cost(Stage::refine_correlation, half).bytes,
                   stage_cost(Stage::refine_correlation, a).bytes / 2);
  CostModelConfig fused = a;
  fused.fused_correlation = true;
  EXPECT_LT(stage_cost(Stage::refine_correlation, fused).bytes, 0.5 * stage_cost(Stage::refine_correlation, a).bytes);
  CostModelConfig longer = a;
  longer.frames = 94;
  EXPECT_NEAR(stage_cost(Stage::backbone, longer).flops, 2 * stage_cost(Stage::backbone, a).flops, 1.0);
  EXPECT_EQ(stage_cost(Stage::decode, a).flops, 0.0);
}

TEST(CostModel, RejectsAbsurdConfigurations) {
  CostModelConfig c;
  EXPECT_TRUE(c.check());
  c.frames = 0;
  EXPECT_EQ(c.check().code(), StatusCode::invalid_argument);
  c = {};
  c.resolution = 100;
  EXPECT_FALSE(c.check());
  c = {};
  c.dtype_bytes = 3;
  EXPECT_FALSE(c.check());
  c = {};
  c.points = -5;
  EXPECT_FALSE(c.check());
  EXPECT_TRUE(parse_model_size("base"));
  EXPECT_FALSE(parse_model_size("huge"));
}

TEST(GpuSpecs, EstimatedRatesForDevicesNotYetMeasured) {
  DeviceInfo h200{"cuda:0", "NVIDIA H200", 132};
  EXPECT_DOUBLE_EQ(estimated_fp32_tflops(h200, 0), find_gpu_spec("NVIDIA H200")->fp32_tflops);
  DeviceInfo unknown{"cuda:1", "Some Future GPU", 100};
  EXPECT_NEAR(estimated_fp32_tflops(unknown, 0), 100 * 128 * 2 * 1.5 / 1000.0, 1e-9);
  DeviceInfo cpu{"cpu", "CPU (16 threads)", 16};
  EXPECT_NEAR(estimated_fp32_tflops(cpu, 4), 4 * kCpuThreadFp32Gflops / 1000.0, 1e-12);  // the worker's threads
  EXPECT_NEAR(estimated_fp32_tflops(cpu, 0), 16 * kCpuThreadFp32Gflops / 1000.0, 1e-12);
  EXPECT_EQ(estimated_fp32_tflops(DeviceInfo{"cuda:2", "", 0}, 0), 0.0);
  // What the batch scheduler relies on: a data-centre GPU is estimated far faster than a workstation CPU.
  EXPECT_GT(estimated_fp32_tflops(h200, 0) / estimated_fp32_tflops(cpu, 16), 50.0);
}

}  // namespace
}  // namespace trackscope::core
