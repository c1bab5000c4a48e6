#!/usr/bin/env bash
# CI sanitizer jobs (issue 18), each in its own build folder:
#   tools/ci/sanitizers.sh asan   AddressSanitizer + UndefinedBehaviorSanitizer over the unit, ui and CLI tests of
#                                 core, ui and app (and the fuzz corpora replay), labels unit|ui, gpu/ tests left out
#   tools/ci/sanitizers.sh tsan   ThreadSanitizer over the concurrency tests: the frame server, the tracking job,
#                                 the tracker service (GUI side) and the telemetry samplers
# The project's own code outside gpu/ is instrumented; gpu/ (LibTorch) compiles with the normal build's flags
# (TRACKSCOPE_SANITIZE_GPU=OFF) so that ccache serves it, and runs uninstrumented. For those cache hits across build
# folders, ccache must not hash the build folder: CCACHE_NOHASHDIR=1 and CCACHE_BASEDIR=<checkout> (set below, and
# needed for the normal build too; .ci/run exports them).
# Environment: BUILD_DIR (default build-asan / build-tsan), JOBS (default nproc). Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/../.."
MODE=${1:-}
shift || true
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
JOBS=${JOBS:-$(nproc)}
common=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRACKSCOPE_BUILD_TESTS=ON -DTRACKSCOPE_SANITIZE_GPU=OFF
  -DTRACKSCOPE_BUILD_GPU_TESTS=OFF -DTRACKSCOPE_CHECK_CUDA_KERNELS=OFF)
start=$SECONDS
case "$MODE" in
  asan)
    BUILD_DIR=${BUILD_DIR:-build-asan}
    cmake -S . -B "$BUILD_DIR" "${common[@]}" -DTRACKSCOPE_SANITIZE_ADDRESS=ON -DTRACKSCOPE_SANITIZE_UNDEFINED=ON \
      > /dev/null
    cmake --build "$BUILD_DIR" -j "$JOBS"
    build_seconds=$((SECONDS - start))
    # Leaks of the uninstrumented libraries (Qt, fontconfig, LibTorch's static registries) are theirs: suppressed.
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
    export LSAN_OPTIONS=suppressions=$PWD/tools/ci/lsan.supp:print_suppressions=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" -L 'unit|ui' -LE 'gpu|bench' "$@"
    ;;
  tsan)
    BUILD_DIR=${BUILD_DIR:-build-tsan}
    cmake -S . -B "$BUILD_DIR" "${common[@]}" -DTRACKSCOPE_SANITIZE_THREAD=ON > /dev/null
    cmake --build "$BUILD_DIR" -j "$JOBS" --target test_core_frame_server test_core_tracking_job \
      test_core_perf_telemetry test_ui_tracking_service
    build_seconds=$((SECONDS - start))
    export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tools/ci/tsan.supp
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" \
      -R '^(core/frame_server|core/tracking_job|core/perf_telemetry|ui/tracking_service)$' "$@"
    ;;
  *)
    echo "usage: $0 asan|tsan [ctest arguments]" >&2
    exit 2
    ;;
esac
echo "sanitizers $MODE: build ${build_seconds} s, total $((SECONDS - start)) s"
