// Bad input gives a clear Status, never a crash: missing, empty, text, garbage, damaged and truncated files,
// files without a video stream or without a decoder, bad options and bad requests.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/video/image_io.h"
#include "core/video/memory_video.h"
#include "core/video/video_source.h"
#include "core/video/video_writer.h"
#include "video_test_support.h"

namespace trackscope::core {
namespace {

using testing::read_bytes;
using testing::write_bytes;

constexpr int kWidth = 160;
constexpr int kHeight = 96;
constexpr int64_t kFrames = 30;

std::vector<uint8_t> noise(size_t size, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<uint8_t> bytes(size);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(random() & 0xFF);
  return bytes;
}

std::filesystem::path make_video(const std::filesystem::path& path, VideoCodec codec, bool faststart = false,
                                 int scale = 1) {
  VideoWriterOptions options;
  options.codec = codec;
  options.width = kWidth * scale;
  options.height = kHeight * scale;
  if (scale > 1) options.quality = codec == VideoCodec::mjpeg ? 2 : 4;  // large frames: the index is a small part
  options.preset = "veryfast";
  options.keyframe_interval = 10;
  options.faststart = faststart;
  const Status written = testing::write_index_clip(path, options, kFrames);
  EXPECT_TRUE(written.ok()) << written.message();
  return path;
}

void expect_error(const Expected<std::unique_ptr<VideoSource>>& source, std::initializer_list<StatusCode> codes,
                  const std::string& what) {
  ASSERT_FALSE(source) << what << " opened";
  const Status status = source.status();
  EXPECT_FALSE(status.message().empty()) << what;
  EXPECT_TRUE(std::find(codes.begin(), codes.end(), status.code()) != codes.end())
      << what << ": unexpected code " << to_string(status.code()) << ": " << status.message();
}

// Reads every frame: each one is a frame or a clear error, and the source stays usable after an error.
void read_all_without_crash(VideoSource& source) {
  for (int64_t i = 0; i < source.info().frame_count; ++i) {
    Expected<FramePtr> frame = source.read_frame(i);
    if (!frame) {
      EXPECT_FALSE(frame.status().message().empty());
    }
  }
  for (int64_t i : {source.info().frame_count - 1, int64_t{0}, source.info().frame_count / 2}) {
    Expected<FramePtr> frame = source.read_frame(i);
    if (!frame) {
      EXPECT_FALSE(frame.status().message().empty());
    }
  }
}

TEST(VideoErrors, MissingFile) {
  auto source = VideoSource::open("/nonexistent/folder/clip.mp4");
  expect_error(source, {StatusCode::not_found}, "missing file");
  EXPECT_NE(source.status().message().find("clip.mp4"), std::string::npos) << "the message names the file";
  expect_error(VideoSource::open("/nonexistent/%05d.jpg"), {StatusCode::not_found}, "missing pattern");
  expect_error(VideoSource::open(""), {StatusCode::invalid_argument}, "empty path");
}

TEST(VideoErrors, EmptyFileAndEmptyFolder) {
  const auto folder = testing::test_folder("empty");
  write_bytes(folder / "empty.mp4", {});
  expect_error(VideoSource::open(folder / "empty.mp4"), {StatusCode::corrupt_data}, "empty file");
  std::filesystem::create_directories(folder / "no_images");
  expect_error(VideoSource::open(folder / "no_images"), {StatusCode::not_found}, "folder without images");
}

TEST(VideoErrors, TextFilesAreNotVideos) {
  const auto folder = testing::test_folder("text");
  const std::string text = "This is a text file.\nIt has a few lines of text and no video at all.\n";
  for (const char* name : {"notes.txt", "notes.mp4", "notes"}) {
    write_bytes(folder / name, std::vector<uint8_t>(text.begin(), text.end()));
    expect_error(VideoSource::open(folder / name), {StatusCode::unsupported, StatusCode::corrupt_data}, name);
  }
}

TEST(VideoErrors, GarbageBytes) {
  const auto folder = testing::test_folder("garbage");
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    const auto path = folder / fmt::format("garbage_{}.mp4", seed);
    write_bytes(path, noise(50000, seed));
    expect_error(VideoSource::open(path), {StatusCode::unsupported, StatusCode::corrupt_data}, path.string());
  }
}

TEST(VideoErrors, ValidHeaderThenNoise) {
  TRACKSCOPE_SKIP_WITHOUT_ENCODER(VideoCodec::h264);
  const auto folder = testing::test_folder("header_noise");
  for (bool faststart : {false, true}) {
    const auto clean = make_video(folder / fmt::format("clean_{}.mp4", faststart), VideoCodec::h264, faststart);
    std::vector<uint8_t> bytes = read_bytes(clean);
    ASSERT_GT(bytes.size(), 2000U);
    // Keep the first 1 KB (ftyp, and with faststart part of the index), replace the rest with noise.
    const std::vector<uint8_t> tail = noise(bytes.size() - 1024, 11);
    std::copy(tail.begin(), tail.end(), bytes.begin() + 1024);
    const auto damaged = folder / fmt::format("damaged_{}.mp4", faststart);
    write_bytes(damaged, bytes);
    auto source = VideoSource::open(damaged);
    if (source)
      read_all_without_crash(**source);
    else
      expect_error(source, {StatusCode::corrupt_data, StatusCode::unsupported}, damaged.string());
  }
  // Noise over the middle of the frame data, with the header and the index intact.
  const auto clean = folder / "clean_true.mp4";
  std::vector<uint8_t> bytes = read_bytes(clean);
  const std::vector<uint8_t> middle = noise(bytes.size() / 3, 12);
  std::copy(middle.begin(), middle.end(), bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 2));
  write_bytes(folder / "noisy_middle.mp4", bytes);
  auto source = VideoSource::open(folder / "noisy_middle.mp4");
  if (source) {
    read_all_without_crash(**source);
    auto first = (*source)->read_frame(0);
    ASSERT_TRUE(first) << "the frames before the damage stay readable: " << first.status().message();
    EXPECT_EQ(testing::read_index(**first), 0);
  }
}

