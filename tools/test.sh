#!/usr/bin/env bash
# Installs the dependencies, builds everything and runs the whole test suite (README's second command).
#   tools/test.sh [extra ctest args]      BUILD_DIR (default build) and JOBS (default nproc) may be set.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
bash tools/install-deps.sh
# TRACKSCOPE_CMAKE_ARGS: more configure arguments (CI: -DTRACKSCOPE_WERROR=ON)
# shellcheck disable=SC2086
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRACKSCOPE_BUILD_TESTS=ON ${TRACKSCOPE_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j "$JOBS"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" -LE 'gpu|bench' "$@"
