#!/usr/bin/env bash
# Installs the Debian 12 packages Trackscope needs to build, run and test (about a minute).
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache git
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev libxkbcommon-dev
  libtorch-dev
  # OpenBLAS as the system BLAS: Debian's LibTorch calls libblas.so.3 for every CPU matmul, and the default
  # reference BLAS ran the LocoTrack mixer at ~2 GFLOP/s (10x slower). The OpenMP build shares LibTorch's threads.
  libopenblas0-openmp
  # oneDNN's headers: the CPU kernels call its AVX-512 sgemm (gpu/ops/cpu/cpu_support.h); the library itself is
  # already there for LibTorch
  libdnnl-dev
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev ffmpeg
  # JPEG/PNG image sequences decoded as PIL and OpenCV decode them (core/video/still_image.cpp); PIL itself is
  # the reference of tests/core/video_decoding_test.cpp (skipped without it)
  libjpeg62-turbo-dev libpng-dev python3-pil
  nlohmann-json3-dev libfmt-dev libcli11-dev libzip-dev
  libgtest-dev libgmock-dev
  # the format gate (tools/lint/check-format.sh) and the lint gate
  clang-format clang-tidy
  # the fuzz targets (tools/ci/fuzz.sh): clang 14 and its libFuzzer/sanitizer runtimes
  clang-14 libclang-rt-14-dev
  # numpy reads the exported TAP-Vid .npz in tests/core/track_formats_test.cpp (skipped without it); python3 writes
  # torch.save-layout checkpoints with its own pickle module for the checkpoint tests (tests/data/make_checkpoints.py)
  python3 python3-numpy
  xvfb xauth
  # tools/ci/package.sh validates the installed desktop file and AppStream metadata
  desktop-file-utils appstream
)
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
