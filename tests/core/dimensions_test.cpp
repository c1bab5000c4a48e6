// The one parser of 'x'-joined whole numbers (core/dimensions.h): frame sizes, query grids, synthetic clips, and
// the GUI's --compare FILE:N.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "core/dimensions.h"
#include "core/perf/report.h"
#include "core/tracking/query_spec.h"

namespace trackscope::core {
namespace {

const DimensionsFormat kClip{
    .what = "--synthetic", .pattern = "WIDTHxHEIGHTxFRAMES", .example = "1920x1080x18000", .parts = 3, .min = 1};

std::string message_of(std::string_view text, const DimensionsFormat& format) {
  Expected<std::vector<int64_t>> parsed = parse_dimensions(text, format);
  EXPECT_FALSE(parsed) << text;
  if (parsed) return {};
  EXPECT_EQ(parsed.status().code(), StatusCode::invalid_argument) << text;
  return parsed.status().message();
}

TEST(Dimensions, ReadsEveryPart) {
  Expected<std::vector<int64_t>> clip = parse_dimensions("1920x1080x18000", kClip);
  ASSERT_TRUE(clip) << clip.status().message();
  EXPECT_EQ(*clip, (std::vector<int64_t>{1920, 1080, 18000}));
  Expected<FrameSize> size = parse_frame_size("128x72", "--size");
  ASSERT_TRUE(size) << size.status().message();
  EXPECT_EQ(size->width, 128);
  EXPECT_EQ(size->height, 72);
  Expected<FrameSize> largest = parse_frame_size("16384x1", "--size");
  ASSERT_TRUE(largest);
  EXPECT_EQ(largest->width, 16384);
}

TEST(Dimensions, RefusesGarbageWithAMessageNamingTheValue) {
  for (const char* bad : {"", "x", "640", "640x", "x360", "640x360x1", "640X360", "640 x360", " 640x360", "640x360 ",
                          "6.5x360", "+640x360", "0x640x360", "axb", "640x36o", "640xx360"}) {
    const std::string message = message_of(bad, {.what = "--size", .pattern = "WIDTHxHEIGHT", .example = "640x360"});
    EXPECT_NE(message.find("--size '" + std::string(bad) + "'"), std::string::npos) << message;
    EXPECT_NE(message.find("give WIDTHxHEIGHT, whole numbers from 1 to"), std::string::npos) << message;
    EXPECT_NE(message.find("e.g. 640x360"), std::string::npos) << message;
  }
}

TEST(Dimensions, RefusesNegativeOutOfRangeAndOverflowingNumbers) {
  EXPECT_NE(message_of("-640x360", {}).find("-640 is negative"), std::string::npos);
  EXPECT_NE(message_of("640x-1", {}).find("-1 is negative"), std::string::npos);
  EXPECT_NE(message_of("0x360", {}).find("0 is out of range"), std::string::npos);
  // Past int32 (the default maximum), then past int64: std::stoi threw out_of_range here.
  EXPECT_NE(message_of("2147483648x1", {}).find("2147483648 is out of range"), std::string::npos);
  EXPECT_NE(message_of("99999999999999999999x1", {}).find("99999999999999999999 is too large"), std::string::npos);
  EXPECT_NE(message_of("64x64x99999999999999999999", kClip).find("is too large"), std::string::npos);
  const std::string size = parse_frame_size("16385x100", "--size").status().message();
  EXPECT_NE(size.find("16385 is out of range; give WIDTHxHEIGHT, whole numbers from 1 to 16384"), std::string::npos)
      << size;
  EXPECT_FALSE(parse_frame_size("0x0", "--size"));  // "native" is the option left out, not 0x0
}

TEST(Dimensions, QueryGridsUseTheSameParser) {
  Expected<QuerySpec> grid = parse_query_spec("grid:1024x3@frame12");
  ASSERT_TRUE(grid) << grid.status().message();
  EXPECT_EQ(grid->grid_columns, 1024);
  EXPECT_EQ(grid->grid_rows, 3);
  EXPECT_EQ(grid->grid_frame, 12);
  EXPECT_EQ(parse_query_spec("grid:8x4")->grid_frame, 0);
  for (const char* bad : {"grid:-4x4", "grid:4x4@frame-1", "grid:99999999999x4", "grid:4x4@frame99999999999999999999",
                          "grid:0x4", "grid:4x4x4", "grid:4x4@frame1.5"}) {
    Expected<QuerySpec> refused = parse_query_spec(bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.status().message().find("a grid is grid:COLUMNSxROWS"), std::string::npos) << bad;
  }
}

// ---- the GUI's --compare FILE:N -------------------------------------------------------------------------------

TEST(ProfileChoice, FileAndCase) {
  const auto choice = [](std::string_view text) {
    Expected<ProfileChoice> parsed = parse_profile_choice(text);
    EXPECT_TRUE(parsed) << text;
    return parsed ? std::make_pair(parsed->path, parsed->case_index) : std::make_pair(std::string("?"), -1);
  };
  EXPECT_EQ(choice("runs/a.json"), std::make_pair(std::string("runs/a.json"), 0));
  EXPECT_EQ(choice("runs/a.json:2"), std::make_pair(std::string("runs/a.json"), 2));
  EXPECT_EQ(choice("c:a.json"), std::make_pair(std::string("c:a.json"), 0));  // not digits: part of the path
  EXPECT_EQ(choice("a.json:"), std::make_pair(std::string("a.json:"), 0));
  EXPECT_EQ(choice(":3"), std::make_pair(std::string(":3"), 0));  // no path before the colon
  EXPECT_EQ(choice("a.json:-1"), std::make_pair(std::string("a.json:-1"), 0));
  // The GUI read a case past int as case 0.
  Expected<ProfileChoice> huge = parse_profile_choice("a.json:99999999999");
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.status().message().find("99999999999 is out of range"), std::string::npos) << huge.status().message();
}

}  // namespace
}  // namespace trackscope::core
