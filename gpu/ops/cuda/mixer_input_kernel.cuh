#pragma once
// The temporal mixer's input rows in one kernel (gpu/ops/ops.h, mixer_input_rows): the occlusion and distance
// logits, the CMDTop encodings and the relative-motion encoding of each (query, frame), rounded once into the row's
// element type, zeros past column 854 (column layout: mixer_input_layout.h).
//
// The motion encoding's arithmetic is the composite's (ops' CPU implementation, gpu/model's
// relative_motion_encoding), operation by operation: u = (p_t - p_t') * (1/256) (0 past either end of the clip),
// u * 2^s exact, + float(pi/2) rounded on its own, sinf, so that the values are the composite's up to the sine's own
// last-place differences between math libraries (none between CUDA's sinf and ATen's CUDA sin).
//
// One block per (query, frame) row, its threads striding over the row's columns: the eager path's ~20 kernels per
// refinement iteration (motion differences, pad, scale, the sine arguments, sin, three concatenations, conversions
// and the zero padding) become one, which writes the row once and reads the encodings once. No shared memory, no
// barrier. The first version had one thread per output element and derived (row, column, query, frame) from the
// flat index with three 64-bit divisions per element: 190 us per launch at 1,024 queries x 47 frames on the H200,
// ~10x the bandwidth floor of its ~83 MB (Nsight Compute, 2026-12-05); here the divisions happen once per thread.

// The source is shared with the CPU emulation test (tests/gpu/mixer_input_emulation_test.cpp through
// tests/gpu/cuda_emulation.h): the hardware is reached only through mma_primitives.cuh.

#include <cstdint>
#include <type_traits>

#include "gpu/ops/cuda/cmdtop_mma_layout.h"  // Fp16Tag, Bf16Tag
#include "gpu/ops/cuda/mixer_input_layout.h"
#ifndef TRACKSCOPE_CUDA_EMULATION
#include "gpu/ops/cuda/mma_primitives.cuh"
#endif
#include "gpu/ops/cuda/element_access.cuh"

namespace trackscope::gpu::ops::cuda::mixer_input {

using namespace primitives;

inline constexpr float kMotionScale = 1.0f / 256.0f;       // (resized / original) / original at 256x256: exact
inline constexpr float kHalfPi = 1.57079632679489661923f;  // float(pi / 2), as a double scalar reaches a float op

/// Blocks of kMixerInputThreads threads for a shape: one per (query, frame) row.
inline int64_t block_count(const MixerInputShape& s) { return s.queries * s.frames; }

// Component k of u for frame t of one query's track (x, y pairs): 0-1 forward (p_t - p_{t+1}), 2-3 backward
// (p_t - p_{t-1}), 0 where the neighbour is outside the clip.
TRACKSCOPE_DEVICE_FN float motion(const float* track, int64_t t, int64_t frames, int k) {
  const int axis = k % 2;
  const int64_t neighbour = k < 2 ? t + 1 : t - 1;
  if (neighbour < 0 || neighbour >= frames) return 0.0f;
  const float here = global_load_f32(track + 2 * t + axis);
  const float there = global_load_f32(track + 2 * neighbour + axis);
  return mul_rn(add_rn(here, -there), kMotionScale);
}

// Column `column` (not an encoding column) of frame t of the row's track, in float before its one rounding.
TRACKSCOPE_DEVICE_FN float computed_value(int column, int64_t row, const float* occlusion, const float* expected,
                                          const float* track, int64_t t, int64_t frames) {
  if (column == 0) return global_load_f32(occlusion + row);
  if (column == 1) return global_load_f32(expected + row);
  if (column < kMixerSineBegin) return motion(track, t, frames, column - kMixerMotionBegin);
  if (column >= kMixerInputColumns) return 0.0f;
  const bool cosine = column >= kMixerCosineBegin;
  const int index = column - (cosine ? kMixerCosineBegin : kMixerSineBegin);
  const float u = motion(track, t, frames, index % 4);
  const float scaled = mul_rn(u, static_cast<float>(1 << (index / 4)));  // exact: a power of two
  return sin_f32(cosine ? add_rn(scaled, kHalfPi) : scaled);
}

/// Element: float, Bf16Tag or Fp16Tag (encoded and out).
template <class Element>
TRACKSCOPE_KERNEL(kMixerInputThreads, 8)
mixer_input_kernel(MixerInputShape s, const float* occlusion, const float* expected, const void* encoded,
                   const float* tracks, void* out) {
  const int64_t row = block_index();  // query * frames + t
  const int64_t query = row / s.frames, t = row - query * s.frames;
  const int64_t source_row = query * s.encoded_stride_query + t * s.encoded_stride_frame;
  const float* track = tracks + 2 * query * s.frames;
  const int64_t out_row = row * s.row;
  if constexpr (!std::is_same_v<Element, float>) {
    if (s.paired) {
      // Columns (2p, 2p + 1) per 32-bit word: the encodings span whole words (columns 2..769 from 0..767).
      const auto* source_words = static_cast<const uint32_t*>(encoded) + source_row / 2;
      uint32_t* out_words = static_cast<uint32_t*>(out) + out_row / 2;
      for (int pair = thread_index(); pair < s.row / 2; pair += kMixerInputThreads) {
        const int column = 2 * pair;
        if (column >= kMixerEncodedBegin && column < kMixerMotionBegin) {
          global_store_u32(out_words + pair, global_load_u32(source_words + (column - kMixerEncodedBegin) / 2));
        } else {
          global_store_u32(out_words + pair,
                           pack2<Element>(computed_value(column, row, occlusion, expected, track, t, s.frames),
                                          computed_value(column + 1, row, occlusion, expected, track, t, s.frames)));
        }
      }
      return;
    }
  }
  for (int column = thread_index(); column < s.row; column += kMixerInputThreads) {
    if (column >= kMixerEncodedBegin && column < kMixerMotionBegin) {
      const int64_t source = source_row + (column - kMixerEncodedBegin);
      if constexpr (std::is_same_v<Element, float>) {
        global_store_f32(static_cast<float*>(out) + out_row + column,
                         global_load_f32(static_cast<const float*>(encoded) + source));
      } else {
        global_store_u16(static_cast<uint16_t*>(out) + out_row + column,
                         global_load_u16(static_cast<const uint16_t*>(encoded) + source));
      }
    } else {
      elements::store_element<Element>(out, out_row + column,
                                       computed_value(column, row, occlusion, expected, track, t, s.frames));
    }
  }
}

}  // namespace trackscope::gpu::ops::cuda::mixer_input
