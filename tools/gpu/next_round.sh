#!/usr/bin/env bash
# The fifth GPU call of 2026-12-05's fourth session: the CMDTop kernel's staged image load (coalesced 16-byte loads
# into shared memory, then the two branch images from there), against 21e2050 (the per-vector scatter, the fastest
# measured for small in the previous calls).
# One call, within TOTAL_S seconds (default 570), in this order, each step only if time is left:
#   1. build trackscope-cli + the CUDA op and engine tests (tools/gpu/check.sh), run gpu/ops_cuda (the CUDA CMDTop
#      against the CPU reference) and gpu/engine_cuda (exact-mode parity: 3xTF32 CMDTop);
#   2. the source A/B (tools/gpu/source_ab.sh): 21e2050's cmdtop_mma_kernel.cuh against this one, fp16 and fp32,
#      small/base, N=256/1024, two rounds;
#   3. Nsight Compute details + stall reasons of the new cmdtop_mma_kernel (small and base, N=1024).
#
# Here, first:
#   tools/gpu/prepare.sh --fixtures small --no-long-clip
#   bash tools/gpu/source_ab.sh --prepare 21e2050 gpu/ops/cuda/cmdtop_mma_kernel.cuh
# The call (device tool, carry [".gpu-carry", ".gpu-carry-old"], timeout_s 600):
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
AB_ARGS="--device cuda:0 --model small,base --points 256,1024 --precision fp16,fp32 --repeats 5 --warmup 2 --no-peaks"
if [ "$(left)" -gt 250 ]; then
  bash tools/gpu/source_ab.sh --run "$OUT/kernels-ab" "$AB_ARGS" 2 2>&1 | tail -30 | tee -a "$LOG"
  tar -C "$OUT" -czf "$OUT/kernels-ab.tar.gz" kernels-ab && rm -rf "$OUT/kernels-ab"
  say "kernel A/B: done at $((SECONDS - T0)) s"
fi
details() {  # kernel_details.sh for one case, within the budget
  [ "$(left)" -gt 60 ] || return 0
  local case=$1
  shift
  timeout "$(( $(left) - 30 ))" bash tools/gpu/kernel_details.sh "/tmp/details/${case//:/-}" "$case" "$@" > /dev/null 2>&1
  say "kernel details $case: rc=$? at $((SECONDS - T0)) s"
  cat "/tmp/details/${case//:/-}/details.txt" >> "$OUT/details.txt" 2>/dev/null
}
details small:1024:fp16 cmdtop_mma_kernel
details base:1024:fp16 cmdtop_mma_kernel
CUOBJDUMP=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null)
if [ -n "$CUOBJDUMP" ]; then
  "$CUOBJDUMP" -sass "${BUILD_DIR:-build-gpu}/gpu/libtrackscope_gpu.so" 2>/dev/null |
    awk '/Function : .*(cmdtop_mma_kernel|local_corr4d_mma_pipelined)/{p=1} /Function : /&&!/(cmdtop_mma_kernel|local_corr4d_mma_pipelined)/{p=0} p' > /tmp/details/cmdtop.sass
  say "sass: $(wc -l < /tmp/details/cmdtop.sass) lines"
fi
tar -C /tmp -czf "$OUT/details.tar.gz" details 2>/dev/null
say "total: $((SECONDS - T0)) s"
