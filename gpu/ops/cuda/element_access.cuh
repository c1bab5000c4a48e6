#pragma once
// Element-type helpers of the kernels written on the emulation primitives (init_plane_kernel.cuh,
// query_supports_kernel.cuh, mixer_input_kernel.cuh): one value of a float / Bf16Tag / Fp16Tag array as a float,
// and the elements of a 16-byte vector. Include after the primitives (mma_primitives.cuh for nvcc,
// tests/gpu/cuda_emulation.h for the CPU emulation).

#include <cstdint>
#include <type_traits>

#include "gpu/ops/cuda/cmdtop_mma_layout.h"  // Words4, Fp16Tag, Bf16Tag

namespace trackscope::gpu::ops::cuda::elements {

using namespace primitives;

/// Element: float, Bf16Tag or Fp16Tag.
template <class Element>
inline constexpr int kElementBytes = std::is_same_v<Element, float> ? 4 : 2;
/// Elements in one 16-byte vector.
template <class Element>
inline constexpr int kVectorElements = 16 / kElementBytes<Element>;

template <class Element>
TRACKSCOPE_DEVICE_FN float load_element(const void* base, int64_t index) {
  if constexpr (std::is_same_v<Element, float>) {
    return global_load_f32(static_cast<const float*>(base) + index);
  } else {
    return half_to_float<Element>(global_load_u16(static_cast<const uint16_t*>(base) + index));
  }
}

/// value rounded to nearest-even into the element type.
template <class Element>
TRACKSCOPE_DEVICE_FN void store_element(void* base, int64_t index, float value) {
  if constexpr (std::is_same_v<Element, float>) {
    global_store_f32(static_cast<float*>(base) + index, value);
  } else {
    global_store_u16(static_cast<uint16_t*>(base) + index, float_to_half<Element>(value));
  }
}

// Word j / kPerWord of a vector (little-endian: the lower half of a word comes first).
TRACKSCOPE_DEVICE_FN uint32_t& vector_word(Words4& v, int index) {
  return index == 0 ? v.x : (index == 1 ? v.y : (index == 2 ? v.z : v.w));
}
TRACKSCOPE_DEVICE_FN uint32_t vector_word(const Words4& v, int index) {
  return index == 0 ? v.x : (index == 1 ? v.y : (index == 2 ? v.z : v.w));
}

/// Element j of a 16-byte vector as a float.
template <class Element>
TRACKSCOPE_DEVICE_FN float vector_element(const Words4& v, int j) {
  constexpr int kPerWord = 4 / kElementBytes<Element>;
  const uint32_t word = vector_word(v, j / kPerWord);
  if constexpr (std::is_same_v<Element, float>) {
    return bits_to_float(word);
  } else {
    return half_to_float<Element>(static_cast<uint16_t>(j % 2 == 0 ? (word & 0xffffu) : (word >> 16)));
  }
}

/// Sets element j of a 16-byte vector to value, rounded to nearest-even into the element type.
template <class Element>
TRACKSCOPE_DEVICE_FN void set_vector_element(Words4& v, int j, float value) {
  constexpr int kPerWord = 4 / kElementBytes<Element>;
  uint32_t& word = vector_word(v, j / kPerWord);
  if constexpr (std::is_same_v<Element, float>) {
    word = float_to_bits(value);
  } else {
    const uint32_t bits = float_to_half<Element>(value);
    word = j % 2 == 0 ? (word & 0xffff0000u) | bits : (word & 0xffffu) | (bits << 16);
  }
}

}  // namespace trackscope::gpu::ops::cuda::elements
