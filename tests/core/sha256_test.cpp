// SHA-256 against the FIPS 180-4 / NIST CAVS example vectors.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/io/sha256.h"

namespace trackscope::core::io {
namespace {

TEST(Sha256, StandardVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqr"
                       "lmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, OneMillionAInUnevenPieces) {
  Sha256 hasher;
  const std::string piece(997, 'a');  // a prime length, so blocks straddle update() calls
  std::size_t remaining = 1'000'000;
  while (remaining > 0) {
    const std::size_t take = std::min(remaining, piece.size());
    hasher.update(std::string_view(piece.data(), take));
    remaining -= take;
  }
  EXPECT_EQ(to_hex(hasher.finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // finish() resets: the object hashes a new message correctly.
  hasher.update("abc");
  EXPECT_EQ(to_hex(hasher.finish()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, PaddingBoundaries) {
  // 55, 56 and 64 bytes exercise the one- and two-block padding paths; equal whether fed whole or bytewise.
  for (std::size_t length : {55u, 56u, 63u, 64u, 65u, 119u, 120u}) {
    const std::string text(length, 'x');
    Sha256 bytewise;
    for (char c : text) bytewise.update(std::string_view(&c, 1));
    EXPECT_EQ(to_hex(bytewise.finish()), sha256_hex(text)) << "length " << length;
  }
  EXPECT_EQ(sha256_hex(std::string(64, 'a')), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST(Sha256, FileMatchesMemoryAndMissingFileIsNotFound) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "trackscope_sha256_test.bin";
  std::string content;
  for (int i = 0; i < 3 * 1024 * 1024 + 17; ++i) content.push_back(static_cast<char>(i * 31 + 7));
  std::ofstream(path, std::ios::binary) << content;
  Expected<std::string> hex = sha256_file_hex(path);
  ASSERT_TRUE(hex) << hex.status().message();
  EXPECT_EQ(*hex, sha256_hex(content));
  std::filesystem::remove(path);
  Expected<std::string> missing = sha256_file_hex(path);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().code(), StatusCode::not_found);
}

}  // namespace
}  // namespace trackscope::core::io
