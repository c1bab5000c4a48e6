#include "core/video/memory_input.h"

extern "C" {
#include <libavformat/avio.h>
#include <libavutil/error.h>
#include <libavutil/mem.h>
}

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>

namespace trackscope::core::ffmpeg {

namespace {
constexpr int kBufferBytes = 1 << 16;
}

MemoryInput::MemoryInput(std::shared_ptr<const std::vector<uint8_t>> bytes) : bytes_(std::move(bytes)) {
  auto* buffer = static_cast<unsigned char*>(av_malloc(kBufferBytes));
  if (buffer == nullptr) throw std::bad_alloc();
  io_ =
      avio_alloc_context(buffer, kBufferBytes, /*write_flag=*/0, this, &MemoryInput::read, nullptr, &MemoryInput::seek);
  if (io_ == nullptr) {
    av_free(buffer);
    throw std::bad_alloc();
  }
}

MemoryInput::~MemoryInput() {
  if (io_ != nullptr) av_freep(&io_->buffer);  // FFmpeg may have replaced the buffer: free the current one
  avio_context_free(&io_);
}

int MemoryInput::read(void* opaque, uint8_t* buffer, int size) {
  auto* self = static_cast<MemoryInput*>(opaque);
  const std::vector<uint8_t>& bytes = *self->bytes_;
  if (self->position_ >= bytes.size()) return AVERROR_EOF;
  const size_t count = std::min(static_cast<size_t>(std::max(size, 0)), bytes.size() - self->position_);
  std::memcpy(buffer, bytes.data() + self->position_, count);
  self->position_ += count;
  return static_cast<int>(count);
}

int64_t MemoryInput::seek(void* opaque, int64_t offset, int whence) {
  auto* self = static_cast<MemoryInput*>(opaque);
  const auto size = static_cast<int64_t>(self->bytes_->size());
  whence &= ~AVSEEK_FORCE;
  if (whence == AVSEEK_SIZE) return size;
  int64_t base = 0;
  if (whence == SEEK_CUR) {
    base = static_cast<int64_t>(self->position_);
  } else if (whence == SEEK_END) {
    base = size;
  } else if (whence != SEEK_SET) {
    return AVERROR(EINVAL);
  }
  // Offsets come from the file being read: checked without overflow, and only inside [0, size].
  if ((offset > 0 && base > std::numeric_limits<int64_t>::max() - offset) || base + offset < 0 || base + offset > size)
    return AVERROR(EINVAL);
  self->position_ = static_cast<size_t>(base + offset);
  return base + offset;
}

}  // namespace trackscope::core::ffmpeg
