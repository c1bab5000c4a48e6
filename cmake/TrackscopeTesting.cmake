# trackscope_add_gtest(<layer/name> SOURCES ... [LIBRARIES ...] [LABELS ...] [ENVIRONMENT ...] [TIMEOUT s]
#                      [ARGS ...] [OPTIMIZED])
#
# One GoogleTest executable registered as ONE ctest entry named <layer/name> (the whole suite runs in one
# process: binaries that link torch need ~1 s just to start, so one process per test case would dominate CI).
# ARGS are appended to the command line (e.g. --gtest_filter=-*Cuda* when a second entry runs the rest).
# The executable target is test_<layer>_<name>.
# Tests find the shared test data through TRACKSCOPE_SHARED_DIR (default: ../shared beside the source tree).
# A test's own sources compile at -O1 in the optimised build types: they drive the libraries (which keep the build
# type's -O2), and -O1 compiled the 83 test files 14% faster (docs/development.md). OPTIMIZED keeps the build
# type's level for a test whose own code does the heavy work (the CUDA kernels' CPU emulation, reference ops).
set(TRACKSCOPE_SHARED_DIR "${PROJECT_SOURCE_DIR}/../shared" CACHE PATH "Shared test data (testdata/, fixtures/)")

# _trackscope_test_target(<layer/name> <optimized> <sources>...): the executable test_<layer>_<name> with what every
# test target has (the data folders' definitions, the warnings, -O1 unless optimized); its name in `target`.
function(_trackscope_test_target test_name optimized)
  string(REPLACE "/" "_" name "test_${test_name}")
  add_executable(${name} ${ARGN})
  if(NOT optimized)
    target_compile_options(${name} PRIVATE "$<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CONFIG:RelWithDebInfo,Release>>:-O1>")
  endif()
  target_link_libraries(${name} PRIVATE trackscope_warnings)
  target_compile_definitions(${name} PRIVATE
    TRACKSCOPE_SHARED_DIR="${TRACKSCOPE_SHARED_DIR}"
    TRACKSCOPE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    TRACKSCOPE_TEST_OUTPUT_DIR="${PROJECT_BINARY_DIR}/test-output")
  set(target ${name} PARENT_SCOPE)
endfunction()

# _trackscope_register_test(<layer/name> <labels> <default label> <timeout> <environment> <command>...): one ctest
# entry, labelled <default label> when <labels> is empty, with a 600 s timeout unless <timeout> says otherwise.
function(_trackscope_register_test test_name labels default_label timeout environment)
  add_test(NAME ${test_name} COMMAND ${ARGN})
  if(NOT labels)
    set(labels ${default_label})
  endif()
  if(NOT timeout)
    set(timeout 600)
  endif()
  set_tests_properties(${test_name} PROPERTIES LABELS "${labels}" TIMEOUT ${timeout} ENVIRONMENT "${environment}")
endfunction()

function(trackscope_add_gtest test_name)
  cmake_parse_arguments(ARG "OPTIMIZED" "TIMEOUT" "SOURCES;LIBRARIES;LABELS;ENVIRONMENT;ARGS" ${ARGN})
  _trackscope_test_target(${test_name} "${ARG_OPTIMIZED}" ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE ${ARG_LIBRARIES} GTest::gtest GTest::gtest_main)
  _trackscope_register_test(${test_name} "${ARG_LABELS}" unit "${ARG_TIMEOUT}" "${ARG_ENVIRONMENT}"
    ${target} --gtest_color=no ${ARG_ARGS})
endfunction()

# trackscope_add_qtest(<layer/name> SOURCES ... [LIBRARIES ...] [LABELS ...]): a QtTest executable on the
# offscreen platform, one ctest entry; its sources at -O1 like trackscope_add_gtest's.
function(trackscope_add_qtest test_name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBRARIES;LABELS" ${ARGN})
  _trackscope_test_target(${test_name} OFF ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES AUTOMOC ON)
  target_link_libraries(${target} PRIVATE ${ARG_LIBRARIES} Qt6::Test)
  _trackscope_register_test(${test_name} "${ARG_LABELS}" ui "${ARG_TIMEOUT}" "QT_QPA_PLATFORM=offscreen" ${target})
endfunction()
