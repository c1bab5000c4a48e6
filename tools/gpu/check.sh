#!/usr/bin/env bash
# The one-command GPU check: builds gpu/ + the CLI + the tests against the GPU machine's CUDA LibTorch, runs the
# GPU tests and the benchmarks, optionally trains, and writes logs, JSON and a summary under OUT_DIR.
#
# On the GPU machine (through the device tool), from the project root, after tools/gpu/prepare.sh here:
#   source .gpu-carry/gpu_env.sh || exit 1; bash tools/gpu/check.sh "$OUT" [options]
# Options:
#   --tests REGEX       ctest -R REGEX instead of the GPU label (-L gpu); --no-tests skips the tests
#   --all-tests         every test except benchmarks (CPU suites too)
#   --bench "ARGS"      run `trackscope-cli bench ARGS --json OUT/bench.json` (repeatable: bench-1.json, ...)
#   --train "ARGS"      build trackscope-train first and train in the background (ARGS are trackscope-train's,
#                       e.g. "--out runs/s --continue --minutes 5"); tests run beside it, benches after it.
#                       Repeatable: each run starts at once beside the others on the one GPU (logs train.log,
#                       train-1.log, ...; give each its own --out), e.g. two seeds of one recipe in one call
#   --run "COMMAND"     an extra shell command after everything (output in the logs)
# At most 8 files come back from $OUT, so every log goes into OUT/logs.tar.gz; summary.txt, the bench JSON
# files and the files named by --keep (e.g. weights) are returned next to it.
#   --keep "GLOBS"      files to bring back: .safetensors files go into OUT, others into logs.tar.gz
#                       (e.g. "runs/s/weights*.safetensors runs/s/*.json runs/s/*.jsonl"); with several --train
#                       runs each kept file is named <its folder>-<name> (runs/a/weights-0.safetensors ->
#                       a-weights-0.safetensors) so that the runs' files do not overwrite each other
#   --targets "LIST"    build only these ninja targets after starting the training (default: everything), e.g.
#                       "trackscope-cli" when the call only trains and evaluates: the build then competes less
#                       with the training for the CPU
#   --archs "LIST"      CUDA architectures (default 90, the H200 only, for build time; the recipe's full list
#                       "75;80;86;89;90" is what CMakePresets.json's cuda preset builds, docs/building-cuda.md)
# The build is the `cuda` preset of CMakePresets.json (a CUDA LibTorch from CMAKE_PREFIX_PATH, which
# gpu_env.sh sets to torch.utils.cmake_prefix_path), without the GUI, into BUILD_DIR (default build-gpu).
set -uo pipefail
OUT=${1:?usage: check.sh OUT_DIR [options]}
shift
TEST_MODE=gpu; TEST_REGEX=""; BENCHES=(); TRAINS=(); EXTRA_RUNS=(); KEEP=""; ARCHS=90; TARGETS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tests) TEST_MODE=regex; TEST_REGEX=$2; shift ;;
    --no-tests) TEST_MODE=none ;;
    --all-tests) TEST_MODE=all ;;
    --quick) TEST_MODE=gpu ;;
    --bench) BENCHES+=("$2"); shift ;;
    --train) TRAINS+=("$2"); shift ;;
    --run) EXTRA_RUNS+=("$2"); shift ;;
    --keep) KEEP=$2; shift ;;
    --archs) ARCHS=$2; shift ;;
    --targets) TARGETS=$2; shift ;;
    *) echo "check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$OUT"
LOGS=$(mktemp -d)
BUILD=${BUILD_DIR:-build-gpu}
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
pack() { tar -C "$LOGS" -czf "$OUT/logs.tar.gz" . 2>/dev/null; }
T0=$SECONDS

say "== trackscope GPU check $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader 2>&1 | tee -a "$SUMMARY"
# A warm machine keeps ../shared from an earlier call's carry (gpu_env.sh links it only where none exists): point it
# at this call's, or the fixture tests skip, and ctest counts a suite whose tests all skipped as passed (stop 47).
if [ -n "${GPU_CARRY_SHARED:-}" ] && [ -L ../shared ] && [ "$(readlink ../shared)" != "$GPU_CARRY_SHARED" ]; then
  ln -sfn "$GPU_CARRY_SHARED" ../shared && say "../shared -> $GPU_CARRY_SHARED (was an earlier call's carry)"
fi

cmake --preset cuda -B "$BUILD" -DTRACKSCOPE_WITH_UI=OFF -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" \
  > "$LOGS/configure.log" 2>&1
rc=$?
say "configure (preset cuda, sm ${ARCHS}): rc=$rc in $((SECONDS - T0)) s"
if [ $rc -ne 0 ]; then tail -40 "$LOGS/configure.log"; pack; exit 1; fi

