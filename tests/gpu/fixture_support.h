#pragma once
// Shared by the tests that compare against the official implementation's fixtures (../shared/fixtures/locotrack):
// reading a fixture file, the parity inputs, and the two figures every comparison prints.

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

#include "gpu/weights/weights.h"

namespace trackscope::gpu::fixtures {

inline const std::filesystem::path kFixtures = std::filesystem::path(TRACKSCOPE_SHARED_DIR) / "fixtures" / "locotrack";

/// True when the fixture file `name` (or its first shard, name-0.safetensors) is there. A GPU machine's carry holds
/// the small or the base fixtures, rarely both.
inline bool fixture_available(const std::string& name) {
  const std::filesystem::path path = kFixtures / name;
  std::filesystem::path first_shard = path;
  first_shard.replace_filename(path.stem().string() + "-0" + path.extension().string());
  return std::filesystem::exists(path) || std::filesystem::exists(first_shard);
}

/// Skips the test (with the file named) when a fixture is missing, instead of failing on the read.
#define TRACKSCOPE_REQUIRE_FIXTURE(name)                                                   \
  if (!::trackscope::gpu::fixtures::fixture_available(name))                               \
  GTEST_SKIP() << "fixture " << (::trackscope::gpu::fixtures::kFixtures / (name)).string() \
               << " is missing (tools/gpu/prepare.sh --fixtures small|base|all carries it)"

/// Max |a - b| and ||a - b|| / ||b||.
struct Figures {
  double max_abs = 0.0;
  double relative_l2 = 0.0;
};

/// Compares in double on the CPU; a shape mismatch fails the test and returns huge figures.
inline Figures compare(const at::Tensor& actual, const at::Tensor& expected) {
  const at::Tensor a = actual.to(at::kCPU, at::kDouble), e = expected.to(at::kCPU, at::kDouble);
  EXPECT_EQ(a.sizes(), e.sizes());
  if (a.sizes() != e.sizes()) return {1e30, 1e30};
  const at::Tensor difference = a - e;
  return {difference.abs().max().item<double>(),
          difference.norm().item<double>() / std::max(e.norm().item<double>(), 1e-30)};
}

/// Every tensor of a fixture file by key (CPU, dtype as stored). Throws when the file cannot be read.
inline std::map<std::string, at::Tensor> read_fixture(const std::string& name) {
  core::Expected<weights::StateDict> state = weights::read_state_dict(kFixtures / name);
  if (!state) throw std::runtime_error(state.status().message());
  std::map<std::string, at::Tensor> out;
  for (auto& [key, tensor] : state->tensors) out.emplace(key, tensor);
  return out;
}

/// parity_inputs.safetensors, read once per process.
inline const std::map<std::string, at::Tensor>& parity_inputs() {
  static const std::map<std::string, at::Tensor> cached = read_fixture("parity_inputs.safetensors");
  return cached;
}

}  // namespace trackscope::gpu::fixtures
