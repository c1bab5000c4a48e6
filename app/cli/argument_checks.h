#pragma once
// CLI11 checks that call core's parsers, so that a bad value is refused while the command line is parsed, with
// core's message (trackscope-cli: exit 2 and one line naming the command and the option).
//
//   command->add_option("--size", size_text, "output size WxH")->check(frame_size_check());

#include <CLI/CLI.hpp>

#include <string>
#include <utility>

#include "core/dimensions.h"

namespace trackscope::app {

/// A check from a parser returning core::Expected<T>: the parser's message is the error; the value is unchanged.
template <typename Parse>
CLI::Validator core_check(Parse parse, std::string description) {
  return CLI::Validator(
      [parse = std::move(parse)](std::string& text) -> std::string {
        const auto parsed = parse(text);
        return parsed ? std::string() : parsed.status().message();
      },
      std::move(description));
}

/// "WIDTHxHEIGHT" as core::parse_frame_size reads it.
inline CLI::Validator frame_size_check() {
  return core_check([](const std::string& text) { return core::parse_frame_size(text, ""); }, "WIDTHxHEIGHT");
}

}  // namespace trackscope::app
