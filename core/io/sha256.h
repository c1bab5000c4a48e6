#pragma once
// SHA-256 (FIPS 180-4), used to recognise known weight files (the official LocoTrack checkpoints) and to
// record which file a result came from. Not for security decisions.
//
//   core::io::Sha256 hasher;
//   hasher.update(bytes);                      // any number of times
//   std::string hex = core::io::to_hex(hasher.finish());
//   Expected<std::string> file_hex = core::io::sha256_file_hex("/path/model.ckpt");
//
// Threads: a Sha256 object is not shared between threads; the free functions are thread-safe.

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"

namespace trackscope::core::io {

using Sha256Digest = std::array<std::uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(std::span<const std::byte> data);
  void update(std::string_view text);
  /// Pads, returns the digest and resets the object for a new message.
  Sha256Digest finish();

 private:
  void compress(const std::uint8_t* block);
  void reset();

  std::array<std::uint32_t, 8> state_{};
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

/// Lower-case hexadecimal, 64 characters.
std::string to_hex(const Sha256Digest& digest);

Sha256Digest sha256(std::span<const std::byte> data);
std::string sha256_hex(std::string_view text);

/// Hashes a whole file, streaming it in 1 MiB blocks. io_error/not_found when it cannot be read.
Expected<std::string> sha256_file_hex(const std::filesystem::path& path);

}  // namespace trackscope::core::io
