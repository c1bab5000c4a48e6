#include "core/perf/gpu_specs.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace trackscope::core {

namespace {

// Dense rates only: datasheets print tensor rates "with sparsity" (marked *); those are halved here.
// Where a datasheet gives no SM count, L2 size or boost clock, the architecture whitepaper does.
// Columns: key, display name, CUDA names, architecture, SMs, cc, memory GB, GB/s, L2 MB, boost MHz,
//          fp32, tf32 tensor, bf16 tensor, fp16 tensor (TFLOP/s), source.
const std::vector<GpuSpec>& table() {
  static const std::vector<GpuSpec> kRows = {
      // NVIDIA Tesla V100 GPU datasheet (SXM2: 15.7 FP32, 125 tensor, 900 GB/s HBM2); Volta whitepaper (80 SMs,
      // 6 MB L2, 1530 MHz boost). No TF32 or BF16 tensor cores. 16 GB and 32 GB variants.
      {"v100-sxm2-16gb",
       "NVIDIA Tesla V100 SXM2 16GB",
       {"Tesla V100-SXM2-16GB"},
       "Volta",
       80,
       7,
       0,
       16.0,
       900.0,
       6.0,
       1530.0,
       15.7,
       0.0,
       0.0,
       125.0,
       "NVIDIA Tesla V100 GPU datasheet (SXM2); NVIDIA Tesla V100 GPU Architecture whitepaper"},
      {"v100-sxm2-32gb",
       "NVIDIA Tesla V100 SXM2 32GB",
       {"Tesla V100-SXM2-32GB"},
       "Volta",
       80,
       7,
       0,
       32.0,
       900.0,
       6.0,
       1530.0,
       15.7,
       0.0,
       0.0,
       125.0,
       "NVIDIA Tesla V100 GPU datasheet (SXM2); NVIDIA Tesla V100 GPU Architecture whitepaper"},
      // NVIDIA T4 Tensor Core GPU datasheet: 8.1 FP32, 65 FP16 mixed precision, 16 GB GDDR6, 320 GB/s;
      // Turing whitepaper: 40 SMs, 4 MB L2, 1590 MHz boost. No TF32 or BF16 tensor cores.
      {"t4",
       "NVIDIA T4",
       {"Tesla T4"},
       "Turing",
       40,
       7,
       5,
       16.0,
       320.0,
       4.0,
       1590.0,
       8.1,
       0.0,
       0.0,
       65.0,
       "NVIDIA T4 Tensor Core GPU datasheet; NVIDIA Turing GPU Architecture whitepaper"},
      // NVIDIA A100 Tensor Core GPU datasheet: 19.5 FP32, 156 TF32, 312 BF16/FP16, 1,555 GB/s (40GB);
      // A100 whitepaper: 108 SMs, 40 MB L2, 1410 MHz boost.
      {"a100-40gb",
       "NVIDIA A100 40GB",
       {"NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB", "A100-SXM4-40GB", "A100-PCIE-40GB"},
       "Ampere",
       108,
       8,
       0,
       40.0,
       1555.0,
       40.0,
       1410.0,
       19.5,
       156.0,
       312.0,
       312.0,
       "NVIDIA A100 Tensor Core GPU datasheet (40GB); NVIDIA A100 Tensor Core GPU Architecture whitepaper"},
      // Same datasheet, 80GB SXM: 2,039 GB/s.
      {"a100-80gb",
       "NVIDIA A100 80GB SXM4",
       {"NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"},
       "Ampere",
       108,
       8,
       0,
       80.0,
       2039.0,
       40.0,
       1410.0,
       19.5,
       156.0,
       312.0,
       312.0,
       "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM)"},
      // Same datasheet, 80GB PCIe: 1,935 GB/s.
      {"a100-80gb-pcie",
       "NVIDIA A100 80GB PCIe",
       {"NVIDIA A100 80GB PCIe", "NVIDIA A100-PCIE-80GB"},
       "Ampere",
       108,
       8,
       0,
       80.0,
       1935.0,
       40.0,
       1410.0,
       19.5,
       156.0,
       312.0,
       312.0,
       "NVIDIA A100 Tensor Core GPU datasheet (80GB PCIe)"},
      // NVIDIA A10 Tensor Core GPU datasheet: 31.2 FP32, 62.5 TF32, 125 BF16/FP16, 24 GB GDDR6, 600 GB/s;
      // GA102 whitepaper: 72 SMs, 6 MB L2, 1695 MHz boost.
      {"a10",
       "NVIDIA A10",
       {"NVIDIA A10"},
       "Ampere",
       72,
       8,
       6,
       24.0,
       600.0,
       6.0,
       1695.0,
       31.2,
       62.5,
       125.0,
       125.0,
       "NVIDIA A10 Tensor Core GPU datasheet; NVIDIA Ampere GA102 GPU Architecture whitepaper"},
      // GA102 whitepaper, GeForce RTX 3090: 35.6 FP32, TF32 35.6, BF16 and FP16 (FP32 accumulate) 71,
      // 936 GB/s GDDR6X, 82 SMs, 6 MB L2, 1695 MHz boost.
      {"rtx3090",
       "NVIDIA GeForce RTX 3090",
       {"NVIDIA GeForce RTX 3090", "GeForce RTX 3090"},
       "Ampere",
       82,
       8,
       6,
       24.0,
       936.0,
       6.0,
       1695.0,
       35.6,
       35.6,
       71.0,
       71.0,
       "NVIDIA Ampere GA102 GPU Architecture whitepaper (RTX 3090)"},
      // NVIDIA RTX A6000 datasheet (38.7 FP32, 309.7 sparse FP16 tensor, 48 GB, 768 GB/s); GA102 whitepaper:
      // 84 SMs, 6 MB L2, 1800 MHz boost, TF32 77.4 dense.
      {"rtx-a6000",
       "NVIDIA RTX A6000",
       {"NVIDIA RTX A6000"},
       "Ampere",
       84,
       8,
       6,
       48.0,
       768.0,
       6.0,
       1800.0,
       38.7,
       77.4,
       154.8,
       154.8,
       "NVIDIA RTX A6000 datasheet; NVIDIA Ampere GA102 GPU Architecture whitepaper"},
      // NVIDIA L4 Tensor Core GPU datasheet: 30.3 FP32, 120* TF32, 242* BF16/FP16 (*sparse), 24 GB, 300 GB/s;
      // Ada whitepaper: 58 SMs, 48 MB L2, 2040 MHz boost.
      {"l4",
       "NVIDIA L4",
       {"NVIDIA L4"},
       "Ada Lovelace",
       58,
       8,
       9,
       24.0,
       300.0,
       48.0,
       2040.0,
       30.3,
       60.0,
       121.0,
       121.0,
       "NVIDIA L4 Tensor Core GPU datasheet; NVIDIA Ada GPU Architecture whitepaper"},
      // Ada whitepaper, GeForce RTX 4090: 82.6 FP32, TF32 82.6, BF16 and FP16 (FP32 accumulate) 165.2,
      // 1,008 GB/s GDDR6X, 128 SMs, 72 MB L2, 2520 MHz boost.
      {"rtx4090",
       "NVIDIA GeForce RTX 4090",
       {"NVIDIA GeForce RTX 4090", "GeForce RTX 4090"},
       "Ada Lovelace",
       128,
       8,
       9,
       24.0,
       1008.0,
       72.0,
       2520.0,
       82.6,
       82.6,
       165.2,
       165.2,
       "NVIDIA Ada GPU Architecture whitepaper (RTX 4090)"},
      // NVIDIA L40S datasheet: 91.6 FP32, 183 | 366* TF32, 362.05 | 733* BF16/FP16, 48 GB GDDR6, 864 GB/s;
      // 142 SMs, 96 MB L2, 2520 MHz boost.
      {"l40s",
       "NVIDIA L40S",
       {"NVIDIA L40S"},
       "Ada Lovelace",
       142,
       8,
       9,
       48.0,
       864.0,
       96.0,
       2520.0,
       91.6,
       183.0,
       362.05,
       362.05,
       "NVIDIA L40S GPU datasheet; NVIDIA Ada GPU Architecture whitepaper"},
      // NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe: 51 FP32, 756* TF32, 1,513* BF16/FP16, 80 GB, 2 TB/s;
      // Hopper whitepaper: 114 SMs, 50 MB L2, 1755 MHz boost.
      {"h100-pcie",
       "NVIDIA H100 PCIe",
       {"NVIDIA H100 PCIe"},
       "Hopper",
       114,
       9,
       0,
       80.0,
       2000.0,
       50.0,
       1755.0,
       51.0,
       378.0,
       756.0,
       756.0,
       "NVIDIA H100 Tensor Core GPU datasheet (PCIe); NVIDIA H100 Tensor Core GPU Architecture whitepaper"},
      // Same datasheet, H100 SXM: 67 FP32, 989* TF32, 1,979* BF16/FP16, 80 GB HBM3, 3.35 TB/s;
      // Hopper whitepaper: 132 SMs, 50 MB L2, 1980 MHz boost.
      {"h100-sxm",
       "NVIDIA H100 SXM5",
       {"NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"},
       "Hopper",
       132,
       9,
       0,
       80.0,
       3350.0,
       50.0,
       1980.0,
       67.0,
       494.7,
       989.4,
       989.4,
       "NVIDIA H100 Tensor Core GPU datasheet (SXM); NVIDIA H100 Tensor Core GPU Architecture whitepaper"},
      // NVIDIA H200 Tensor Core GPU datasheet, H200 SXM: the H100 SXM's compute (67 FP32, 989* TF32, 1,979* BF16)
      // with 141 GB HBM3e at 4.8 TB/s; same GH100 configuration (132 SMs, 50 MB L2, 1980 MHz).
      {"h200",
       "NVIDIA H200 SXM",
       {"NVIDIA H200"},
       "Hopper",
       132,
       9,
       0,
       141.0,
       4800.0,
       50.0,
       1980.0,
       67.0,
       494.7,
       989.4,
       989.4,
       "NVIDIA H200 Tensor Core GPU datasheet (SXM)"},
      // Same datasheet, H200 NVL: 60 FP32, 835* TF32, 1,671* BF16/FP16, 141 GB at 4.8 TB/s. The datasheet gives no
      // clock: 1775 MHz is the FP32 rate / (132 SMs x 128 lanes x 2).
      {"h200-nvl",
       "NVIDIA H200 NVL",
       {"NVIDIA H200 NVL"},
       "Hopper",
       132,
       9,
       0,
       141.0,
       4800.0,
       50.0,
       1775.0,
       60.0,
       417.5,
       835.5,
       835.5,
       "NVIDIA H200 Tensor Core GPU datasheet (NVL)"},
  };
  return kRows;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Drops vendor words, spaces and dashes: "NVIDIA GeForce RTX 4090" -> "rtx4090", "Tesla T4" -> "t4".
std::string model_token(std::string_view text) {
  std::string out = lower(text);
  for (std::string_view word : {"nvidia", "geforce", "tesla", "tensor core gpu"}) {
    for (size_t at = out.find(word); at != std::string::npos; at = out.find(word)) out.erase(at, word.size());
  }
  std::erase_if(out, [](char c) { return c == ' ' || c == '-' || c == '_'; });
  return out;
}

}  // namespace

double GpuSpec::nominal_peak_tflops(Precision precision) const {
  switch (precision) {
    case Precision::fp32: return fp32_tflops;
    case Precision::tf32: return has_tf32() ? tf32_tensor_tflops : fp32_tflops;
    case Precision::bf16:
      if (bf16_tensor_tflops > 0.0) return bf16_tensor_tflops;
      return fp16_tensor_tflops > 0.0 ? fp16_tensor_tflops : fp32_tflops;
    case Precision::fp16: return fp16_tensor_tflops > 0.0 ? fp16_tensor_tflops : fp32_tflops;
  }
  return fp32_tflops;
}

double GpuSpec::effective_peak_tflops(Precision precision) const {
  if (precision == Precision::bf16 && !native_bf16()) return fp32_tflops * kEmulatedBf16FractionOfFp32;
  return nominal_peak_tflops(precision);
}

std::span<const GpuSpec> gpu_spec_table() { return table(); }

const GpuSpec* find_gpu_spec(std::string_view name_or_key) {
  const std::string wanted = lower(name_or_key);
  if (wanted.empty()) return nullptr;
  for (const GpuSpec& spec : table()) {
    if (spec.key == wanted || lower(spec.display_name) == wanted) return &spec;
    for (const std::string& name : spec.cuda_names) {
      if (lower(name) == wanted) return &spec;
    }
  }
  // Fallback on the model token, exact only: "a10" must not match "a100".
  const std::string token = model_token(name_or_key);
  for (const GpuSpec& spec : table()) {
    if (model_token(spec.key) == token || model_token(spec.display_name) == token) return &spec;
    for (const std::string& name : spec.cuda_names) {
      if (model_token(name) == token) return &spec;
    }
  }
  return nullptr;
}

Expected<const GpuSpec*> lookup_gpu_spec(std::string_view name_or_key) {
  if (const GpuSpec* spec = find_gpu_spec(name_or_key)) return spec;
  std::string keys;
  for (const GpuSpec& spec : table()) keys += (keys.empty() ? "" : ", ") + spec.key;
  return not_found(fmt::format("no GPU '{}' in the specification table (known: {})", name_or_key, keys));
}

double DevicePeaks::effective_tflops(Precision precision) const {
  switch (precision) {
    case Precision::fp32: return fp32_tflops;
    case Precision::tf32: return tf32_tflops > 0.0 ? tf32_tflops : fp32_tflops;
    case Precision::bf16: return bf16_tflops > 0.0 ? bf16_tflops : fp32_tflops * kEmulatedBf16FractionOfFp32;
    case Precision::fp16: return fp16_tflops > 0.0 ? fp16_tflops : fp32_tflops;
  }
  return fp32_tflops;
}

double DevicePeaks::nominal_tflops(Precision precision) const {
  switch (precision) {
    case Precision::tf32: return nominal_tf32_tflops > 0.0 ? nominal_tf32_tflops : fp32_tflops;
    case Precision::bf16: return nominal_bf16_tflops > 0.0 ? nominal_bf16_tflops : fp32_tflops;
    default: return effective_tflops(precision);
  }
}

DevicePeaks device_peaks(const GpuSpec* spec, const MeasuredPeaks& measured) {
  DevicePeaks peaks;
  if (spec) {
    peaks.source = "datasheet: " + spec->source;
    peaks.compute_capability = spec->compute_capability();
    peaks.fp32_tflops = spec->fp32_tflops;
    peaks.tf32_tflops = spec->has_tf32() ? spec->tf32_tensor_tflops : 0.0;
    peaks.bf16_tflops = spec->effective_peak_tflops(Precision::bf16);
    peaks.fp16_tflops = spec->fp16_tensor_tflops;
    peaks.nominal_bf16_tflops = spec->nominal_peak_tflops(Precision::bf16);
    peaks.nominal_tf32_tflops = spec->nominal_peak_tflops(Precision::tf32);
    peaks.bandwidth_gbps = spec->bandwidth_gbps;
    peaks.l2_mb = spec->l2_mb;
    peaks.boost_clock_mhz = spec->boost_clock_mhz;
  }
  if (!measured.empty()) peaks.source = spec ? peaks.source + " + measured peaks" : "measured peaks";
  if (measured.fp32_tflops) peaks.fp32_tflops = *measured.fp32_tflops;
  if (measured.tf32_tflops) peaks.tf32_tflops = peaks.nominal_tf32_tflops = *measured.tf32_tflops;
  if (measured.bf16_tflops) peaks.bf16_tflops = *measured.bf16_tflops;
  if (measured.fp16_tflops) peaks.fp16_tflops = *measured.fp16_tflops;
  if (measured.bandwidth_gbps) peaks.bandwidth_gbps = *measured.bandwidth_gbps;
  if (!spec && measured.bf16_tflops) peaks.nominal_bf16_tflops = *measured.bf16_tflops;
  return peaks;
}

double estimated_fp32_tflops(const DeviceInfo& device, int cpu_threads) {
  if (!device.is_cuda()) {
    const int threads = cpu_threads > 0 ? cpu_threads : device.multiprocessors;
    return std::max(0, threads) * kCpuThreadFp32Gflops / 1000.0;
  }
  if (const GpuSpec* spec = find_gpu_spec(device.name); spec != nullptr && spec->fp32_tflops > 0.0) {
    return spec->fp32_tflops;
  }
  constexpr double kLanesPerMultiprocessor = 128.0, kFlopPerLane = 2.0, kClockGhz = 1.5;
  return std::max(0, device.multiprocessors) * kLanesPerMultiprocessor * kFlopPerLane * kClockGhz / 1000.0;
}

}  // namespace trackscope::core
