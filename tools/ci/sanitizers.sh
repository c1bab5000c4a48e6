#!/usr/bin/env bash
# CI sanitizer jobs (issue 18), each in its own build folder:
#   tools/ci/sanitizers.sh asan   AddressSanitizer + UndefinedBehaviorSanitizer over the unit, ui and CLI tests of
#                                 core, ui and app (and the fuzz corpora replay), labels unit|ui, gpu/ tests left out
#   tools/ci/sanitizers.sh tsan   ThreadSanitizer over the concurrency tests: the frame server, the tracking job,
#                                 the telemetry samplers, the frame prefetcher and read-ahead, and the GUI's
#                                 services (mailbox, video session, tracker service: ui/services, which needs Qt
#                                 Core only, not the widget library)
# The project's own code outside gpu/ is instrumented; gpu/ (LibTorch) compiles with the normal build's flags
# (TRACKSCOPE_SANITIZE_GPU=OFF) so that ccache serves it, and runs uninstrumented. For those cache hits across build
# folders, ccache must not hash the build folder: CCACHE_NOHASHDIR=1 and CCACHE_BASEDIR=<checkout> (set below, and
# needed for the normal build too; .ci/run exports them).
# Environment: BUILD_DIR (default build-asan / build-tsan), JOBS (default nproc). Extra arguments go to ctest.
#   ASAN_TESTS=ci (default)  the CI sample, one of its two halves per run (alternating with HEAD's hash):
#     ci-input               every reader of untrusted input (projects and recovery files, track formats, safetensors,
#                            checkpoints, profiles, queries, video from bytes, the fuzz corpora and findings
#                            replayed), limits, annotation/track editing (builds core and these tests only)
#     ci-gui                 the GUI's project and settings handling, three CLI tests, input sensing and limits
#                            (builds core, ui and the CLI); only the selected executables are built
#   ASAN_TESTS=all           every test labelled unit|ui outside gpu/ (builds everything; ~3x longer)
#   ASAN_TESTS='<ctest regex>' with ASAN_TARGETS='<targets>'  any other selection
#   TSAN_TESTS=ci (default) the six tests above; TSAN_TESTS=core only the five core ones (no Qt build);
#                           TSAN_TESTS=all also ui/tracking_service (the same services driven through the whole
#                           window: builds the widget library too, ~10 more minutes on 2 cores)
#   SANITIZER_SHARD=K/N      run every N-th selected test starting at K (1-based; ctest -I K,,N)
set -euo pipefail
cd "$(dirname "$0")/../.."
MODE=${1:-}
shift || true
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
JOBS=${JOBS:-$(nproc)}
# TRACKSCOPE_CMAKE_ARGS as for tools/test.sh (CI: -DTRACKSCOPE_WERROR=ON): the same flags keep gpu/'s ccache hits
# shellcheck disable=SC2206
common=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRACKSCOPE_BUILD_TESTS=ON -DTRACKSCOPE_SANITIZE_GPU=OFF
  -DTRACKSCOPE_BUILD_GPU_TESTS=OFF -DTRACKSCOPE_CHECK_CUDA_KERNELS=OFF ${TRACKSCOPE_CMAKE_ARGS:-})
