#!/usr/bin/env bash
# CI fuzz smoke (issue 18): builds the libFuzzer targets (clang 14, ASan + UBSan, core only: no torch, no Qt) and
# runs each for a bounded time from its seed corpus (tests/fuzz/corpus/<entry>), with its dictionary. Fails when a
# target finds a crash, a hang (> 10 s for one input), a leak, undefined behaviour, an out-of-memory (> 2 GB) or a
# broken property; the input is kept under $FUZZ_OUT/artifacts/ with the command that reproduces it.
#
#   tools/ci/fuzz.sh                     # every target, FUZZ_SECONDS (default 12) each
#   FUZZ_SECONDS=600 tools/ci/fuzz.sh project checkpoint     # a longer campaign on some targets
#
# Environment: BUILD_DIR (default build-fuzz), FUZZ_SECONDS, FUZZ_OUT (default $BUILD_DIR/fuzz-out), JOBS.
# Prints a table of executions, coverage (libFuzzer's cov: edges, ft: features) and corpus size per target; the
# same table goes to $FUZZ_OUT/summary.md. New corpus entries stay in $FUZZ_OUT/corpus (the repository's seeds
# are only read). A finding becomes a file in tests/fuzz/regressions/<entry>/ and a fix (docs/reliability.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-12}
FUZZ_OUT=${FUZZ_OUT:-$BUILD_DIR/fuzz-out}
JOBS=${JOBS:-$(nproc)}
ALL_TARGETS=(project profile tracks_csv tracks_json tracks_npz safetensors checkpoint pickle badja_csv badja_json
  queries_csv video)
if [ $# -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi

dictionary_of() {
  case "$1" in
    project | profile | tracks_json | badja_json) echo tests/fuzz/dict/json.dict ;;
    tracks_csv | badja_csv | queries_csv) echo tests/fuzz/dict/csv.dict ;;
    checkpoint | pickle) echo tests/fuzz/dict/pickle.dict ;;
    tracks_npz) echo tests/fuzz/dict/npz.dict ;;
    *) echo "" ;;
  esac
}

start=$SECONDS
mkdir -p "$BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
  -DTRACKSCOPE_FUZZ=ON > "$BUILD_DIR/configure.log" 2>&1 ||
  { cat "$BUILD_DIR/configure.log"; exit 1; }
cmake --build "$BUILD_DIR" -j "$JOBS" --target $(printf 'fuzz_%s ' "${TARGETS[@]}")
build_seconds=$((SECONDS - start))

mkdir -p "$FUZZ_OUT/artifacts"
summary="$FUZZ_OUT/summary.md"
{
  echo "| target | seconds | executions | exec/s | cov (edges) | ft (features) | corpus | findings |"
  echo "|---|---|---|---|---|---|---|---|"
} > "$summary"
failed=()
for target in "${TARGETS[@]}"; do
  corpus="$FUZZ_OUT/corpus/$target"
  mkdir -p "$corpus"
  log="$FUZZ_OUT/$target.log"
  dict=$(dictionary_of "$target")
  args=(-max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1
    -artifact_prefix="$FUZZ_OUT/artifacts/$target-")
  if [ -n "$dict" ]; then args+=(-dict="$dict"); fi
  status=0
  # The first corpus folder receives new inputs; the seeds are read only.
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$BUILD_DIR/tests/fuzz/fuzz_$target" "${args[@]}" "$corpus" "tests/fuzz/corpus/$target" > "$log" 2>&1 ||
    status=$?
  executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  per_second=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || echo "?")
  ft=$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*' || echo "?")
  files=$(find "$corpus" -type f | wc -l)
  finding="none"
  if [ "$status" -ne 0 ]; then
    artifact=$(ls -t "$FUZZ_OUT/artifacts/$target-"* 2> /dev/null | head -1 || true)
    finding="FAILED (exit $status): ${artifact:-see $log}"
    failed+=("$target")
    echo "---- $target: last lines of $log"
    grep -v '^#' "$log" | tail -40
    echo "reproduce: $BUILD_DIR/tests/fuzz/fuzz_$target ${artifact:-<input>}"
  fi
  echo "| $target | $FUZZ_SECONDS | $executions | $per_second | $cov | $ft | $files | $finding |" >> "$summary"
done
cat "$summary"
echo "fuzz: build ${build_seconds} s, total $((SECONDS - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]}"
  exit 1
fi
