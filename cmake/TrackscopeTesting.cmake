# trackscope_add_gtest(<layer/name> SOURCES ... [LIBRARIES ...] [LABELS ...] [ENVIRONMENT ...] [TIMEOUT s]
#                      [ARGS ...] [OPTIMIZED])
#
# One GoogleTest executable registered as ONE ctest entry named <layer/name> (the whole suite runs in one
# process: binaries that link torch need ~1 s just to start, so one process per test case would dominate CI).
# ARGS are appended to the command line (e.g. --gtest_filter=-*Cuda* when a second entry runs the rest).
# The executable target is test_<layer>_<name>.
# Tests find the shared test data through TRACKSCOPE_SHARED_DIR (default: ../shared beside the source tree).
# A test's own sources compile at -O1 in the optimised build types: they drive the libraries (which keep the build
# type's -O2), and -O1 compiles a GoogleTest file ~30% faster (docs/development.md). OPTIMIZED keeps the build
# type's level for a test whose own code does the heavy work (the CUDA kernels' CPU emulation, reference ops).
set(TRACKSCOPE_SHARED_DIR "${PROJECT_SOURCE_DIR}/../shared" CACHE PATH "Shared test data (testdata/, fixtures/)")

function(trackscope_test_optimisation target optimized)
  if(NOT optimized)
    target_compile_options(${target} PRIVATE "$<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CONFIG:RelWithDebInfo,Release>>:-O1>")
  endif()
endfunction()

function(trackscope_add_gtest test_name)
  cmake_parse_arguments(ARG "OPTIMIZED" "TIMEOUT" "SOURCES;LIBRARIES;LABELS;ENVIRONMENT;ARGS" ${ARGN})
  string(REPLACE "/" "_" target "test_${test_name}")
  add_executable(${target} ${ARG_SOURCES})
  trackscope_test_optimisation(${target} "${ARG_OPTIMIZED}")
  target_link_libraries(${target} PRIVATE ${ARG_LIBRARIES} GTest::gtest GTest::gtest_main trackscope_warnings)
  target_compile_definitions(${target} PRIVATE
    TRACKSCOPE_SHARED_DIR="${TRACKSCOPE_SHARED_DIR}"
    TRACKSCOPE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    TRACKSCOPE_TEST_OUTPUT_DIR="${PROJECT_BINARY_DIR}/test-output")
  add_test(NAME ${test_name} COMMAND ${target} --gtest_color=no ${ARG_ARGS})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set_tests_properties(${test_name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "${ARG_ENVIRONMENT}")
endfunction()

# trackscope_add_qtest(<layer/name> SOURCES ... [LIBRARIES ...] [LABELS ...]): a QtTest executable on the
# offscreen platform, one ctest entry; its sources at -O1 like trackscope_add_gtest's.
function(trackscope_add_qtest test_name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBRARIES;LABELS" ${ARGN})
  string(REPLACE "/" "_" target "test_${test_name}")
  add_executable(${target} ${ARG_SOURCES})
  trackscope_test_optimisation(${target} OFF)
  set_target_properties(${target} PROPERTIES AUTOMOC ON)
  target_link_libraries(${target} PRIVATE ${ARG_LIBRARIES} Qt6::Test trackscope_warnings)
  target_compile_definitions(${target} PRIVATE
    TRACKSCOPE_SHARED_DIR="${TRACKSCOPE_SHARED_DIR}"
    TRACKSCOPE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    TRACKSCOPE_TEST_OUTPUT_DIR="${PROJECT_BINARY_DIR}/test-output")
  add_test(NAME ${test_name} COMMAND ${target})
  if(NOT ARG_LABELS)
    set(ARG_LABELS ui)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set_tests_properties(${test_name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "QT_QPA_PLATFORM=offscreen")
endfunction()
