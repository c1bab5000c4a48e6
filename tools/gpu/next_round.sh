#!/usr/bin/env bash
# The first GPU call of 2026-12-05's fourth session: what the third wrote after its last call, and where the two
# tensor-core kernels' issue slots go.
# One call, within TOTAL_S seconds (default 570), in this order, each step only if time is left:
#   1. build trackscope-cli + the CUDA op and engine tests (tools/gpu/check.sh), run gpu/ops_cuda and
#      gpu/engine_cuda (the review commits 2e1279b, d20ef2d, d2762ef and 19c2638 touch CUDA-only paths);
#   2. the four official cases in fast (fp16) and exact (fp32) mode, medians of 5 (bench JSON: bench-official.json);
#   3. Nsight Compute detail sections + warp stall reasons (tools/gpu/kernel_details.sh) of cmdtop_mma_kernel and
#      local_corr4d_mma_pipelined at small N=1024 and of cmdtop_mma_kernel at base N=1024.
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
if [ "$(left)" -gt 200 ]; then
  # shellcheck disable=SC2086
  timeout 150 "$CLI" bench $OFFICIAL --json "$OUT/bench-official.json" > "$OUT/bench-official.txt" 2>&1
  say "official cases: rc=$? at $((SECONDS - T0)) s"
  tail -20 "$OUT/bench-official.txt" | tee -a "$LOG"
fi
details() {  # kernel_details.sh for one case, within the budget
  [ "$(left)" -gt 80 ] || return 0
  local case=$1
  shift
  timeout "$(( $(left) - 40 ))" bash tools/gpu/kernel_details.sh "/tmp/details/${case//:/-}" "$case" "$@" > /dev/null 2>&1
  say "kernel details $case: rc=$? at $((SECONDS - T0)) s"
  cat "/tmp/details/${case//:/-}/details.txt" >> "$OUT/details.txt" 2>/dev/null
  tar -C /tmp -czf "$OUT/details.tar.gz" details 2>/dev/null
}
details small:1024:fp16 cmdtop_mma_kernel local_corr4d_mma_pipelined
details base:1024:fp16 cmdtop_mma_kernel
say "total: $((SECONDS - T0)) s"
