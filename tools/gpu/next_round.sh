#!/usr/bin/env bash
# The last GPU call of 2026-12-05's fourth session: the final CMDTop kernel (21e2050's with 16-bit packed tables for
# base's 16-position layer), tested and measured.
# One call, within TOTAL_S seconds (default 570), in this order, each step only if time is left:
#   1. build trackscope-cli + the CUDA op and engine tests (tools/gpu/check.sh), run gpu/ops_cuda and gpu/engine_cuda;
#   2. the four official cases in fast (fp16) and exact (fp32) mode, medians of 5 (bench JSON: bench-official.json);
#   3. per-launch kernel times of small N=1024 and N=256 fp16 under ncu (tools/gpu/profile_kernels.sh).
#
# Here, first:
#   tools/gpu/prepare.sh --fixtures small --no-long-clip
# The call (device tool, carry [".gpu-carry"], timeout_s 600):
#   source .gpu-carry/gpu_env.sh || exit 1; bash tools/gpu/next_round.sh "$OUT"
set -uo pipefail
OUT=${1:?usage: next_round.sh OUT_DIR}
cd "$(dirname "$0")/../.." || exit 1
mkdir -p "$OUT"
T0=$SECONDS
LOG=$OUT/next-round.txt
say() { echo "$*" | tee -a "$LOG"; }
TOTAL_S=${TOTAL_S:-570}  # the seconds this call may take (the device tool stops it at its timeout)
left() { echo $((TOTAL_S - (SECONDS - T0))); }

bash tools/gpu/check.sh "$OUT/check" --tests 'gpu/(ops|engine)_cuda' \
  --targets "trackscope-cli test_gpu_ops test_gpu_engine"
say "check: done at $((SECONDS - T0)) s"
grep -E 'tests passed|tests failed|Failed|Passed' "$OUT/check/summary.txt" 2>/dev/null | tee -a "$LOG"

CLI=${BUILD_DIR:-build-gpu}/app/trackscope-cli
[ -x "$CLI" ] || { say "no $CLI: the build failed (check/logs.tar.gz)"; exit 1; }
OFFICIAL="--device cuda:0 --model small,base --points 256,1024 --precision fp16,fp32 --repeats 5 --warmup 2 --no-peaks"
if [ "$(left)" -gt 120 ]; then
  # shellcheck disable=SC2086
  timeout 100 "$CLI" bench $OFFICIAL --json "$OUT/bench-official.json" > "$OUT/bench-official.txt" 2>&1
  say "official cases: rc=$? at $((SECONDS - T0)) s"
  grep -E 'median' "$OUT/bench-official.txt" | tee -a "$LOG"
fi
profile() {  # profile_kernels.sh for the given cases, within the budget
  [ "$(left)" -gt 70 ] || return 0
  timeout "$(( $(left) - 30 ))" bash tools/gpu/profile_kernels.sh /tmp/prof "$@" >> /tmp/prof.log 2>&1
  say "profile $*: rc=$? at $((SECONDS - T0)) s"
  cp /tmp/prof.log /tmp/prof/ 2>/dev/null
  tar -C /tmp -czf "$OUT/prof.tar.gz" prof 2>/dev/null
}
profile small:1024:fp16
profile small:256:fp16
say "total: $((SECONDS - T0)) s"
