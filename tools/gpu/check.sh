#!/usr/bin/env bash
# The one-command GPU check: builds gpu/ + the CLI + the tests against the GPU machine's CUDA LibTorch, runs
# the unit and GPU tests and the benchmarks, and writes logs, JSON and a summary under OUT_DIR.
#
# On the GPU machine (through the device tool), from the project root, after tools/gpu/prepare.sh here:
#   source .gpu-carry/gpu_env.sh || exit 1; bash tools/gpu/check.sh "$OUT" [--quick] [--no-bench] [--bench-args "..."]
# At most 8 files come back from $OUT: configure+build log, ctest log, JUnit XML, devices JSON, bench JSON,
# bench table, summary.
set -uo pipefail
OUT=${1:?usage: check.sh OUT_DIR [--quick] [--no-bench] [--bench-args ARGS]}
shift
QUICK=0; BENCH=1; BENCH_ARGS=""; TEST_REGEX=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --no-bench) BENCH=0 ;;
    --bench-args) BENCH_ARGS=$2; shift ;;
    --tests) TEST_REGEX=$2; shift ;;
    *) echo "check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$OUT"
BUILD=${BUILD_DIR:-build-gpu}
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
T0=$SECONDS

say "== trackscope GPU check $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader 2>&1 | tee -a "$SUMMARY"

{
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRACKSCOPE_WITH_UI=OFF -DTRACKSCOPE_WITH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DTRACKSCOPE_BUILD_TESTS=ON &&
  ninja -C "$BUILD" -j"$(nproc)"
} > "$OUT/build.log" 2>&1
rc=$?
say "build: rc=$rc in $((SECONDS - T0)) s"
if [ $rc -ne 0 ]; then
  grep -m10 -B2 -A8 -E 'error|FAILED' "$OUT/build.log" | tail -60
  exit 1
fi
CLI=$BUILD/app/trackscope-cli
"$CLI" devices > "$OUT/devices.json" 2>&1
say "devices: $(tr -d '\n ' < "$OUT/devices.json" | head -c 400)"

T1=$SECONDS
CTEST_ARGS=(--test-dir "$BUILD" --output-on-failure --output-junit "$OUT/ctest.xml" -j4)
if [ -n "$TEST_REGEX" ]; then CTEST_ARGS+=(-R "$TEST_REGEX"); elif [ $QUICK -eq 1 ]; then CTEST_ARGS+=(-L gpu); else CTEST_ARGS+=(-LE bench); fi
ctest "${CTEST_ARGS[@]}" > "$OUT/ctest.log" 2>&1
say "tests: rc=$? in $((SECONDS - T1)) s: $(grep -E 'tests passed|tests failed' "$OUT/ctest.log")"
grep -E '^\s*[0-9]+/[0-9]+ Test' "$OUT/ctest.log" | tee -a "$SUMMARY"
grep -E 'PARITY|parity\]' "$OUT/ctest.log" | head -80 >> "$SUMMARY"

if [ $BENCH -eq 1 ] && "$CLI" bench --help > /dev/null 2>&1; then
  T2=$SECONDS
  # shellcheck disable=SC2086
  "$CLI" bench --device cuda:0 --json "$OUT/bench.json" $BENCH_ARGS > "$OUT/bench.txt" 2>&1
  say "bench: rc=$? in $((SECONDS - T2)) s"
  tail -60 "$OUT/bench.txt"
fi
say "total: $((SECONDS - T0)) s"