TRAIN_PIDS=(); TRAIN_LOGS=()
if [ ${#TRAINS[@]} -gt 0 ]; then
  ninja -C "$BUILD" -j"$(nproc)" trackscope-train > "$LOGS/build-train.log" 2>&1
  rc=$?
  say "build trackscope-train: rc=$rc at $((SECONDS - T0)) s"
  if [ $rc -ne 0 ]; then grep -m10 -B2 -A8 -E 'error|FAILED' "$LOGS/build-train.log" | tail -60; pack; exit 1; fi
  for k in "${!TRAINS[@]}"; do
    log=train.log; [ "$k" -gt 0 ] && log=train-$k.log
    # shellcheck disable=SC2086
    setsid "$BUILD/app/trackscope-train" ${TRAINS[$k]} > "$LOGS/$log" 2>&1 &
    TRAIN_PIDS+=($!); TRAIN_LOGS+=("$log")
    say "training started (pid $!, $log): trackscope-train ${TRAINS[$k]}"
  done
fi

T1=$SECONDS
# shellcheck disable=SC2086  # TARGETS is a list of ninja targets (empty: all)
ninja -C "$BUILD" -k 0 -j"$(nproc)" $TARGETS > "$LOGS/build.log" 2>&1
rc=$?
say "build: rc=$rc in $((SECONDS - T1)) s"
if [ $rc -ne 0 ]; then
  grep -m10 -B2 -A8 -E 'error|FAILED' "$LOGS/build.log" | tail -60 | tee -a "$SUMMARY"
fi
CLI=$BUILD/app/trackscope-cli
if [ -x "$CLI" ]; then
  "$CLI" --version | tee -a "$SUMMARY"
  "$CLI" devices > "$LOGS/devices.json" 2>&1
  grep -A2 '"gpu_tracking"' "$LOGS/devices.json" | tee -a "$SUMMARY"
fi

if [ "$TEST_MODE" != none ]; then
  T2=$SECONDS
  CTEST_ARGS=(--test-dir "$BUILD" --output-on-failure --output-junit "$LOGS/ctest.xml" -j2 --timeout 540)
  case "$TEST_MODE" in
    regex) CTEST_ARGS+=(-R "$TEST_REGEX") ;;
    gpu) CTEST_ARGS+=(-L gpu) ;;
    all) CTEST_ARGS+=(-LE bench) ;;
  esac
  ctest "${CTEST_ARGS[@]}" > "$LOGS/ctest.log" 2>&1
  say "tests: rc=$? in $((SECONDS - T2)) s: $(grep -E 'tests passed|tests failed' "$LOGS/ctest.log")"
  grep -E '^\s*[0-9]+/[0-9]+ Test' "$LOGS/ctest.log" | tee -a "$SUMMARY"
  # ctest counts a suite whose every gtest skipped (no CUDA, fixtures not in reach) as passed: name those.
  python3 - "$LOGS/ctest.xml" <<'EOF' 2>&1 | tee -a "$SUMMARY"
import sys
import xml.etree.ElementTree as ET
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    out = "".join(e.text or "" for e in case.iter("system-out"))
    if "[  PASSED  ] 0 tests" in out and "[  FAILED  ]" not in out:
        print(f"tests: {case.get('name')} ran no test (every test skipped): NOT a pass")
EOF
  grep -E '^\[(engine|small|base|ops)|max \|d\||rel L2|PARITY' "$LOGS/ctest.log" | head -150 >> "$SUMMARY"
fi

for k in "${!TRAIN_PIDS[@]}"; do
  wait "${TRAIN_PIDS[$k]}"
  say "training ${TRAIN_LOGS[$k]}: rc=$? at $((SECONDS - T0)) s"
  tail -25 "$LOGS/${TRAIN_LOGS[$k]}" | tee -a "$SUMMARY"
done

i=0
for args in "${BENCHES[@]}"; do
  [ -x "$CLI" ] || break
  T3=$SECONDS
  name=bench; [ $i -gt 0 ] && name=bench-$i
  # shellcheck disable=SC2086
  "$CLI" bench $args --json "$OUT/$name.json" > "$LOGS/$name.txt" 2>&1
  say "bench $i ($args): rc=$? in $((SECONDS - T3)) s"
  cat "$LOGS/$name.txt" >> "$SUMMARY"
  i=$((i + 1))
done

for command in "${EXTRA_RUNS[@]}"; do
  say "run: $command"
  bash -c "$command" >> "$LOGS/run.log" 2>&1
  say "run: rc=$?"
  tail -30 "$LOGS/run.log" >> "$SUMMARY"
done

if [ -n "$KEEP" ]; then
  # shellcheck disable=SC2086
  for f in $KEEP; do
    [ -f "$f" ] || continue
    name=$(basename "$f")
    [ ${#TRAINS[@]} -gt 1 ] && name=$(basename "$(dirname "$f")")-$name
    case "$f" in *.safetensors) cp "$f" "$OUT/$name" ;; *) cp "$f" "$LOGS/$name" ;; esac
  done
fi
say "total: $((SECONDS - T0)) s"
pack
ls -l "$OUT"
