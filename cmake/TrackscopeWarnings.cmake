# Warning flags for the project's own targets (third-party headers come in as -isystem through imported targets).
# CUDA sources get the host compiler's warnings on their host side and nvcc's own diagnostics. TRACKSCOPE_WERROR
# (on in CI: .ci/run) makes every warning an error, C++ and CUDA alike.
option(TRACKSCOPE_WERROR "Treat compiler warnings as errors, C++ and CUDA (CI turns it on)" OFF)
add_library(trackscope_warnings INTERFACE)
target_compile_options(trackscope_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual
  -Wno-unused-parameter>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
if(TRACKSCOPE_WERROR)
  target_compile_options(trackscope_warnings INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings -Xcompiler=-Werror>)
endif()
