// Safetensors reading, writing and validation, including the sharded parity fixtures.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/io/safetensors.h"

namespace trackscope::core::io {
namespace {

namespace fs = std::filesystem;

// A file made of an explicit header text and `data_size` data bytes (values 0, 1, 2, ...).
std::vector<std::byte> raw_file(const std::string& header, std::size_t data_size, std::uint64_t header_size_field = 0) {
  std::vector<std::byte> bytes(8 + header.size() + data_size);
  const std::uint64_t size = header_size_field ? header_size_field : header.size();
  std::memcpy(bytes.data(), &size, 8);
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  for (std::size_t i = 0; i < data_size; ++i) bytes[8 + header.size() + i] = static_cast<std::byte>(i);
  return bytes;
}

Status parse_status(const std::string& header, std::size_t data_size) {
  return SafetensorsSet::parse(raw_file(header, data_size), "test").status();
}

fs::path temp_folder(const std::string& name) {
  fs::path folder = fs::temp_directory_path() / ("trackscope_safetensors_" + name);
  fs::remove_all(folder);
  fs::create_directories(folder);
  return folder;
}

TEST(Safetensors, WriteThenReadRoundTripsEveryField) {
  const std::vector<float> weights = {1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, 7.0f};
  const std::vector<std::uint16_t> halves = {0x3c00, 0xbc00};  // F16 1, -1
  const std::vector<std::uint8_t> bytes = {0, 255, 17};
  const std::vector<std::int64_t> longs = {-1, 1LL << 40};
  std::vector<TensorToWrite> tensors = {
      {"model.w", TensorDtype::f32, {2, 3}, std::as_bytes(std::span(weights))},
      {"h", TensorDtype::f16, {2}, std::as_bytes(std::span(halves))},
      {"u", TensorDtype::u8, {3}, std::as_bytes(std::span(bytes))},
      {"scalar_i64", TensorDtype::i64, {}, std::as_bytes(std::span(longs).first(1))},
      {"empty", TensorDtype::bf16, {0, 4}, {}},
      {"i", TensorDtype::i64, {2}, std::as_bytes(std::span(longs))},
  };
  const fs::path path = temp_folder("roundtrip") / "out.safetensors";
  ASSERT_TRUE(write_safetensors(path, tensors, {{"format", "pt"}, {"source", "test"}}).ok());
  ASSERT_FALSE(fs::exists(fs::path(path.string() + ".partial")));
  EXPECT_EQ(fs::file_size(path) % 8, (4 * 6 + 2 * 2 + 3 + 8 + 16) % 8) << "header padded to 8 bytes";

  Expected<SafetensorsSet> set = SafetensorsSet::open(path);
  ASSERT_TRUE(set) << set.status().message();
  ASSERT_EQ(set->tensors().size(), tensors.size());
  EXPECT_EQ(set->metadata().at("format"), "pt");
  EXPECT_EQ(set->metadata().at("source"), "test");
  for (const TensorToWrite& expected : tensors) {
    const TensorEntry* entry = set->find(expected.name);
    ASSERT_NE(entry, nullptr) << expected.name;
    EXPECT_EQ(entry->dtype, expected.dtype);
    EXPECT_EQ(entry->shape, expected.shape);
    const std::span<const std::byte> data = set->bytes(*entry);
    ASSERT_EQ(data.size(), expected.data.size());
    // memcmp on the empty tensor's null pointers would be undefined behaviour (the ASan job runs UBSan).
    if (!data.empty()) {
      EXPECT_EQ(std::memcmp(data.data(), expected.data.data(), data.size()), 0) << expected.name;
    }
  }
  EXPECT_EQ(set->find("scalar_i64")->element_count(), 1);
  EXPECT_EQ(set->find("empty")->element_count(), 0);
  EXPECT_EQ(set->find("missing"), nullptr);
  EXPECT_EQ(set->data_bytes(), 24u + 4u + 3u + 8u + 16u);
}

TEST(Safetensors, WriterRejectsBadInput) {
  const std::vector<float> three = {1, 2, 3};
  EXPECT_EQ(serialize_safetensors({{"a", TensorDtype::f32, {2, 2}, std::as_bytes(std::span(three))}}).status().code(),
            StatusCode::invalid_argument);
  EXPECT_FALSE(serialize_safetensors({{"a", TensorDtype::f32, {3}, std::as_bytes(std::span(three))},
                                      {"a", TensorDtype::f32, {3}, std::as_bytes(std::span(three))}}));
  EXPECT_FALSE(serialize_safetensors({{"__metadata__", TensorDtype::f32, {3}, std::as_bytes(std::span(three))}}));
  EXPECT_FALSE(serialize_safetensors({{"", TensorDtype::f32, {3}, std::as_bytes(std::span(three))}}));
}

TEST(Safetensors, DtypeNamesAndSizes) {
  EXPECT_EQ(dtype_name(TensorDtype::bf16), "BF16");
  EXPECT_EQ(dtype_from_name("F16"), TensorDtype::f16);
  EXPECT_EQ(dtype_from_name("U8"), TensorDtype::u8);
  EXPECT_EQ(dtype_from_name("I64"), TensorDtype::i64);
  EXPECT_EQ(dtype_from_name("F8_E4M3"), TensorDtype::f8_e4m3);
  EXPECT_FALSE(dtype_from_name("f32"));
  EXPECT_EQ(dtype_size_bytes(TensorDtype::f64), 8u);
  EXPECT_EQ(dtype_size_bytes(TensorDtype::bf16), 2u);
  EXPECT_EQ(dtype_size_bytes(TensorDtype::boolean), 1u);
}

TEST(Safetensors, RejectsTruncatedAndMalformedFiles) {
  // Fewer than 8 bytes.
  Status tiny = SafetensorsSet::parse(std::vector<std::byte>(5), "tiny").status();
  EXPECT_EQ(tiny.code(), StatusCode::corrupt_data);
  EXPECT_NE(tiny.message().find("truncated"), std::string::npos) << tiny.message();
  // Header length beyond the end of the file.
  Status beyond = SafetensorsSet::parse(raw_file("{}", 0, 4096), "beyond").status();
  EXPECT_EQ(beyond.code(), StatusCode::corrupt_data);
  EXPECT_NE(beyond.message().find("runs past the end"), std::string::npos) << beyond.message();
  // Bad JSON, and JSON that is not an object.
  Status bad_json = parse_status(R"({"a": {"dtype": "F32", "shape": [1], )", 4);
  EXPECT_EQ(bad_json.code(), StatusCode::corrupt_data);
  EXPECT_NE(bad_json.message().find("bad JSON"), std::string::npos) << bad_json.message();
  EXPECT_FALSE(parse_status("[1, 2]   ", 0).ok());
  // A truncated data section: the last tensor runs past the end.
  Status truncated = parse_status(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 12);
  EXPECT_EQ(truncated.code(), StatusCode::corrupt_data);
  EXPECT_NE(truncated.message().find("truncated"), std::string::npos) << truncated.message();
  EXPECT_NE(truncated.message().find("a (F32 [4])"), std::string::npos) << truncated.message();
}

TEST(Safetensors, RejectsInconsistentEntries) {
  // Size does not match shape x dtype.
  Status size = parse_status(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", 12);
  EXPECT_EQ(size.code(), StatusCode::corrupt_data);
  EXPECT_NE(size.message().find("needs 16 bytes"), std::string::npos) << size.message();
  // The same bytes read as F16 [6] are fine; dtype matters.
  EXPECT_TRUE(parse_status(R"({"a":{"dtype":"F16","shape":[6],"data_offsets":[0,12]}})", 12).ok());
  // Overlap.
  Status overlap = parse_status(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                                R"("b":{"dtype":"U8","shape":[8],"data_offsets":[4,12]}})",
                                12);
  EXPECT_EQ(overlap.code(), StatusCode::corrupt_data);
  EXPECT_NE(overlap.message().find("overlaps"), std::string::npos) << overlap.message();
  // Gap and trailing bytes.
  EXPECT_NE(parse_status(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})", 8).message().find("gap"),
            std::string::npos);
  EXPECT_FALSE(parse_status(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 8).ok());
  // Offsets reversed, negative dimension, missing fields, unknown dtype.
  EXPECT_FALSE(parse_status(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})", 4).ok());
  EXPECT_FALSE(parse_status(R"({"a":{"dtype":"U8","shape":[-4],"data_offsets":[0,4]}})", 4).ok());
  EXPECT_FALSE(parse_status(R"({"a":{"dtype":"U8","data_offsets":[0,4]}})", 4).ok());
  EXPECT_FALSE(parse_status(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0]}})", 4).ok());
  EXPECT_EQ(parse_status(R"({"a":{"dtype":"Q4","shape":[4],"data_offsets":[0,4]}})", 4).code(),
            StatusCode::unsupported);
  // Duplicate names inside one header (JSON parsers would silently keep one).
  Status duplicate = parse_status(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                                  R"("a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
                                  4);
  EXPECT_EQ(duplicate.code(), StatusCode::corrupt_data);
  EXPECT_NE(duplicate.message().find("duplicate"), std::string::npos) << duplicate.message();
  // Metadata must be strings.
  EXPECT_FALSE(parse_status(R"({"__metadata__":{"epoch":3}})", 0).ok());
  EXPECT_TRUE(parse_status(R"({"__metadata__":{"epoch":"3"}})", 0).ok());
}

