#!/usr/bin/env bash
# Fails when a tracked C++/CUDA source differs from what clang-format (.clang-format) makes of it.
#   tools/lint/check-format.sh [--fix]
set -euo pipefail
cd "$(dirname "$0")/../.."
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
if ! clang-format --dry-run -Werror "${files[@]}" 2> /tmp/trackscope-format.log; then
  grep -E '^[^ ].*: (error|warning):' /tmp/trackscope-format.log | cut -d: -f1 | sort -u | sed 's/^/needs formatting: /'
  echo "check-format: run tools/lint/check-format.sh --fix (clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1))"
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
