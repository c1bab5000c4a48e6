#pragma once
// Internal to core/video: FFmpeg custom I/O over bytes in memory, so that a video or an image held in memory is
// demuxed and decoded by the same code as a file (VideoSource::open_bytes). FFmpeg types stay forward-declared.
//
//   ffmpeg::MemoryInput input(bytes);
//   AVFormatContext* context = avformat_alloc_context();
//   context->pb = input.io();
//   context->flags |= AVFMT_FLAG_CUSTOM_IO;              // avformat_close_input() then leaves pb to us
//   avformat_open_input(&context, "name", nullptr, nullptr);
//
// Ownership: the input shares the bytes; it must outlive every AVFormatContext that reads through io().
// Threads: one thread at a time, like the context that reads it.

#include <cstdint>
#include <memory>
#include <vector>

struct AVIOContext;

namespace trackscope::core::ffmpeg {

class MemoryInput {
 public:
  /// Throws std::bad_alloc when FFmpeg cannot allocate the context.
  explicit MemoryInput(std::shared_ptr<const std::vector<uint8_t>> bytes);
  ~MemoryInput();
  MemoryInput(const MemoryInput&) = delete;
  MemoryInput& operator=(const MemoryInput&) = delete;

  AVIOContext* io() const { return io_; }

 private:
  static int read(void* opaque, uint8_t* buffer, int size);
  static int64_t seek(void* opaque, int64_t offset, int whence);

  std::shared_ptr<const std::vector<uint8_t>> bytes_;
  size_t position_ = 0;
  AVIOContext* io_ = nullptr;
};

}  // namespace trackscope::core::ffmpeg
