#pragma once
// The device a suite that runs on the CPU and on a GPU runs on, read from one environment variable: the `_cuda`
// ctest entries (tests/gpu/CMakeLists.txt) rerun a binary with TRACKSCOPE_TEST_DEVICE=cuda; unset, or any other
// value, means the CPU. Where CUDA is asked for but LibTorch sees no CUDA device (a CPU LibTorch, or a CUDA one on a
// machine without a usable GPU), every test of the suite skips with TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE() rather
// than failing on its first allocation.

#include <gtest/gtest.h>

#include <c10/core/Device.h>
#include <torch/cuda.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace trackscope::gpu::test_env {

/// True when TRACKSCOPE_TEST_DEVICE=cuda.
inline bool cuda_requested() {
  const char* requested = std::getenv("TRACKSCOPE_TEST_DEVICE");
  return requested != nullptr && std::string_view(requested) == "cuda";
}

/// cuda:0 when CUDA is requested, else the CPU.
inline c10::Device test_device() { return cuda_requested() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU); }

/// test_device() as the options and factories of the code under test spell it: "cuda:0" or "cpu".
inline std::string test_device_name() { return cuda_requested() ? "cuda:0" : "cpu"; }

/// True when CUDA is requested and LibTorch sees no CUDA device.
inline bool test_device_missing() { return cuda_requested() && !torch::cuda::is_available(); }

}  // namespace trackscope::gpu::test_env

/// Skips the current test when test_device_missing().
#define TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE()             \
  if (::trackscope::gpu::test_env::test_device_missing()) \
  GTEST_SKIP() << "TRACKSCOPE_TEST_DEVICE=cuda but LibTorch sees no CUDA device: skipped (run it on a GPU machine)"