TEST(VideoErrors, TruncatedFiles) {
  TRACKSCOPE_SKIP_WITHOUT_ENCODER(VideoCodec::h264);
  TRACKSCOPE_SKIP_WITHOUT_ENCODER(VideoCodec::mjpeg);
  const auto folder = testing::test_folder("truncated");
  struct Case {
    std::string name;
    VideoCodec codec;
    bool faststart;
  };
  for (const Case& c : {Case{"moov_at_end.mp4", VideoCodec::h264, false},
                        Case{"moov_first.mp4", VideoCodec::h264, true}, Case{"clip.mkv", VideoCodec::h264, false},
                        Case{"clip.avi", VideoCodec::mjpeg, false}, Case{"clip.webm", VideoCodec::vp9, false}}) {
    if (!video_encoder_available(c.codec)) continue;
    const auto clean = make_video(folder / ("clean_" + c.name), c.codec, c.faststart, 2);
    std::vector<uint8_t> bytes = read_bytes(clean);
    bytes.resize(bytes.size() / 2);
    const auto cut = folder / ("half_" + c.name);
    write_bytes(cut, bytes);
    auto source = VideoSource::open(cut);
    if (!source) {
      expect_error(source, {StatusCode::corrupt_data, StatusCode::unsupported}, cut.string());
      EXPECT_EQ(c.name, "moov_at_end.mp4") << "only an MP4 whose index was at the end is unreadable when cut";
      continue;
    }
    const int64_t count = (*source)->info().frame_count;
    EXPECT_GT(count, 0) << c.name;
    EXPECT_LE(count, kFrames) << c.name;
    read_all_without_crash(**source);
    // The first frames precede the cut: they decode and carry their index.
    for (int64_t i : {int64_t{2}, int64_t{0}, std::min<int64_t>(count / 3, 5)}) {
      auto frame = (*source)->read_frame(i);
      ASSERT_TRUE(frame) << c.name << " frame " << i << ": " << frame.status().message();
      EXPECT_EQ(testing::read_index(**frame), i) << c.name;
    }
  }
}

TEST(VideoErrors, NoVideoStream) {
  // A valid WAV file (one second of silence): audio only.
  const auto folder = testing::test_folder("audio_only");
  std::vector<uint8_t> wav;
  auto put32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) wav.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  auto put16 = [&](uint16_t v) {
    for (int i = 0; i < 2; ++i) wav.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  auto tag = [&](const char* t) { wav.insert(wav.end(), t, t + 4); };
  const uint32_t samples = 8000;
  tag("RIFF");
  put32(36 + samples * 2);
  tag("WAVE");
  tag("fmt ");
  put32(16);
  put16(1);
  put16(1);
  put32(8000);
  put32(16000);
  put16(2);
  put16(16);
  tag("data");
  put32(samples * 2);
  wav.resize(wav.size() + samples * 2, 0);
  write_bytes(folder / "silence.wav", wav);
  auto source = VideoSource::open(folder / "silence.wav");
  expect_error(source, {StatusCode::unsupported}, "audio-only file");
  // Where FFmpeg has no WAV demuxer (the GPU machine's build) the file is "not a video file" instead.
  EXPECT_TRUE(source.status().message().find("no video stream") != std::string::npos ||
              source.status().message().find("not a video file") != std::string::npos)
      << source.status().message();
}

