# Warning flags for the project's own targets (third-party headers come in as -isystem through imported targets).
add_library(trackscope_warnings INTERFACE)
target_compile_options(trackscope_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual
  -Wno-unused-parameter>)
