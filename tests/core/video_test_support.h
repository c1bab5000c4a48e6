#pragma once
// Helpers for the video tests: frames that carry their own index as large black/white blocks (robust to lossy
// compression and scaling), test folders, and writing test clips with core::VideoWriter.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/video/image_io.h"
#include "core/video/video_source.h"
#include "core/video/video_writer.h"

namespace trackscope::core::testing {

// Index bits in a 4x3 grid of blocks over the top three quarters of the frame, Gray-coded so that consecutive
// frames differ in one block (encoders then use B-frames); a gradient that moves with the index fills the rest.
inline constexpr int kIndexColumns = 4;
inline constexpr int kIndexRows = 3;

inline Frame make_index_frame(int64_t index, int width, int height) {
  Frame frame;
  frame.index = index;
  frame.width = width;
  frame.height = height;
  frame.rgb.resize(static_cast<size_t>(width) * height * 3);
  const auto gray = static_cast<uint32_t>(index ^ (index >> 1));
  const int code_height = height * 3 / 4;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = frame.rgb.data() + (static_cast<size_t>(y) * width + x) * 3;
      if (y < code_height) {
        const int column = x * kIndexColumns / width;
        const int row = y * kIndexRows / code_height;
        const int bit = row * kIndexColumns + column;
        const uint8_t value = ((gray >> bit) & 1U) != 0 ? 255 : 0;
        p[0] = p[1] = p[2] = value;
      } else {
        p[0] = static_cast<uint8_t>((x * 2 + index * 3) % 256);
        p[1] = static_cast<uint8_t>(128 + (y - code_height) * 2);
        p[2] = static_cast<uint8_t>(255 - (x + index * 5) % 256);
      }
    }
  }
  return frame;
}

// Reads the index back from the centre of each block. Returns -1 when a block is neither dark nor bright.
inline int64_t read_index(const Frame& frame) {
  const int code_height = frame.height * 3 / 4;
  uint32_t gray = 0;
  for (int row = 0; row < kIndexRows; ++row) {
    for (int column = 0; column < kIndexColumns; ++column) {
      const int x0 = column * frame.width / kIndexColumns, x1 = (column + 1) * frame.width / kIndexColumns;
      const int y0 = row * code_height / kIndexRows, y1 = (row + 1) * code_height / kIndexRows;
      double sum = 0.0;
      int count = 0;
      for (int y = y0 + (y1 - y0) / 4; y < y1 - (y1 - y0) / 4; ++y) {
        for (int x = x0 + (x1 - x0) / 4; x < x1 - (x1 - x0) / 4; ++x) {
          const uint8_t* p = frame.pixel(x, y);
          sum += (p[0] + p[1] + p[2]) / 3.0;
          ++count;
        }
      }
      const double mean = sum / count;
      if (mean > 96.0 && mean < 160.0) return -1;
      if (mean >= 160.0) gray |= 1U << (row * kIndexColumns + column);
    }
  }
  uint32_t index = gray;
  for (uint32_t shift = gray >> 1; shift != 0; shift >>= 1) index ^= shift;
  return index;
}

inline std::filesystem::path test_folder(const std::string& name) {
  const std::filesystem::path folder = std::filesystem::path(TRACKSCOPE_TEST_OUTPUT_DIR) / "video" / name;
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  return folder;
}

inline std::filesystem::path shared_testdata(const std::string& name) {
  return std::filesystem::path(TRACKSCOPE_SHARED_DIR) / "testdata" / name;
}

// Writes `count` index frames; `pts_us` (if not empty) gives explicit timestamps.
inline Status write_index_clip(const std::filesystem::path& path, VideoWriterOptions options, int64_t count,
                               const std::vector<int64_t>& pts_us = {}) {
  options.explicit_timestamps = !pts_us.empty();
  auto writer = VideoWriter::create(path, options);
  if (!writer) return writer.status();
  for (int64_t i = 0; i < count; ++i) {
    const Frame frame = make_index_frame(i, options.width, options.height);
    Status written = pts_us.empty() ? (*writer)->write(frame) : (*writer)->write(frame, pts_us[static_cast<size_t>(i)]);
    if (!written) return written;
  }
  return (*writer)->finish();
}

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Runs `command` through the shell and returns its standard output, or nothing when it fails to run or exits
// with a non-zero status. For reference tools (ffmpeg, python3 with PIL) that tests compare against.
inline std::optional<std::string> run_capture(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string output;
  char buffer[1 << 16];
  size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, got);
  if (pclose(pipe) != 0) return std::nullopt;
  return output;
}