TEST(Safetensors, ShardsFormOneSetAndDuplicatesAcrossShardsFail) {
  const fs::path folder = temp_folder("shards");
  const std::vector<float> a = {1, 2}, b = {3, 4, 5};
  for (int i : {0, 1, 2, 10}) {
    const std::string name = "t" + std::to_string(i);
    ASSERT_TRUE(write_safetensors(folder / ("set-" + std::to_string(i) + ".safetensors"),
                                  {{name, TensorDtype::f32, {2}, std::as_bytes(std::span(a))}})
                    .ok());
  }
  // Implied shard names stop at the first missing index: set-0, set-1, set-2 (not set-10).
  Expected<std::vector<fs::path>> implied = resolve_shards(folder / "set.safetensors");
  ASSERT_TRUE(implied) << implied.status().message();
  EXPECT_EQ(implied->size(), 3u);
  // A '*' pattern finds all four, sorted naturally.
  Expected<std::vector<fs::path>> pattern = resolve_shards(folder / "set-*.safetensors");
  ASSERT_TRUE(pattern);
  ASSERT_EQ(pattern->size(), 4u);
  EXPECT_EQ(pattern->at(2).filename(), "set-2.safetensors");
  EXPECT_EQ(pattern->at(3).filename(), "set-10.safetensors");
  Expected<SafetensorsSet> set = SafetensorsSet::open(folder / "set-*.safetensors");
  ASSERT_TRUE(set) << set.status().message();
  EXPECT_EQ(set->tensors().size(), 4u);
  EXPECT_EQ(set->files().size(), 4u);
  ASSERT_NE(set->find("t10"), nullptr);
  EXPECT_EQ(set->find("t10")->shard, 3u);

  ASSERT_TRUE(
      write_safetensors(folder / "dup-0.safetensors", {{"x", TensorDtype::f32, {2}, std::as_bytes(std::span(a))}})
          .ok());
  ASSERT_TRUE(
      write_safetensors(folder / "dup-1.safetensors", {{"x", TensorDtype::f32, {3}, std::as_bytes(std::span(b))}})
          .ok());
  Status duplicate = SafetensorsSet::open(folder / "dup.safetensors").status();
  EXPECT_EQ(duplicate.code(), StatusCode::corrupt_data);
  EXPECT_NE(duplicate.message().find("two shards"), std::string::npos) << duplicate.message();

  EXPECT_EQ(SafetensorsSet::open(folder / "none.safetensors").status().code(), StatusCode::not_found);
  EXPECT_EQ(SafetensorsSet::open(folder / "none-*.safetensors").status().code(), StatusCode::not_found);
}

