#pragma once
// Helpers shared by the trainer's translation units (trainer.cpp: the loop, checkpoints; trainer_validation.cpp:
// validation, calibration and the stability check). Internal to gpu/training; not part of any interface.

#include <ATen/ATen.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <exception>
#include <string>
#include <string_view>

#include "core/status.h"
#include "gpu/training.h"

namespace trackscope::gpu::training {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline void synchronize(const at::Device& device) {
  if (device.is_cuda()) c10::impl::VirtualGuardImpl(device.type()).getStream(device).synchronize();
}

// A torch exception as a Status: its first line only (c10 messages carry a backtrace), out of memory recognised.
inline core::Status torch_error(const std::exception& error, std::string_view during) {
  std::string what = error.what();
  what = what.substr(0, what.find('\n'));
  if (what.find("out of memory") != std::string::npos) {
    return core::out_of_memory(
        fmt::format("{}: out of device memory ({}); lower the batch size, points or frames", during, what));
  }
  return core::internal_error(fmt::format("{}: {}", during, what));
}

template <typename Function>
auto guarded(std::string_view during, Function&& function) -> decltype(function()) {
  try {
    return function();
  } catch (const std::exception& error) {
    return torch_error(error, during);
  }
}

inline at::Tensor model_input(const at::Tensor& video) {
  return video.scalar_type() == at::kByte ? video.to(at::kFloat).div_(255.0 / 2.0).sub_(1.0) : video;
}

/// The "validation" line of train_log.jsonl (also validation.json): loss, TAP-Vid metrics of the model and the
/// baseline, the calibration (ECE, reliability bins, suspicious thresholds) and the stability rows.
Json validation_json(const ValidationSummary& summary);

}  // namespace trackscope::gpu::training
