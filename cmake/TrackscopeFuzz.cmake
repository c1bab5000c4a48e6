# The fuzzing build (TRACKSCOPE_FUZZ=ON; tools/ci/fuzz.sh): trackscope_core and the libFuzzer targets of
# tests/fuzz, nothing else (no torch, no Qt), instrumented for libFuzzer's coverage feedback and with AddressSanitizer
# and UndefinedBehaviorSanitizer (any undefined behaviour aborts, so the fuzzer keeps the input).
# Needs clang and its fuzzer runtime: clang-14 and libclang-rt-14-dev on Debian 12 (tools/install-deps.sh).
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "TRACKSCOPE_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++-14")
endif()
set(TRACKSCOPE_FUZZ_SANITIZERS "address,undefined" CACHE STRING "Sanitizers of the fuzzing build")
add_compile_options(-fsanitize=fuzzer-no-link,${TRACKSCOPE_FUZZ_SANITIZERS} -fno-sanitize-recover=undefined
  -fno-omit-frame-pointer)
add_link_options(-fsanitize=${TRACKSCOPE_FUZZ_SANITIZERS})
