#pragma once
// Helpers for the video tests: frames that carry their own index as large black/white blocks (robust to lossy
// compression and scaling), test folders, and writing test clips with core::VideoWriter.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

#define TRACKSCOPE_SKIP_WITHOUT_ENCODER(codec)                                                         \
  do {                                                                                                 \
    if (!::trackscope::core::video_encoder_available(codec)) {                                         \
      GTEST_SKIP() << "this FFmpeg build has no " << ::trackscope::core::to_string(codec) << " encoder"; \
    }                                                                                                  \
  } while (false)

}  // namespace trackscope::core::testing
