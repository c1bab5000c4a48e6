#!/usr/bin/env bash
# Installs the dependencies, builds the app and launches it on its embedded default: the bundled sample clip
# and the bundled default model (README's first command). Extra arguments go to the app.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
bash tools/install-deps.sh
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$BUILD_DIR" -j "$JOBS" --target trackscope trackscope-cli
exec "$BUILD_DIR/app/trackscope" "$@"
