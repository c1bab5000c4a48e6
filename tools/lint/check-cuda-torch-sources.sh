#!/usr/bin/env bash
# Compiles (syntax and types only) the torch-side CUDA sources, which the normal build leaves out here: they need a
# LibTorch built with CUDA and Debian's is CPU-only (gpu/CMakeLists.txt, TRACKSCOPE_GPU_TORCH_CUDA_SOURCES). Debian's
# LibTorch still ships the ATen/c10 CUDA headers, and the CUDA toolkit at /usr/local/cuda has the runtime's; only
# c10/cuda/impl/cuda_cmake_macros.h, which a CUDA build of LibTorch generates, is missing, and a stub stands in for it.
# So a typo or a wrong type in gpu/ops/cuda/cuda_wrappers.cpp fails here and in CI, not first on the GPU machine. The
# GPU machine's LibTorch (2.x) still has the last word: this checks against Debian's 1.13 headers.
#
#   bash tools/lint/check-cuda-torch-sources.sh       # skips (exit 0, says why) without the toolkit or the headers
set -euo pipefail
cd "$(dirname "$0")/../.."
CUDA_INCLUDE=${CUDA_HOME:-/usr/local/cuda}/include
TORCH_API=/usr/include/torch/csrc/api/include
if [ ! -f "$CUDA_INCLUDE/cuda_runtime.h" ] || [ ! -d /usr/include/c10/cuda ] || [ ! -d "$TORCH_API" ]; then
  echo "check-cuda-torch-sources: skipped (needs $CUDA_INCLUDE/cuda_runtime.h, /usr/include/c10/cuda and $TORCH_API)"
  exit 0
fi
stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
mkdir -p "$stub/c10/cuda/impl"
echo '#pragma once' > "$stub/c10/cuda/impl/cuda_cmake_macros.h"
# The list in gpu/CMakeLists.txt, so that a source added there is checked here too.
mapfile -t sources < <(sed -n '/^set(TRACKSCOPE_GPU_TORCH_CUDA_SOURCES/,/^)/p' gpu/CMakeLists.txt | grep -E '\.cpp$' |
  sed 's#^ *#gpu/#')
[ ${#sources[@]} -gt 0 ] || { echo "check-cuda-torch-sources: no sources found in gpu/CMakeLists.txt" >&2; exit 1; }
start=$SECONDS
for source in "${sources[@]}"; do
  g++ -std=c++20 -fsyntax-only -Wall -Wextra -Werror -Wno-unused-parameter -DTRACKSCOPE_WITH_CUDA \
    -DTRACKSCOPE_WITH_CUDA_OPS -I. -isystem "$stub" -isystem "$TORCH_API" -isystem "$CUDA_INCLUDE" "$source"
done
echo "check-cuda-torch-sources: ${#sources[@]} source(s) clean: ${sources[*]} ($((SECONDS - start)) s)"
