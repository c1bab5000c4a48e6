#pragma once
// The fixed shape of LocoTrack's local 4D correlation (docs/locotrack-spec.md §2), shared by core's memory model,
// gpu's model, ops, cost model and CUDA kernels. Plain C++ (no torch, no CUDA headers): nvcc compiles it too.

#include <cstdint>

namespace trackscope::core::locotrack {

inline constexpr int kSupportSize = 7;                              // 7x7 supports around a point
inline constexpr int kSupportTaps = kSupportSize * kSupportSize;    // cells of one support
inline constexpr int kCorrPerSample = kSupportTaps * kSupportTaps;  // values of one [7, 7, 7, 7] correlation
/// A correlation row padded to a multiple of 8 elements (16-byte aligned bf16/fp16 rows: ops::kCorrPaddedRow).
inline constexpr int kCorrPaddedRow = (kCorrPerSample + 7) / 8 * 8;
/// Channels of the temporal mixer's input per (query, frame): the occlusion and distance logits, the CMDTop outputs
/// of the three levels and the relative motion encoding (docs/locotrack-spec.md §2).
inline constexpr int kMixerInputChannels = 854;

}  // namespace trackscope::core::locotrack