TEST(VideoErrors, UnknownCodec) {
  TRACKSCOPE_SKIP_WITHOUT_ENCODER(VideoCodec::mjpeg);
  // An AVI whose codec tag names no codec FFmpeg knows.
  const auto folder = testing::test_folder("unknown_codec");
  std::vector<uint8_t> bytes = read_bytes(make_video(folder / "clip.avi", VideoCodec::mjpeg));
  int replaced = 0;
  for (size_t i = 0; i + 4 <= bytes.size(); ++i) {
    if (std::equal(bytes.begin() + static_cast<std::ptrdiff_t>(i), bytes.begin() + static_cast<std::ptrdiff_t>(i) + 4,
                   "MJPG")) {
      std::copy_n("QQZX", 4, bytes.begin() + static_cast<std::ptrdiff_t>(i));
      ++replaced;
    }
  }
  ASSERT_GE(replaced, 1);
  write_bytes(folder / "unknown.avi", bytes);
  auto source = VideoSource::open(folder / "unknown.avi");
  expect_error(source, {StatusCode::unsupported}, "unknown codec");
}

TEST(VideoErrors, DamagedImageInASequence) {
  const auto folder = testing::test_folder("damaged_image");
  for (int64_t i = 0; i < 4; ++i) {
    testing::write_uncompressed_png(folder / fmt::format("{:03d}.png", i), testing::make_index_frame(i, 64, 48));
  }
  write_bytes(folder / "002.png", noise(300, 3));
  // The default image policy stops, naming the file.
  auto stopped = VideoSource::open(folder);
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.status().code(), StatusCode::corrupt_data);
  EXPECT_NE(stopped.status().message().find("002.png"), std::string::npos) << stopped.status().message();

  VideoOpenOptions skip;
  skip.image_policy = ImagePolicy::skip;
  auto source = VideoSource::open(folder, skip);
  ASSERT_TRUE(source) << source.status().message();
  EXPECT_EQ((*source)->info().frame_count, 3);
  ASSERT_EQ((*source)->integrity().skipped_images.size(), 1U);
  EXPECT_EQ((*source)->integrity().skipped_images[0].file.filename(), "002.png");
  auto third = (*source)->read_frame(2);
  ASSERT_TRUE(third) << third.status().message();
  EXPECT_EQ(testing::read_index(**third), 3) << "frame 2 is the next usable image";

  // A file damaged after the open fails on its own; the source stays usable.
  write_bytes(folder / "001.png", noise(300, 4));
  auto damaged = (*source)->read_frame(1);
  ASSERT_FALSE(damaged);
  EXPECT_EQ(damaged.status().code(), StatusCode::corrupt_data);
  EXPECT_NE(damaged.status().message().find("001.png"), std::string::npos);
  auto next = (*source)->read_frame(2);
  ASSERT_TRUE(next) << "the source stays usable after an error";
  EXPECT_EQ(testing::read_index(**next), 3);
}

TEST(VideoErrors, BadRequests) {
  const auto folder = testing::test_folder("bad_requests");
  for (int64_t i = 0; i < 3; ++i)
    testing::write_uncompressed_png(folder / fmt::format("{}.png", i), testing::make_index_frame(i, 64, 48));
  VideoOpenOptions bad_options;
  bad_options.decoder_threads = -1;
  expect_error(VideoSource::open(folder, bad_options), {StatusCode::invalid_argument}, "negative threads");
  auto source = VideoSource::open(folder);
  ASSERT_TRUE(source);
  for (int64_t index : {int64_t{-1}, int64_t{3}, int64_t{1} << 40}) {
    auto frame = (*source)->read_frame(index);
    ASSERT_FALSE(frame);
    EXPECT_EQ(frame.status().code(), StatusCode::invalid_argument);
  }
  for (FrameSize size : {FrameSize{-1, 10}, FrameSize{0, 10}, FrameSize{100000, 100}}) {
    auto frame = (*source)->read_frame(0, size);
    ASSERT_FALSE(frame);
    EXPECT_EQ(frame.status().code(), StatusCode::invalid_argument);
  }
  EXPECT_TRUE((*source)->read_frame(1));
}

