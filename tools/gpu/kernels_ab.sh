#!/usr/bin/env bash
# One GPU-machine call that builds, tests and times this round's kernels against the previous paths (A/B in the same
# process lifetime of the machine), and prints a short table last. Stays under 9 minutes (AB_BUDGET_S).
#
# Here, once:   tools/gpu/prepare.sh --fixtures base --no-long-clip            (.gpu-carry, ~62 MiB with the tree)
# The call (device tool, carry [".gpu-carry"], timeout_s 600):
#   source .gpu-carry/gpu_env.sh || exit 1; bash tools/gpu/kernels_ab.sh "$OUT"
# Small's parity fixtures do not fit in the same upload (64 MiB in all: the tree is 25.9 MB, small's fixtures
# 26.6 MB, base's 33.4 MB), so small's parity tests skip in that call, naming the fixture. They run in a short
# second call while the machine is warm (the build stays; the script points ../shared at the carried data):
#   here:     tools/gpu/prepare.sh --fixtures small --no-long-clip --out .gpu-carry-small
#   call:     carry [".gpu-carry-small"]:
#             source .gpu-carry-small/gpu_env.sh || exit 1; bash tools/gpu/kernels_ab.sh "$OUT" --skip-build --skip-bench
# Options: --skip-build, --skip-tests, --skip-bench, --quick (N=1024 only, 3 repeats).
# Phases (each logged under OUT; the reply's tail shows the table):
#   1. configure + build only what the A/B needs (trackscope-cli and three test binaries), sm_90;
#   2. tests: gpu/ops_cuda (every CUDA kernel against the CPU reference: the 3xTF32 and 16-bit pipelined
#      correlation, the fused mixer in 3xTF32 / SGEMM / fp16 / bf16 against the module in float64, the tensor-core
#      CMDTop), gpu/locotrack_parity_cuda (the model in fp32 against the official outputs, per carried size) and
#      gpu/engine_cuda (the engine's exact-mode parity with the new defaults, CUDA graphs, bf16); the kernels' CPU
#      emulations run in CI;
#   3. benches (trackscope-cli bench, random weights, T=47, 256x256, small+base, N=256,1024, 5 repeats after 2
#      warm-ups, medians), one JSON per variant, in this order (past the time budget the last ones are skipped):
#        exact-new    fp32, everything automatic: 3xTF32 correlation, 3xTF32 CMDTop, fused 3xTF32 mixer
#        exact-prev   fp32 --corr-kernel pipelined --mixer reference: the previous round's exact path (169.5 ms base)
#        fast-new     fp16, automatic: the fused mixer, the pipelined mma correlation
#        fast-prev    fp16 --mixer reference --corr-kernel wmma: the previous round's fast path
#        exact-corr   fp32 --mixer reference: the new correlation alone
#        exact-plain  fp32 --mixer plain: the fused mixer on plain SGEMMs (fusion without 3xTF32)
#        fast-wmma    fp16 --corr-kernel wmma: the previous correlation kernel
#        fast-fused   fp16 --mixer fused: the fused mixer in fp16 (slower than the module's cuBLAS GEMMs on the H200)
#        fast-tile16  fp16 with TRACKSCOPE_CMDTOP_MMA_TILE=16 (one 16-sample CMDTop block per SM instead of two of 8)
#        fast-graphs  fp16 --cuda-graphs on
#   4. the table: per case and variant, end to end and the stage medians, with the targets.
# Expected duration on a cold H200 machine: build ~2 min (16 cores), tests ~1-3 min (capped at 4), benches ~10-20 s
# each. No bench starts after AB_BUDGET_S (default 430 s) and each is capped at 90 s, so the call ends before 9
# minutes with the table of what ran; the skipped ones run with --skip-build --skip-tests while the machine is warm.
set -uo pipefail
OUT=${1:?usage: kernels_ab.sh OUT_DIR [--skip-build] [--skip-tests] [--skip-bench] [--quick]}
shift
SKIP_BUILD=no
SKIP_TESTS=no
SKIP_BENCH=no
QUICK=no
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-build) SKIP_BUILD=yes ;;
    --skip-tests) SKIP_TESTS=yes ;;
    --skip-bench) SKIP_BENCH=yes ;;
    --quick) QUICK=yes ;;
    *) echo "kernels_ab.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$OUT"
BUILD=${BUILD_DIR:-build-gpu}
LOG=$OUT/ab-log.txt
# At most 8 files come back from OUT: the log, exact-new.json, fast-new.json and logs.tar.gz (every log and JSON).
LOGS=$(mktemp -d)
pack() { tar -C "$LOGS" -czf "$OUT/logs.tar.gz" . 2>/dev/null; }
trap pack EXIT
: > "$LOG"
say() { echo "$*" | tee -a "$LOG"; }
T0=$SECONDS
say "== kernels A/B $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader 2>&1 | tee -a "$LOG"
# The tests read ../shared (TRACKSCOPE_SHARED_DIR). gpu_env.sh links it to the first carry's data; a later call on
# the warm machine with another carry (small's fixtures) must see that carry's data instead.
if [ -n "${GPU_CARRY_SHARED:-}" ] && [ -L ../shared ] && [ "$(readlink ../shared)" != "$GPU_CARRY_SHARED" ]; then
  ln -sfn "$GPU_CARRY_SHARED" ../shared && say "../shared -> $GPU_CARRY_SHARED"
fi
say "fixtures: $(ls ../shared/fixtures/locotrack 2>/dev/null | tr '\n' ' ')"

if [ "$SKIP_BUILD" = yes ] && [ ! -x "$BUILD/app/trackscope-cli" ]; then
  say "--skip-build but no $BUILD here (a fresh machine): building"
  SKIP_BUILD=no
