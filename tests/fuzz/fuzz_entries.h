#pragma once
// The fuzzed entry points, one per parser of untrusted input, shared by the libFuzzer targets (fuzz_target.cpp,
// built with clang -fsanitize=fuzzer) and the regression test (regression_test.cpp, built with the normal
// toolchain), which replays the seed corpora and every input a fuzzer found.
//
//   const FuzzEntry* entry = find_fuzz_entry("project");
//   entry->run(data, size);           // returns normally for any input; aborts on a broken invariant
//
// Besides "does not crash, hang, leak or invoke undefined behaviour" (the sanitizers' part), entries check
// properties: what a reader accepts, its writer writes back and the reader reads again unchanged (projects,
// profiles, track tables); what it accepts satisfies its documented sense checks (positions, frames).
// Threads: entries are independent and reentrant.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace trackscope::fuzz {

struct FuzzEntry {
  std::string_view name;  // also the folder of its corpus (tests/fuzz/corpus/<name>) and regressions
  void (*run)(const uint8_t* data, size_t size);
};

std::span<const FuzzEntry> fuzz_entries();
const FuzzEntry* find_fuzz_entry(std::string_view name);

}  // namespace trackscope::fuzz
