# trackscope_add_gtest(<layer/name> SOURCES ... [LIBRARIES ...] [LABELS ...] [ENVIRONMENT ...] [TIMEOUT s]
#                      [ARGS ...])
#
# One GoogleTest executable registered as ONE ctest entry named <layer/name> (the whole suite runs in one
# process: binaries that link torch need ~1 s just to start, so one process per test case would dominate CI).
# ARGS are appended to the command line (e.g. --gtest_filter=-*Cuda* when a second entry runs the rest).
# The executable target is test_<layer>_<name>.
# Tests find the shared test data through TRACKSCOPE_SHARED_DIR (default: ../shared beside the source tree).
set(TRACKSCOPE_SHARED_DIR "${PROJECT_SOURCE_DIR}/../shared" CACHE PATH "Shared test data (testdata/, fixtures/)")

function(trackscope_add_gtest test_name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBRARIES;LABELS;ENVIRONMENT;ARGS" ${ARGN})
  string(REPLACE "/" "_" target "test_${test_name}")
  add_executable(${target} ${ARG_SOURCES})
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
# offscreen platform, one ctest entry.
function(trackscope_add_qtest test_name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBRARIES;LABELS" ${ARGN})
  string(REPLACE "/" "_" target "test_${test_name}")
  add_executable(${target} ${ARG_SOURCES})
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
