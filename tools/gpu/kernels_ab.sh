#!/usr/bin/env bash
# One GPU-machine call that builds, tests and times this round's kernels against the previous paths (A/B in the same
# process lifetime of the machine), and prints a short table last.
#
# On the GPU machine (device tool), from the project root, with the carry of tools/gpu/prepare.sh:
#   source .gpu-carry/gpu_env.sh || exit 1; bash tools/gpu/kernels_ab.sh "$OUT" [--skip-build] [--skip-tests] [--quick]
# Phases (each logged under OUT; the reply's tail shows the table):
#   1. configure + build only what the A/B needs (trackscope-cli and two test binaries), sm_90;
#   2. tests: gpu/ops_cuda (every CUDA kernel against the CPU reference, including the tensor-core CMDTop in both
#      tiles and in 3xTF32) and gpu/engine_cuda (exact-mode parity against the official outputs with the small
#      fixtures of the default carry, CUDA graphs, bf16); the kernel's CPU emulation runs in CI, not here;
#   3. benches (trackscope-cli bench, T=47, 256x256, 5 repeats after 2 warm-ups, medians), one JSON per variant:
#        fast-new    fp16, small+base, N=256,1024, CMDTop auto (the tensor-core fused kernel)
#        fast-old    the same with --cmdtop dense (the previous fast-mode path)
#        fast-graphs the new path with --cuda-graphs on (one graph per chunk)
#        exact-new   fp32, small+base, N=256,1024, CMDTop auto
#        exact-old   the same with --cmdtop fused (the fp32 FMA kernel of the previous round)
#   4. the table: end to end and CMDTop (refine_encoder) medians per case and variant, with the targets.
# --quick: N=1024 only and 3 repeats (about half the bench time). Expected duration on a cold H200 machine: build
# ~3-4 min (16 cores), tests ~2 min (capped at 5), benches ~3 min; a bench that would start after AB_BUDGET_S
# (default 520 s) is skipped and the table prints what ran: then call again with --skip-build --skip-tests while the
# machine is warm (the build stays) for the rest.
set -uo pipefail
OUT=${1:?usage: kernels_ab.sh OUT_DIR [--skip-build] [--skip-tests] [--quick]}
shift
SKIP_BUILD=no
SKIP_TESTS=no
QUICK=no
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-build) SKIP_BUILD=yes ;;
    --skip-tests) SKIP_TESTS=yes ;;
    --quick) QUICK=yes ;;
    *) echo "kernels_ab.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$OUT"
BUILD=${BUILD_DIR:-build-gpu}
LOG=$OUT/ab-log.txt
# At most 8 files come back from OUT: the log, the five bench JSON files and logs.tar.gz (everything else).
LOGS=$(mktemp -d)
pack() { tar -C "$LOGS" -czf "$OUT/logs.tar.gz" . 2>/dev/null; }
trap pack EXIT
: > "$LOG"
say() { echo "$*" | tee -a "$LOG"; }
T0=$SECONDS
say "== kernels A/B $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader 2>&1 | tee -a "$LOG"

if [ "$SKIP_BUILD" = no ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRACKSCOPE_WITH_UI=OFF -DTRACKSCOPE_WITH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DTRACKSCOPE_BUILD_TESTS=ON > "$LOGS/configure.txt" 2>&1 || {
    tail -30 "$LOGS/configure.txt"; exit 1; }
  ninja -C "$BUILD" -j"$(nproc)" trackscope-cli test_gpu_ops test_gpu_engine > "$LOGS/build.txt" 2>&1 || { grep -m10 -B2 -A8 -E 'error|FAILED' "$LOGS/build.txt" | tail -60; exit 1; }
  say "build: ok at $((SECONDS - T0)) s"
fi

if [ "$SKIP_TESTS" = no ]; then
  timeout 300 ctest --test-dir "$BUILD" --output-on-failure --timeout 280 -R 'gpu/(ops_cuda|engine_cuda)$' \
    > "$LOGS/tests.txt" 2>&1
  say "tests: rc=$? at $((SECONDS - T0)) s: $(grep -E 'tests passed|tests failed' "$LOGS/tests.txt")"
  grep -E '^\s*[0-9]+/[0-9]+ Test' "$LOGS/tests.txt" | tee -a "$LOG"
  grep -E 'cmdtop|tensor-core|3xTF32|\[engine|FAILED|Failure' "$LOGS/tests.txt" | head -80 >> "$LOG"
fi

CLI=$BUILD/app/trackscope-cli
POINTS=256,1024
REPEATS=(--repeats 5 --warmup 2)
if [ "$QUICK" = yes ]; then
  POINTS=1024
  REPEATS=(--repeats 3 --warmup 1)
fi
BUDGET=${AB_BUDGET_S:-520}  # seconds: later benches are skipped past it, so that the table still prints in the limit
bench() {
  local name=$1
  shift
  if [ $((SECONDS - T0)) -gt "$BUDGET" ]; then
    say "bench $name: skipped (past ${BUDGET} s; rerun with --skip-build --skip-tests on the warm machine)"
    return
  fi
  local t=$SECONDS
  "$CLI" bench --device cuda:0 --model small,base --points "$POINTS" --frames 47 "${REPEATS[@]}" --no-peaks "$@" \
    --json "$OUT/$name.json" > "$LOGS/$name.txt" 2>&1
  say "bench $name ($*): rc=$? in $((SECONDS - t)) s"
}
bench fast-new --precision fp16 --cmdtop auto
bench fast-old --precision fp16 --cmdtop dense
bench exact-new --precision fp32 --cmdtop auto
bench exact-old --precision fp32 --cmdtop fused
bench fast-graphs --precision fp16 --cmdtop auto --cuda-graphs on
say "total: $((SECONDS - T0)) s"

python3 - "$OUT" <<'EOF' | tee -a "$LOG"
import json, os, sys
out = sys.argv[1]
variants = ["fast-old", "fast-new", "fast-graphs", "exact-old", "exact-new"]
targets = {("small", 1024, "fp16"): 24, ("base", 1024, "fp16"): 28, ("small", 256, "fp16"): 8,
           ("base", 256, "fp16"): 9, ("small", 256, "fp32"): 71, ("small", 1024, "fp32"): 132,
           ("base", 256, "fp32"): 78, ("base", 1024, "fp32"): 160}
rows = {}
for v in variants:
    path = os.path.join(out, v + ".json")
    if not os.path.exists(path):
        continue
    for case in json.load(open(path))["cases"]:
        c = case["config"]
        key = (c["model_size"], c["points"], c["precision"])
        stages = {s["name"]: s["stats"]["median_ms"] for s in case["stages"]}
        rows.setdefault(key, {})[v] = (case["end_to_end"]["median_ms"], stages.get("refine_encoder", float("nan")),
                                       stages.get("refine_transformer", float("nan")), case.get("notes", ""))
for key in sorted(rows):
    for v in variants:
        if v in rows[key]:
            print("  %s N=%d %s %s: %s" % (key + (v, rows[key][v][3])))
print("\nmedian ms (end to end / CMDTop), T=47; targets: fast 10x the official best, exact 3x its strict fp32")
print("%-18s %-8s" % ("case", "target") + "".join("%-17s" % v for v in variants))
for key in sorted(rows):
    name = "%s N=%d %s" % key
    target = targets.get(key)
    line = "%-18s %-8s" % (name, "<=%d" % target if target else "")
    for v in variants:
        if v in rows[key]:
            e2e, enc, _, _ = rows[key][v]
            line += "%-17s" % ("%.1f / %.1f" % (e2e, enc))
        else:
            line += "%-17s" % "-"
    print(line)
EOF
