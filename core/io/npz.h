#pragma once
// NumPy .npy arrays and .npz archives (a zip of NAME.npy members, as numpy.savez writes them), through libzip.
// Only what track files need: little-endian float32/float64/int32/int64/uint8/bool, C order, .npy format 1.0.
//
//   NpyArray points = NpyArray::of<float>("points", {n, t, 2}, values);
//   TRACKSCOPE_RETURN_IF_ERROR(io::write_npz("tracks.npz", {points, occluded}));
//   Expected<std::vector<NpyArray>> arrays = io::read_npz("tracks.npz");
//
// Members are stored uncompressed, like numpy.savez (numpy.load reads stored and deflated members alike; this
// reader too). Threads: thread-safe.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace trackscope::core::io {

struct NpyArray {
  std::string name;   // member name without ".npy"
  std::string dtype;  // numpy descr: "<f4", "<f8", "<i4", "<i8", "|u1", "|b1"
  std::vector<size_t> shape;
  std::vector<std::byte> data;  // C order, little-endian

  size_t element_count() const;  // the product of the extents (parse_npy refuses shapes where it overflows)
  size_t element_size() const;   // bytes of one element of dtype (0: unknown dtype)

  template <typename T>
  static NpyArray of(std::string name, std::vector<size_t> shape, const std::vector<T>& values);
  /// The values converted to double (any supported dtype).
  std::vector<double> as_doubles() const;
};

/// The descr of T ("<f4" for float, "|b1" for bool, ...).
template <typename T>
constexpr const char* npy_dtype();
template <>
constexpr const char* npy_dtype<float>() {
  return "<f4";
}
template <>
constexpr const char* npy_dtype<double>() {
  return "<f8";
}
template <>
constexpr const char* npy_dtype<int32_t>() {
  return "<i4";
}
template <>
constexpr const char* npy_dtype<int64_t>() {
  return "<i8";
}
template <>
constexpr const char* npy_dtype<uint8_t>() {
  return "|u1";
}
template <>
constexpr const char* npy_dtype<bool>() {
  return "|b1";
}

template <typename T>
NpyArray NpyArray::of(std::string name, std::vector<size_t> shape, const std::vector<T>& values) {
  NpyArray array{std::move(name), npy_dtype<T>(), std::move(shape), {}};
  array.data.resize(values.size() * sizeof(T));
  if constexpr (std::is_same_v<T, bool>) {
    for (size_t i = 0; i < values.size(); ++i) array.data[i] = static_cast<std::byte>(values[i] ? 1 : 0);
  } else {
    std::memcpy(array.data.data(), values.data(), array.data.size());  // x86-64 and arm64 are little-endian
  }
  return array;
}

/// The .npy file of `array` (format 1.0; header padded so the data starts at a multiple of 64 bytes).
std::string npy_bytes(const NpyArray& array);
/// Parses a .npy file. corrupt_data for a damaged header (longer than kMaxNpyHeaderBytes, a shape whose size
/// overflows, data that does not match it), unsupported for dtypes or orders it does not read.
Expected<NpyArray> parse_npy(std::string_view bytes, std::string name);

/// numpy itself refuses longer .npy headers by default (numpy.lib.format, max_header_size).
inline constexpr size_t kMaxNpyHeaderBytes = 10000;
/// Members larger than this (uncompressed, as the archive declares them) are refused before they are read.
inline constexpr size_t kMaxNpzMemberBytes = size_t{1} << 30;

Status write_npz(const std::filesystem::path& path, const std::vector<NpyArray>& arrays);
Expected<std::vector<NpyArray>> read_npz(const std::filesystem::path& path);
/// The same from the bytes of an .npz file in memory; `source` names them in messages.
Expected<std::vector<NpyArray>> parse_npz(std::string_view bytes, const std::string& source);

}  // namespace trackscope::core::io