TEST(VideoErrors, FrameSizeContractIsTheSameForEveryBackend) {
  for (FrameSize good : {FrameSize{0, 0}, FrameSize{1, 1}, FrameSize{16384, 16384}, FrameSize{16384, 1}}) {
    EXPECT_TRUE(good.check()) << good.width << "x" << good.height;
  }
  const std::vector<FrameSize> bad = {FrameSize{-1, 10},     FrameSize{0, 10},      FrameSize{10, 0},
                                      FrameSize{16385, 100}, FrameSize{100, 16385}, FrameSize{1 << 30, 1 << 30}};
  const auto folder = testing::test_folder("frame_size_contract");
  for (int i = 0; i < 2; ++i)
    testing::write_uncompressed_png(folder / fmt::format("{}.png", i), testing::make_index_frame(i, 64, 48));
  std::vector<std::pair<std::string, std::unique_ptr<VideoSource>>> sources;
  auto images = VideoSource::open(folder);
  ASSERT_TRUE(images) << images.status().message();
  sources.emplace_back("image sequence", std::move(*images));
  auto container = VideoSource::open(make_video(folder / "clip.mp4", VideoCodec::h264, true));
  ASSERT_TRUE(container) << container.status().message();
  sources.emplace_back("container", std::move(*container));
  std::vector<Frame> frames;
  for (int i = 0; i < 2; ++i) frames.push_back(testing::make_index_frame(i, 64, 48));
  auto memory = MemoryVideoSource::create(std::move(frames), {25, 1});
  ASSERT_TRUE(memory) << memory.status().message();
  sources.emplace_back("memory", std::move(*memory));
  for (auto& [name, source] : sources) {
    for (FrameSize size : bad) {
      auto frame = source->read_frame(0, size);
      ASSERT_FALSE(frame) << name << " " << size.width << "x" << size.height;
      EXPECT_EQ(frame.status().code(), StatusCode::invalid_argument) << name;
      EXPECT_EQ(frame.status().message(), size.check().message()) << name;
      EXPECT_NE(frame.status().message().find("within 1..16384 per side"), std::string::npos) << name;
    }
    auto scaled = source->read_frame(1, FrameSize{32, 24});
    ASSERT_TRUE(scaled) << name << ": " << scaled.status().message();
    EXPECT_EQ((*scaled)->width, 32) << name;
    EXPECT_EQ((*scaled)->height, 24) << name;
  }
}

TEST(VideoErrors, WriterRejectsBadOptionsAndFrames) {
  const auto folder = testing::test_folder("writer_errors");
  VideoWriterOptions options;
  options.width = 101;  // odd: 4:2:0 H.264 cannot
  options.height = 64;
  EXPECT_EQ(VideoWriter::create(folder / "odd.mp4", options).status().code(), StatusCode::invalid_argument);
  options.width = 64;
  options.quality = 99;
  EXPECT_EQ(VideoWriter::create(folder / "q.mp4", options).status().code(), StatusCode::invalid_argument);
  options.quality = -1;
  options.preset = "warp-speed";
  EXPECT_EQ(VideoWriter::create(folder / "p.mp4", options).status().code(), StatusCode::invalid_argument);
  options.preset = "veryfast";
  EXPECT_EQ(VideoWriter::create(folder / "clip.unknown_extension", options).status().code(),
            StatusCode::invalid_argument);
  options.codec = VideoCodec::h264;
  if (video_encoder_available(VideoCodec::h264)) {
    EXPECT_EQ(VideoWriter::create(folder / "h264.webm", options).status().code(), StatusCode::unsupported);
    EXPECT_EQ(VideoWriter::create("/nonexistent/folder/out.mp4", options).status().code(), StatusCode::io_error);
    auto writer = VideoWriter::create(folder / "ok.mp4", options);
    ASSERT_TRUE(writer) << writer.status().message();
    EXPECT_EQ((*writer)->write(testing::make_index_frame(0, 32, 32)).code(), StatusCode::invalid_argument);
    EXPECT_EQ((*writer)->write(testing::make_index_frame(0, 64, 64), 1000).code(), StatusCode::invalid_argument);
    EXPECT_TRUE((*writer)->write(testing::make_index_frame(0, 64, 64)).ok());
    EXPECT_TRUE((*writer)->finish().ok());
    EXPECT_EQ((*writer)->write(testing::make_index_frame(1, 64, 64)).code(), StatusCode::invalid_argument);

    options.explicit_timestamps = true;
    auto timed = VideoWriter::create(folder / "timed.mp4", options);
    ASSERT_TRUE(timed);
    EXPECT_TRUE((*timed)->write(testing::make_index_frame(0, 64, 64), 5000).ok());
    EXPECT_EQ((*timed)->write(testing::make_index_frame(1, 64, 64), 5000).code(), StatusCode::invalid_argument);
    EXPECT_EQ((*timed)->write(testing::make_index_frame(1, 64, 64)).code(), StatusCode::invalid_argument);
  }
}

}  // namespace
}  // namespace trackscope::core