shard=()
if [ -n "${SANITIZER_SHARD:-}" ]; then shard=(-I "${SANITIZER_SHARD%/*},,${SANITIZER_SHARD#*/}"); fi
start=$SECONDS
case "$MODE" in
  asan)
    BUILD_DIR=${BUILD_DIR:-build-asan}
    cmake -S . -B "$BUILD_DIR" "${common[@]}" -DTRACKSCOPE_SANITIZE_ADDRESS=ON -DTRACKSCOPE_SANITIZE_UNDEFINED=ON \
      > /dev/null
    ASAN_TESTS=${ASAN_TESTS:-ci}
    if [ "$ASAN_TESTS" = ci ]; then
      # One half of the sample per CI run, alternating with the commit (the last hex digit of HEAD's hash): a cold
      # run of the whole sample took 761 s on the 2-core machine, 689 s of it building core, ui and the CLI with
      # ASan; the input half builds core and its tests only.
      digit=$(git rev-parse HEAD 2> /dev/null | tail -c 2 || true)
      if (( 16#${digit:-0} % 2 == 0 )); then ASAN_TESTS=ci-input; else ASAN_TESTS=ci-gui; fi
      echo "sanitizers asan: the CI sample's $ASAN_TESTS half (HEAD's last hex digit: ${digit:-none})"
    fi
    if [ "$ASAN_TESTS" = ci-input ] || [ "$ASAN_TESTS" = ci-gui ]; then
      tests=(core/input_sense core/limits)
      if [ "$ASAN_TESTS" = ci-input ]; then
        tests+=(core/checkpoint core/project core/track_formats core/video_bytes core/io_safetensors core/perf_profile
          core/annotation core/track_edit core/memory_video core/video_errors fuzz/regressions)
      else
        tests+=(ui/project ui/settings)
      fi
      targets=()
      for t in "${tests[@]}"; do targets+=("test_${t//\//_}"); done
      cmake --build "$BUILD_DIR" -j "$JOBS" --target "${targets[@]}"
      if [ "$ASAN_TESTS" = ci-gui ]; then
        tests+=(app/cli_info_missing app/cli_compare_bad_file app/cli_limits)
        # The CLI last: it links libtrackscope_gpu.so, whose objects ccache serves from the normal build.
        cmake --build "$BUILD_DIR" -j "$JOBS" --target trackscope-cli
      fi
      selection=(-R "^($(IFS='|'; echo "${tests[*]}"))\$")
    elif [ "$ASAN_TESTS" = all ]; then
      selection=(-L 'unit|ui')
      cmake --build "$BUILD_DIR" -j "$JOBS"
    else
      selection=(-R "$ASAN_TESTS")
      # shellcheck disable=SC2086
      cmake --build "$BUILD_DIR" -j "$JOBS" --target ${ASAN_TARGETS:?ASAN_TARGETS names the executables of ASAN_TESTS}
    fi
    build_seconds=$((SECONDS - start))
    # Leaks of the uninstrumented libraries (Qt, fontconfig, LibTorch's static registries) are theirs: suppressed.
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
    export LSAN_OPTIONS=suppressions=$PWD/tools/ci/lsan.supp:print_suppressions=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" "${selection[@]}" -LE 'gpu|bench|slow' "${shard[@]}" "$@"
    ;;
  tsan)
    BUILD_DIR=${BUILD_DIR:-build-tsan}
    cmake -S . -B "$BUILD_DIR" "${common[@]}" -DTRACKSCOPE_SANITIZE_THREAD=ON > /dev/null
    tests=(core/frame_server core/tracking_job core/perf_telemetry core/frame_prefetcher core/read_ahead_source)
    case "${TSAN_TESTS:-ci}" in
      core) ;;
      ci) tests+=(ui/services) ;;
      all) tests+=(ui/services ui/tracking_service) ;;
      *) echo "TSAN_TESTS: core, ci or all" >&2; exit 2 ;;
    esac
    targets=()
    for t in "${tests[@]}"; do targets+=("test_${t//\//_}"); done
    cmake --build "$BUILD_DIR" -j "$JOBS" --target "${targets[@]}"
    build_seconds=$((SECONDS - start))
    export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tools/ci/tsan.supp
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" -R "^($(IFS='|'; echo "${tests[*]}"))\$" \
      "${shard[@]}" "$@"
    ;;
  *)
    echo "usage: $0 asan|tsan [ctest arguments]" >&2
    exit 2
    ;;
esac
echo "sanitizers $MODE: build ${build_seconds} s, total $((SECONDS - start)) s"