TEST(Safetensors, ReadsTheShardedFixtureWeights) {
  const fs::path fixtures = fs::path(TRACKSCOPE_SHARED_DIR) / "fixtures" / "locotrack";
  Expected<SafetensorsSet> small = SafetensorsSet::open(fixtures / "locotrack_small_random_bf16.safetensors");
  ASSERT_TRUE(small) << small.status().message();
  EXPECT_EQ(small->files().size(), 2u);
  EXPECT_EQ(small->tensors().size(), 135u);
  const TensorEntry* conv = small->find("cmdtop.0.conv.0.0.weight");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->dtype, TensorDtype::bf16);
  EXPECT_EQ(conv->shape, (std::vector<std::int64_t>{64, 49, 5, 5}));
  std::int64_t parameters = 0;
  for (const TensorEntry& t : small->tensors()) parameters += t.element_count();
  EXPECT_EQ(parameters, 8'236'133);  // docs/locotrack-spec.md §3.1

  Expected<SafetensorsSet> inputs = SafetensorsSet::open(fixtures / "parity_inputs.safetensors");
  ASSERT_TRUE(inputs) << inputs.status().message();
  const TensorEntry* video = inputs->find("video_u8");
  ASSERT_NE(video, nullptr);
  EXPECT_EQ(video->dtype, TensorDtype::u8);
  EXPECT_EQ(video->shape, (std::vector<std::int64_t>{1, 16, 256, 256, 3}));
}

}  // namespace
}  // namespace trackscope::core::io