// `text` as one shell word.
inline std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// A minimal PNG writer independent of FFmpeg (8-bit RGB, deflate "stored" blocks, no compression), so that
// image-sequence tests also run where FFmpeg has no encoders (the GPU machine's build).
inline void write_uncompressed_png(const std::filesystem::path& path, const Frame& frame) {
  auto crc32 = [](const uint8_t* data, size_t size, uint32_t crc = 0xFFFFFFFFU) {
    for (size_t i = 0; i < size; ++i) {
      crc ^= data[i];
      for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320U & (0U - (crc & 1U)));
    }
    return crc;
  };
  auto put32 = [](std::vector<uint8_t>& out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
  };
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  auto chunk = [&](const char* type, const std::vector<uint8_t>& data) {
    put32(png, static_cast<uint32_t>(data.size()));
    std::vector<uint8_t> body(type, type + 4);
    body.insert(body.end(), data.begin(), data.end());
    png.insert(png.end(), body.begin(), body.end());
    put32(png, crc32(body.data(), body.size()) ^ 0xFFFFFFFFU);
  };
  std::vector<uint8_t> header;
  put32(header, static_cast<uint32_t>(frame.width));
  put32(header, static_cast<uint32_t>(frame.height));
  header.insert(header.end(), {8, 2, 0, 0, 0});  // 8-bit RGB, no interlace
  chunk("IHDR", header);
  std::vector<uint8_t> raw;  // each row: filter type 0, then the pixels
  for (int y = 0; y < frame.height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), frame.rgb.begin() + static_cast<std::ptrdiff_t>(y) * frame.width * 3,
               frame.rgb.begin() + static_cast<std::ptrdiff_t>(y + 1) * frame.width * 3);
  }
  std::vector<uint8_t> zlib = {0x78, 0x01};
  for (size_t offset = 0; offset < raw.size() || offset == 0; offset += 65535) {
    const size_t size = std::min<size_t>(65535, raw.size() - offset);
    zlib.push_back(offset + size >= raw.size() ? 1 : 0);
    zlib.insert(zlib.end(), {static_cast<uint8_t>(size), static_cast<uint8_t>(size >> 8), static_cast<uint8_t>(~size),
                             static_cast<uint8_t>(~size >> 8)});
    zlib.insert(zlib.end(), raw.begin() + static_cast<std::ptrdiff_t>(offset),
                raw.begin() + static_cast<std::ptrdiff_t>(offset + size));
    if (raw.empty()) break;
  }
  uint32_t a = 1, b = 0;
  for (uint8_t byte : raw) {
    a = (a + byte) % 65521U;
    b = (b + a) % 65521U;
  }
  put32(zlib, (b << 16) | a);
  chunk("IDAT", zlib);
  chunk("IEND", {});
  write_bytes(path, png);
}

#define TRACKSCOPE_SKIP_WITHOUT_ENCODER(codec)                                                           \
  do {                                                                                                   \
    if (!::trackscope::core::video_encoder_available(codec)) {                                           \
      GTEST_SKIP() << "this FFmpeg build has no " << ::trackscope::core::to_string(codec) << " encoder"; \
    }                                                                                                    \
  } while (false)

#define TRACKSCOPE_SKIP_WITHOUT_PNG_ENCODER()                 \
  do {                                                        \
    if (!::trackscope::core::png_encoder_available()) {       \
      GTEST_SKIP() << "this FFmpeg build has no PNG encoder"; \
    }                                                         \
  } while (false)

}  // namespace trackscope::core::testing
