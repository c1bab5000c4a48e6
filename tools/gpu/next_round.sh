#!/usr/bin/env bash
# The GPU call for the last changes of 2026-12-05's second session: the backbone's convolution weights stored
# channels-last in the 16-bit compute copy (b1235fc: ATen copied each weight per call) and the mixer-input kernel's
# 32-bit column pairs.
# One call, within TOTAL_S seconds (default 570), in this order, each step only if time is left:
#   1. build trackscope-cli + the CUDA op and engine tests (tools/gpu/check.sh), run gpu/ops_cuda
#      (MixerInputRowsCuda) and gpu/engine_cuda (bf16/fp16 fidelity with the channels-last weights);
#   2. the source A/B (tools/gpu/source_ab.sh): the files of 29330f2 against the new ones, fp16, small/base,
#      N=256/1024, two rounds (backbone and transformer stages separate the two changes);
#   3. per-launch kernel times of small N=256 fp16 under ncu (are the 20 weight copies gone?);
#   4. Nsight Compute detail sections of the mixer-input kernel.
#
# Here, first:
#   tools/gpu/prepare.sh --fixtures small --no-long-clip
#   bash tools/gpu/source_ab.sh --prepare 29330f2 gpu/engine/engine.cpp gpu/ops/cuda/mixer_input_kernel.cuh \
#     gpu/ops/cuda/mixer_input_kernel.cu gpu/ops/cuda/mixer_input_layout.h
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
AB_ARGS="--device cuda:0 --model small,base --points 256,1024 --precision fp16 --repeats 5 --warmup 2 --no-peaks"
if [ "$(left)" -gt 300 ]; then
  bash tools/gpu/source_ab.sh --run "$OUT/kernels-ab" "$AB_ARGS" 2 2>&1 | tail -30 | tee -a "$LOG"
  tar -C "$OUT" -czf "$OUT/kernels-ab.tar.gz" kernels-ab && rm -rf "$OUT/kernels-ab"
  say "kernel A/B: done at $((SECONDS - T0)) s"
fi
profile() {  # profile_kernels.sh for the given cases, within the budget
  [ "$(left)" -gt 100 ] || return 0
  timeout "$(( $(left) - 60 ))" bash tools/gpu/profile_kernels.sh /tmp/prof "$@" >> /tmp/prof.log 2>&1
  say "profile $*: rc=$? at $((SECONDS - T0)) s"
  cp /tmp/prof.log /tmp/prof/ 2>/dev/null
  tar -C /tmp -czf "$OUT/prof.tar.gz" prof 2>/dev/null
}
profile small:256:fp16

if [ "$(left)" -gt 90 ]; then
  timeout "$(( $(left) - 30 ))" bash tools/gpu/kernel_details.sh /tmp/details small:1024:fp16 mixer_input_kernel \
    > /dev/null 2>&1
  say "kernel details: rc=$? at $((SECONDS - T0)) s"
  cp /tmp/details/details.txt "$OUT/" 2>/dev/null
  tar -C /tmp -czf "$OUT/details.tar.gz" details 2>/dev/null
fi
say "total: $((SECONDS - T0)) s"
