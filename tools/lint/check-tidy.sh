#!/usr/bin/env bash
# clang-tidy (.clang-tidy: naming, bugprone, performance, concurrency) over the C++ sources changed since BASE;
# fails on any finding in them. A changed header counts through the .cpp file of the same name.
#   tools/lint/check-tidy.sh [BASE]     BASE: a commit (default: the one .ci/lint-base names, the previous stop's)
# Environment: BUILD_DIR (default build: any configured build, for compile_commands.json), JOBS (default nproc),
# LINT_MAX_FILES (default 0 = all): lint a sample of that many of the changed files, chosen by a hash of the path
# and HEAD (so that successive commits sample different files; CI sets it to fit its time budget).
# gpu/ sources that include LibTorch's headers are left out (clang-tidy spends ~1 min parsing each); their naming
# follows the same .clang-tidy when run by hand: run-clang-tidy-14 -p build gpu/
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE=${1:-$(cat .ci/lint-base 2>/dev/null || true)}
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
TIDY=$(command -v run-clang-tidy-14 || command -v run-clang-tidy || true)
[ -n "$TIDY" ] || { echo "check-tidy: run-clang-tidy not found (apt-get install clang-tidy-14)" >&2; exit 2; }
[ -f "$BUILD_DIR/compile_commands.json" ] || { echo "check-tidy: no $BUILD_DIR/compile_commands.json" >&2; exit 2; }
if [ -z "$BASE" ] || ! git cat-file -e "$BASE^{commit}" 2>/dev/null; then
  echo "check-tidy: base commit '${BASE}' not in this clone's history: linting the files of HEAD's own commit"
  BASE=HEAD~1
  git cat-file -e "$BASE^{commit}" 2>/dev/null || { echo "check-tidy: no history (shallow clone?): nothing to compare"; exit 0; }
fi
# Unity batches (TRACKSCOPE_UNITY_BUILD) hide their sources from compile_commands.json: give each its own entry.
DB_DIR="$BUILD_DIR/tidy-db"
python3 tools/lint/expand_unity_db.py "$BUILD_DIR" "$DB_DIR"
mapfile -t changed < <(git diff --name-only --diff-filter=ACMR "$BASE" HEAD -- '*.cpp' '*.h')
files=()
for f in "${changed[@]}"; do
  cpp=$f
  [ "${f%.h}" != "$f" ] && cpp=${f%.h}.cpp
  [ -f "$cpp" ] || continue
  grep -q "\"file\": \"[^\"]*/$cpp\"" "$DB_DIR/compile_commands.json" || continue  # not in this build
  case "$cpp" in gpu/*|tests/gpu/*) grep -qE '#include <(ATen|torch|c10)/' "$cpp" && continue ;; esac
  files+=("$cpp")
done
mapfile -t files < <(printf '%s\n' "${files[@]}" | sort -u | sed '/^$/d')
total=${#files[@]}
if [ "${LINT_MAX_FILES:-0}" -gt 0 ] && [ "$total" -gt "$LINT_MAX_FILES" ]; then
  head=$(git rev-parse HEAD)
  mapfile -t files < <(for f in "${files[@]}"; do echo "$(echo "$head $f" | sha1sum | cut -c1-12) $f"; done |
    sort | head -n "$LINT_MAX_FILES" | cut -d' ' -f2)
fi
echo "check-tidy: ${#files[@]} of $total changed sources since $(git rev-parse --short "$BASE")"
[ ${#files[@]} -gt 0 ] || exit 0
start=$SECONDS
log=$(mktemp)
# run-clang-tidy exits non-zero on any finding (WarningsAsErrors: '*' in .clang-tidy)
if ! "$TIDY" -p "$DB_DIR" -j "$JOBS" -quiet "${files[@]/#/$PWD/}" > "$log" 2>&1; then
  grep -E '(error|warning): ' "$log" | grep -v 'warnings generated' | sort -u
  echo "check-tidy: findings above ($((SECONDS - start)) s); fix them or, for a false positive, NOLINT(check) with the why"
  exit 1
fi
echo "check-tidy: clean ($((SECONDS - start)) s)"
