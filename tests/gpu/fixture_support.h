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
