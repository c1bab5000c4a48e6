// One libFuzzer target: the entry named by TRACKSCOPE_FUZZ_ENTRY (see fuzz_entries.h). Built by the fuzzing
// build (cmake -DTRACKSCOPE_FUZZ=ON with clang; tools/ci/fuzz.sh), one executable fuzz_<entry> per entry.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz_entries.h"

namespace {
const trackscope::fuzz::FuzzEntry* entry = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  entry = trackscope::fuzz::find_fuzz_entry(TRACKSCOPE_FUZZ_ENTRY);
  if (entry == nullptr) {
    std::fprintf(stderr, "no fuzz entry named %s\n", TRACKSCOPE_FUZZ_ENTRY);
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  entry->run(data, size);
  return 0;
}