fi
if [ "$SKIP_BUILD" = no ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRACKSCOPE_WITH_UI=OFF -DTRACKSCOPE_WITH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DTRACKSCOPE_BUILD_TESTS=ON > "$LOGS/configure.txt" 2>&1 || {
    tail -30 "$LOGS/configure.txt"; exit 1; }
  ninja -C "$BUILD" -j"$(nproc)" trackscope-cli test_gpu_ops test_gpu_engine test_gpu_locotrack_parity \
    > "$LOGS/build.txt" 2>&1 || { grep -m10 -B2 -A8 -E 'error|FAILED' "$LOGS/build.txt" | tail -60; exit 1; }
  say "build: ok at $((SECONDS - T0)) s"
fi

if [ "$SKIP_TESTS" = no ]; then
  timeout 240 ctest --test-dir "$BUILD" --output-on-failure --timeout 200 \
    -R 'gpu/(ops_cuda|locotrack_parity_cuda|engine_cuda)$' > "$LOGS/tests.txt" 2>&1
  say "tests: rc=$? at $((SECONDS - T0)) s: $(grep -E 'tests passed|tests failed' "$LOGS/tests.txt")"
  grep -E '^\s*[0-9]+/[0-9]+ Test' "$LOGS/tests.txt" | tee -a "$LOG"
  grep -E 'mixer cuda|3xTF32|local_corr4d cuda .*T=47|\[engine|tracks .*rel L2|occluded flags|FAILED|Failure|skipped|SKIPPED' \
    "$LOGS/tests.txt" | head -90 >> "$LOG"
fi

CLI=$BUILD/app/trackscope-cli
POINTS=256,1024
REPEATS=(--repeats 5 --warmup 2)
if [ "$QUICK" = yes ]; then
  POINTS=1024
  REPEATS=(--repeats 3 --warmup 1)
fi
BUDGET=${AB_BUDGET_S:-430}  # seconds: later benches are skipped past it, so that the table still prints in the limit
bench() {
  local name=$1
  shift
  if [ "$SKIP_BENCH" = yes ]; then return; fi
  if [ $((SECONDS - T0)) -gt "$BUDGET" ]; then
    say "bench $name: skipped (past ${BUDGET} s; rerun with --skip-build --skip-tests on the warm machine)"
    return
  fi
  local t=$SECONDS
  timeout 90 "$CLI" bench --device cuda:0 --model small,base --points "$POINTS" --frames 47 "${REPEATS[@]}" --no-peaks "$@" \
    --json "$LOGS/$name.json" > "$LOGS/$name.txt" 2>&1
  say "bench $name ($*): rc=$? in $((SECONDS - t)) s"
}
bench exact-new --precision fp32
bench exact-prev --precision fp32 --corr-kernel pipelined --mixer reference
bench fast-new --precision fp16
bench fast-prev --precision fp16 --mixer reference --corr-kernel wmma
bench exact-corr --precision fp32 --mixer reference
bench exact-plain --precision fp32 --mixer plain
bench fast-wmma --precision fp16 --corr-kernel wmma
bench fast-fused --precision fp16 --mixer fused
TRACKSCOPE_CMDTOP_MMA_TILE=16 bench fast-tile16 --precision fp16
bench fast-graphs --precision fp16 --cuda-graphs on
cp "$LOGS/exact-new.json" "$LOGS/fast-new.json" "$OUT/" 2>/dev/null
say "total: $((SECONDS - T0)) s"

python3 - "$LOGS" <<'EOF' | tee -a "$LOG"
import json, os, sys
logs = sys.argv[1]
variants = ["exact-prev", "exact-corr", "exact-plain", "exact-new", "fast-prev", "fast-wmma", "fast-new", "fast-fused", "fast-tile16",
            "fast-graphs"]
targets = {("small", 1024, "fp16"): 24, ("base", 1024, "fp16"): 28, ("small", 256, "fp16"): 8,
           ("base", 256, "fp16"): 9, ("small", 256, "fp32"): 71, ("small", 1024, "fp32"): 132,
           ("base", 256, "fp32"): 78, ("base", 1024, "fp32"): 160}
stages = [("backbone", "bb"), ("query_features", "qf"), ("init", "init"), ("refine_correlation", "corr"),
          ("refine_encoder", "cmdtop"), ("refine_transformer", "mixer")]
rows = {}
notes = {}
for v in variants:
    path = os.path.join(logs, v + ".json")
    if not os.path.exists(path):
        continue
    for case in json.load(open(path))["cases"]:
        c = case["config"]
        key = (c["model_size"], c["points"], c["precision"])
        medians = {s["name"]: s["stats"]["median_ms"] for s in case["stages"]}
        rows.setdefault(key, {})[v] = (case["end_to_end"]["median_ms"], [medians.get(s, float("nan")) for s, _ in stages])
        notes[v] = case.get("notes", "")
for v in variants:
    if v in notes:
        print("  %-12s %s" % (v, notes[v]))
print("\nmedian ms, T=47, 256x256 (targets: fast 10x the official best, exact 3x its strict fp32)")
print("%-22s %-12s %7s  " % ("case", "variant", "e2e") + " ".join("%6s" % short for _, short in stages))
for key in sorted(rows, key=lambda k: (k[2], k[0], k[1])):
    target = targets.get(key)
    name = "%s N=%d %s" % key + (" <=%d" % target if target else "")
    for v in variants:
        if v in rows[key]:
            e2e, st = rows[key][v]
            print("%-22s %-12s %7.1f  " % (name, v, e2e) + " ".join("%6.1f" % x for x in st))
            name = ""
EOF
